// What repair and decode compute, from the code alone (docs/repair.md).
//
// An [N, K] code is given as decentralized-encode has it (the spec's matrix:
// A, K×(N−K), of a systematic G = [I | A], or G, K×N); rank j holds the
// symbol c_j = Σ_k x_k G[k][j] of a message x. Ranks in spec.lost hold
// nothing; the helpers H (spec.helpers, survivors) are the symbols the plan
// combines. With G_H the columns of G at H:
//   repair  the lost rank ℓ gets c_ℓ = Σ_h c_h F[h][ℓ], where G_H·F = G_L
//           (G_L: the lost columns).
//   decode  rank to[j] gets x_j = Σ_h c_h F[h][j], where G_H·F = I_K.
// F exists when every target column is in the span of the helpers' columns,
// and it is unique when the helpers' columns are linearly independent; both
// are required (a UserError names the helper that depends on the others, or
// the target that cannot be rebuilt). With |H| = K, F = G_H^{-1}·G_L or
// G_H^{-1}: the repair matrix D of the Reed-Solomon and Lagrange codes; with
// fewer helpers (a local group of an LRC) F is the local repair.
// Every survivor has n inputs (its symbol in n blocks), helpers or not;
// outputs are numbered rank-major, n blocks each (repair: each lost rank's
// symbol; decode: rank r's data symbols in increasing j).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/spec.h"
#include "matrix/matrix.h"

namespace collplan {

// G (K×N) of a code op's spec: [I | A] for a systematic matrix, else the
// matrix itself. `M` = coded_matrix(spec).
Matrix full_generator(const Spec& spec, const Matrix& M);

struct RepairMap {
  std::vector<uint32_t> out_rank;  // per output symbol (rank-major), its rank
  std::vector<uint32_t> out_col;   // repair: the lost rank; decode: j of x_j
  Matrix F;                        // helpers × output symbols
};

// F for spec.helpers (validated: UserError for dependent helpers or a
// target outside their span).
RepairMap repair_map(const Spec& spec);

// The helpers compile chooses when --helpers is not given: the first
// survivors in rank order whose columns are independent (a basis of what the
// survivors span), then those whose row of F is zero dropped — for a
// Reed-Solomon code the first K survivors, for an LRC's single loss its
// local group. UserError naming the target when the survivors cannot
// rebuild it (the loss pattern is unrecoverable). spec.helpers is ignored.
std::vector<uint32_t> default_helpers(const Spec& spec);

}  // namespace collplan
