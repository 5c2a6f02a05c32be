// Blocks of the coded operations (matrix/postcondition.h: M ⊗ I_n) and the
// plans that carry them: widening (passes/widen.h) as the baseline, encodes
// of n-block vectors, and decentralized encodes whose broadcast and reduce
// phases stream the blocks (circulant or pipelined chain) when the cost
// model says so. Every plan is verified exactly; costs are checked against
// closed forms computed here from the definitions. The replay of compiled
// block plans: tests/integration/test_pipelines.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "gen/circulant.h"
#include "gen/decentralized.h"
#include "gen/registry.h"
#include "gen/trees.h"
#include "matrix/codes.h"
#include "matrix/postcondition.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/recode.h"
#include "passes/verify.h"
#include "passes/widen.h"
#include "runtime/check/replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;
using test::log_ceil;

namespace {

Spec block_op(OpKind op, uint32_t K, uint32_t p) {
  Spec s;
  s.op = op;
  s.K = K;
  s.p = p;
  s.root = K / 2;
  return s;
}

// The closed-form cost of one group's broadcast (or reduce) of n blocks on
// g ranks that the decentralized generators choose (decentralized_build.h):
// the cheapest by C1·β + C2·τ of the tree, the pipelined chain and, for
// p = 1, the circulant schedule; ties keep the earlier of that order.
std::pair<uint32_t, uint64_t> group_cost(uint32_t g, uint32_t n, uint32_t p, double beta, double tau) {
  const uint32_t L = log_ceil(g, p);
  std::pair<uint32_t, uint64_t> best{L, uint64_t{n} * L};
  if (n == 1) return best;
  const uint32_t D = gen::pary_depth(g, p);
  std::vector<std::pair<uint32_t, uint64_t>> others{{n - 1 + D, n + D - 1}};
  if (p == 1) {
    const uint32_t q = gen::Circulant(g).q();
    others.push_back({n - 1 + q, n - 1 + q});
  }
  auto t = [&](std::pair<uint32_t, uint64_t> c) { return c.first * beta + static_cast<double>(c.second) * tau; };
  for (auto c : others)
    if (t(c) < t(best)) best = c;
  return best;
}

}  // namespace

TEST_CASE("widen: n copies of a one-block plan compute the n-block operation, C2 n-fold", "[blocks]") {
  for (OpKind op : {OpKind::Broadcast, OpKind::Reduce, OpKind::Allgather, OpKind::Allreduce})
    for (uint32_t K : {2u, 5u, 9u})
      for (uint32_t p : {1u, 2u})
        for (uint32_t n : {1u, 2u, 5u}) {
          // allgather and allreduce have circulant generators only (p = 1).
          if (p > 1 && (op == OpKind::Allgather || op == OpKind::Allreduce)) continue;
          INFO(op_name(op) << " K=" << K << " p=" << p << " n=" << n);
          Spec s = block_op(op, K, p);
          const ir::Plan one = pipeline::compile(s, pipeline::CompileOptions{}).plan;
          const ir::Plan wide = passes::widen(one, n);
          CHECK(wide.spec.blocks == n);
          passes::verify(wide, kExact);
          const auto c1 = passes::cost(one), cn = passes::cost(wide);
          CHECK(cn.C1 == c1.C1);
          CHECK(cn.C2 == n * c1.C2);
        }
}

TEST_CASE("widen: a block mix-up is caught, and bad input is refused by name", "[blocks]") {
  const ir::Plan one = pipeline::compile(block_op(OpKind::Broadcast, 6, 1), pipeline::CompileOptions{}).plan;
  ir::Plan wide = passes::widen(one, 3);
  std::swap(wide.ranks[1].outputs[0], wide.ranks[1].outputs[2]);  // rank 1 gets block 2 as block 0
  CHECK_THROWS_AS(passes::verify(wide, kExact), VerifyError);
  CHECK_THROWS_WITH(passes::widen(passes::widen(one, 2), 2), Catch::Contains("blocks = 2"));
  CHECK_THROWS_WITH(passes::widen(one, 0), Catch::Contains("n = 0"));
  Spec v = block_op(OpKind::Allgatherv, 3, 1);
  v.counts = {1, 0, 2};
  CHECK_THROWS_WITH(passes::widen(pipeline::compile(v, pipeline::CompileOptions{}).plan, 2), Catch::Contains("allgatherv"));
  Spec pre = block_op(OpKind::Prefix, 4, 1);
  pre.blocks = 3;
  CHECK_THROWS_WITH(validate_spec_basics(pre), Catch::Contains("blocks = 3") && Catch::Contains("counts"));
}

