// The spec of a plan: what is to be computed, on what machine model.
//
// A spec names one operation (docs/plan-format.md, "What a plan computes"), the processor count K, the ports per
// processor p, the postal latency λ, the field, and (for the coded
// operations) the matrix. It is the whole input of a generator and it is
// stored in every plan file's header, so the checker can rebuild the
// postcondition from the plan file alone.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "field/field.h"

namespace collplan {

enum class OpKind : uint8_t {
  Encode = 1,               // all-to-all encode: rank k gets (x·A)_k
  DecentralizedEncode = 2,  // [N, K] code: sinks get their symbols
  Broadcast = 3,            // root's n blocks reach every rank
  Reduce = 4,               // block-wise sum of every rank's n blocks at root
  Allgather = 5,            // every rank gets every rank's blocks, rank order
  Allgatherv = 6,           // allgather with per-rank block counts
  Allreduce = 7,            // every rank gets the sum
  Prefix = 8,               // rank k gets v_0 ⊕ … ⊕ v_k (inclusive scan)
  ReduceScatter = 9,        // rank k gets block k of the sum (MPI_Reduce_scatter_block)
  Repair = 10,              // [N, K] code: the lost ranks get their symbols back from helpers
  Decode = 11,              // [N, K] code: the data x from helpers, x_j to rank to[j]
};

// The operations on the N ranks of an [N, K] code (K, N and the code's
// matrix as decentralized-encode has it): decentralized-encode, repair, decode.
inline bool is_code_op(OpKind op) {
  return op == OpKind::DecentralizedEncode || op == OpKind::Repair || op == OpKind::Decode;
}

const char* op_name(OpKind op);
// UserError listing the valid names when `name` is not one.
OpKind parse_op(const std::string& name);
const std::vector<OpKind>& all_ops();

// A 128-bit digest (XXH3-128), printed as 32 lowercase hex digits.
struct Digest {
  std::array<uint8_t, 16> bytes{};
  std::string hex() const;
  friend bool operator==(const Digest&, const Digest&) = default;
};

// How the matrix of a coded operation is given. `family` is one of:
//   "random"      uniform entries from the seeded generator (splitmix64),
//                 reproducible across machines: see matrix/matrix.h
//   "vandermonde" A[i][j] = points[j]^i (points distinct)
//   "identity"    A = I
//   "permutation" rank k gets x_{perm[k]}: A[perm[k]][k] = 1
//   "explicit"    entries stored row-major (from a file, or re-coded)
// Structured families (matrix/structured.h, docs/structured-matrices.md); `points` holds their
// parameters and the matrix is rebuilt from them alone:
//   "dft"                 V(points), points = β^{rev(k)} for a radix P with
//                         K = P^H | q−1 (the column-permuted DFT)
//   "draw-loose"          V(points), points = α_i·β^{rev(j)} at j + Z·i
//   "inverse-dft", "inverse-draw-loose"   V(points)^{-1}
//   "lagrange"            points = ω (K) then α (K); A = V(ω)^{-1}·V(α)
//   "cauchy"              points = x, y, c, d (K each); A[i][j] = c_i d_j/(x_i − y_j)
//   "rs-systematic"       points = x, y, v, v' (K each); A = the systematic
//                         part of the GRS [2K, K] code [V(x)diag(v) | V(y)diag(v')]
// `digest` is the digest of the materialised entries (matrix/matrix.h,
// matrix_digest) and binds a plan to the exact matrix it computes.
struct MatrixSpec {
  std::string family = "random";
  uint32_t rows = 0, cols = 0;
  uint64_t seed = 0;
  std::vector<Elem> points;      // vandermonde; the structured families' parameters
  std::vector<uint32_t> perm;    // permutation
  std::vector<Elem> entries;     // explicit, row-major rows × cols
  std::string source;            // where it came from (a file name), informational
  Digest digest;
  friend bool operator==(const MatrixSpec&, const MatrixSpec&) = default;
};

struct Spec {
  OpKind op = OpKind::Encode;
  uint32_t K = 0;       // processors
  uint32_t p = 1;       // ports per processor
  uint32_t lambda = 1;  // postal latency (1 = synchronous rounds)
  Field field = Field::gf256();
  MatrixSpec matrix;        // coded operations only (the code ops: A, K×(N−K), or G, K×N; postcondition.h)
  std::string algorithm;    // the generator that produced the plan
  uint32_t blocks = 1;      // n: blocks per buffer (block operations)
  uint32_t root = 0;        // broadcast / reduce
  uint32_t N = 0;           // the code ops: processors (decentralized-encode: K sources)
  std::vector<uint32_t> counts;  // allgatherv: blocks per rank; prefix: items per rank (empty = 1 each)
  bool exclusive = false;        // prefix: exclusive scan (rank k gets v_0 ⊕ … ⊕ v_{k−1})
  // repair and decode (matrix/repair.h): the ranks whose symbols are lost
  // (strictly increasing), the survivors whose symbols the plan combines
  // (strictly increasing; chosen by build_spec unless given), and for decode
  // the rank that gets each data symbol x_j (K entries).
  std::vector<uint32_t> lost, helpers, to;
  friend bool operator==(const Spec&, const Spec&) = default;
};

// An all-to-all encode spec (the fields every encode caller sets).
Spec make_encode_spec(uint32_t K, uint32_t p, uint32_t lambda, const Field& f, MatrixSpec m);
// A decentralized-encode spec: N ranks, K sources, m = A (K×(N−K),
// systematic) or G (K×N); see matrix/postcondition.h.
Spec make_decentralized_spec(uint32_t N, uint32_t K, uint32_t p, uint32_t lambda, const Field& f, MatrixSpec m);

// Number of processors a plan for `s` runs on: N for the code ops
// (decentralized-encode: K sources + N-K sinks; repair, decode), K otherwise.
inline uint32_t num_ranks(const Spec& s) { return is_code_op(s.op) ? s.N : s.K; }

// The most ranks a whole plan may have (K, or N for decentralized-encode):
// a plan holds every rank's program, and the checker and the replays walk
// them all.
inline constexpr uint32_t kMaxPlanRanks = uint32_t{1} << 24;
// The most ranks a rank-local plan (one rank's program compiled alone, see
// ir::RankPlan) may name: the circulant generators' limit, 2^31
// (gen::kCirculantMaxP); nothing of size K is ever built for it.
inline constexpr uint32_t kMaxRankLocalRanks = uint32_t{1} << 31;

// Checks the ranges every operation shares (K >= 2, p >= 1, λ >= 1, root < K,
// ...); UserError naming the bad value and the valid range. `max_ranks` is
// kMaxPlanRanks for a whole plan, kMaxRankLocalRanks for a rank-local one.
void validate_spec_basics(const Spec& s, uint32_t max_ranks = kMaxPlanRanks);
// The same checks without the dense postcondition's size limit: what a
// generator needs to build a plan (the checker applies the limit when it
// builds the map), e.g. a pipelined reduce of many blocks for a simulation.
void validate_spec_ranges(const Spec& s, uint32_t max_ranks = kMaxPlanRanks);

// Rank k's input and output counts, as the operation's postcondition has them, from
// the spec alone and without the map (O(1); O(K) for allgatherv's Σ counts):
// what a rank compiled alone or read alone is checked against. K may be up
// to kMaxRankLocalRanks. UserError for a bad spec or k >= num_ranks(spec).
struct RankIO {
  uint32_t inputs = 0, outputs = 0;
};
RankIO rank_io(const Spec& spec, uint32_t k);
// Every rank's counts, in O(ranks): what a whole plan's programs must list,
// known without building the map.
std::vector<RankIO> rank_ios(const Spec& spec);
// Σ counts of allgatherv or of prefix with counts; UserError outside 1..2^24.
uint64_t total_count(const Spec& spec);

}  // namespace collplan
