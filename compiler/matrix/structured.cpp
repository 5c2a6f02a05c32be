#include "matrix/structured.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan {

namespace {

void check_distinct(const Field& f, const std::vector<Elem>& x, const char* what) {
  for (size_t i = 0; i < x.size(); ++i) f.check(x[i], what);
  std::vector<uint32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return x[a] != x[b] ? x[a] < x[b] : a < b; });
  for (size_t i = 1; i < idx.size(); ++i)
    if (x[idx[i]] == x[idx[i - 1]])
      user_error("{} {} and {} are both {}: the points must be distinct", what, idx[i - 1], idx[i], x[idx[i]]);
}

void check_nonzero(const Field& f, const std::vector<Elem>& v, const char* what) {
  for (size_t i = 0; i < v.size(); ++i) {
    f.check(v[i], what);
    if (v[i] == 0) user_error("{} {} is 0: it must be non-zero", what, i);
  }
}

// v[i] := 1/v[i] for all i with one field inversion (prefix products).
void batch_inverse(const Field& f, std::vector<Elem>& v) {
  std::vector<Elem> pre(v.size() + 1, 1);
  for (size_t i = 0; i < v.size(); ++i) pre[i + 1] = f.mul(pre[i], v[i]);
  Elem inv = f.inv(pre.back());
  for (size_t i = v.size(); i-- > 0;) {
    const Elem vi = v[i];
    v[i] = f.mul(inv, pre[i]);
    inv = f.mul(inv, vi);
  }
}

// w_i = Π_{l≠i}(x_i − x_l), the Lagrange denominators on x.
std::vector<Elem> lagrange_denominators(const Field& f, const std::vector<Elem>& x) {
  std::vector<Elem> w(x.size(), 1);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t l = 0; l < x.size(); ++l)
      if (l != i) w[i] = f.mul(w[i], f.sub(x[i], x[l]));
  return w;
}

// Π_l (y − x_l).
Elem node_product(const Field& f, Elem y, const std::vector<Elem>& x) {
  Elem prod = 1;
  for (Elem xl : x) prod = f.mul(prod, f.sub(y, xl));
  return prod;
}

std::vector<Elem> ones(size_t n) { return std::vector<Elem>(n, 1); }

}  // namespace

uint64_t digit_reverse(uint64_t k, uint32_t P, uint32_t H) {
  uint64_t r = 0;
  for (uint32_t h = 0; h < H; ++h) {
    r = r * P + k % P;
    k /= P;
  }
  return r;
}

DrawLooseShape draw_loose_shape(uint32_t K, uint32_t P, const Field& f) {
  if (P < 2) user_error("radix P = {} is invalid: P >= 2", P);
  DrawLooseShape s;
  s.K = K;
  s.P = P;
  const uint64_t g = std::gcd<uint64_t>(K, f.size() - 1);
  while (g % (static_cast<uint64_t>(s.Z) * P) == 0) {
    s.Z *= P;
    ++s.H;
  }
  s.M = K / s.Z;
  return s;
}

std::vector<Elem> structured_points(const Field& f, const VandermondeStructure& s) {
  const DrawLooseShape& sh = s.shape;
  std::vector<Elem> bpow(sh.Z);
  for (uint32_t e = 0; e < sh.Z; ++e) bpow[e] = e == 0 ? 1 : f.mul(bpow[e - 1], s.beta);
  std::vector<Elem> pts(sh.K);
  for (uint32_t i = 0; i < sh.M; ++i)
    for (uint32_t j = 0; j < sh.Z; ++j)
      pts[j + sh.Z * i] = f.mul(s.alpha[i], bpow[digit_reverse(j, sh.P, sh.H)]);
  return pts;
}

