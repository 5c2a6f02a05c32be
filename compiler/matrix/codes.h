// Generator matrices of [N, K] codes for decentralized encoding (SPEC §4.3,
// gen/decentralized.h). Every function returns the matrix the
// decentralized-encode spec stores: A (K×(N−K)) for a systematic code
// G = [I | A], or G (K×N) for a non-systematic one.
//
// Reed–Solomon [N, K] (evaluation points α_j = g^j, j = 0..N−1, g the
// field's generator; distinct while N <= q−1):
//   non-systematic  G[i][j] = α_j^i: rank j gets m(α_j) for the message
//                   polynomial m(z) = Σ_i x_i z^i.
//   systematic      A = V_K^{-1}·V_R with V = the non-systematic G, V_K its
//                   first K columns and V_R the others (Gaussian
//                   elimination): sink K+j gets f(α_{K+j}) for the unique
//                   f of degree < K with f(α_k) = x_k, k < K.
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

namespace collplan {

// α_0..α_{n−1} = 1, g, g², ... (UserError when n > q−1).
std::vector<Elem> rs_points(uint32_t n, const Field& f);
Matrix rs_generator(uint32_t N, uint32_t K, const Field& f);
Matrix rs_systematic(uint32_t N, uint32_t K, const Field& f);
Matrix lagrange_matrix(uint32_t N, uint32_t K, bool systematic, const Field& f);
Matrix random_matrix(uint32_t rows, uint32_t cols, uint64_t seed, const Field& f);
// The inverse of a square matrix by Gauss–Jordan elimination (UserError when
// singular).
Matrix invert(const Matrix& m, const Field& f);
// m1·m2.
Matrix multiply(const Matrix& m1, const Matrix& m2, const Field& f);

// The matrix of `code` ("rs", "lagrange", "random") for a decentralized
// encode, as a spec entry (explicit entries, source names the code).
MatrixSpec code_matrix(const std::string& code, uint32_t N, uint32_t K, bool systematic, uint64_t seed, const Field& f);

}  // namespace collplan
