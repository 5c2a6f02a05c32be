// Plans from circulant schedules (gen/circulant_plans.h): broadcast (Alg 6),
// allgather (Alg 7), allreduce (Alg 8) and allgatherv (Alg 9) through the
// general checker over exhaustive small grids, C1/C2 against their
// formulas, the rank-local compile for huge K, `--blocks auto`,
// `--algorithm auto`, and the errors for specs outside the model. Their
// replay: tests/integration/test_pipelines.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "circulant_spec.h"
#include "gen/circulant_check.h"
#include "gen/circulant_plans.h"
#include "gen/registry.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "pipeline/spec_flags.h"
#include "passes/verify.h"
#include "runtime/check/replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;

namespace {

using test::block_spec;
using test::verify_exact;

uint32_t qof(uint32_t K) { return gen::Circulant(K).q(); }

// Broadcast, or reduce (the broadcast reversed): n−1+q steps of one block,
// (K−1)·n elements (no block received twice, nothing sent to the root).
void check_tree(OpKind op, uint32_t K, uint32_t n, uint32_t root) {
  INFO(fmt::format("{} K = {}, n = {}, root = {}", op_name(op), K, n, root));
  const Spec s = block_spec(op, K, n, root);
  const ir::Plan plan = op == OpKind::Broadcast ? gen::circulant_broadcast(s) : gen::circulant_reduce(s);
  REQUIRE_NOTHROW(verify_exact(plan));
  const auto c = passes::cost(plan);
  REQUIRE(c.C1 == n - 1 + qof(K));
  REQUIRE(c.C2 == n - 1 + qof(K));
  REQUIRE(c.elements == uint64_t{K - 1} * n);
}
void check_broadcast(uint32_t K, uint32_t n, uint32_t root) { check_tree(OpKind::Broadcast, K, n, root); }

// Allgather (C2 = n(K−1)) or allreduce (C2 = nq), both in q steps.
void check_regular(OpKind op, uint32_t K, uint32_t n) {
  INFO(fmt::format("{} K = {}, n = {}", op_name(op), K, n));
  const Spec s = block_spec(op, K, n);
  const ir::Plan plan = op == OpKind::Allgather ? gen::circulant_allgather(s) : gen::circulant_allreduce(s);
  REQUIRE_NOTHROW(verify_exact(plan));
  const auto c = passes::cost(plan);
  REQUIRE(c.C1 == qof(K));
  REQUIRE(c.C2 == uint64_t{n} * (op == OpKind::Allgather ? K - 1 : qof(K)));
}

// Irregular counts with zeros: rank j holds (j·7 + seed) mod 5 elements.
std::vector<uint32_t> irregular(uint32_t K, uint32_t seed) {
  std::vector<uint32_t> v(K);
  for (uint32_t j = 0; j < K; ++j) v[j] = (j * 7 + seed) % 5;
  if (v[0] + (K > 1 ? v[1] : 0) == 0) v[0] = 1;
  return v;
}

// With p ports every step's message is striped over the ports: the same C1,
// the same elements, step sizes ⌈m/p⌉; the generator's cost estimate is
// exact at these sizes.
void check_allgatherv(uint32_t K, uint32_t n, const std::vector<uint32_t>& counts, uint32_t p = 1) {
  INFO(fmt::format("allgatherv K = {}, n = {}, p = {}, counts = {}", K, n, p, fmt::join(counts, ",")));
  Spec s = block_spec(OpKind::Allgatherv, K, n, 0, counts);
  s.p = p;
  const ir::Plan plan = gen::circulant_allgatherv(s);
  REQUIRE_NOTHROW(verify_exact(plan));
  uint64_t total = 0, least = UINT64_MAX;
  for (uint32_t c : counts) total += c, least = std::min<uint64_t>(least, c);
  const auto c = passes::cost(plan);
  REQUIRE(c.C1 == n - 1 + qof(K));
  REQUIRE(c.elements == (K - 1) * total);
  REQUIRE(c.C2 == gen::circulant_allgatherv_cost(s).C2);
  REQUIRE(c.C2 >= (total - least + p - 1) / p);  // the receive-volume bound holds
  if (p > 1) {
    Spec one = s;
    one.p = 1;
    const auto c1 = passes::cost(gen::circulant_allgatherv(one));
    REQUIRE(c.messages >= c1.messages);
    for (size_t t = 0; t < c.step_sizes.size(); ++t) REQUIRE(c.step_sizes[t] == (c1.step_sizes[t] + p - 1) / p);
  }
}

}  // namespace