std::optional<VandermondeStructure> detect_structure(const Field& f, const std::vector<Elem>& points, uint32_t P,
                                                     bool allow_permutation, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<VandermondeStructure> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  const uint32_t K = static_cast<uint32_t>(points.size());
  const uint64_t q1 = f.size() - 1;
  VandermondeStructure s;
  s.shape = draw_loose_shape(K, P, f);
  const DrawLooseShape& sh = s.shape;
  if (sh.H == 0)
    return fail(fmt::format("radix P = {} does not divide gcd(K, q-1) = gcd({}, {}) = {}", P, K, q1,
                            std::gcd<uint64_t>(K, q1)));
  for (uint32_t k = 0; k < K; ++k) {
    if (!f.valid(points[k])) return fail(fmt::format("point {} = {} is not an element of {}", k, points[k], f.name()));
    if (points[k] == 0) return fail(fmt::format("point {} is 0 (draw-and-loose points are non-zero)", k));
  }
  // Canonical order: α_i = points[Z·i] (rev(0) = 0) and β = the point of
  // j = P^{H−1} (rev = 1) over α_0.
  auto distinct_powers = [&](const std::vector<Elem>& alpha) {
    std::vector<Elem> az;
    for (Elem a : alpha) az.push_back(f.pow(a, sh.Z));
    std::sort(az.begin(), az.end());
    return std::adjacent_find(az.begin(), az.end()) == az.end();
  };
  std::string canon_why;
  {
    s.alpha.resize(sh.M);
    for (uint32_t i = 0; i < sh.M; ++i) s.alpha[i] = points[sh.Z * i];
    uint32_t p1 = 1;
    for (uint32_t h = 1; h < sh.H; ++h) p1 *= P;
    s.beta = f.div(points[p1], s.alpha[0]);
    if (f.order(s.beta) != sh.Z) {
      canon_why = fmt::format("point {} / point 0 = {} has order {}, not Z = {}", p1, s.beta, f.order(s.beta), sh.Z);
    } else {
      const std::vector<Elem> want = structured_points(f, s);
      for (uint32_t k = 0; k < K && canon_why.empty(); ++k)
        if (want[k] != points[k])
          canon_why = fmt::format("point {} = {} is not alpha_{}*beta^rev({}) = {}", k, points[k], k / sh.Z, k % sh.Z,
                                  want[k]);
      if (canon_why.empty() && !distinct_powers(s.alpha))
        canon_why = fmt::format("two row factors alpha_i have the same Z-th power (Z = {}): points repeat", sh.Z);
    }
    if (canon_why.empty()) return s;
  }
  if (!allow_permutation) return fail(canon_why);

  // Up to a column permutation: group the points by their Z-th power (the
  // coset of the Z-th roots of unity they lie in); each of M cosets must be
  // complete.
  s.beta = f.pow(f.generator(), q1 / sh.Z);
  std::unordered_map<Elem, uint32_t> log_beta;
  for (uint32_t e = 0, v = 1; e < sh.Z; ++e, v = f.mul(v, s.beta)) log_beta[v] = e;
  std::unordered_map<Elem, uint32_t> coset;
  s.alpha.clear();
  s.position.assign(K, 0);
  std::vector<int64_t> owner(K, -1);
  for (uint32_t k = 0; k < K; ++k) {
    const Elem key = f.pow(points[k], sh.Z);
    auto [it, fresh] = coset.emplace(key, static_cast<uint32_t>(s.alpha.size()));
    if (fresh) {
      if (s.alpha.size() == sh.M)
        return fail(fmt::format("the points lie in more than M = {} cosets of the Z = {} roots of unity (canonical "
                                "order fails too: {})",
                                sh.M, sh.Z, canon_why));
      s.alpha.push_back(points[k]);
    }
    const uint32_t i = it->second;
    const uint32_t e = log_beta.at(f.div(points[k], s.alpha[i]));
    const uint32_t pos = static_cast<uint32_t>(digit_reverse(e, P, sh.H)) + sh.Z * i;
    if (owner[pos] >= 0)
      return fail(fmt::format("points {} and {} are both {}: the points must be distinct", owner[pos], k, points[k]));
    owner[pos] = k;
    s.position[k] = pos;
  }
  return s;
}

std::vector<VandermondeStructure> detect_all(const Field& f, const std::vector<Elem>& points, bool allow_permutation) {
  std::vector<VandermondeStructure> out;
  const uint64_t g = std::gcd<uint64_t>(points.size(), f.size() - 1);
  for (uint64_t P = 2; P <= g; ++P)
    if (g % P == 0)
      if (auto s = detect_structure(f, points, static_cast<uint32_t>(P), allow_permutation)) out.push_back(*s);
  return out;
}

