// Structured matrices (docs/structured-matrices.md): the matrix math against
// independent dense computations, and every structured generator's plans
// verified exactly against matrices this file builds itself, with C1 and C2
// equal to the formulas. Quick tier: a representative sample; slow tier: every
// applicable (K <= 256, p, P) over six fields.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>

#include "gen/prepare_shoot.h"
#include "gen/registry.h"
#include "gen/vandermonde_plans.h"
#include "ir/binary.h"
#include "json/json.h"
#include "matrix/matrix.h"
#include "matrix/structured.h"
#include "passes/compose.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "runtime/check/replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::build_with;
using test::kExact;
using test::log_ceil;
using test::slice;
using test::user_error_of;

namespace {

const passes::CostModel kUnit{};

// ---- independent dense references ------------------------------------------

// V[r][k] = x_k^r by repeated multiplication.
Matrix vand(const Field& f, const std::vector<Elem>& x) {
  Matrix m = Matrix::zeros(static_cast<uint32_t>(x.size()), static_cast<uint32_t>(x.size()));
  for (uint32_t k = 0; k < x.size(); ++k)
    for (uint32_t r = 0; r < x.size(); ++r) m.at(r, k) = f.pow(x[k], r);
  return m;
}

Matrix mul(const Field& f, const Matrix& a, const Matrix& b) {
  Matrix c = Matrix::zeros(a.rows, b.cols);
  for (uint32_t i = 0; i < a.rows; ++i)
    for (uint32_t l = 0; l < a.cols; ++l)
      for (uint32_t j = 0; j < b.cols; ++j) c.at(i, j) = f.add(c.at(i, j), f.mul(a.at(i, l), b.at(l, j)));
  return c;
}

// Gauss-Jordan elimination on the rows of m (rows <= cols): the reduced
// row-echelon form, whose left square block is I when it is invertible.
Matrix row_reduce(const Field& f, Matrix m) {
  for (uint32_t c = 0; c < m.rows; ++c) {
    uint32_t piv = c;
    while (piv < m.rows && m.at(piv, c) == 0) ++piv;
    REQUIRE(piv < m.rows);  // singular
    for (uint32_t j = 0; j < m.cols; ++j) std::swap(m.at(c, j), m.at(piv, j));
    const Elem inv = f.inv(m.at(c, c));
    for (uint32_t j = 0; j < m.cols; ++j) m.at(c, j) = f.mul(m.at(c, j), inv);
    for (uint32_t r = 0; r < m.rows; ++r) {
      if (r == c || m.at(r, c) == 0) continue;
      const Elem factor = m.at(r, c);
      for (uint32_t j = 0; j < m.cols; ++j) m.at(r, j) = f.sub(m.at(r, j), f.mul(factor, m.at(c, j)));
    }
  }
  return m;
}

Matrix inverse(const Field& f, const Matrix& m) {
  Matrix aug = Matrix::zeros(m.rows, 2 * m.cols);
  for (uint32_t i = 0; i < m.rows; ++i) {
    for (uint32_t j = 0; j < m.cols; ++j) aug.at(i, j) = m.at(i, j);
    aug.at(i, m.cols + i) = 1;
  }
  aug = row_reduce(f, aug);
  Matrix inv = Matrix::zeros(m.rows, m.cols);
  for (uint32_t i = 0; i < m.rows; ++i)
    for (uint32_t j = 0; j < m.cols; ++j) inv.at(i, j) = aug.at(i, m.cols + j);
  return inv;
}

Matrix identity(uint32_t n) {
  Matrix m = Matrix::zeros(n, n);
  for (uint32_t i = 0; i < n; ++i) m.at(i, i) = 1;
  return m;
}

// The matrix a structured spec denotes, built here from its points.
Matrix reference_matrix(const MatrixSpec& ms, const Field& f) {
  const uint32_t K = ms.rows;
  if (ms.family == "dft" || ms.family == "draw-loose" || ms.family == "vandermonde") return vand(f, ms.points);
  if (ms.family == "inverse-dft" || ms.family == "inverse-draw-loose") return inverse(f, vand(f, ms.points));
  if (ms.family == "lagrange") return mul(f, inverse(f, vand(f, slice(ms.points, 0, K))), vand(f, slice(ms.points, 1, K)));
  if (ms.family == "cauchy") {
    Matrix c = Matrix::zeros(K, K);
    for (uint32_t i = 0; i < K; ++i)
      for (uint32_t j = 0; j < K; ++j)
        c.at(i, j) = f.div(f.mul(ms.points[2 * K + i], ms.points[3 * K + j]), f.sub(ms.points[i], ms.points[K + j]));
    return c;
  }
  REQUIRE(ms.family == "rs-systematic");
  // The systematic form of G = [V(x)diag(v) | V(y)diag(v')] by elimination.
  Matrix g = Matrix::zeros(K, 2 * K);
  for (uint32_t k = 0; k < 2 * K; ++k)
    for (uint32_t r = 0; r < K; ++r) g.at(r, k) = f.mul(f.pow(ms.points[k], r), ms.points[2 * K + k]);
  g = row_reduce(f, g);
  Matrix a = Matrix::zeros(K, K);
  for (uint32_t i = 0; i < K; ++i)
    for (uint32_t j = 0; j < K; ++j) a.at(i, j) = g.at(i, K + j);
  return a;
}

// ---- cost formulas (docs/structured-matrices.md), computed here ----------

uint64_t psi(uint32_t n, uint32_t p) { return n <= 1 ? 0 : gen::prepare_shoot_shape(n, p).C2(); }

struct Expected {
  uint32_t C1;
  uint64_t C2;
};

Expected vandermonde_formula(const VandermondeStructure& s, uint32_t p) {
  const auto& sh = s.shape;
  Expected e{log_ceil(sh.M, p) + sh.H * log_ceil(sh.P, p), psi(sh.M, p) + sh.H * psi(sh.P, p)};
  if (s.permuted()) {
    ++e.C1;
    ++e.C2;
  }
  return e;
}

// ---- running a generator ----------------------------------------------------

// The plan verified exactly against its spec, whose matrix must equal the
// one built here (so a wrong family matrix cannot hide a wrong plan).
void verify_both(const ir::Plan& plan, const Matrix& ref) {
  REQUIRE(materialize(plan.spec.matrix, plan.spec.field) == ref);
  passes::verify(plan, kExact);
}

const std::vector<uint32_t> radices(const Field& f, uint32_t K) {
  std::vector<uint32_t> out;
  const uint64_t g = std::gcd<uint64_t>(K, f.size() - 1);
  for (uint64_t P = 2; P <= g; ++P)
    if (g % P == 0) out.push_back(static_cast<uint32_t>(P));
  return out;
}

// Every Vandermonde-type generator on draw-and-loose points of radix P,
// p = 1..3: forward and inverse, DFT when M = 1. Returns the number of plans
// checked.
int check_vandermonde_family(const Field& f, uint32_t K, uint32_t P) {
  int n = 0;
  const DrawLooseShape sh = draw_loose_shape(K, P, f);
  for (bool inv : {false, true}) {
    const bool dft = sh.M == 1;
    const MatrixSpec ms = dft ? matrix_dft(K, P, f, inv) : matrix_draw_loose(K, P, {}, f, inv);
    const Matrix ref = reference_matrix(ms, f);
    REQUIRE(materialize(ms, f) == ref);
    for (uint32_t p = 1; p <= 3; ++p)
    for (const char* name : {"dft", "draw-loose"}) {
      const Spec s = make_encode_spec(K, p, 1, f, ms);
      if (std::string(name) == "dft" && !dft) continue;
      const std::string full = inv ? std::string("inverse-") + name : name;
      INFO(f.name() << " K=" << K << " p=" << p << " P=" << P << " " << full);
      const ir::Plan plan = build_with(full, s);
      verify_both(plan, ref);
      const auto st = detect_structure(f, ms.points, P, false);
      REQUIRE(st);
      const Expected e = vandermonde_formula(*st, p);
      // The radix read off the points may differ from P when another radix
      // fits the same points more cheaply; the plan names the one it used.
      const auto used = gen::best_structure(f, ms.points, p, kUnit, false, dft, nullptr);
      REQUIRE(used);
      const Expected eu = vandermonde_formula(*used, p);
      const auto c = passes::cost(plan);
      CHECK(c.C1 == eu.C1);
      CHECK(c.C2 == eu.C2);
      if (used->shape.P == P) {
        CHECK(c.C1 == e.C1);
        CHECK(c.C2 == e.C2);
      }
      if (P == p + 1 && dft) {  // strictly optimal: C1 = C2 = H
        CHECK(eu.C1 == sh.H);
        CHECK(eu.C2 == sh.H);
      }
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST_CASE("structured: Vandermonde inverse, Lagrange, Cauchy and GRS against elimination", "[structured]") {
  for (const Field& f : {Field::gf256(), Field::prime(257), Field::prime(7681)})
    for (uint32_t K : {2u, 3u, 5u, 8u, 15u}) {
      INFO(f.name() << " K=" << K);
      SplitMix64 rng(K);
      std::vector<Elem> pts;  // 4K distinct non-zero points
      while (pts.size() < 4 * K) {
        const Elem e = rng.nonzero(f);
        if (std::find(pts.begin(), pts.end(), e) == pts.end()) pts.push_back(e);
      }
      const std::vector<Elem> x = slice(pts, 0, K), y = slice(pts, 1, K), c = slice(pts, 2, K), d = slice(pts, 3, K);
      CHECK(vandermonde_inverse(f, x) == inverse(f, vand(f, x)));
      CHECK(mul(f, vandermonde_inverse(f, x), vandermonde_matrix(f, x)) == identity(K));
      CHECK(lagrange_matrix(f, x, y) == mul(f, inverse(f, vand(f, x)), vand(f, y)));
      const MatrixSpec cs = matrix_four_lists("cauchy", {x, y, c, d}, f);
      CHECK(materialize(cs, f) == reference_matrix(cs, f));
      // C = D1·V(x)^{-1}·V(y)·D2.
      const CauchyFactors fac = cauchy_factors(f, x, y, c, d);
      Matrix prod = lagrange_matrix(f, x, y);
      for (uint32_t i = 0; i < K; ++i)
        for (uint32_t j = 0; j < K; ++j) prod.at(i, j) = f.mul(f.mul(fac.d1[i], prod.at(i, j)), fac.d2[j]);
      CHECK(prod == materialize(cs, f));
      const MatrixSpec rs = matrix_four_lists("rs-systematic", {x, y, c, d}, f);
      CHECK(materialize(rs, f) == reference_matrix(rs, f));
      // General [N, K] (N − K != K), and [I | A] spans the same code as G.
      const RsSystematic code = rs_systematic(2 * K + 1, K, f, x, std::vector<Elem>(pts.begin() + K, pts.begin() + 2 * K + 1));
      CHECK(code.A.cols == K + 1);
      CHECK(code.generator() == row_reduce(f, grs_generator(f, K, code.x, code.y, code.v, code.v2)));
    }
}

TEST_CASE("structured: points, detection and digit reversal", "[structured]") {
  CHECK(digit_reverse(1, 2, 4) == 8);
  CHECK(digit_reverse(5, 3, 2) == 7);  // 12 (base 3) -> 21
  const Field f = Field::prime(257);
  // dft: processor k gets beta^rev(k), beta of order K.
  const std::vector<Elem> d = dft_points(f, 16, 2);
  const Elem beta = d[8];  // rev(8) = 1
  CHECK(f.order(beta) == 16);
  for (uint32_t k = 0; k < 16; ++k) CHECK(d[k] == f.pow(beta, digit_reverse(k, 2, 4)));
  // draw-loose: alpha_i = g^phi(i), point of j + Z*i = alpha_i*beta^rev(j).
  const Field g7681 = Field::prime(7681);  // q-1 = 2^9*3*5
  const std::vector<Elem> pts = draw_loose_points(g7681, 24, 2, {5, 0, 7});
  const auto s = detect_structure(g7681, pts, 2, false);
  REQUIRE(s);
  CHECK(s->shape.Z == 8);
  CHECK(s->shape.M == 3);
  CHECK(s->alpha[0] == g7681.pow(g7681.generator(), 5));
  // A column permutation is found only when allowed, and then costs a step.
  std::vector<Elem> shuffled = pts;
  std::rotate(shuffled.begin(), shuffled.begin() + 5, shuffled.end());
  CHECK_FALSE(detect_structure(g7681, shuffled, 2, false));
  const auto sp = detect_structure(g7681, shuffled, 2, true);
  REQUIRE(sp);
  REQUIRE(sp->permuted());
  for (uint32_t k = 0; k < 24; ++k) CHECK(structured_points(g7681, *sp)[sp->position[k]] == shuffled[k]);
  // Points that are no union of cosets have no structure.
  std::vector<Elem> plain(24);
  std::iota(plain.begin(), plain.end(), 1u);
  std::string why;
  CHECK_FALSE(detect_structure(g7681, plain, 2, true, &why));
  CHECK(why.find("cosets") != std::string::npos);
}

TEST_CASE("structured generators: a sample of every family, exact, costs equal the formulas", "[structured]") {
  int plans = 0;
  struct Case {
    Field f;
    uint32_t K;
  };
  const std::vector<Case> cases = {{Field::gf256(), 15},        {Field::gf256(), 17},      {Field::prime(257), 16},
                                   {Field::prime(257), 64},     {Field::prime(7681), 24},  {Field::prime(7681), 45},
                                   {Field::prime(12289), 48},   {Field::prime(65537), 32}, {Field::gf65536(), 15},
                                   {Field::gf65536(), 51}};
  for (const Case& c : cases)
    for (uint32_t P : radices(c.f, c.K)) plans += check_vandermonde_family(c.f, c.K, P);
  CHECK(plans > 100);
}

TEST_CASE("structured: inverse composed with forward is the identity", "[structured]") {
  for (const Field& f : {Field::prime(257), Field::prime(7681), Field::gf256()})
    for (uint32_t K : {15u, 16u, 24u})
      for (uint32_t P : radices(f, K))
        for (uint32_t p = 1; p <= 2; ++p) {
          if (K > f.size() - 1) continue;
          INFO(f.name() << " K=" << K << " P=" << P << " p=" << p);
          const bool dft = draw_loose_shape(K, P, f).M == 1;
          const std::string name = dft ? "dft" : "draw-loose";
          const auto fwd = dft ? matrix_dft(K, P, f) : matrix_draw_loose(K, P, {}, f);
          const auto inv = dft ? matrix_dft(K, P, f, true) : matrix_draw_loose(K, P, {}, f, true);
          const ir::Plan a = build_with(name, make_encode_spec(K, p, 1, f, fwd));
          const ir::Plan b = build_with("inverse-" + name, make_encode_spec(K, p, 1, f, inv));
          for (const ir::Plan& whole : {passes::compose_sequence(a, b), passes::compose_sequence(b, a)}) {
            CHECK(materialize(whole.spec.matrix, f) == identity(K));
            ir::Plan checked = whole;
            checked.spec.matrix = matrix_identity(K, f);
            passes::verify(checked, kExact);
          }
        }
}

TEST_CASE("structured: Lagrange, Cauchy and systematic RS plans equal the dense matrices", "[structured]") {
  for (const Field& f : {Field::prime(257), Field::prime(7681), Field::gf256(), Field::gf65536()})
    for (uint32_t K : {8u, 15u, 16u, 24u, 51u})
      for (uint32_t p = 1; p <= 3; ++p) {
        if (2ull * K > f.size() - 1 || std::gcd<uint64_t>(K, f.size() - 1) < 2) continue;
        const uint32_t P = gen::default_radix(f, K, p, false);
        const std::vector<Elem> sets = disjoint_point_sets(f, K, P, 2);
        const std::vector<Elem> a = slice(sets, 0, K), b = slice(sets, 1, K);
        SplitMix64 rng(K * 10 + p);
        std::vector<Elem> c(K), d(K);
        for (Elem& e : c) e = rng.nonzero(f);
        for (Elem& e : d) e = rng.nonzero(f);
        const std::vector<std::pair<std::string, MatrixSpec>> specs = {
            {"lagrange", matrix_lagrange(a, b, f)},
            {"cauchy", matrix_four_lists("cauchy", {a, b, c, d}, f)},
            {"cauchy", matrix_four_lists("rs-systematic", {a, b, c, d}, f)}};
        for (const auto& [name, ms] : specs) {
          INFO(f.name() << " K=" << K << " p=" << p << " P=" << P << " " << ms.family);
          const ir::Plan plan = build_with(name, make_encode_spec(K, p, 1, f, ms));
          verify_both(plan, reference_matrix(ms, f));
          const auto sa = gen::best_structure(f, a, p, kUnit, true, false, nullptr);
          const auto sb = gen::best_structure(f, b, p, kUnit, true, false, nullptr);
          const Expected ea = vandermonde_formula(*sa, p), eb = vandermonde_formula(*sb, p);
          const auto cost = passes::cost(plan);
          CHECK(cost.C1 == ea.C1 + eb.C1);
          CHECK(cost.C2 == ea.C2 + eb.C2);
        }
      }
}

TEST_CASE("structured: user-given Vandermonde points, in order, permuted, or unstructured", "[structured]") {
  const Field f = Field::prime(7681);
  const uint32_t K = 24, p = 1;
  std::vector<Elem> pts = draw_loose_points(f, K, 2, {});
  const auto& dl = gen::find_generator("draw-loose");
  // In canonical order: draw-and-loose at the formula's cost.
  {
    const Spec s = make_encode_spec(K, p, 1, f, matrix_vandermonde(pts, f));
    const ir::Plan plan = build_with("draw-loose", s);
    verify_both(plan, vand(f, pts));
    CHECK(passes::cost(plan).C1 == 5);  // ceil(log2 3) + 3
  }
  // Shuffled: one more step for the permutation round, still exact.
  SplitMix64 rng(3);
  for (uint32_t i = K; i > 1; --i) std::swap(pts[i - 1], pts[rng.next() % i]);
  {
    const Spec s = make_encode_spec(K, p, 1, f, matrix_vandermonde(pts, f));
    const ir::Plan plan = build_with("draw-loose", s);
    verify_both(plan, vand(f, pts));
    CHECK(passes::cost(plan).C1 == 6);
    CHECK(plan.spec.algorithm.find("permuted") != std::string::npos);
  }
  // Lagrange on shuffled point sets: the interpolation starts with the
  // inverse permutation step, the evaluation ends with the forward one.
  {
    std::vector<Elem> sets = disjoint_point_sets(f, K, 2, 2);
    std::vector<Elem> omega = slice(sets, 0, K), alpha = slice(sets, 1, K);
    for (uint32_t i = K; i > 1; --i) std::swap(omega[i - 1], omega[rng.next() % i]);
    for (uint32_t i = K; i > 1; --i) std::swap(alpha[i - 1], alpha[rng.next() % i]);
    const MatrixSpec ms = matrix_lagrange(omega, alpha, f);
    const ir::Plan plan = build_with("lagrange", make_encode_spec(K, p, 1, f, ms));
    verify_both(plan, reference_matrix(ms, f));
    CHECK(passes::cost(plan).C1 == 12);  // (5 + 1) twice
  }
  // Unstructured: the generator says why, auto falls back to prepare-and-shoot.
  std::vector<Elem> plain(K);
  std::iota(plain.begin(), plain.end(), 1u);
  const Spec s = make_encode_spec(K, p, 1, f, matrix_vandermonde(plain, f));
  CHECK(dl.why_not(s, kUnit).find("draw-loose needs points alpha_i*beta^rev(j) up to a column permutation") == 0);
  pipeline::CompileOptions opt;
  const auto res = pipeline::compile(s, opt);
  CHECK(res.plan.spec.algorithm.find("draw-loose") == std::string::npos);
  CHECK(user_error_of([&] {
          pipeline::CompileOptions o;
          o.algorithm = "draw-loose";
          pipeline::compile(s, o);
        }).find("algorithm 'draw-loose' cannot compute this spec: draw-loose needs points") == 0);
}

TEST_CASE("structured: auto picks a structured generator when cheaper, and the pipeline keeps it exact",
          "[structured]") {
  const Field f = Field::prime(65537);
  const Spec s = make_encode_spec(64, 1, 1, f, matrix_dft(64, 2, f));
  pipeline::CompileOptions opt;
  const auto res = pipeline::compile(s, opt);
  CHECK(res.plan.spec.algorithm == "dft P=2");
  CHECK(res.cost.C1 == 6);
  CHECK(res.cost.C2 == 6);
  // The candidates: every encode generator, structured ones with reasons.
  const auto cands = gen::candidates(s, opt.cost_model);
  bool saw_lagrange = false;
  for (const auto& c : cands)
    if (c.generator->name == "lagrange") {
      saw_lagrange = true;
      CHECK(c.why_not == "lagrange needs a matrix of family lagrange, got dft");
    }
  CHECK(saw_lagrange);
}

TEST_CASE("structured: plans keep their family and points through the binary and JSON codecs", "[structured]") {
  const Field f = Field::prime(7681);
  const std::vector<Elem> sets = disjoint_point_sets(f, 24, 2, 2);
  const std::vector<Elem> a = slice(sets, 0, 24), b = slice(sets, 1, 24);
  for (const auto& [name, ms] : std::vector<std::pair<std::string, MatrixSpec>>{
           {"draw-loose", matrix_draw_loose(24, 2, {3, 1, 4}, f)},
           {"lagrange", matrix_lagrange(a, b, f)},
           {"cauchy", matrix_four_lists("rs-systematic", {a, b, std::vector<Elem>(24, 2), std::vector<Elem>(24, 3)}, f)}}) {
    INFO(ms.family);
    const ir::Plan plan = build_with(name, make_encode_spec(24, 2, 1, f, ms));
    const std::vector<uint8_t> bytes = ir::encode_binary(plan);
    const ir::Plan back = ir::decode_binary(bytes.data(), bytes.size());
    CHECK(back == plan);
    CHECK(ir::from_json(ir::to_json(plan, false)) == plan);
    passes::verify(back, kExact);
  }
}

TEST_CASE("structured: each violated precondition gets its own message", "[structured][errors]") {
  const Field g = Field::gf256(), f = Field::prime(257);
  CHECK(user_error_of([&] { dft_points(g, 12, 2); }) == "dft needs K = P^H: K = 12 is not a power of P = 2");
  CHECK(user_error_of([&] { dft_points(g, 16, 2); }) == "dft needs K | q-1: K = 16, q-1 = 255");
  CHECK(user_error_of([&] { dft_points(f, 16, 1); }) == "dft needs a radix P >= 2, got P = 1");
  CHECK(user_error_of([&] { draw_loose_points(g, 16, 2, {}); }) ==
        "draw-and-loose with radix P = 2 needs P | gcd(K, q-1): gcd(16, 255) = 1");
  CHECK(user_error_of([&] { draw_loose_points(f, 257, 2, {}); }) ==
        "draw-and-loose needs K <= q-1 distinct non-zero points: K = 257, q-1 = 256");
  CHECK(user_error_of([&] { draw_loose_points(Field::prime(7681), 24, 2, {0, 1}); }) ==
        "draw-and-loose with K = 24, Z = 8 needs M = 3 exponents phi, got 2");
  CHECK(user_error_of([&] { draw_loose_points(Field::prime(7681), 24, 2, {0, 1, 960}); }) ==
        "phi[2] = 960 is out of range (valid: 0..(q-1)/Z-1 = 959)");
  CHECK(user_error_of([&] { draw_loose_points(Field::prime(7681), 24, 2, {0, 1, 1}); }) ==
        "phi[2] = 1 repeats an earlier exponent: phi must be injective");
  CHECK(user_error_of([&] { disjoint_point_sets(f, 200, 2, 2); }) ==
        "2 disjoint sets of K = 200 non-zero points need 2*K <= q-1 = 256");
  CHECK(user_error_of([&] { cauchy_matrix(f, {1, 2}, {2, 3}, {1, 1}, {1, 1}); }) ==
        "x_1 = y_0 = 2: the x and y points must be disjoint");
  CHECK(user_error_of([&] { cauchy_matrix(f, {1, 2}, {3, 4}, {1, 0}, {1, 1}); }) ==
        "Cauchy factor c 1 is 0: it must be non-zero");
  CHECK(user_error_of([&] { cauchy_matrix(f, {1, 1}, {3, 4}, {1, 1}, {1, 1}); }) ==
        "Cauchy point x 0 and 1 are both 1: the points must be distinct");
  CHECK(user_error_of([&] { rs_systematic(4, 4, f, {1, 2, 3, 4}, {}); }) ==
        "a GRS [N, K] code needs 1 <= K < N, got N = 4, K = 4");
  CHECK(user_error_of([&] { rs_systematic(4, 2, f, {1, 2}, {2, 5}); }) ==
        "GRS evaluation point (x then y) 1 and 2 are both 2: the points must be distinct");
  CHECK(user_error_of([&] { vandermonde_inverse(f, {3, 3}); }) ==
        "Vandermonde point 0 and 1 are both 3: the points must be distinct");
  // A stored dft family whose points lost their structure is refused.
  std::vector<Elem> pts = dft_points(f, 16, 2);
  std::swap(pts[1], pts[2]);
  CHECK(user_error_of([&] { matrix_with_points("dft", 16, pts, f); }).find("dft matrix: the points are not") == 0);
  // Generators: wrong family, lambda > 1, K not dividing q-1.
  const Spec dft16 = make_encode_spec(16, 1, 1, f, matrix_dft(16, 2, f));
  Spec late = dft16;
  late.lambda = 2;
  CHECK(gen::find_generator("dft").why_not(late, kUnit) ==
        "dft needs lambda = 1 (the synchronous model), got lambda = 2");
  CHECK(gen::find_generator("inverse-dft").why_not(dft16, kUnit) ==
        "inverse-dft needs a matrix of family inverse-dft, inverse-draw-loose, got dft");
  std::vector<Elem> v12(12);
  std::iota(v12.begin(), v12.end(), 1u);
  const Spec van12 = make_encode_spec(12, 1, 1, g, matrix_vandermonde(v12, g));
  CHECK(gen::find_generator("dft").why_not(van12, kUnit) == "dft needs K | q-1: K = 12, q-1 = 255");
  CHECK(user_error_of([&] {
          pipeline::CompileOptions o;
          o.algorithm = "dft";
          pipeline::compile(van12, o);
        }) == "algorithm 'dft' cannot compute this spec: dft needs K | q-1: K = 12, q-1 = 255");
}

// ---- slow tier: every applicable (K <= 256, p, P) ----------------------------

TEST_CASE("structured generators: exhaustive grid K <= 256 over six fields", "[.slow][structured]") {
  int plans = 0;
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(257), Field::prime(65537),
                         Field::prime(7681), Field::prime(12289)})
    for (uint32_t K = 2; K <= 256; ++K) {
      if (K > f.size() - 1) continue;
      for (uint32_t P : radices(f, K)) plans += check_vandermonde_family(f, K, P);
    }
  WARN(plans << " structured plans verified exactly");
  CHECK(plans > 1000);
}
