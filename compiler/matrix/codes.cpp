#include "matrix/codes.h"

#include <fmt/format.h>

#include "support/error.h"

namespace collplan {

std::vector<Elem> rs_points(uint32_t n, const Field& f) {
  if (n > f.size() - 1)
    user_error("Reed-Solomon over {} has at most q-1 = {} distinct evaluation points, N = {} needs {}", f.name(),
               f.size() - 1, n, n);
  std::vector<Elem> pts(n);
  Elem x = 1;
  for (uint32_t i = 0; i < n; ++i, x = f.mul(x, f.generator())) pts[i] = x;
  return pts;
}

Matrix rs_generator(uint32_t N, uint32_t K, const Field& f) {
  const std::vector<Elem> a = rs_points(N, f);
  Matrix g = Matrix::zeros(K, N);
  for (uint32_t j = 0; j < N; ++j) {
    Elem v = 1;
    for (uint32_t i = 0; i < K; ++i, v = f.mul(v, a[j])) g.at(i, j) = v;
  }
  return g;
}

Matrix invert(const Matrix& m, const Field& f) {
  COLLPLAN_ASSERT(m.rows == m.cols, "invert: square matrices only");
  const uint32_t n = m.rows;
  Matrix a = m, inv = Matrix::zeros(n, n);
  for (uint32_t i = 0; i < n; ++i) inv.at(i, i) = 1;
  for (uint32_t c = 0; c < n; ++c) {
    uint32_t piv = c;
    while (piv < n && a.at(piv, c) == 0) ++piv;
    if (piv == n) user_error("the {}x{} matrix is singular over {} (column {} has no pivot)", n, n, f.name(), c);
    for (uint32_t j = 0; j < n; ++j) {
      std::swap(a.at(c, j), a.at(piv, j));
      std::swap(inv.at(c, j), inv.at(piv, j));
    }
    const Elem s = f.inv(a.at(c, c));
    for (uint32_t j = 0; j < n; ++j) {
      a.at(c, j) = f.mul(a.at(c, j), s);
      inv.at(c, j) = f.mul(inv.at(c, j), s);
    }
    for (uint32_t r = 0; r < n; ++r) {
      if (r == c || a.at(r, c) == 0) continue;
      const Elem x = a.at(r, c);
      for (uint32_t j = 0; j < n; ++j) {
        a.at(r, j) = f.sub(a.at(r, j), f.mul(x, a.at(c, j)));
        inv.at(r, j) = f.sub(inv.at(r, j), f.mul(x, inv.at(c, j)));
      }
    }
  }
  return inv;
}

Matrix multiply(const Matrix& m1, const Matrix& m2, const Field& f) {
  COLLPLAN_ASSERT(m1.cols == m2.rows, "multiply: shapes");
  Matrix out = Matrix::zeros(m1.rows, m2.cols);
  for (uint32_t i = 0; i < m1.rows; ++i)
    for (uint32_t k = 0; k < m1.cols; ++k) {
      const Elem x = m1.at(i, k);
      if (x == 0) continue;
      for (uint32_t j = 0; j < m2.cols; ++j) out.at(i, j) = f.add(out.at(i, j), f.mul(x, m2.at(k, j)));
    }
  return out;
}

Matrix rs_systematic(uint32_t N, uint32_t K, const Field& f) {
  const Matrix v = rs_generator(N, K, f);
  Matrix vk = Matrix::zeros(K, K), vr = Matrix::zeros(K, N - K);
  for (uint32_t i = 0; i < K; ++i) {
    for (uint32_t j = 0; j < K; ++j) vk.at(i, j) = v.at(i, j);
    for (uint32_t j = K; j < N; ++j) vr.at(i, j - K) = v.at(i, j);
  }
  return multiply(invert(vk, f), vr, f);
}

Matrix lagrange_matrix(uint32_t N, uint32_t K, bool systematic, const Field& f) {
  const uint32_t outs = systematic ? N - K : N;
  const uint64_t need = uint64_t{K} + outs;  // points 1..K (ω) and K+1..K+outs
  if (need > f.size() - 1)
    user_error("a Lagrange code with N = {}, K = {} ({}) needs {} distinct non-zero points, {} has {}", N, K,
               systematic ? "systematic" : "non-systematic", need, f.name(), f.size() - 1);
  auto point = [&](uint64_t i) { return static_cast<Elem>(i); };  // the integer i as a field element
  // For GF(2^m) the integers are bit patterns, distinct and non-zero as long as < q.
  Matrix g = Matrix::zeros(K, outs);
  for (uint32_t j = 0; j < outs; ++j) {
    const Elem z = point(K + 1 + j);
    for (uint32_t k = 0; k < K; ++k) {
      Elem num = 1, den = 1;
      for (uint32_t m = 0; m < K; ++m) {
        if (m == k) continue;
        num = f.mul(num, f.sub(z, point(m + 1)));
        den = f.mul(den, f.sub(point(k + 1), point(m + 1)));
      }
      g.at(k, j) = f.mul(num, f.inv(den));
    }
  }
  return g;
}

Matrix random_matrix(uint32_t rows, uint32_t cols, uint64_t seed, const Field& f) {
  SplitMix64 rng(seed);
  Matrix m = Matrix::zeros(rows, cols);
  for (Elem& e : m.a) e = rng.uniform(f);
  return m;
}

MatrixSpec code_matrix(const std::string& code, uint32_t N, uint32_t K, bool systematic, uint64_t seed, const Field& f) {
  if (N <= K || K < 1) user_error("an [N, K] code needs N > K >= 1, got N = {}, K = {}", N, K);
  const std::string form = systematic ? "systematic" : "non-systematic";
  if (code == "rs")
    return matrix_explicit(systematic ? rs_systematic(N, K, f) : rs_generator(N, K, f), f,
                           fmt::format("Reed-Solomon [{}, {}], {}, points g^j", N, K, form));
  if (code == "lagrange")
    return matrix_explicit(lagrange_matrix(N, K, systematic, f), f,
                           fmt::format("Lagrange [{}, {}], {}, data at 1..{}", N, K, form, K));
  if (code == "random")
    return matrix_explicit(random_matrix(K, systematic ? N - K : N, seed, f), f,
                           fmt::format("random [{}, {}], {}, seed {}", N, K, form, seed));
  user_error("unknown code '{}' (valid: rs, lagrange, random; or --generator FILE)", code);
}

}  // namespace collplan
