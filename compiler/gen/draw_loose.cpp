// Draw-and-loose for Vandermonde matrices (encode paper §V-B, Thm 3;
// journal Thm 5; docs/structured-matrices.md).
//
// H = max{H : P^H | gcd(K, q−1)}, Z = P^H, M = K/Z; processor j + Z·i gets
// f(α_i·β^{rev(j)}). Draw: each of the Z columns {j + Z·w} runs
// prepare-and-shoot of the M×M Vandermonde matrix on α_i^Z, then processor
// j + Z·i scales by α_i^j. Loose: each of the M rows runs the permuted DFT
// of size Z (gen/dft.cpp) — all rows at once.
//
// Costs: C1 = ⌈log_{p+1} M⌉ + H·⌈log_{p+1} P⌉, C2 = Ψ(M) + H·Ψ(P), Ψ(1) = 0;
// for P = p+1: C1 = ⌈log_{p+1} M⌉ + H = ⌈log_{p+1} K⌉, C2 = Ψ(M) + H.
// User-given points that are the structure up to a column permutation get
// one extra permutation step (C1 + 1, C2 + 1); the cost model then decides
// against prepare-and-shoot.
#include "gen/vandermonde_plans.h"

namespace collplan::gen {

const StructuredGenerator& draw_loose_generator() {
  static const StructuredGenerator g = vandermonde_generator("draw-loose", /*inverse=*/false, /*need_dft=*/false);
  return g;
}

}  // namespace collplan::gen
