// Decentralized encoding (gen/decentralized.h): exact verification of every
// generator over (N, K, p) grids, C1/C2 against the formulas of
// docs/decentralized.md (computed here from the definitions), the codes of
// matrix/codes.h against independent encoders, and bad input. The replay of
// compiled plans: tests/integration/test_pipelines.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>

#include "gen/decentralized.h"
#include "gen/prepare_shoot.h"
#include "gen/registry.h"
#include "matrix/codes.h"
#include "passes/cost.h"
#include "passes/drop_zeros.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "runtime/check/replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::ceil_div;
using test::kExact;
using test::log_ceil;
using test::random_decentralized_spec;

// A UserError whose message matches.
#define CHECK_THROWS_AS_USER(expr, matcher)       \
  do {                                            \
    CHECK_THROWS_AS(expr, UserError);             \
    CHECK_THROWS_WITH(expr, matcher);             \
  } while (0)

namespace {

// Per-step message sizes of the block encode on n ranks that the
// decentralized generators use (the registry's choice for the block's spec;
// none for n = 1, a local scaling). Where that choice is prepare-and-shoot
// its sizes are checked against prepare-and-shoot's 1, b, …, b^{Tp−1},
// b^{Ts−1}, …, 1 (gen/prepare_shoot.h).
std::vector<uint64_t> block_sizes(uint32_t n, uint32_t p) {
  if (n < 2) return {};
  const passes::CostModel cm;
  const Field f = Field::gf256();
  const ir::Plan b = gen::block_encode(make_encode_spec(n, p, 1, f, matrix_random(n, 5, f)), cm);
  const auto c = passes::cost(b);
  CHECK(c.C1 == log_ceil(n, p));  // every registered encode reaches Lemma 1 at λ = 1
  if (gen::block_encode_name(n, p, 1, cm) == "prepare-shoot")
    CHECK(c.step_sizes == gen::prepare_shoot_shape(n, p).round_sizes());
  return c.step_sizes;
}
uint64_t block_C2(uint32_t n, uint32_t p) {
  uint64_t c = 0;
  for (uint64_t x : block_sizes(n, p)) c += x;
  return c;
}

// Σ over steps of the largest of block encodes of the given sizes running
// side by side.
uint64_t block_C2_side_by_side(const std::vector<uint32_t>& sizes, uint32_t p) {
  std::vector<uint64_t> most;
  for (uint32_t n : sizes) {
    const std::vector<uint64_t> a = block_sizes(n, p);
    if (a.size() > most.size()) most.resize(a.size(), 0);
    for (size_t t = 0; t < a.size(); ++t) most[t] = std::max(most[t], a[t]);
  }
  uint64_t c = 0;
  for (uint64_t x : most) c += x;
  return c;
}

// The delivered plan: generator, drop-zeros, alloc-slots, each followed by
// the checker (the pipeline raises InternalError if a pass breaks the plan).
void check_pipeline(const Spec& s, const char* algorithm) {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  opt.verify = kExact;
  const auto res = pipeline::compile(s, opt);
  CHECK(res.cost.C1 <= res.generator_cost.C1);
  CHECK(res.cost.C2 <= res.generator_cost.C2);
  CHECK(res.cost.C1 >= res.cost.lb_C1);  // the reported bound is a bound
}

struct Seen {
  uint32_t plans = 0, ge_borrowed = 0, lt_borrowed = 0, ge_full = 0, lt_full = 0, grouped_uneven = 0;
};

// One (N, K, p) at λ = 1: every generator that applies, verified exactly,
// costs as stated.
void check_all(uint32_t N, uint32_t K, uint32_t p, Seen& seen) {
  INFO("N=" << N << " K=" << K << " p=" << p);
  const passes::CostModel cm;
  const uint32_t R = N - K;
  {  // systematic: grid, padded, naive
    const Spec s = random_decentralized_spec(N, K, p, true, 1000 * N + 10 * K + p);
    const ir::Plan grid = gen::decentralized_grid(s, cm);
    passes::verify(grid, kExact);
    const auto c = passes::cost(grid);
    if (K >= R) {
      const uint32_t cols = ceil_div(K, R), T = log_ceil(cols + 1, p);
      CHECK(c.C1 == log_ceil(R, p) + T);
      CHECK(c.C2 == block_C2(R, p) + T);
      (K % R ? seen.ge_borrowed : seen.ge_full)++;
    } else {
      const uint32_t cols = ceil_div(R, K), T = log_ceil(cols + 1, p);
      CHECK(c.C1 == T + log_ceil(K, p));
      CHECK(c.C2 == T + block_C2(K, p));
      (R % K ? seen.lt_borrowed : seen.lt_full)++;
    }
    const auto e = gen::decentralized_grid_estimate(s, cm);
    CHECK(e.C1 == c.C1);
    const ir::Plan pad = gen::decentralized_padded(s, cm);
    passes::verify(pad, kExact);
    CHECK(passes::cost(pad).C1 == log_ceil(N, p));
    CHECK(passes::cost(pad).C2 == block_C2(N, p));
    const ir::Plan naive = gen::decentralized_naive(s);
    passes::verify(naive, kExact);
    CHECK(passes::cost(naive).C1 == ceil_div(std::max(K, R), p));
    CHECK(passes::cost(naive).C2 == ceil_div(std::max(K, R), p));
    for (const char* g : {"decentralized-grid", "decentralized-padded", "decentralized-naive"}) check_pipeline(s, g);
    seen.plans += 3;
  }
  {  // non-systematic: grouped, padded
    const Spec s = random_decentralized_spec(N, K, p, false, 7000 * N + 10 * K + p);
    const ir::Plan grp = gen::decentralized_grouped(s, cm);
    passes::verify(grp, kExact);
    const uint32_t g = N / K, r = N - g * K, T = log_ceil(g, p);
    const auto c = passes::cost(grp);
    // Group j has K + ⌈r/g⌉ members for j < r mod g (all when g | r), else K + ⌊r/g⌋.
    const uint32_t big = K + ceil_div(r, g), small = K + r / g;
    CHECK(c.C1 == T + log_ceil(big, p));
    CHECK(c.C2 == T + block_C2_side_by_side({big, small}, p));
    if (r && g > 1) seen.grouped_uneven++;
    const ir::Plan pad = gen::decentralized_padded(s, cm);
    passes::verify(pad, kExact);
    CHECK(passes::cost(pad).C1 == log_ceil(N, p));
    for (const char* g : {"decentralized-grouped", "decentralized-padded"}) check_pipeline(s, g);
    seen.plans += 2;
  }
}

}  // namespace

