// Inverse draw-and-loose (encode paper Lemma 6; docs/structured-matrices.md).
//
// x·V(points)^{-1} for draw-and-loose points: the loose phase backwards
// (inverse DFT on every row, stages H..1), then processor j + Z·i scales by
// α_i^{−j}, then every column runs prepare-and-shoot of the inverse of the
// M×M draw matrix.
//
// Costs: as draw-and-loose: C1 = ⌈log_{p+1} M⌉ + H·⌈log_{p+1} P⌉,
// C2 = Ψ(M) + H·Ψ(P).
#include "gen/vandermonde_plans.h"

namespace collplan::gen {

const StructuredGenerator& inverse_draw_loose_generator() {
  static const StructuredGenerator g =
      vandermonde_generator("inverse-draw-loose", /*inverse=*/true, /*need_dft=*/false);
  return g;
}

}  // namespace collplan::gen