TEST_CASE("encode of n-block vectors: every encode generator, widened, exact", "[blocks]") {
  const Field f = Field::prime(257);  // 256 = 2^8: dft applies for K = 4, 16
  const passes::CostModel cm;
  for (uint32_t K : {4u, 7u, 16u})
    for (uint32_t n : {2u, 3u}) {
      Spec s = make_encode_spec(K, 1, 1, f, matrix_random(K, K * 31 + n, f));
      s.blocks = n;
      for (const gen::Candidate& c : gen::candidates(s, cm)) {
        if (!c.why_not.empty()) continue;
        INFO("K=" << K << " n=" << n << " " << c.generator->name);
        pipeline::CompileOptions opt;
        opt.algorithm = c.generator->name;
        opt.verify = kExact;
        const auto res = pipeline::compile(s, opt);
        Spec one = s;
        one.blocks = 1;
        const auto res1 = pipeline::compile(one, opt);
        CHECK(res.generator_cost.C1 == res1.generator_cost.C1);
        CHECK(res.generator_cost.C2 == n * res1.generator_cost.C2);
        CHECK(c.C2 == res.generator_cost.C2);  // the estimate knows the widening
      }
    }
  // A widened plan is not re-codable, and says so.
  {
    Spec w = make_encode_spec(8, 1, 1, f, matrix_random(8, 3, f));
    w.blocks = 2;
    ir::Plan plan = pipeline::compile(w, pipeline::CompileOptions{}).plan;
    CHECK_THROWS_WITH(passes::recode(plan, matrix_random(8, 4, f)), Catch::Contains("blocks = 2"));
  }
  // A structured family: the permuted DFT over GF(257), K = 16, 4 blocks.
  for (const char* alg : {"dft", "inverse-dft"}) {
    Spec d = make_encode_spec(16, 1, 1, f, matrix_dft(16, 2, f, std::string(alg) == "inverse-dft"));
    d.blocks = 4;
    pipeline::CompileOptions opt;
    opt.algorithm = alg;
    opt.verify = kExact;
    const auto res = pipeline::compile(d, opt);
    CHECK(res.cost.C1 == 4);  // H = log_2 16 rounds, as for one block
    CHECK(res.plan.ranks[3].outputs.size() == 4);
  }
}

namespace {

Spec dec_spec(uint32_t N, uint32_t K, uint32_t p, bool systematic, uint32_t n, uint64_t seed,
              const Field& f = Field::gf256(), uint32_t lambda = 1) {
  Spec s = test::random_decentralized_spec(N, K, p, systematic, seed, f, lambda);
  s.blocks = n;
  return s;
}

// C1 of the block encoder's B×B plan under (β, τ) (the registry's choice:
// prepare-and-shoot at ⌈log_{p+1} B⌉ rounds, or a postal split with more
// rounds and shorter messages when τ dominates; widening keeps C1).
uint32_t encode_C1(uint32_t B, uint32_t p, double beta, double tau) {
  if (B < 2) return 0;  // a 1×1 block is a local scaling
  const Field f = Field::gf256();
  return passes::cost(gen::block_encode(make_encode_spec(B, p, 1, f, matrix_random(B, B, f)), {beta, tau, 1})).C1;
}

// The grid's C1 for n blocks under (β, τ): the streamed phase (row
// broadcasts for K < R, row reduces for K >= R) is the group choice above
// over the row groups, then the encode phase of its B×B blocks.
uint32_t grid_C1(uint32_t N, uint32_t K, uint32_t p, uint32_t n, double beta, double tau) {
  const uint32_t R = N - K;
  if (K >= R) {
    const uint32_t c = (K + R - 1) / R, full = K - (c - 1) * R;
    // Row r holds its sink and the sources j·R + r < K: c + 1 ranks for
    // r < full, c for the others (whose last cell is the borrowed sink).
    uint32_t rows = 0;
    for (uint32_t g : {c + 1, c}) {
      if (g == c && full == R) continue;
      if (g >= 2) rows = std::max(rows, group_cost(g, n, p, beta, tau).first);
    }
    return encode_C1(R, p, beta, tau) + rows;
  }
  const uint32_t d = (R + K - 1) / K, full = R - (d - 1) * K;
  uint32_t rows = 0;
  for (uint32_t g : {d + 1, d}) {
    if (g == d && full == K) continue;
    if (g >= 2) rows = std::max(rows, group_cost(g, n, p, beta, tau).first);
  }
  return rows + encode_C1(K, p, beta, tau);
}

}  // namespace