TEST_CASE("decentralized encode: sampled (N, K, p), every generator exact, costs as stated", "[decentralized]") {
  Seen seen;
  for (uint32_t N : {2u, 3u, 5u, 7u, 12u, 19u})
    for (uint32_t K = 1; K < N; ++K)
      for (uint32_t p = 1; p <= 3; ++p)
        if ((N * 7 + K * 3 + p) % 4 == 0 || N <= 7) check_all(N, K, p, seen);
  CHECK(seen.ge_borrowed > 0);
  CHECK(seen.lt_borrowed > 0);
  CHECK(seen.ge_full > 0);
  CHECK(seen.lt_full > 0);
  CHECK(seen.grouped_uneven > 0);
}

TEST_CASE("decentralized encode: every N <= 48, K < N, p <= 3", "[decentralized][.slow]") {
  Seen seen;
  for (uint32_t N = 2; N <= 48; ++N)
    for (uint32_t K = 1; K < N; ++K)
      for (uint32_t p = 1; p <= 3; ++p) check_all(N, K, p, seen);
  CHECK(seen.plans == 5 * 3 * (47 * 48 / 2));
}

TEST_CASE("decentralized encode with postal latency and prime fields", "[decentralized]") {
  const passes::CostModel cm;
  for (uint32_t lambda : {2u, 3u})
    for (auto [N, K] : {std::pair{9u, 4u}, {9u, 6u}, {13u, 3u}, {10u, 5u}})
      for (bool sys : {true, false}) {
        INFO("N=" << N << " K=" << K << " lambda=" << lambda << " sys=" << sys);
        const Spec s = random_decentralized_spec(N, K, 2, sys, N + K + lambda, Field::prime(65537), lambda);
        passes::verify(sys ? gen::decentralized_grid(s, cm) : gen::decentralized_grouped(s, cm), kExact);
        passes::verify(gen::decentralized_padded(s, cm), kExact);
        if (sys) passes::verify(gen::decentralized_naive(s), kExact);
      }
}

