// The p-port collectives of gen/dissemination.h: allgather(v),
// reduce-scatter (dissemination and circulant) and the two allreduces.
// Every plan goes through the exact checker over exhaustive small grids;
// C1 and C2 are compared with the closed forms computed here from the
// definitions, and with the lower bounds of the cost report. The slow grid
// also replays its small plans; compiled plans of each generator are
// replayed in tests/integration/test_pipelines.cpp.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "gen/dissemination.h"
#include "gen/registry.h"
#include "matrix/postcondition.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "runtime/check/replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::ceil_div;
using test::kExact;
using test::log_ceil;

namespace {

Spec spec_of(OpKind op, uint32_t K, uint32_t p, uint32_t n, uint32_t lambda = 1, std::vector<uint32_t> counts = {}) {
  Spec s;
  s.op = op;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.blocks = n;
  s.field = Field::gf256();
  s.counts = std::move(counts);
  return s;
}

// Irregular counts with zeros (at least one block in all).
std::vector<uint32_t> irregular(uint32_t K, uint32_t seed) {
  std::vector<uint32_t> v(K);
  for (uint32_t j = 0; j < K; ++j) v[j] = (j * 5 + seed) % 4;
  if (v[0] == 0) v[0] = 1;
  return v;
}

// Replay every checked plan of at most this many ranks on the threads
// transport and compare with the direct computation (the slow grid sets it).
uint32_t g_replay_up_to = 0;

void replay(const ir::Plan& plan) {
  if (plan.spec.K > g_replay_up_to) return;
  const auto rep = rt::replay_and_compare(plan, 13, plan.spec.K, 1);
  CHECK(rep.equal);
  CHECK(rep.first_mismatch.empty());
}

// Builds with `algorithm` through the generator, checks exactly, and
// compares C1, C2 with `C1`, `C2` and the generator's estimate.
passes::CostReport check(const Spec& s, const std::string& algorithm, uint32_t C1, uint64_t C2) {
  const gen::GeneratorInfo& g = gen::find_generator(algorithm);
  const ir::Plan plan = g.build(s, passes::CostModel{});
  REQUIRE_NOTHROW(passes::verify(plan, kExact));
  replay(plan);
  const passes::CostReport c = passes::cost(plan);
  CHECK(c.C1 == C1);
  CHECK(c.C2 == C2);
  const auto e = g.estimate(s, passes::CostModel{});
  CHECK(e.C1 == c.C1);
  CHECK(e.C2 == c.C2);
  return c;
}

// The grid of one K: every p <= 4, the n and λ given.
void check_K(uint32_t K, std::initializer_list<uint32_t> ns, std::initializer_list<uint32_t> lambdas) {
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t n : ns)
      for (uint32_t lambda : lambdas) {
        INFO(fmt::format("K = {}, p = {}, n = {}, lambda = {}", K, p, n, lambda));
        const uint32_t q = log_ceil(K, p);
        // Allgather and reduce-scatter: C2 = n⌈(K−1)/p⌉, within n − 1 of
        // the receive-volume bound ⌈n(K−1)/p⌉; C1 = λq.
        const uint64_t c2 = uint64_t{n} * ceil_div(K - 1, p);
        for (OpKind op : {OpKind::Allgather, OpKind::ReduceScatter}) {
          const auto c = check(spec_of(op, K, p, n, lambda),
                               op == OpKind::Allgather ? "dissemination-allgather" : "dissemination-reduce-scatter",
                               lambda * q, c2);
          CHECK(c.lb_C2 == ceil_div(uint64_t{n} * (K - 1), p));
          CHECK(c.C2 - c.lb_C2 < n);
          if (lambda == 1) CHECK(c.C1 == c.lb_C1);
        }
        // Latency-optimal allreduce: q steps, n per message.
        const auto a = check(spec_of(OpKind::Allreduce, K, p, n, lambda), "dissemination-allreduce", lambda * q,
                             uint64_t{n} * q);
        if (lambda == 1) CHECK(a.C1 == a.lb_C1);
        // Bandwidth-optimal allreduce: 2q steps; a window of len chunks
        // holds at most len⌊n/K⌋ + min(len, n mod K) blocks.
        uint64_t half = 0;
        for (const auto& round : gen::dissemination_rounds(K, p)) {
          uint32_t longest = 0;
          for (const auto& pc : round) longest = std::max(longest, pc.len);
          half += uint64_t{longest} * (n / K) + std::min(longest, n % K);
        }
        check(spec_of(OpKind::Allreduce, K, p, n, lambda), "reduce-scatter-allgather", 2 * lambda * q, 2 * half);
        // Allgatherv with irregular counts: C1 = λq; every block reaches
        // every other rank once.
        const Spec v = spec_of(OpKind::Allgatherv, K, p, 1, lambda, irregular(K, K + n + p));
        const ir::Plan pv = gen::dissemination_allgather(v);
        REQUIRE_NOTHROW(passes::verify(pv, kExact));
        replay(pv);
        const auto cv = passes::cost(pv);
        uint64_t total = 0;
        for (uint32_t x : v.counts) total += x;
        CHECK(cv.C1 == lambda * q);
        CHECK(cv.elements == (K - 1) * total);
        CHECK(cv.C2 == gen::dissemination_allgather_cost(v).C2);
        CHECK(cv.C2 >= cv.lb_C2);
      }
  // One port, λ = 1: Träff's circulant allgather reversed.
  for (uint32_t n : ns) check(spec_of(OpKind::ReduceScatter, K, 1, n), "circulant-reduce-scatter", log_ceil(K, 1), uint64_t{n} * (K - 1));
}

}  // namespace

