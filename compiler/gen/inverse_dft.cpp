// Inverse of the permuted DFT (encode paper Lemma 5;
// docs/structured-matrices.md).
//
// x·V(β^{rev(k)})^{-1}: the DFT's H stages run backwards (stage H first),
// each group of P processors computing the inverse of its P×P Vandermonde
// matrix by prepare-and-shoot. Processor k's input is the evaluation
// f(β^{rev(k)}); processor r ends with the coefficient f_r.
//
// Costs: as the DFT: P = p+1: C1 = C2 = H; general P: C1 = H·⌈log_{p+1} P⌉,
// C2 = H·Ψ(P).
#include "gen/vandermonde_plans.h"

namespace collplan::gen {

const StructuredGenerator& inverse_dft_generator() {
  static const StructuredGenerator g = vandermonde_generator("inverse-dft", /*inverse=*/true, /*need_dft=*/true);
  return g;
}

}  // namespace collplan::gen