TEST_CASE("the C1 bound of a systematic code counts sinks and sources, not all N ranks", "[decentralized]") {
  // N = 4, K = 2, p = 2: the naive plan needs 1 step; ⌈log_3 4⌉ = 2 would be
  // no bound. max(K, R) + 1 = 3 ranks: ⌈log_3 3⌉ = 1.
  const auto c = passes::cost(gen::decentralized_naive(random_decentralized_spec(4, 2, 2, true, 5)));
  CHECK(c.C1 == 1);
  CHECK(c.lb_C1 == 1);
  // Non-systematic: every rank needs x_k, so the bound is over all N.
  CHECK(passes::cost(gen::decentralized_padded(random_decentralized_spec(4, 2, 2, false, 5), passes::CostModel{})).lb_C1 == 2);
}

TEST_CASE("the plan names its layout and phases", "[decentralized]") {
  const passes::CostModel cm;
  Spec s = random_decentralized_spec(11, 7, 2, true, 3);
  s.algorithm = "decentralized-grid";
  const std::string a = gen::decentralized_grid(s, cm).spec.algorithm;
  CHECK_THAT(a, Catch::Contains("K >= R: sources in a 4 x 2 grid, 1 borrowed sink(s)"));
  CHECK_THAT(a, Catch::Contains("phase 1 (steps 1-2: column encodes of 4x4 blocks of A by prepare-shoot)"));
  CHECK_THAT(a, Catch::Contains("phase 2 (step 3: row reduces"));
  s = random_decentralized_spec(12, 3, 1, true, 4);
  const std::string b = gen::decentralized_grid(s, cm).spec.algorithm;
  CHECK_THAT(b, Catch::Contains("K < R: sinks in a 3 x 3 grid plus the sources' column, 0 borrowed"));
  CHECK_THAT(b, Catch::Contains("phase 1 (steps 1-2: row broadcasts"));
}