TEST_CASE("decentralized encode in n blocks: every generator exact over a grid, the grid's C1 as chosen",
          "[blocks][decentralized]") {
  const passes::CostModel latency{1000.0, 1.0, 1}, bandwidth{1.0, 1000.0, 1};
  uint32_t plans = 0, streamed = 0;
  for (uint32_t N = 2; N <= 13; ++N)
    for (uint32_t K = 1; K < N; ++K)
      for (uint32_t p : {1u, 2u})
        for (uint32_t n : {2u, 3u, 7u}) {
          if ((N + K + p + n) % 3 != 0 && N > 6) continue;  // a third of the larger N
          INFO("N=" << N << " K=" << K << " p=" << p << " n=" << n);
          for (const passes::CostModel& cm : {latency, bandwidth}) {
            const Spec s = dec_spec(N, K, p, true, n, N * 100 + K * 10 + p + n);
            const ir::Plan grid = gen::decentralized_grid(s, cm);
            passes::verify(grid, kExact);
            CHECK(passes::cost(grid).C1 == grid_C1(N, K, p, n, cm.beta, cm.tau));
            if (grid.spec.algorithm.find("circulant") != std::string::npos ||
                grid.spec.algorithm.find("pipelined") != std::string::npos)
              ++streamed;
            ++plans;
          }
          const passes::CostModel cm;
          passes::verify(gen::decentralized_naive(dec_spec(N, K, p, true, n, N + K)), kExact);
          passes::verify(gen::decentralized_padded(dec_spec(N, K, p, true, n, N + K), cm), kExact);
          passes::verify(gen::decentralized_padded(dec_spec(N, K, p, false, n, N * K), cm), kExact);
          passes::verify(gen::decentralized_grouped(dec_spec(N, K, p, false, n, N * K + 1), cm), kExact);
          plans += 4;
        }
  CHECK(plans > 400);
  CHECK(streamed > 50);  // the bandwidth model streams the rows
}

TEST_CASE("decentralized encode in n blocks: postal latency and a prime field", "[blocks][decentralized]") {
  const passes::CostModel bandwidth{1.0, 1000.0, 1};
  for (uint32_t lambda : {2u, 3u})
    for (auto [N, K] : {std::pair{9u, 4u}, {9u, 6u}, {13u, 3u}})
      for (bool sys : {true, false}) {
        INFO("N=" << N << " K=" << K << " lambda=" << lambda << " sys=" << sys);
        const Spec s = dec_spec(N, K, 2, sys, 5, N + K + lambda, Field::prime(65537), lambda);
        passes::verify(sys ? gen::decentralized_grid(s, bandwidth) : gen::decentralized_grouped(s, bandwidth), kExact);
        if (sys) passes::verify(gen::decentralized_naive(s), kExact);
      }
}

TEST_CASE("streaming long vectors pays: the blocked grid against the widened one-block grid",
          "[blocks][decentralized]") {
  // K < R: the row broadcasts dominate (rows of d + 1 = 8 ranks, q = 3).
  const passes::CostModel bandwidth{1.0, 1000.0, 1};
  for (uint32_t n : {4u, 16u}) {
    const Spec s = dec_spec(64, 8, 1, true, n, 3);
    Spec one = s;
    one.blocks = 1;
    const ir::Plan streamed = gen::decentralized_grid(s, bandwidth);
    const ir::Plan widened = passes::widen(gen::decentralized_grid(one, bandwidth), n);
    passes::verify(streamed, passes::VerifyOptions{});
    passes::verify(widened, passes::VerifyOptions{});
    const auto a = passes::cost(streamed), b = passes::cost(widened);
    INFO("n=" << n << " streamed C1/C2 " << a.C1 << "/" << a.C2 << " widened " << b.C1 << "/" << b.C2);
    CHECK_THAT(streamed.spec.algorithm, Catch::Contains("circulant-broadcast"));
    // Row phase: n − 1 + 3 block-messages instead of 3 whole-vector rounds.
    CHECK(a.C2 == (n - 1 + 3) + n * (b.C2 / n - 3));
    CHECK(bandwidth.time(a.C1, a.C2) < bandwidth.time(b.C1, b.C2));
  }
}

TEST_CASE("blocks: a postcondition too large to check is refused by name", "[blocks]") {
  Spec s = dec_spec(4, 2, 1, true, 1, 1);
  s.blocks = 20000;
  CHECK_THROWS_AS(postcondition(s), UserError);
  CHECK_THROWS_WITH(postcondition(s), Catch::Contains("blocks = 20000") && Catch::Contains("2^26"));
}

