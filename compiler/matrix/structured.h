// Structured matrices over F_q: the point sets of the permuted DFT and of
// draw-and-loose Vandermonde matrices (docs/structured-matrices.md), their
// detection in given points, Vandermonde inverses, Lagrange and Cauchy-like
// matrices, and the systematic part of generalized Reed-Solomon codes.
//
// Conventions. V(x) is the K×K Vandermonde matrix V[r][k] = x_k^r, so an
// encode with A = V(x) gives processor k the evaluation f(x_k) of
// f(z) = Σ_r x_r z^r (inputs are coefficients). V(x)^{-1} turns evaluations
// at x back into coefficients (interpolation).
//
// Draw-and-loose structure with radix P (encode paper §V-B, journal Thm 5):
// H = max{H : P^H | gcd(K, q−1)}, Z = P^H, M = K/Z; the point of processor
// j + Z·i (i < M, j < Z) is α_i·β^{rev(j)}, with β of multiplicative order
// exactly Z, rev the reversal of the H base-P digits, and α_i non-zero with
// the α_i^Z distinct (so all K points are distinct). With M = 1 the points
// are β^{rev(k)}: the column-permuted DFT. collplan chooses
// α_i = g^{φ(i)} with φ injective into [0, (q−1)/Z − 1] (g the field's
// generator, β = g^{(q−1)/Z}); detection accepts any α_i and β that fit.
//
// Every function checks its inputs and raises a UserError naming the
// violated condition and the values involved.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "field/field.h"
#include "matrix/matrix.h"

namespace collplan {

// The H base-P digits of k (k < P^H), reversed.
uint64_t digit_reverse(uint64_t k, uint32_t P, uint32_t H);

struct DrawLooseShape {
  uint32_t K = 0, P = 0, H = 0, Z = 1, M = 0;
};
// H = max{H : P^H | gcd(K, q−1)} (H = 0 when P does not divide the gcd).
DrawLooseShape draw_loose_shape(uint32_t K, uint32_t P, const Field& f);

struct VandermondeStructure {
  DrawLooseShape shape;
  Elem beta = 1;             // order exactly Z
  std::vector<Elem> alpha;   // M row factors
  // position[k] = the canonical position (j + Z·i) whose point processor k
  // was given; empty when the points are in canonical order.
  std::vector<uint32_t> position;
  bool permuted() const { return !position.empty(); }
};

// The K points in canonical order: α_i·β^{rev(j)} at j + Z·i.
std::vector<Elem> structured_points(const Field& f, const VandermondeStructure& s);

// The draw-and-loose structure of `points` for radix P: in canonical order,
// or (allow_permutation) up to a column permutation, i.e. the points are a
// union of M full cosets of the Z-th roots of unity. Requires H >= 1. On
// failure returns nullopt and, if `why` is given, a sentence naming the
// first condition that fails.
std::optional<VandermondeStructure> detect_structure(const Field& f, const std::vector<Elem>& points, uint32_t P,
                                                     bool allow_permutation, std::string* why = nullptr);
// The radices P (2 <= P, P | gcd(K, q−1)) for which detect_structure
// succeeds, smallest first.
std::vector<VandermondeStructure> detect_all(const Field& f, const std::vector<Elem>& points, bool allow_permutation);

// Points collplan chooses.
// dft_points: K = P^H and K | q−1 (UserError naming each, e.g. "dft needs
// K | q−1: K = 12, q−1 = 256"); β = a primitive K-th root of unity;
// processor k gets β^{rev(k)}.
std::vector<Elem> dft_points(const Field& f, uint32_t K, uint32_t P);
// draw_loose_points: P | gcd(K, q−1) and K <= q−1; α_i = g^{φ(i)}. `phi`
// empty means φ(i) = phi_offset + i; otherwise it must have M entries,
// distinct, each < (q−1)/Z (UserError naming the bad entry).
std::vector<Elem> draw_loose_points(const Field& f, uint32_t K, uint32_t P, const std::vector<uint64_t>& phi,
                                    uint64_t phi_offset = 0);
// `sets` disjoint draw-and-loose point sets (set t uses φ(i) = t·M + i),
// concatenated; needs sets·K <= q−1.
std::vector<Elem> disjoint_point_sets(const Field& f, uint32_t K, uint32_t P, uint32_t sets);
// Dense matrices (O(K²) field operations; the verifier's postconditions).
// Points must be distinct (UserError naming the two equal ones).
Matrix vandermonde_matrix(const Field& f, const std::vector<Elem>& x);
Matrix vandermonde_inverse(const Field& f, const std::vector<Elem>& x);
// A = V(ω)^{-1}·V(α): A[i][j] = L_i(α_j), L_i the Lagrange basis on ω.
Matrix lagrange_matrix(const Field& f, const std::vector<Elem>& omega, const std::vector<Elem>& alpha);
// C[i][j] = c_i·d_j / (x_i − y_j); x distinct, y distinct, x ∩ y = ∅,
// c and d non-zero.
Matrix cauchy_matrix(const Field& f, const std::vector<Elem>& x, const std::vector<Elem>& y,
                     const std::vector<Elem>& c, const std::vector<Elem>& d);
void check_cauchy_params(const Field& f, const std::vector<Elem>& x, const std::vector<Elem>& y,
                         const std::vector<Elem>& c, const std::vector<Elem>& d);
// The factorisation C = D1·V(x)^{-1}·V(y)·D2 (journal Thm 6;
// docs/structured-matrices.md, "Algorithms and costs"):
// D1 = diag(−c_i·Π_{l≠i}(x_i − x_l)), D2 = diag(d_j / Π_l(y_j − x_l)).
// Needs |x| = |y|.
struct CauchyFactors {
  std::vector<Elem> d1, d2;
};
CauchyFactors cauchy_factors(const Field& f, const std::vector<Elem>& x, const std::vector<Elem>& y,
                             const std::vector<Elem>& c, const std::vector<Elem>& d);

// A generalized Reed-Solomon [N, K] code: G = [V_K(x)·diag(v) | V_K(y)·diag(v2)]
// with x (K points), y (N−K points) all distinct and v, v2 non-zero
// (V_K(x) is K×|x|: rows are powers 0..K−1). Its systematic form is
// [I | A] with A = diag(v)^{-1}·V_K(x)^{-1}·V_K(y)·diag(v2) (K×(N−K)),
// Cauchy-like with c_i = 1/(v_i·Π_{l≠i}(x_i − x_l)),
// d_j = −v2_j·Π_l(y_j − x_l).
struct RsSystematic {
  uint32_t N = 0, K = 0;
  std::vector<Elem> x, y, v, v2;
  Matrix A;                       // K × (N−K)
  std::vector<Elem> c, d;         // its Cauchy-like parameters
  Matrix generator() const;       // [I | A], K × N (the systematic generator)
};
// Empty v / v2 mean all ones. UserError on N <= K, wrong list sizes, equal
// points or zero column multipliers.
RsSystematic rs_systematic(uint32_t N, uint32_t K, const Field& f, std::vector<Elem> x, std::vector<Elem> y,
                           std::vector<Elem> v = {}, std::vector<Elem> v2 = {});
// The (non-systematic) generator G = [V_K(x)·diag(v) | V_K(y)·diag(v2)].
Matrix grs_generator(const Field& f, uint32_t K, const std::vector<Elem>& x, const std::vector<Elem>& y,
                     const std::vector<Elem>& v, const std::vector<Elem>& v2);

}  // namespace collplan