TEST_CASE("circulant reduce (the broadcast reversed): every K <= 40, every root, exact", "[circulant-plans]") {
  for (uint32_t K = 2; K <= 40; ++K)
    for (uint32_t n : {1u, 4u})
      for (uint32_t root = 0; root < K; ++root) check_tree(OpKind::Reduce, K, n, root);
}

TEST_CASE("circulant reduce: every K <= 128, n <= 12, three roots", "[circulant-plans][.slow]") {
  for (uint32_t K = 2; K <= 128; ++K)
    for (uint32_t n = 1; n <= 12; ++n)
      for (uint32_t root : {0u, 1u, K - 1}) check_tree(OpKind::Reduce, K, n, root);
}

TEST_CASE("circulant broadcast: every K <= 40, several n, every root, exact", "[circulant-plans]") {
  for (uint32_t K = 2; K <= 40; ++K)
    for (uint32_t n : {1u, 2u, 3u, 7u})
      for (uint32_t root = 0; root < K; ++root) check_broadcast(K, n, root);
}

TEST_CASE("circulant broadcast: every K <= 128, n <= 24, three roots", "[circulant-plans][.slow]") {
  for (uint32_t K = 2; K <= 128; ++K)
    for (uint32_t n = 1; n <= 24; ++n)
      for (uint32_t root : {0u, 1u, K - 1}) check_broadcast(K, n, root);
}

TEST_CASE("circulant broadcast: dummy rounds x > 0 (K = 20, q = 5)", "[circulant-plans]") {
  for (uint32_t n = 1; n <= 11; ++n) {
    INFO("n = " << n);
    CHECK(gen::circulant_dummy_rounds(5, n) == (5 - (n + 4) % 5) % 5);
    check_broadcast(20, n, 7);
  }
}

TEST_CASE("circulant broadcast: a rank's program alone, for huge K", "[circulant-plans]") {
  const uint32_t K = 1u << 24, n = 5;
  Spec s = block_spec(OpKind::Broadcast, K, n, 3);
  ir::Plan ctx;  // the spec only; no K programs
  ctx.spec = s;
  const gen::Circulant c(K);
  for (uint32_t rank : {3u, 4u, 12345u, K - 1, K / 2}) {
    INFO("rank " << rank);
    const ir::Program prog = gen::circulant_broadcast_rank(ctx, c, rank);
    std::vector<int> got(n, 0);
    uint32_t last = 0;
    for (const auto& st : prog.steps) {
      CHECK(st.t > last);
      CHECK(st.t <= n - 1 + 24);
      last = st.t;
      for (const auto& r : st.recvs) {
        REQUIRE(r.into.size() == 1);
        ++got[r.into[0]];
      }
    }
    // Every non-root rank receives every block exactly once; the root none.
    for (uint32_t b = 0; b < n; ++b) CHECK(got[b] == (rank == 3 ? 0 : 1));
  }
  // The full plan is these programs.
  const ir::Plan small = gen::circulant_broadcast(block_spec(OpKind::Broadcast, 33, 4, 5));
  const gen::Circulant c33(33);
  for (uint32_t r = 0; r < 33; ++r) CHECK(gen::circulant_broadcast_rank(small, c33, r) == small.ranks[r]);
}

TEST_CASE("circulant allgather and allreduce: every K <= 64, exact", "[circulant-plans]") {
  for (uint32_t K = 2; K <= 64; ++K) {
    for (uint32_t n : {1u, 2u}) check_regular(OpKind::Allgather, K, n);
    for (uint32_t n : {1u, 3u}) check_regular(OpKind::Allreduce, K, n);
  }
}

