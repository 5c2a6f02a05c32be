// Generator matrices of [N, K] codes for decentralized encoding
// (docs/decentralized.md, "Codes"; gen/decentralized.h). Every function
// returns the matrix the decentralized-encode spec stores: A (K×(N−K)) for a
// systematic code G = [I | A], or G (K×N) for a non-systematic one.
//
// Reed–Solomon [N, K]: one definition, the GRS code of matrix/structured.h
// (rs_systematic) with all column multipliers 1 and the points of rs_points:
//   non-systematic  G[i][j] = α_j^i: rank j gets m(α_j) for the message
//                   polynomial m(z) = Σ_i x_i z^i.
//   systematic      A = V_K(x)^{-1}·V_K(y), x = α_0..α_{K−1} (the sources'
//                   points), y = α_K..α_{N−1} (the sinks'): sink K+j gets
//                   f(α_{K+j}) for the unique f of degree < K with
//                   f(α_k) = x_k. A is Cauchy-like, A[k][j] = c_k·d_j/(x_k − y_j)
//                   (structured.h), so every sub-block of it is too.
// Points (docs/decentralized.md, "Reed-Solomon points"): with B = min(K, R)
// (R = N − K, the side of the decentralized grid's blocks) and
// Z = gcd(B, q−1), the points come in
// cosets of the Z-th roots of unity: source k = Z·i + t gets g^i·β^{ρ(t)},
// sink K + Z·i + t gets g^{⌈K/Z⌉+i}·β^{ρ(t)}, β = g^{(q−1)/Z} (order Z), ρ
// the base-P digit reversal when Z = P^H for a prime P (so a block's points
// are in draw-and-loose canonical order for radix P), else the identity.
// Every aligned group of Z sources or sinks is then one coset, which gives
// the grid's blocks the draw-and-loose structure the Cauchy generator needs.
// As Z divides B, the cosets used number ⌈N/Z⌉ and ⌈N/Z⌉·Z <= q−1 when
// N <= q−1: the points are distinct.
// With Z = 1 (e.g. GF(2^8) when gcd(B, 255) = 1) the points are α_j = g^j.
// Lagrange (LCC) [N, K]: the data are the values at ω_k, the outputs the
// values at the evaluation points of u(z) = Σ_k x_k ℓ_k(z), ℓ_k the Lagrange
// basis on ω: G[k][j] = ℓ_k(point_j). Points are the integers 1, 2, ... read
// as field elements (distinct while they are < q):
//   non-systematic  ω_k = k+1 (k < K), worker j evaluates at K+1+j
//                   (needs N + K <= q−1).
//   systematic      ω_k = k+1; sink K+j evaluates at K+1+j, so the sources'
//                   own symbols are u(ω_k) = x_k (needs N <= q−1).
// Random: uniform entries from splitmix64 with the seed (matrix/matrix.h).
// Every bad size is a UserError naming N, K and the field's limit.
#pragma once

#include <cstdint>
#include <string>

#include "matrix/matrix.h"
#include "matrix/structured.h"

namespace collplan {

// The coset size Z = gcd(min(K, N−K), q−1) above.
uint32_t rs_coset_size(uint32_t N, uint32_t K, const Field& f);
// α_0..α_{N−1} as above (UserError when N > q−1).
std::vector<Elem> rs_points(uint32_t N, uint32_t K, const Field& f);
Matrix rs_generator(uint32_t N, uint32_t K, const Field& f);
// The systematic RS [N, K] code: A with its points x, y and Cauchy-like
// parameters c, d (structured.h's rs_systematic on rs_points).
RsSystematic rs_code(uint32_t N, uint32_t K, const Field& f);
Matrix lagrange_matrix(uint32_t N, uint32_t K, bool systematic, const Field& f);
Matrix random_matrix(uint32_t rows, uint32_t cols, uint64_t seed, const Field& f);
// Azure-style local reconstruction code (k, l, r) = (K, L, N − K − L),
// systematic: A (K×(N−K)). Data symbol i is in local group
// lrc_group(i) = ⌊i·L/K⌋ (contiguous groups of ⌊K/L⌋ or ⌈K/L⌉); sink K+g is
// group g's local parity, the plain sum of its data; sink K+L+t (t < r) is
// the global parity Σ_i α_i^{t+1} x_i with α_i = g^i (g the field's
// generator; K <= q−1). A single loss in a group is repaired from the
// group alone; more losses go through the global parities.
uint32_t lrc_group(uint32_t i, uint32_t K, uint32_t L);
Matrix lrc_matrix(uint32_t N, uint32_t K, uint32_t L, const Field& f);

// The matrix of `code` ("rs", "lagrange", "lrc:L", "random") for a decentralized
// encode, as a spec entry (explicit entries, source names the code).
MatrixSpec code_matrix(const std::string& code, uint32_t N, uint32_t K, bool systematic, uint64_t seed, const Field& f);

}  // namespace collplan