std::vector<Elem> dft_points(const Field& f, uint32_t K, uint32_t P) {
  if (P < 2) user_error("dft needs a radix P >= 2, got P = {}", P);
  uint32_t H = 0;
  uint64_t pw = 1;
  while (pw < K) {
    pw *= P;
    ++H;
  }
  if (pw != K) user_error("dft needs K = P^H: K = {} is not a power of P = {}", K, P);
  if ((f.size() - 1) % K != 0) user_error("dft needs K | q-1: K = {}, q-1 = {}", K, f.size() - 1);
  VandermondeStructure s;
  s.shape = draw_loose_shape(K, P, f);
  COLLPLAN_ASSERT(s.shape.M == 1 && s.shape.H == H, "dft_points: K = P^H | q-1 must give M = 1");
  s.beta = f.root_of_unity(K);
  s.alpha = {1};
  return structured_points(f, s);
}

std::vector<Elem> draw_loose_points(const Field& f, uint32_t K, uint32_t P, const std::vector<uint64_t>& phi,
                                    uint64_t phi_offset) {
  const uint64_t q1 = f.size() - 1;
  if (K > q1) user_error("draw-and-loose needs K <= q-1 distinct non-zero points: K = {}, q-1 = {}", K, q1);
  VandermondeStructure s;
  s.shape = draw_loose_shape(K, P, f);
  const DrawLooseShape& sh = s.shape;
  if (sh.H == 0)
    user_error("draw-and-loose with radix P = {} needs P | gcd(K, q-1): gcd({}, {}) = {}", P, K, q1,
               std::gcd<uint64_t>(K, q1));
  const uint64_t limit = q1 / sh.Z;
  std::vector<uint64_t> ph = phi;
  if (ph.empty())
    for (uint32_t i = 0; i < sh.M; ++i) ph.push_back(phi_offset + i);
  if (ph.size() != sh.M)
    user_error("draw-and-loose with K = {}, Z = {} needs M = {} exponents phi, got {}", K, sh.Z, sh.M, ph.size());
  std::vector<bool> used(limit, false);
  for (size_t i = 0; i < ph.size(); ++i) {
    if (ph[i] >= limit)
      user_error("phi[{}] = {} is out of range (valid: 0..(q-1)/Z-1 = {})", i, ph[i], limit - 1);
    if (used[ph[i]]) user_error("phi[{}] = {} repeats an earlier exponent: phi must be injective", i, ph[i]);
    used[ph[i]] = true;
  }
  const Elem g = f.generator();
  s.beta = f.pow(g, limit);
  for (uint64_t e : ph) s.alpha.push_back(f.pow(g, e));
  return structured_points(f, s);
}

std::vector<Elem> disjoint_point_sets(const Field& f, uint32_t K, uint32_t P, uint32_t sets) {
  if (static_cast<uint64_t>(sets) * K > f.size() - 1)
    user_error("{} disjoint sets of K = {} non-zero points need {}*K <= q-1 = {}", sets, K, sets, f.size() - 1);
  std::vector<Elem> out;
  const DrawLooseShape sh = draw_loose_shape(K, P, f);
  for (uint32_t t = 0; t < sets; ++t) {
    std::vector<Elem> pts = draw_loose_points(f, K, P, {}, static_cast<uint64_t>(t) * sh.M);
    out.insert(out.end(), pts.begin(), pts.end());
  }
  return out;
}

Matrix vandermonde_matrix(const Field& f, const std::vector<Elem>& x) {
  check_distinct(f, x, "Vandermonde point");
  const uint32_t K = static_cast<uint32_t>(x.size());
  Matrix m = Matrix::zeros(K, K);
  for (uint32_t j = 0; j < K; ++j) {
    Elem v = 1;
    for (uint32_t i = 0; i < K; ++i, v = f.mul(v, x[j])) m.at(i, j) = v;
  }
  return m;
}

