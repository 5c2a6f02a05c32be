// The postcondition of a spec: the linear map the plan must compute,
// independent of any generator ("what", not "how").
//
// Inputs and outputs are numbered rank-major (all of rank 0's, then rank
// 1's, ...). `map` is num_inputs × num_outputs: output j must equal
// Σ_i input_i · map[i][j]. Per operation (docs/plan-format.md, "What a plan
// computes"), with n = spec.blocks:
//   encode        n inputs and n outputs per rank; output block b of rank k
//                 is Σ_r x_{r,b} A[r][k] (n = 1: map = A).
//   broadcast     root: n inputs; every rank: n outputs (the root's blocks).
//   reduce        every rank: n inputs; root: n outputs (block-wise sums).
//   allgather     every rank: n inputs and K·n outputs (all blocks, rank order).
//   allgatherv    rank k: counts[k] inputs; every rank Σcounts outputs.
//   allreduce     every rank: n inputs and n outputs (block-wise sums).
//   reduce-scatter every rank: K·n inputs (n blocks for each rank, in rank
//                 order) and n outputs: rank k gets the block-wise sum over
//                 all ranks of their blocks for k (MPI_Reduce_scatter_block).
//   prefix        counts[k] items in and out at rank k (1 when counts is
//                 empty); item g gets v_0 + … + v_g, or v_0 + … + v_{g−1}
//                 when spec.exclusive (item 0 then gets the zero element).
//   decentralized-encode  N ranks; sources 0..K−1 n inputs each (x_k in n
//                 blocks). The matrix's shape selects the code's form:
//                 K×(N−K) is A of a systematic G = [I | A] (sink K+j, n
//                 outputs, gets block b = Σ_k x_{k,b} A[k][j]; sources output
//                 nothing); K×N is a non-systematic G (every rank j, n
//                 outputs, gets block b = Σ_k x_{k,b} G[k][j]).
// For both coded operations (and repair and decode) the blocks are
// independent copies: the map is M ⊗ I_n (input block b of x_k feeds output
// block b only).
//
// Two representations, chosen by the operation:
//   coded   (encode, decentralized-encode, repair, decode): `map`, the dense
//           num_inputs × num_outputs matrix (bounded by
//           kMaxPostconditionEntries, support/limits.h).
//   uncoded (every other operation): no matrix. Every coefficient is 1 and
//           each output is the sum of a set of inputs described by the
//           operation itself, so the map is a function of the spec: column()
//           lists one output's inputs (sparse, O(its terms)) and Evaluator
//           applies the map to given inputs in O(inputs + outputs) per lane
//           (block sums, prefix sums), never inputs × outputs. An allgather
//           of K = 4096 ranks, whose dense map would have 2^36 entries, is
//           held in O(K).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/spec.h"
#include "matrix/matrix.h"
#include "support/limits.h"

namespace collplan {

// The coded map's size limit, kMaxPostconditionEntries, is in
// support/limits.h.

struct Postcondition {
  uint32_t K = 0;
  std::vector<uint32_t> inputs_per_rank, outputs_per_rank;
  std::vector<uint32_t> input_offset, output_offset;  // prefix sums, size K+1
  uint32_t num_inputs() const { return input_offset.back(); }
  uint32_t num_outputs() const { return output_offset.back(); }

  // What the map is, for the uncoded form.
  OpKind op = OpKind::Encode;
  uint32_t n = 1;       // blocks
  uint32_t root = 0;    // broadcast, reduce
  bool exclusive = false;  // prefix
  bool dense = false;   // `map` holds the map (the coded operations)
  Matrix map;           // dense: num_inputs × num_outputs; uncoded: empty

  // One output's non-zero coefficients, (global input, coefficient) in
  // increasing input order, written into `out` (cleared first).
  struct Entry {
    uint32_t input;
    Elem coeff;
  };
  void column(uint32_t col, std::vector<Entry>& out) const;
  // The number of non-zero coefficients of the whole map (saturating), from
  // the spec alone for the uncoded form: what an exact check must compare.
  uint64_t nonzeros() const;
  // The global output number of rank k's output j.
  uint32_t output_col(uint32_t k, uint32_t j) const { return output_offset[k] + j; }
};

// Applies a postcondition to W lanes of inputs: x holds num_inputs × W
// elements, input-major (input g's lane w at x[g·W + w]), and is kept.
// output(col, y) writes that output's W lanes. Precomputes what the
// operation needs (block sums for reduce and allreduce, per-destination sums
// for reduce-scatter, running sums for prefix, the dense product for the
// coded form), so memory is O(W · (inputs + outputs of the coded form)) and
// one output costs O(W). The coded form reads pc.map only here; the
// evaluator keeps a reference to pc (its offsets), which must outlive it.
class Evaluator {
 public:
  Evaluator(const Field& f, const Postcondition& pc, std::vector<Elem> x, uint32_t W);
  void output(uint32_t col, Elem* y) const;
  uint32_t lanes() const { return W_; }
  const std::vector<Elem>& inputs() const { return x_; }

 private:
  const Field& f_;
  const Postcondition& pc_;
  std::vector<Elem> x_;
  uint32_t W_;
  std::vector<Elem> pre_;  // the precomputed sums (see the constructor)
};

Postcondition postcondition(const Spec& spec);

// The matrix of an encode or decentralized-encode spec, its shape and digest
// checked (UserError otherwise): the M of the map M ⊗ I_n, without building
// the map.
Matrix coded_matrix(const Spec& spec);

// The direct computation the runtime is compared against: given every rank's
// input vectors (inputs[k][i] = ℓ elements, canonical uint32), returns every
// rank's output vectors, computed straight from the postcondition.
std::vector<std::vector<std::vector<Elem>>> direct_compute(
    const Field& f, const Postcondition& post,
    const std::vector<std::vector<std::vector<Elem>>>& inputs);

}  // namespace collplan