TEST_CASE("decentralized encode in n blocks: every N <= 40, K < N, p <= 2, n in {2, 4, 5}, exact",
          "[blocks][decentralized][.slow]") {
  const passes::CostModel bandwidth{1.0, 1000.0, 1};
  uint32_t plans = 0;
  for (uint32_t N = 2; N <= 40; ++N)
    for (uint32_t K = 1; K < N; ++K)
      for (uint32_t p : {1u, 2u})
        for (uint32_t n : {2u, 4u, 5u}) {
          INFO("N=" << N << " K=" << K << " p=" << p << " n=" << n);
          const Spec sys = dec_spec(N, K, p, true, n, N * 1000 + K * 10 + p + n);
          const ir::Plan grid = gen::decentralized_grid(sys, bandwidth);
          passes::verify(grid, kExact);
          CHECK(passes::cost(grid).C1 == grid_C1(N, K, p, n, bandwidth.beta, bandwidth.tau));
          passes::verify(gen::decentralized_naive(sys), kExact);
          passes::verify(gen::decentralized_grouped(dec_spec(N, K, p, false, n, N * K + n), bandwidth), kExact);
          plans += 3;
        }
  CHECK(plans == 3 * 2 * 3 * (39 * 40 / 2));
}

TEST_CASE("blocks auto for decentralized encode: the n of the least modeled time among built plans",
          "[blocks][decentralized]") {
  // N = 64, K = 4: rows of d + 1 = 16 ranks (K < R); N = 40, K = 32: rows
  // of c + 1 = 5 (K >= R); a non-systematic spec streams its 8 groups' rows.
  for (auto [N, K, sys] : {std::tuple{64u, 4u, true}, {40u, 32u, true}, {40u, 5u, false}})
    for (auto [beta, m] : {std::pair{100.0, uint64_t{4096}}, {1000.0, uint64_t{512}}, {1.0, uint64_t{1}}}) {
      INFO("N=" << N << " K=" << K << " sys=" << sys << " beta=" << beta << " m=" << m);
      Spec s = dec_spec(N, K, 1, sys, 1, N + K);
      const uint32_t n = gen::decentralized_auto_blocks(s, m, beta, 1.0);
      CHECK(n <= m);
      // Build the plans for n, n/2, 2n (and 1) and compare their modeled
      // times: the chosen n is at least as good up to the encodes' rounding
      // of ⌈m/n⌉ (one element per block per encode step).
      auto time_of = [&](uint32_t k) {
        Spec t = s;
        t.blocks = k;
        const passes::CostModel cm{beta, 1.0, (m + k - 1) / k};
        pipeline::CompileOptions opt;
        opt.algorithm = sys ? "decentralized-grid" : "decentralized-grouped";
        opt.cost_model = cm;
        const auto res = pipeline::compile(t, opt);
        return cm.time(res.cost.C1, res.cost.C2);
      };
      const double chosen = time_of(n), slack = 1.0 + 64.0 * n / static_cast<double>(m);
      for (uint32_t k : {1u, std::max(1u, n / 2), 2 * n})
        if (k <= m) CHECK(chosen <= time_of(k) * slack);
      if (m == 1) CHECK(n == 1);
    }
  CHECK_THROWS_WITH(gen::decentralized_auto_blocks(dec_spec(8, 4, 1, true, 1, 1), 0, 1.0, 1.0),
                    Catch::Contains("--cost-len"));
}

TEST_CASE("block broadcast C2 bound: every broadcast and reduce plan respects it, the circulant meets it at p = 1",
          "[blocks][cost]") {
  uint32_t met = 0;
  for (OpKind op : {OpKind::Broadcast, OpKind::Reduce})
    for (uint32_t K : {2u, 3u, 7u, 16u, 33u})
      for (uint32_t p : {1u, 2u, 3u})
        for (uint32_t n : {1u, 2u, 5u, 12u}) {
          Spec s = block_op(op, K, p);
          s.blocks = n;
          const uint64_t bound = passes::block_broadcast_C2_bound(K, p, n);
          CHECK(bound == (n + p - 1) / p - 1 + log_ceil(K, p));
          for (const gen::Candidate& c : gen::candidates(s, passes::CostModel{})) {
            if (!c.why_not.empty()) continue;
            INFO(op_name(op) << " K=" << K << " p=" << p << " n=" << n << " " << c.generator->name);
            pipeline::CompileOptions opt;
            opt.algorithm = c.generator->name;
            const auto res = pipeline::compile(s, opt);
            CHECK(res.cost.lb_C2 == bound);
            CHECK(res.cost.C2 >= bound);
            if (c.generator->name.rfind("circulant", 0) == 0) {
              CHECK(res.cost.C2 == bound);
              ++met;
            }
          }
        }
  CHECK(met == 2 * 5 * 4);
  // λ > 1: no bound is claimed.
  Spec s = block_op(OpKind::Broadcast, 9, 1);
  s.lambda = 2;
  CHECK(pipeline::compile(s, pipeline::CompileOptions{}).cost.lb_C2 == 0);
}