namespace {

// The independent RS references. rs_interpolate: f(z) for each sink point z,
// f of degree < K with f(α_k) = x_k, by the Lagrange interpolation formula
// (no matrix inverse).
std::vector<Elem> rs_interpolate(const Field& f, const std::vector<Elem>& alpha, uint32_t K,
                                 const std::vector<Elem>& x) {
  const uint32_t N = static_cast<uint32_t>(alpha.size());
  std::vector<Elem> want(N - K);
  for (uint32_t j = 0; j < N - K; ++j) {
    const Elem z = alpha[K + j];
    Elem y = 0;
    for (uint32_t k = 0; k < K; ++k) {
      Elem l = 1;
      for (uint32_t m = 0; m < K; ++m)
        if (m != k) l = f.mul(l, f.mul(f.sub(z, alpha[m]), f.inv(f.sub(alpha[k], alpha[m]))));
      y = f.add(y, f.mul(x[k], l));
    }
    want[j] = y;
  }
  return want;
}

// Gauss-Jordan: the inverse of a non-singular square matrix.
Matrix gauss_jordan_inverse(const Matrix& m, const Field& f) {
  const uint32_t n = m.rows;
  Matrix a = m, inv = Matrix::zeros(n, n);
  for (uint32_t i = 0; i < n; ++i) inv.at(i, i) = 1;
  for (uint32_t c = 0; c < n; ++c) {
    uint32_t piv = c;
    while (piv < n && a.at(piv, c) == 0) ++piv;
    REQUIRE(piv < n);
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

// The systematic A = V_K^{-1}·V_R of the non-systematic G = [V_K | V_R].
Matrix gauss_jordan_systematic(const Matrix& g, uint32_t K, const Field& f) {
  Matrix vk = Matrix::zeros(K, K), vr = Matrix::zeros(K, g.cols - K);
  for (uint32_t i = 0; i < K; ++i)
    for (uint32_t j = 0; j < g.cols; ++j) (j < K ? vk.at(i, j) : vr.at(i, j - K)) = g.at(i, j);
  const Matrix inv = gauss_jordan_inverse(vk, f);
  Matrix out = Matrix::zeros(K, vr.cols);
  for (uint32_t i = 0; i < K; ++i)
    for (uint32_t k = 0; k < K; ++k)
      for (uint32_t j = 0; j < vr.cols; ++j) out.at(i, j) = f.add(out.at(i, j), f.mul(inv.at(i, k), vr.at(k, j)));
  return out;
}

std::vector<Elem> rs_data(uint32_t K, uint64_t seed, const Field& f) {
  SplitMix64 rng(seed);
  std::vector<Elem> x(K);
  for (Elem& e : x) e = rng.uniform(f);
  return x;
}

// What the sinks of a systematic decentralized spec get for the sources'
// data x (one element each), from the spec's postcondition.
std::vector<Elem> sink_outputs(const Spec& s, const std::vector<Elem>& x) {
  std::vector<std::vector<std::vector<Elem>>> in(s.N);
  for (uint32_t k = 0; k < s.K; ++k) in[k] = {{x[k]}};
  const auto out = direct_compute(s.field, postcondition(s), in);
  std::vector<Elem> got;
  for (uint32_t r = s.K; r < s.N; ++r) {
    REQUIRE(out[r].size() == 1);
    got.push_back(out[r][0][0]);
  }
  return got;
}

}  // namespace

TEST_CASE("Reed-Solomon: every sink gets the codeword symbol of an independent encoder", "[decentralized][codes]") {
  const passes::CostModel cm;
  for (const Field& f : {Field::gf256(), Field::prime(257)})
    for (auto [N, K] : {std::pair{24u, 16u}, {10u, 3u}, {9u, 8u}, {6u, 1u}}) {
      INFO(f.name() << " N=" << N << " K=" << K);
      const std::vector<Elem> alpha = rs_points(N, K, f);
      const std::vector<Elem> x = rs_data(K, N * 31 + K, f);
      const std::vector<Elem> want_sys = rs_interpolate(f, alpha, K, x);
      // Non-systematic: m(α_j) = Σ_i x_i α_j^i by Horner.
      std::vector<Elem> want_non(N);
      for (uint32_t j = 0; j < N; ++j) {
        Elem y = 0;
        for (uint32_t i = K; i-- > 0;) y = f.add(f.mul(y, alpha[j]), x[i]);
        want_non[j] = y;
      }
      for (bool sys : {true, false}) {
        const Spec s = make_decentralized_spec(N, K, 2, 1, f, code_matrix("rs", N, K, sys, 0, f));
        pipeline::CompileOptions opt;
        const auto res = pipeline::compile(s, opt);
        // Run the compiled plan on x through the runtime, one element per vector.
        std::vector<std::vector<std::vector<Elem>>> in(N);
        for (uint32_t k = 0; k < K; ++k) in[k] = {{x[k]}};
        const auto out = direct_compute(f, postcondition(res.plan.spec), in);
        for (uint32_t r = sys ? K : 0; r < N; ++r) {
          INFO("rank " << r << " sys=" << sys);
          REQUIRE(out[r].size() == 1);
          CHECK(out[r][0][0] == (sys ? want_sys[r - K] : want_non[r]));
        }
      }
    }
}

TEST_CASE("Reed-Solomon: one definition, A equals Gauss-Jordan's V_K^-1 V_R, points g^j when Z = 1",
          "[decentralized][codes]") {
  for (const Field& f : {Field::gf256(), Field::prime(257), Field::prime(65537)})
    for (auto [N, K] : {std::pair{24u, 16u}, {7u, 3u}, {40u, 8u}, {128u, 64u}, {164u, 100u}, {9u, 8u}, {255u, 15u}, {250u, 16u}}) {
      if (N > f.size() - 1) continue;
      INFO(f.name() << " N=" << N << " K=" << K);
      const RsSystematic rs = rs_code(N, K, f);
      CHECK(rs.A == gauss_jordan_systematic(rs_generator(N, K, f), K, f));
      CHECK(code_matrix("rs", N, K, true, 0, f).entries == rs.A.a);
      const uint32_t Z = rs_coset_size(N, K, f);
      const std::vector<Elem> pts = rs_points(N, K, f);
      CHECK(Z == std::gcd(std::min(K, N - K), static_cast<uint32_t>(f.size() - 1)));
      CHECK(std::set<Elem>(pts.begin(), pts.end()).size() == N);  // distinct
      // Every aligned group of Z sources or sinks is a coset of the Z-th roots of unity.
      for (uint32_t r = 0; r < N; ++r) CHECK(f.pow(pts[r], Z) == f.pow(pts[r - (r < K ? r : r - K) % Z], Z));
      if (Z == 1)
        for (uint32_t r = 0; r < N; ++r) CHECK(pts[r] == f.pow(f.generator(), r));
    }
  // Figures the docs quote.
  CHECK(rs_coset_size(24, 16, Field::gf256()) == 1);
  CHECK(rs_coset_size(7, 3, Field::gf256()) == 3);
  CHECK(rs_coset_size(128, 64, Field::prime(257)) == 64);
  CHECK(rs_coset_size(256, 128, Field::prime(257)) == 128);
  CHECK(rs_coset_size(250, 16, Field::prime(257)) == 16);
}

// An RS plan by the grid on a model with cheap steps (β = 0.01): whether the
// column encodes use the cauchy generator, verified exactly, and the sinks'
// symbols against the interpolation encoder.
std::string rs_grid_case(uint32_t N, uint32_t K, uint32_t p, const passes::CostModel& cm, const Field& f,
                         uint32_t want_C1, uint64_t want_C2) {
  const Spec s = make_decentralized_spec(N, K, p, 1, f, code_matrix("rs", N, K, true, 0, f));
  const ir::Plan plan = gen::decentralized_grid(s, cm);
  passes::verify(plan, kExact);
  ir::Plan dropped = plan;
  passes::drop_zeros(dropped);
  const auto c = passes::cost(dropped);
  CHECK(c.C1 == want_C1);
  CHECK(c.C2 == want_C2);
  const std::vector<Elem> x = rs_data(K, N + 7 * K, f);
  CHECK(sink_outputs(plan.spec, x) == rs_interpolate(f, rs_points(N, K, f), K, x));
  return plan.spec.algorithm;
}

TEST_CASE("Reed-Solomon blocks: the cauchy generator where its modeled time is lower", "[decentralized][codes]") {
  const Field f = Field::prime(257);
  passes::CostModel cheap_steps;
  cheap_steps.beta = 0.01;
  // K >= R, 64x64 blocks at p = 1: cauchy = inverse draw-and-loose + draw-and-loose,
  // M = 1, P = 2, H = 6: C1 = C2 = 2·6 = 12 against prepare-and-shoot's
  // C1 = 6, C2 = 14; plus the row reduce (1 step, 1 element).
  CHECK_THAT(rs_grid_case(128, 64, 1, cheap_steps, f, 13, 13), Catch::Contains("64x64 blocks of A by cauchy x:P=2 y:P=2"));
  // On the default model (β = τ = 1) prepare-and-shoot's 6 + 14 beats 12 + 12.
  CHECK_THAT(rs_grid_case(128, 64, 1, passes::CostModel{}, f, 7, 15),
             Catch::Contains("64x64 blocks of A by prepare-shoot") && !Catch::Contains("cauchy"));
  // 32x32 blocks: cauchy's C2 = 10 equals prepare-and-shoot's, and its C1 is larger.
  CHECK_THAT(rs_grid_case(64, 32, 1, cheap_steps, f, 6, 11), Catch::Contains("by prepare-shoot"));
  // A borrowed last column (K = 100, R = 64) is not Cauchy-like; a cauchy full
  // block next to a prepare-and-shoot borrowed one costs more than
  // prepare-and-shoot for both, which the grid keeps.
  CHECK_THAT(rs_grid_case(164, 100, 1, cheap_steps, f, 8, 16), !Catch::Contains("cauchy"));
}

TEST_CASE("Reed-Solomon blocks: cauchy K x K blocks for K < R, and a runtime replay", "[.slow][decentralized][codes]") {
  passes::CostModel cheap_steps;
  cheap_steps.beta = 0.01;
  // Row broadcasts (2 steps, 2 elements), then 64x64 cauchy blocks (12, 12).
  CHECK_THAT(rs_grid_case(192, 64, 1, cheap_steps, Field::prime(257), 14, 14), Catch::Contains("by cauchy"));
  CHECK_THAT(rs_grid_case(256, 128, 1, cheap_steps, Field::prime(65537), 15, 15), Catch::Contains("by cauchy"));
  // The runtime runs a cauchy-block plan (compiled through the pipeline) and
  // matches direct encoding byte for byte.
  const Field f = Field::prime(257);
  const auto res =
      pipeline::compile(make_decentralized_spec(128, 64, 1, 1, f, code_matrix("rs", 128, 64, true, 0, f)), [&] {
        pipeline::CompileOptions o;
        o.algorithm = "decentralized-grid";
        o.cost_model = cheap_steps;
        return o;
      }());
  REQUIRE_THAT(res.plan.spec.algorithm, Catch::Contains("by cauchy"));
  const auto rep = rt::replay_and_compare(res.plan, 64, 5, 1);
  CHECK(rep.equal);
  CHECK(rep.first_mismatch.empty());
}

TEST_CASE("Lagrange codes: interpolate at omega, evaluate at alpha", "[decentralized][codes]") {
  const Field f = Field::prime(65537);
  for (bool sys : {true, false}) {
    const uint32_t N = 12, K = 5;
    const Matrix g = lagrange_matrix(N, K, sys, f);
    // u(z) = x_0 + x_1 z (degree 1 < K): its values at ω = 1..K are the data;
    // every output must be u at its evaluation point K+1+j.
    std::vector<Elem> x(K);
    for (uint32_t k = 0; k < K; ++k) x[k] = f.add(7, f.mul(3, k + 1));
    for (uint32_t j = 0; j < g.cols; ++j) {
      Elem y = 0;
      for (uint32_t k = 0; k < K; ++k) y = f.add(y, f.mul(x[k], g.at(k, j)));
      CHECK(y == f.add(7, f.mul(3, K + 1 + j)));
    }
  }
}

TEST_CASE("decentralized encode: bad input names the bad value", "[decentralized]") {
  const passes::CostModel cm;
  Spec s = random_decentralized_spec(10, 4, 2, true, 1);
  s.N = 4;
  CHECK_THROWS_AS_USER(gen::decentralized_grid(s, cm), Catch::Contains("N = 4"));
  s = random_decentralized_spec(10, 4, 2, true, 1);
  s.matrix = matrix_explicit(random_matrix(4, 5, 1, s.field), s.field);
  CHECK_THROWS_AS_USER(gen::decentralized_padded(s, cm), Catch::Contains("the spec has 4x5"));
  CHECK_THROWS_AS_USER(gen::decentralized_grouped(random_decentralized_spec(10, 4, 2, true, 1), cm), Catch::Contains("decentralized-grid"));
  CHECK_THROWS_AS_USER(gen::decentralized_naive(random_decentralized_spec(10, 4, 2, false, 1)), Catch::Contains("non-systematic") || Catch::Contains("generator matrix G"));
  CHECK_THROWS_AS_USER(code_matrix("rs", 300, 10, true, 0, Field::gf256()), Catch::Contains("N = 300"));
  CHECK_THROWS_AS_USER(code_matrix("golay", 10, 4, true, 0, Field::gf256()), Catch::Contains("'golay'"));
  CHECK_THROWS_AS_USER(lagrange_matrix(200, 100, false, Field::gf256()), Catch::Contains("N = 200"));
}
