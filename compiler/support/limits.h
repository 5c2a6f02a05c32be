// Size limits: what collplan refuses up front, with a UserError naming the
// limit and the value (exit status 2), before allocating anything in
// proportion to a number the user gave. One place for all of them; the
// user-facing table is docs/cli.md, "Limits".
//
// The limits follow from the data structures, not from one machine's memory:
// a limit is set where a structure collplan must build in full would exceed
// ~1 GiB or where a count would no longer fit the 32-bit counters of the plan
// format (docs/plan-format.md). Defined here unless a header closer to the
// structure already holds them:
//
//   ranks of a whole plan         K, N <= kMaxPlanRanks = 2^24 (ir/spec.h): every
//                                 rank's program is held and checked
//   ranks of a rank-local plan    K <= kMaxRankLocalRanks = 2^31 (ir/spec.h)
//   ports, latency                p, lambda <= 1024 (validate_spec_basics): per-port
//                                 tables in every rank
//   coded postcondition           (rows·n)·(cols·n) <= kMaxPostconditionEntries = 2^26
//                                 (below; used by matrix/postcondition.h): encode and
//                                 decentralized-encode are checked against the dense
//                                 map M ⊗ I_n, 4-byte elements = 256 MiB; encode
//                                 has its own, (K·n)^2 <= 2^28 = 1 GiB, K·n <= 16384
//                                 (kMaxEncodeMapEntries, ir/spec.cpp)
//   uncoded postcondition         inputs, outputs <= kMaxPostconditionIO = 2^31 over
//                                 all ranks (below): a function of the spec, not a
//                                 map; the plan's own size limit usually binds first
//   per-rank elements             K·n <= 2^24 (allgather, reduce-scatter), counts
//                                 entries <= 2^24: 32-bit slot counts
//   blocks per rank               n <= 2^24 (validate_spec_basics), also for a rank
//                                 compiled alone
//   whole-plan size               kMaxPlanElements below
//   replay buffers                kMaxReplayBytes below
//   threads                       kMaxThreads below
//   input files                   kMax*FileBytes below (support/safe_file.h
//                                 refuses a larger file before reading it)
#pragma once

#include <cstdint>
#include <limits>

namespace collplan {

// A whole plan holds every rank's program in memory: its size grows with
// the elements the ranks receive, about K·C2 (C2 = the per-rank bound on
// elements received, from the chosen generator's estimate, before any plan
// is built). One received element costs ~40 bytes in the IR (a Combo, its
// Term, the receive slot; a circulant broadcast of K = 2^20 ranks, K·C2 =
// 2.1·10^7, holds 0.83 GB), so 2^26 elements is ~2.5 GiB. Larger broadcasts
// and reduces are compiled one rank at a time (`compile --rank`).
inline constexpr uint64_t kMaxPlanElements = uint64_t{1} << 26;

// The coded postcondition map (matrix/postcondition.h) is dense: specs whose
// map would have more entries are refused rather than allocated. A coded map
// (decentralized-encode, repair, decode) holds field elements: 2^26
// entries = 256 MiB. Encode's limit is 2^28 (ir/spec.cpp).
inline constexpr uint64_t kMaxPostconditionEntries = uint64_t{1} << 26;
// The operations without a matrix have postconditions that are functions of
// the spec (sums of unit-coefficient blocks), evaluated in O(inputs +
// outputs): what bounds them is the 32-bit global numbering of all ranks'
// inputs and of all ranks' outputs.
inline constexpr uint64_t kMaxPostconditionIO = uint64_t{1} << 31;

// Blocks per rank (validate_spec_basics): a rank holds its n blocks as
// slots, counted in 32 bits with room for what it receives.
inline constexpr uint32_t kMaxBlocks = uint32_t{1} << 24;

// check --trials: the randomized check holds trials values per slot.
inline constexpr uint64_t kMaxCheckValues = uint64_t{1} << 28;

// `collplan run`: the bytes of all inputs, outputs and expected outputs one
// process holds (every rank's for the threads transport, its own rank's for
// MPI and TCP), len · elem_bytes · (inputs + 2·outputs). 2^32 bytes = 4 GiB:
// a replay is a check of the plan, and long vectors gain nothing over 4 GiB.
inline constexpr uint64_t kMaxReplayBytes = uint64_t{1} << 32;

// Worker threads a subcommand starts (verify-circulant --threads): more
// threads than this only adds stacks (8 MiB each by default).
inline constexpr uint32_t kMaxThreads = 1024;

// verify-circulant --sample-ranks: the chosen ranks are held in a set;
// 2^24 ranks is a whole-plan's worth (use --pmax for every rank).
inline constexpr uint64_t kMaxSampleRanks = uint64_t{1} << 24;

// Input files: read only when they are regular files of at most these
// sizes (support/safe_file.h), so that /dev/zero, a FIFO or a runaway file
// is refused by name instead of being read until memory runs out.
//
// A whole plan file (binary or JSON) is read into memory and decoded into
// a plan of at most kMaxPlanElements received elements. A binary plan
// spends ~16 bytes per element and term, a JSON plan a few more as text;
// 64 bytes per element of the largest plan is 2^32 bytes = 4 GiB.
inline constexpr uint64_t kMaxPlanFileBytes = kMaxPlanElements * 64;
// A spec file is a JSON object of a few dozen keys, or a JSON plan whose
// "spec" is taken: 64 MiB holds the plans anyone hands over as a spec.
inline constexpr uint64_t kMaxSpecFileBytes = uint64_t{1} << 26;
// A matrix file (Matrix Market or CSV) holds at most a kMaxPostconditionEntries
// matrix: 2^26 entries of up to 16 bytes as text ("8192 8192 65535\n")
// is 1 GiB.
inline constexpr uint64_t kMaxMatrixFileBytes = kMaxPostconditionEntries * 16;
// A trace (`run --trace`, read back by `show --trace`): Chrome trace JSON of
// a few events per rank and step; 1 GiB.
inline constexpr uint64_t kMaxTraceFileBytes = uint64_t{1} << 30;

// a·b, or UINT64_MAX when it does not fit: sizes are compared against the
// limits above without wrapping.
constexpr uint64_t mul_sat(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
  return a * b;
}

}  // namespace collplan
