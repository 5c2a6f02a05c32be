#include "matrix/codes.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "support/error.h"
#include "support/limits.h"

namespace collplan {

uint32_t rs_coset_size(uint32_t N, uint32_t K, const Field& f) {
  // Z | min(K, R) and Z | q−1, so the cosets used number ⌈N/Z⌉ and
  // ⌈N/Z⌉·Z <= q−1 whenever N <= q−1: every N rs_points accepts fits.
  return static_cast<uint32_t>(std::gcd(uint64_t{std::min(K, N - K)}, uint64_t{f.size() - 1}));
}

std::vector<Elem> rs_points(uint32_t N, uint32_t K, const Field& f) {
  if (N > f.size() - 1)
    user_error("Reed-Solomon over {} has at most q-1 = {} distinct evaluation points, N = {} needs {}", f.name(),
               f.size() - 1, N, N);
  const uint32_t Z = rs_coset_size(N, K, f);
  // ρ: the digit reversal when Z = P^H, P prime (P = Z's smallest factor).
  uint32_t P = 2;
  while (Z % P != 0 && P < Z) ++P;
  uint32_t H = 0;
  uint64_t pw = 1;
  while (pw < Z && Z % (pw * P) == 0) pw *= P, ++H;
  const bool prime_power = Z > 1 && pw == Z;
  const Elem beta = f.pow(f.generator(), (f.size() - 1) / Z);
  const uint32_t first_sink_coset = (K + Z - 1) / Z;
  std::vector<Elem> pts(N);
  for (uint32_t r = 0; r < N; ++r) {
    const uint32_t local = r < K ? r : r - K;  // index among the sources or the sinks
    const uint32_t i = local / Z + (r < K ? 0 : first_sink_coset), t = local % Z;
    const uint64_t rho = prime_power ? digit_reverse(t, P, H) : t;
    pts[r] = f.mul(f.pow(f.generator(), i), f.pow(beta, rho));
  }
  return pts;
}

Matrix rs_generator(uint32_t N, uint32_t K, const Field& f) {
  const std::vector<Elem> a = rs_points(N, K, f);
  return grs_generator(f, K, std::vector<Elem>(a.begin(), a.begin() + K), std::vector<Elem>(a.begin() + K, a.end()),
                       {}, {});
}

RsSystematic rs_code(uint32_t N, uint32_t K, const Field& f) {
  const std::vector<Elem> a = rs_points(N, K, f);
  return rs_systematic(N, K, f, std::vector<Elem>(a.begin(), a.begin() + K), std::vector<Elem>(a.begin() + K, a.end()));
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

uint32_t lrc_group(uint32_t i, uint32_t K, uint32_t L) { return static_cast<uint32_t>(uint64_t{i} * L / K); }

Matrix lrc_matrix(uint32_t N, uint32_t K, uint32_t L, const Field& f) {
  const uint32_t r = N - K - L;
  if (K > f.size() - 1)
    user_error("an LRC with K = {} data symbols over {} needs K <= q - 1 = {} distinct non-zero points", K, f.name(),
               f.size() - 1);
  Matrix A = Matrix::zeros(K, N - K);
  const Elem g = f.generator();
  for (uint32_t i = 0; i < K; ++i) {
    A.at(i, lrc_group(i, K, L)) = 1;  // local parity of i's group: the plain sum
    const Elem a = f.pow(g, i);      // global parity t: Σ_i α_i^t x_i, t = 1..r
    Elem c = a;
    for (uint32_t t = 0; t < r; ++t, c = f.mul(c, a)) A.at(i, L + t) = c;
  }
  return A;
}

MatrixSpec code_matrix(const std::string& code, uint32_t N, uint32_t K, bool systematic, uint64_t seed, const Field& f) {
  if (N <= K || K < 1) user_error("an [N, K] code needs N > K >= 1, got N = {}, K = {}", N, K);
  // The code's matrix is part of a postcondition of at most 2^26 entries
  // (matrix/postcondition.h): refuse before building it.
  if (const uint64_t cells = uint64_t{K} * (systematic ? N - K : N); cells > kMaxPostconditionEntries)
    user_error("N = {}, K = {}: the {} code's {} x {} matrix has {} entries, over the 2^26 = 67108864 collplan checks "
               "(a plan is checked against its dense postcondition); use fewer processors",
               N, K, systematic ? "systematic" : "non-systematic", K, systematic ? N - K : N, cells,
               kMaxPostconditionEntries);
  const std::string form = systematic ? "systematic" : "non-systematic";
  if (code == "rs")
    return matrix_explicit(systematic ? rs_code(N, K, f).A : rs_generator(N, K, f), f,
                           fmt::format("Reed-Solomon [{}, {}], {}, points in cosets of size {}", N, K, form,
                                       rs_coset_size(N, K, f)));
  if (code == "lagrange")
    return matrix_explicit(lagrange_matrix(N, K, systematic, f), f,
                           fmt::format("Lagrange [{}, {}], {}, data at 1..{}", N, K, form, K));
  if (code.rfind("lrc:", 0) == 0) {
    const std::string groups = code.substr(4);
    uint32_t L = 0;
    const bool ok = !groups.empty() && groups.size() <= 9 &&
                    std::all_of(groups.begin(), groups.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (ok) L = static_cast<uint32_t>(std::stoul(groups));
    if (!ok || L < 1 || L > K || L > N - K)
      user_error("--code {}: an LRC needs lrc:L with 1 <= L <= K = {} local groups and L <= N - K = {} (one local "
                 "parity per group; the other N - K - L parities are global)",
                 code, K, N - K);
    if (!systematic)
      user_error("--code {}: an LRC is a systematic code here (data ranks 0..K-1, then the local and the global "
                 "parities); drop --systematic false",
                 code);
    return matrix_explicit(lrc_matrix(N, K, L, f), f,
                           fmt::format("LRC [{}, {}] with {} local groups and {} global parities, systematic", N, K, L,
                                       N - K - L));
  }
  if (code == "random")
    return matrix_explicit(random_matrix(K, systematic ? N - K : N, seed, f), f,
                           fmt::format("random [{}, {}], {}, seed {}", N, K, form, seed));
  user_error("unknown code '{}' (valid: rs, lagrange, lrc:L, random; or --generator FILE)", code);
}

}  // namespace collplan