Matrix vandermonde_inverse(const Field& f, const std::vector<Elem>& x) {
  check_distinct(f, x, "Vandermonde point");
  const uint32_t K = static_cast<uint32_t>(x.size());
  // m(z) = Π (z − x_l), coefficients low to high.
  std::vector<Elem> m(K + 1, 0);
  m[0] = 1;
  for (uint32_t l = 0; l < K; ++l) {
    for (uint32_t i = l + 1; i > 0; --i) m[i] = f.sub(m[i - 1], f.mul(x[l], m[i]));
    m[0] = f.neg(f.mul(x[l], m[0]));
  }
  // Row k = the coefficients of L_k(z) = (m(z)/(z − x_k)) / Π_{l≠k}(x_k − x_l).
  Matrix w = Matrix::zeros(K, K);
  std::vector<Elem> qk(K), denom(K);
  for (uint32_t k = 0; k < K; ++k) {
    qk[K - 1] = m[K];
    for (uint32_t i = K - 1; i > 0; --i) qk[i - 1] = f.add(m[i], f.mul(x[k], qk[i]));
    Elem d = 0;  // qk(x_k) = Π_{l≠k}(x_k − x_l), by Horner
    for (uint32_t i = K; i-- > 0;) d = f.add(f.mul(d, x[k]), qk[i]);
    denom[k] = d;
    for (uint32_t r = 0; r < K; ++r) w.at(k, r) = qk[r];
  }
  batch_inverse(f, denom);
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t r = 0; r < K; ++r) w.at(k, r) = f.mul(w.at(k, r), denom[k]);
  return w;
}

Matrix lagrange_matrix(const Field& f, const std::vector<Elem>& omega, const std::vector<Elem>& alpha) {
  check_distinct(f, omega, "Lagrange point omega");
  check_distinct(f, alpha, "Lagrange point alpha");
  const uint32_t K = static_cast<uint32_t>(omega.size());
  if (alpha.size() != K) user_error("lagrange needs as many alpha points as omega points: {} vs {}", alpha.size(), K);
  const std::vector<Elem> w = lagrange_denominators(f, omega);
  Matrix a = Matrix::zeros(K, K);
  std::vector<Elem> den(K);
  for (uint32_t j = 0; j < K; ++j) {
    // L_i(α_j) = Π_l(α_j − ω_l) / ((α_j − ω_i)·w_i), or δ when α_j = ω_t.
    int64_t hit = -1;
    for (uint32_t i = 0; i < K; ++i) {
      den[i] = f.sub(alpha[j], omega[i]);
      if (den[i] == 0) hit = i;
    }
    if (hit >= 0) {
      a.at(static_cast<uint32_t>(hit), j) = 1;
      continue;
    }
    Elem prod = 1;
    for (uint32_t i = 0; i < K; ++i) {
      prod = f.mul(prod, den[i]);
      den[i] = f.mul(den[i], w[i]);
    }
    batch_inverse(f, den);
    for (uint32_t i = 0; i < K; ++i) a.at(i, j) = f.mul(prod, den[i]);
  }
  return a;
}

void check_cauchy_params(const Field& f, const std::vector<Elem>& x, const std::vector<Elem>& y,
                         const std::vector<Elem>& c, const std::vector<Elem>& d) {
  if (c.size() != x.size()) user_error("cauchy needs one c per x: {} c for {} x", c.size(), x.size());
  if (d.size() != y.size()) user_error("cauchy needs one d per y: {} d for {} y", d.size(), y.size());
  check_distinct(f, x, "Cauchy point x");
  check_distinct(f, y, "Cauchy point y");
  std::unordered_map<Elem, size_t> xs;
  for (size_t i = 0; i < x.size(); ++i) xs[x[i]] = i;
  for (size_t j = 0; j < y.size(); ++j)
    if (auto it = xs.find(y[j]); it != xs.end())
      user_error("x_{} = y_{} = {}: the x and y points must be disjoint", it->second, j, y[j]);
  check_nonzero(f, c, "Cauchy factor c");
  check_nonzero(f, d, "Cauchy factor d");
}

Matrix cauchy_matrix(const Field& f, const std::vector<Elem>& x, const std::vector<Elem>& y,
                     const std::vector<Elem>& c, const std::vector<Elem>& d) {
  check_cauchy_params(f, x, y, c, d);
  const uint32_t R = static_cast<uint32_t>(x.size()), C = static_cast<uint32_t>(y.size());
  Matrix m = Matrix::zeros(R, C);
  std::vector<Elem> den(C);
  for (uint32_t i = 0; i < R; ++i) {
    for (uint32_t j = 0; j < C; ++j) den[j] = f.sub(x[i], y[j]);
    batch_inverse(f, den);
    for (uint32_t j = 0; j < C; ++j) m.at(i, j) = f.mul(f.mul(c[i], d[j]), den[j]);
  }
  return m;
}

