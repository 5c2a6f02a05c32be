// Permuted DFT, any radix P (encode paper §V-A for P = p+1; journal §V-A,
// Thm 4, Cor. 1; docs/structured-matrices.md).
//
// K = P^H, K | q−1, β of order K; processor k ends with f(β^{rev(k)}),
// f(z) = Σ_r x_r z^r, rev reversing the H base-P digits: the DFT matrix with
// its columns permuted. H stages; stage s combines along digit H−s, every
// group of P processors differing only in that digit running
// prepare-and-shoot of a P×P Vandermonde matrix (gen/vandermonde_plans.h).
//
// Costs: P = p+1: C1 = C2 = H (strictly optimal); general P:
// C1 = H·⌈log_{p+1} P⌉, C2 = H·Ψ(P) (Ψ = prepare-and-shoot's C2). User-given
// Vandermonde points in another order get one extra permutation step
// (C1 + 1, C2 + 1). The radix is read off the points; when several radices
// fit, the cheapest under the cost model wins.
#include "gen/vandermonde_plans.h"

namespace collplan::gen {

const StructuredGenerator& dft_generator() {
  static const StructuredGenerator g = vandermonde_generator("dft", /*inverse=*/false, /*need_dft=*/true);
  return g;
}

}  // namespace collplan::gen