TEST_CASE("circulant allgather and allreduce: every K <= 256", "[circulant-plans][.slow]") {
  for (uint32_t K = 65; K <= 256; ++K) {
    check_regular(OpKind::Allgather, K, 1);
    check_regular(OpKind::Allreduce, K, 2);
  }
}

TEST_CASE("circulant allgatherv: irregular counts with zeros, K <= 20, n <= 6, exact", "[circulant-plans]") {
  for (uint32_t K = 2; K <= 20; ++K)
    for (uint32_t n = 1; n <= 6; ++n) check_allgatherv(K, n, irregular(K, K + n));
  check_allgatherv(9, 4, {0, 0, 0, 0, 5, 0, 0, 0, 0});  // one contributor
  check_allgatherv(20, 2, std::vector<uint32_t>(20, 3));  // regular counts, x = 4 dummy rounds
}

TEST_CASE("circulant allgatherv: every K <= 48, n <= 12", "[circulant-plans][.slow]") {
  for (uint32_t K = 2; K <= 48; ++K)
    for (uint32_t n = 1; n <= 12; ++n) check_allgatherv(K, n, irregular(K, 3 * K + n));
}

TEST_CASE("circulant allgatherv striped over p ports: every K <= 20, p <= 4, exact", "[circulant-plans]") {
  for (uint32_t K = 2; K <= 20; ++K)
    for (uint32_t p = 2; p <= 4; ++p)
      for (uint32_t n : {1u, 2u, 5u}) check_allgatherv(K, n, irregular(K, K + n + p), p);
  check_allgatherv(9, 3, {0, 0, 0, 0, 5, 0, 0, 0, 0}, 3);  // one contributor, pieces of 1 and empty ports
  check_allgatherv(5, 2, {0, 1, 0, 0, 5}, 3);
}

TEST_CASE("circulant allgatherv striped: every K <= 40, n <= 8, p <= 6", "[circulant-plans][.slow]") {
  for (uint32_t K = 2; K <= 40; ++K)
    for (uint32_t p = 2; p <= 6; ++p)
      for (uint32_t n = 1; n <= 8; ++n) check_allgatherv(K, n, irregular(K, 5 * K + n + p), p);
}

// The receive-volume bound ⌈(Σcounts − min)/p⌉ is what every rank must take
// in through its p ports; with --blocks auto (β = 0: C2 alone) and the
// generator --algorithm auto picks, C2 stays within 1.25× of it on random
// counts (K <= 33, p <= 4, counts uniform in 0..hi). Counts of a few
// elements are excluded: there the steps (at least one element each, at
// least ⌈log_{p+1} K⌉ of them) and not the volume decide, e.g. K = 5, p = 3,
// counts 0,1,0,0,5 has bound 2 and no plan with C2 = 2 (docs/circulant.md).
namespace {
void check_auto_allgatherv(uint32_t seed, uint32_t hi, int trials) {
  std::mt19937 rng(seed);
  std::vector<double> ratios;
  for (int trial = 0; trial < trials; ++trial) {
    const uint32_t K = std::uniform_int_distribution<uint32_t>(2, 33)(rng);
    const uint32_t p = std::uniform_int_distribution<uint32_t>(1, 4)(rng);
    std::vector<uint32_t> counts(K);
    for (auto& c : counts) c = std::uniform_int_distribution<uint32_t>(0, hi)(rng);
    if (std::accumulate(counts.begin(), counts.end(), uint64_t{0}) == 0) counts[0] = 1;
    INFO(fmt::format("K = {}, p = {}, counts = {}", K, p, fmt::join(counts, ",")));
    Spec s = block_spec(OpKind::Allgatherv, K, 1, 0, counts);
    s.p = p;
    passes::CostModel cm;
    cm.beta = 0;
    cm.tau = 1;
    cm.len = 1;
    const std::string note = pipeline::resolve_auto_blocks(s, cm);
    REQUIRE(note.find("blocks auto") != std::string::npos);
    pipeline::CompileOptions opt;
    opt.cost_model = cm;
    const auto res = pipeline::compile(s, opt);
    const auto c = passes::cost(res.plan);
    REQUIRE(c.lb_C2 > 0);
    ratios.push_back(double(c.C2) / double(c.lb_C2));
    CHECK(ratios.back() <= 1.25);
  }
  std::sort(ratios.begin(), ratios.end());
  INFO(fmt::format("counts 0..{}: median {:.3f}, worst {:.3f}", hi, ratios[ratios.size() / 2], ratios.back()));
  CHECK(ratios[ratios.size() / 2] <= 1.1);
}
}  // namespace

