// Prepare-and-shoot: the universal all-to-all encode (encode paper §IV;
// docs/design.md, "Prepare-and-shoot"). Computes x·A for ANY K×K matrix A
// in the optimal C1 = ⌈log_{p+1} K⌉ rounds with C2 = (m−1)/p + (n−1)/p.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/plan.h"

namespace collplan::gen {

// The phase split for K processors with p ports (b = p+1):
// L = max{L >= 0 : b^L < K}; Tp = L/2+1, Ts = L/2 (L even) or
// Tp = Ts = (L+1)/2 (L odd); m = b^Tp, n = b^Ts.
struct PrepareShootShape {
  uint32_t K = 0, p = 0, b = 0, L = 0, Tp = 0, Ts = 0;
  uint64_t m = 0, n = 0;
  uint32_t C1() const { return Tp + Ts; }
  // The paper's C2, with Thm 1's formula corrected for even L (Tp = Ts + 1):
  // (m−1)/p + (n−1)/p (docs/paper-errata.md).
  uint64_t C2() const { return (m - 1) / p + (n - 1) / p; }
  // Per-round message sizes 1, b, …, b^{Tp−1}, b^{Ts−1}, …, 1.
  std::vector<uint64_t> round_sizes() const;
  // C2 after the drop-zeros pass: the shoot variables l >= ⌈K/m⌉ are zero
  // throughout (a zero variable only ever receives from larger l), so shoot
  // round t carries #{j : b^{t−1} + j·b^t < ⌈K/m⌉} elements on its fullest
  // port (exact on the tested grid K <= 64, p <= 4; in general an upper
  // bound, since a port with ρ·δ_t ≡ 0 (mod K) adds locally).
  uint64_t C2_zero_dropped() const;
};
PrepareShootShape prepare_shoot_shape(uint32_t K, uint32_t p);

// The schedule alone: every send, receive and op of the algorithm, with the
// shoot-initialisation ops marked by `matrix_col` and their coefficients left
// 0. `passes/recode.h` fills them for a matrix; prepare_shoot() does both.
// Requires spec.op == Encode, K >= 2, p >= 1, λ >= 1. With λ > 1 every round
// is stretched to λ steps (sent in its first step, received in its last), so
// C1 = λ·⌈log_{p+1} K⌉: correct, but not the postal optimum.
ir::Plan prepare_shoot_schedule(const Spec& spec);

// Schedule + coefficients of spec.matrix.
ir::Plan prepare_shoot(const Spec& spec);

}  // namespace collplan::gen