TEST_CASE("dissemination rounds tile the positions, each piece within what its sender holds", "[dissemination]") {
  for (uint32_t K = 1; K <= 300; ++K)
    for (uint32_t p = 1; p <= 6; ++p) {
      INFO("K = " << K << ", p = " << p);
      const auto rounds = gen::dissemination_rounds(K, p);
      CHECK(rounds.size() == log_ceil(K, p));
      uint64_t held = 1, C2 = 0;
      for (const auto& round : rounds) {
        REQUIRE(round.size() <= p);
        uint64_t next = held, longest = 0;
        for (const auto& pc : round) {
          CHECK(pc.offset == next);
          CHECK(pc.len >= 1);
          CHECK(pc.len <= held);
          next += pc.len;
          longest = std::max<uint64_t>(longest, pc.len);
        }
        held = next;
        C2 += longest;
      }
      CHECK(held == K);
      CHECK(C2 == (K >= 1 ? ceil_div(K - 1, p) : 0));
    }
  // Träff's skips as rounds, and the allreduce coverage.
  for (uint32_t K = 2; K <= 300; ++K) {
    uint64_t held = 1;
    for (const auto& round : gen::circulant_rounds(K)) {
      REQUIRE(round.size() == 1);
      CHECK(round[0].offset == held);
      CHECK(round[0].len <= held);
      held += round[0].len;
    }
    CHECK(held == K);
    for (uint32_t p = 1; p <= 6; ++p) {
      const auto L = gen::dissemination_allreduce_coverage(K, p);
      CHECK(L.front() == 1);
      CHECK(L.back() == K);
      CHECK(L.size() == log_ceil(K, p) + 1);
      for (size_t k = 0; k + 1 < L.size(); ++k) {
        CHECK(uint64_t{L[k + 1]} <= uint64_t{p + 1} * L[k]);
        CHECK(uint64_t{L[k + 1]} + p >= uint64_t{p + 1} * L[k]);
      }
    }
  }
}

TEST_CASE("p-port allgather, allgatherv, reduce-scatter, allreduce: every K <= 64, p <= 4, exact", "[dissemination][heavy]") {
  for (uint32_t K = 2; K <= 64; ++K) check_K(K, {1u}, {1u});
  for (uint32_t K : {2u, 3u, 5u, 9u, 16u, 17u, 28u}) check_K(K, {2u, 3u, 4u}, {1u, 2u});
}

TEST_CASE("p-port collectives: every K <= 64, p <= 4, n <= 4", "[dissemination][.slow]") {
  g_replay_up_to = 16;  // and every plan of K <= 16 replayed on threads
  for (uint32_t K = 2; K <= 64; ++K) check_K(K, {2u, 3u, 4u}, {1u});
  for (uint32_t K = 2; K <= 24; ++K) check_K(K, {1u, 2u}, {2u, 3u});
}

TEST_CASE("a wrong reduce-scatter plan is caught by the checker", "[dissemination]") {
  ir::Plan plan = gen::dissemination_reduce_scatter(spec_of(OpKind::ReduceScatter, 6, 2, 1));
  REQUIRE_NOTHROW(passes::verify(plan, kExact));
  // Rank 3 outputs its own input block for itself instead of the sum.
  ir::Plan wrong = plan;
  wrong.ranks[3].outputs[0] = wrong.ranks[3].inputs[4];
  CHECK_THROWS_AS(passes::verify(wrong, kExact), VerifyError);
  // A dropped addition: one op loses its last term.
  wrong = plan;
  for (auto& st : wrong.ranks[0].steps)
    if (!st.ops.empty()) {
      st.ops[0].terms.pop_back();
      break;
    }
  CHECK_THROWS_AS(passes::verify(wrong, kExact), VerifyError);
}

