// Replay-and-compare: run a plan on the in-process threads transport with
// random data and compare every output with the direct computation of the
// spec's postcondition. This is what `collplan run` reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/plan.h"
#include "runtime/transport/threads.h"

namespace collplan::rt {

struct ReplayReport {
  size_t len = 0;               // ℓ, elements per vector
  double seconds_median = 0;    // wall time of one replay (all ranks), median over reps
  double seconds_min = 0;
  size_t reps = 0;
  uint64_t bytes_in_total = 0;  // input bytes over all ranks: inputs · ℓ · elem_bytes
  bool equal = false;           // every output byte equals the direct computation
  // Empty when equal; otherwise "rank R, output J, element I: expected X, got Y"
  // for the first differing element in (rank, output, element) order.
  std::string first_mismatch;
  double throughput_gbps = 0;   // bytes_in_total / seconds_median / 1e9
  // Per rank, of the last run: the engine's own copies and what the
  // transport delivered (Engine::Stats::staged_bytes, delivered_bytes,
  // op_copy_bytes).
  struct Copies {
    uint64_t staged = 0, delivered = 0, op_copied = 0;
  };
  std::vector<Copies> copies;
};

// Inputs: every rank's input vectors filled with uniform field elements drawn
// from SplitMix64(seed), in rank-major, input, element order. Runs the plan
// `reps` times (at least once; outputs are poisoned before each run, so every
// run must write them all), then compares the last run's outputs with
// direct_compute(field, postcondition(plan.spec), inputs). A transport or
// plan error propagates as UserError; a wrong result is reported, not thrown.
ReplayReport replay_and_compare(const ir::Plan& plan, size_t len, uint64_t seed, size_t reps = 5,
                                ThreadsOptions opt = {});

// ─── Pieces for distributed replays (one process per rank) ──────────────────
//
// A process that runs one rank of a plan (MPI, TCP) draws the same inputs as
// replay_and_compare (every rank's, from the same seed) and compares its own
// outputs with the direct computation, so every transport is checked against
// the same reference with the same data.

// Every rank's input vectors as replay_and_compare draws them: x[k][i] is
// rank k's i-th input, `len` elements. UserError when the plan's inputs or
// outputs per rank disagree with its spec's postcondition.
std::vector<std::vector<std::vector<Elem>>> replay_inputs(const ir::Plan& plan, size_t len, uint64_t seed);

// What rank r of a distributed replay needs: its inputs and the expected
// outputs, both in the buffer format of gf_kernels.h.
struct RankReplayData {
  std::vector<std::vector<unsigned char>> inputs;
  std::vector<std::vector<unsigned char>> expected;
};
RankReplayData rank_replay_data(const ir::Plan& plan, ir::Rank r, size_t len, uint64_t seed);

// "" when outputs[j] equals expected[j] byte for byte for every j; otherwise
// "rank R, output J, element I: expected X, got Y" for the first difference.
std::string first_mismatch(const Field& f, ir::Rank r, const std::vector<std::vector<unsigned char>>& expected,
                           const std::vector<std::vector<unsigned char>>& outputs);

}  // namespace collplan::rt