CauchyFactors cauchy_factors(const Field& f, const std::vector<Elem>& x, const std::vector<Elem>& y,
                             const std::vector<Elem>& c, const std::vector<Elem>& d) {
  check_cauchy_params(f, x, y, c, d);
  if (x.size() != y.size()) user_error("the Cauchy factorisation needs a square matrix: {} x {}", x.size(), y.size());
  CauchyFactors out;
  const std::vector<Elem> w = lagrange_denominators(f, x);
  for (size_t i = 0; i < x.size(); ++i) out.d1.push_back(f.neg(f.mul(c[i], w[i])));
  for (size_t j = 0; j < y.size(); ++j) out.d2.push_back(f.div(d[j], node_product(f, y[j], x)));
  return out;
}

Matrix RsSystematic::generator() const {
  Matrix g = Matrix::zeros(K, N);
  for (uint32_t i = 0; i < K; ++i) {
    g.at(i, i) = 1;
    for (uint32_t j = 0; j < N - K; ++j) g.at(i, K + j) = A.at(i, j);
  }
  return g;
}

RsSystematic rs_systematic(uint32_t N, uint32_t K, const Field& f, std::vector<Elem> x, std::vector<Elem> y,
                           std::vector<Elem> v, std::vector<Elem> v2) {
  if (K < 1 || N <= K) user_error("a GRS [N, K] code needs 1 <= K < N, got N = {}, K = {}", N, K);
  if (x.size() != K) user_error("GRS [{}, {}] needs K = {} points x, got {}", N, K, K, x.size());
  if (y.size() != N - K) user_error("GRS [{}, {}] needs N-K = {} points y, got {}", N, K, N - K, y.size());
  if (v.empty()) v = ones(K);
  if (v2.empty()) v2 = ones(N - K);
  if (v.size() != K) user_error("GRS [{}, {}] needs K = {} column multipliers v, got {}", N, K, K, v.size());
  if (v2.size() != N - K)
    user_error("GRS [{}, {}] needs N-K = {} column multipliers v', got {}", N, K, N - K, v2.size());
  check_nonzero(f, v, "GRS column multiplier v");
  check_nonzero(f, v2, "GRS column multiplier v'");
  std::vector<Elem> all = x;
  all.insert(all.end(), y.begin(), y.end());
  check_distinct(f, all, "GRS evaluation point (x then y)");
  RsSystematic rs;
  rs.N = N;
  rs.K = K;
  const std::vector<Elem> w = lagrange_denominators(f, x);
  for (uint32_t i = 0; i < K; ++i) rs.c.push_back(f.inv(f.mul(v[i], w[i])));
  for (uint32_t j = 0; j < N - K; ++j) rs.d.push_back(f.neg(f.mul(v2[j], node_product(f, y[j], x))));
  rs.A = cauchy_matrix(f, x, y, rs.c, rs.d);
  rs.x = std::move(x);
  rs.y = std::move(y);
  rs.v = std::move(v);
  rs.v2 = std::move(v2);
  return rs;
}

Matrix grs_generator(const Field& f, uint32_t K, const std::vector<Elem>& x, const std::vector<Elem>& y,
                     const std::vector<Elem>& v, const std::vector<Elem>& v2) {
  const uint32_t N = static_cast<uint32_t>(x.size() + y.size());
  Matrix g = Matrix::zeros(K, N);
  for (uint32_t k = 0; k < N; ++k) {
    const Elem pt = k < x.size() ? x[k] : y[k - x.size()];
    const Elem mult = k < x.size() ? (v.empty() ? 1 : v[k]) : (v2.empty() ? 1 : v2[k - x.size()]);
    Elem pw = mult;
    for (uint32_t r = 0; r < K; ++r, pw = f.mul(pw, pt)) g.at(r, k) = pw;
  }
  return g;
}

}  // namespace collplan