TEST_CASE("allgatherv --blocks auto: C2 within 1.25x of the receive-volume bound on random counts",
          "[circulant-plans]") {
  check_auto_allgatherv(20261127, 50, 40);
}

TEST_CASE("allgatherv --blocks auto: C2 within 1.25x of the bound, 240 random count vectors up to 1000",
          "[circulant-plans][.slow]") {
  check_auto_allgatherv(1, 50, 120);
  check_auto_allgatherv(2, 1000, 120);
}

TEST_CASE("circulant generators reject specs outside their model", "[circulant-plans]") {
  Spec s = block_spec(OpKind::Broadcast, 8, 2);
  s.p = 2;
  CHECK_THROWS_WITH(gen::circulant_broadcast(s), Catch::Contains("p = 2 ports") && Catch::Contains("p = 1"));
  s.p = 1;
  s.lambda = 3;
  CHECK_THROWS_WITH(gen::circulant_broadcast(s), Catch::Contains("lambda = 3"));
  CHECK_THROWS_WITH(gen::circulant_allreduce(block_spec(OpKind::Allgather, 8, 1)),
                    Catch::Contains("computes 'allreduce', not 'allgather'"));
  CHECK_THROWS_WITH(gen::circulant_allgatherv(block_spec(OpKind::Allgatherv, 3, 1, 0, {0, 0, 0})),
                    Catch::Contains("total block count 0") || Catch::Contains("all counts are 0"));
  // Allgatherv takes any p (striped), still not λ > 1.
  Spec agv = block_spec(OpKind::Allgatherv, 6, 2, 0, {1, 2, 0, 3, 1, 1});
  agv.p = 3;
  CHECK_NOTHROW(gen::circulant_allgatherv(agv));
  CHECK(gen::circulant_why_not(agv).empty());
  agv.lambda = 2;
  CHECK_THROWS_WITH(gen::circulant_allgatherv(agv), Catch::Contains("lambda = 2"));
  CHECK(!gen::circulant_why_not(agv).empty());
}

TEST_CASE("circulant generators in --algorithm auto", "[circulant-plans]") {
  passes::CostModel cm;
  cm.beta = 10;
  cm.tau = 1;
  cm.len = 1000;
  // n = 1: same C1 and C2 as the binomial tree, the first registered wins.
  CHECK(gen::choose_generator(block_spec(OpKind::Broadcast, 100, 1), cm).name == "postal-broadcast");
  // n = 16 blocks: n−1+q = 22 one-block steps against q = 7 steps of 16 blocks.
  CHECK(gen::choose_generator(block_spec(OpKind::Broadcast, 100, 16), cm).name == "circulant-broadcast");
  // p = 2 ports: the circulant generators do not apply and are never chosen.
  Spec two = block_spec(OpKind::Broadcast, 100, 16);
  two.p = 2;
  CHECK(gen::choose_generator(two, cm).name.rfind("circulant", 0) == std::string::npos);
  // With p = 2 the dissemination allgather takes over.
  Spec ag = block_spec(OpKind::Allgather, 100, 1);
  ag.p = 2;
  CHECK(gen::choose_generator(ag, cm).name == "dissemination-allgather");
  CHECK(gen::choose_generator(block_spec(OpKind::Allgather, 100, 1), cm).name == "circulant-allgather");
}