TEST_CASE("p-port collectives refuse specs outside their reach by name", "[dissemination]") {
  Spec s = spec_of(OpKind::ReduceScatter, 8, 2, 1);
  CHECK_THROWS_WITH(gen::circulant_reduce_scatter(s), Catch::Contains("p = 2 ports") && Catch::Contains("p = 1"));
  s.p = 1;
  s.lambda = 2;
  CHECK_THROWS_WITH(gen::circulant_reduce_scatter(s), Catch::Contains("lambda = 2"));
  CHECK_THROWS_WITH(gen::dissemination_reduce_scatter(spec_of(OpKind::Allgather, 8, 1, 1)),
                    Catch::Contains("computes 'reduce-scatter', not 'allgather'"));
  CHECK_THROWS_WITH(gen::dissemination_allgather(spec_of(OpKind::Allreduce, 8, 1, 1)),
                    Catch::Contains("'allgather' or 'allgatherv'"));
  CHECK_THROWS_WITH(gen::dissemination_reduce_scatter(spec_of(OpKind::ReduceScatter, 70000, 1, 300)),
                    Catch::Contains("K*n = 70000*300") && Catch::Contains("16777216"));
  // Within the per-rank limit, the postcondition is a function of the spec,
  // not a map (16·10^6 inputs, 6.4·10^10 dense entries); refused before anything
  // is allocated only past the 2^31 inputs a whole plan numbers.
  const Postcondition big = postcondition(spec_of(OpKind::ReduceScatter, 4000, 1, 1));
  CHECK_FALSE(big.dense);
  CHECK(big.map.a.empty());
  CHECK(big.nonzeros() == uint64_t{4000} * 4000);  // K outputs of K terms
  CHECK_THROWS_WITH(postcondition(spec_of(OpKind::ReduceScatter, 50000, 1, 1)),
                    Catch::Contains("reduce-scatter with K = 50000") && Catch::Contains("2147483648"));
  CHECK_THROWS_WITH(gen::dissemination_allreduce(spec_of(OpKind::Allreduce, 1, 1, 1)), Catch::Contains("K = 1"));
  // The circulant generator is skipped by auto, with the reason.
  const Spec p3 = spec_of(OpKind::ReduceScatter, 8, 3, 1);
  for (const gen::Candidate& c : gen::candidates(p3, passes::CostModel{}))
    if (c.generator->name == "circulant-reduce-scatter") CHECK_THAT(c.why_not, Catch::Contains("p = 3"));
  CHECK(gen::choose_generator(p3, passes::CostModel{}).name == "dissemination-reduce-scatter");
}

TEST_CASE("allreduce: auto picks by the cost model, --blocks auto one chunk per rank for long vectors",
          "[dissemination]") {
  const Spec s = spec_of(OpKind::Allreduce, 16, 1, 1);
  // Short vector, costly steps: the latency-optimal allreduce with n = 1.
  CHECK(gen::allreduce_auto_blocks(s, 64, 1000, 1) == 1);
  // Long vector: reduce-scatter then allgather, n = K.
  CHECK(gen::allreduce_auto_blocks(s, 1 << 20, 1000, 1) == 16);
  passes::CostModel cm;
  cm.beta = 1000;
  cm.tau = 1;
  cm.len = (1 << 20) / 16;
  Spec wide = s;
  wide.blocks = 16;
  // The bandwidth-optimal allreduce: for K = 16 recursive halving-doubling,
  // whose C1, C2 tie reduce-scatter-allgather's (registered first).
  CHECK(gen::choose_generator(wide, cm).name == "recursive-halving-doubling");
  CHECK(gen::find_generator("reduce-scatter-allgather").estimate(wide, cm).C2 ==
        gen::find_generator("recursive-halving-doubling").estimate(wide, cm).C2);
  cm.len = 4;
  CHECK(gen::choose_generator(wide, cm).name != "reduce-scatter-allgather");
  CHECK(gen::choose_generator(wide, cm).name != "recursive-halving-doubling");
  // The choice's modeled times, computed here: 2q·β + 2(K−1)·ℓτ against
  // q·β + q·n·ℓτ.
  const auto bw = gen::reduce_scatter_allgather_cost(wide);
  CHECK(bw.C1 == 8);
  CHECK(bw.C2 == 30);
  const auto lat = gen::dissemination_allreduce_cost(wide);
  CHECK(lat.C1 == 4);
  CHECK(lat.C2 == 64);
  CHECK_THROWS_WITH(gen::allreduce_auto_blocks(s, 0, 1, 1), Catch::Contains("--cost-len"));
}