TEST_CASE("circulant --blocks auto minimises the modeled broadcast time", "[circulant-plans]") {
  for (uint64_t K : {2u, 3u, 17u, 1000u})
    for (uint64_t m : {1u, 7u, 1000u, 1000000u})
      for (double beta : {0.0, 1.0, 100.0, 1e5})
        for (double tau : {0.0, 0.01, 1.0}) {
          INFO(fmt::format("K = {}, m = {}, beta = {}, tau = {}", K, m, beta, tau));
          const uint32_t q = gen::Circulant(K).q();
          auto T = [&](uint64_t n) { return static_cast<double>(n - 1 + q) * (beta + ((m + n - 1) / n) * tau); };
          const uint32_t got = gen::circulant_auto_blocks(K, m, beta, tau);
          REQUIRE(got >= 1);
          REQUIRE(got <= std::min<uint64_t>(m, gen::kCirculantMaxAutoBlocks));
          double best = T(1);
          for (uint64_t n = 2; n <= std::min<uint64_t>(m, gen::kCirculantMaxAutoBlocks); ++n) best = std::min(best, T(n));
          CHECK(T(got) == best);
        }
  CHECK_THROWS_WITH(gen::circulant_auto_blocks(8, 0, 1, 1), Catch::Contains("--cost-len"));
}

namespace {
// One root's n-block broadcast simulated block by block on K ranks: with
// Algorithm 6's shift (block = sched + q·⌊i/q⌋ − x), or as the printed
// Algorithm 9 indexes it (sched + q·(uses of round k so far), no −x).
// "" when every send is of a held block and every rank ends with all n.
std::string simulate_broadcast(uint32_t K, uint32_t n, bool shifted) {
  gen::CirculantTable t;
  gen::circulant_table_reference(K, t);
  const gen::Circulant c(K);
  const uint32_t q = t.q, x = gen::circulant_dummy_rounds(q, n);
  std::vector<std::vector<char>> has(K, std::vector<char>(n, 0));
  std::fill(has[0].begin(), has[0].end(), 1);
  std::vector<int64_t> uses(q, 0);
  for (uint64_t i = x; i < n - 1 + q + x; ++i) {
    const uint32_t k = static_cast<uint32_t>(i % q);
    std::vector<std::pair<uint32_t, int64_t>> arrive;
    for (uint32_t v = 0; v < K; ++v) {
      int64_t b = shifted ? gen::circulant_block(t.send[v * q + k], i, q, x, n) : t.send[v * q + k] + q * uses[k];
      b = std::min<int64_t>(b, n - 1);
      const uint32_t to = static_cast<uint32_t>((v + c.skip(k)) % K);
      if (b < 0 || to == 0) continue;
      if (!has[v][b]) return fmt::format("round {}: rank {} sends block {} before holding it", i, v, b);
      arrive.push_back({to, b});
    }
    ++uses[k];
    for (auto [to, b] : arrive) has[to][b] = 1;
  }
  for (uint32_t v = 0; v < K; ++v)
    for (uint32_t b = 0; b < n; ++b)
      if (!has[v][b]) return fmt::format("rank {} never gets block {}", v, b);
  return {};
}
}  // namespace

TEST_CASE("circulant: the printed Algorithm 9 (no dummy-round shift) fails whenever x > 0", "[circulant-plans]") {
  int with_x = 0;
  for (uint32_t K = 2; K <= 40; ++K)
    for (uint32_t n = 1; n <= 10; ++n) {
      INFO(fmt::format("K = {}, n = {}", K, n));
      CHECK(simulate_broadcast(K, n, true).empty());
      if (gen::circulant_dummy_rounds(gen::Circulant(K).q(), n) == 0) continue;
      ++with_x;
      CHECK_FALSE(simulate_broadcast(K, n, false).empty());
    }
  CHECK(with_x > 200);
  // K = 20, n = 2: x = 4; the printed indexing has rank 1 forward block 0 before it arrives.
  CHECK(simulate_broadcast(20, 2, false) == "round 4: rank 1 sends block 0 before holding it");
}
