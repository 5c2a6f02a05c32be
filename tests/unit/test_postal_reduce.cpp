// The postal reduce (the postal broadcast's tree with time reversed) and the
// postal allreduce (that reduce, then the broadcast): every plan through the
// exact checker over an exhaustive small grid, C1 and C2 against the closed
// forms and the estimates, the star they become for large λ, rank-local
// equality, replays, refusals and the choice of `--algorithm auto`.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "gen/postal.h"
#include "gen/registry.h"
#include "passes/cost.h"
#include "passes/verify.h"
#include "runtime/check/replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;

namespace {

Spec spec_of(OpKind op, uint32_t K, uint32_t p, uint32_t n, uint32_t lambda, uint32_t root = 0) {
  Spec s = test::plain_spec(op, K, p, n, lambda, Field::gf256());
  s.root = root;
  return s;
}

// Every message's sender and receiver, per step, of one plan.
struct Edge {
  uint32_t t, from, to;
};
std::vector<Edge> sends_of(const ir::Plan& plan) {
  std::vector<Edge> e;
  for (const ir::Program& prog : plan.ranks)
    for (const ir::Step& st : prog.steps)
      for (const ir::Send& s : st.sends) e.push_back({st.t, prog.rank, s.to});
  return e;
}

}  // namespace

TEST_CASE("postal reduce: exact, the postal bound, the broadcast's tree reversed", "[postal-reduce]") {
  size_t plans = 0;
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t K = 2; K <= 24; ++K)
      for (uint32_t lambda : {1u, 2u, 3u, K - 1})
        for (uint32_t n : {1u, 3u}) {
          const uint32_t root = (K * 7 + p) % K;
          INFO(fmt::format("K = {}, p = {}, n = {}, lambda = {}, root = {}", K, p, n, lambda, root));
          const Spec s = spec_of(OpKind::Reduce, K, p, n, lambda, root);
          const gen::GeneratorInfo& g = gen::find_generator("postal-reduce");
          const ir::Plan plan = g.build(s, {});
          REQUIRE_NOTHROW(passes::verify(plan, kExact));
          const passes::CostReport c = passes::cost(plan);
          const uint32_t m = passes::postal_steps_bound(K, p, lambda);
          CHECK(c.C1 == m);
          CHECK(c.C2 == uint64_t{n} * (m - lambda + 1));
          const auto e = g.estimate(s, {});
          CHECK(e.C1 == c.C1);
          CHECK(e.C2 == c.C2);
          // The broadcast's messages, each reversed in time and direction.
          Spec b = s;
          b.op = OpKind::Broadcast;
          const ir::Plan bc = gen::postal_broadcast(b);
          std::vector<Edge> want;
          for (const Edge& x : sends_of(bc)) want.push_back({m + 1 - (x.t + lambda - 1), x.to, x.from});
          const std::vector<Edge> got = sends_of(plan);
          CHECK(got.size() == K - 1);
          REQUIRE(got.size() == want.size());
          for (const Edge& x : want) {
            bool found = false;
            for (const Edge& y : got) found = found || (y.t == x.t && y.from == x.from && y.to == x.to);
            CHECK(found);
          }
          for (uint32_t r = 0; r < K; r += K > 9 ? 4 : 1) CHECK(g.build_rank(s, r).program == plan.ranks[r]);
          if (K <= 9 && p <= 2) CHECK(rt::replay_and_compare(plan, 13, 5, 1).equal);
          ++plans;
        }
  CHECK(plans == 4 * 23 * 4 * 2);
}

TEST_CASE("postal reduce: a star for p = 1 and lambda >= K - 1", "[postal-reduce]") {
  for (uint32_t K : {2u, 5u, 8u, 16u}) {
    const ir::Plan plan = gen::postal_reduce(spec_of(OpKind::Reduce, K, 1, 1, K - 1, 1));
    for (const Edge& e : sends_of(plan)) CHECK(e.to == 1);
    // The root receives one message in each of K − 1 steps.
    CHECK(plan.ranks[1].steps.size() == K - 1);
    for (const ir::Step& st : plan.ranks[1].steps) CHECK(st.recvs.size() == 1);
  }
}

TEST_CASE("postal allreduce: exact, 2m steps, reduce into 0 then broadcast", "[postal-reduce]") {
  size_t plans = 0;
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t K = 2; K <= 24; ++K)
      for (uint32_t lambda : {1u, 2u, 3u, K - 1})
        for (uint32_t n : {1u, 2u}) {
          INFO(fmt::format("K = {}, p = {}, n = {}, lambda = {}", K, p, n, lambda));
          const Spec s = spec_of(OpKind::Allreduce, K, p, n, lambda);
          const gen::GeneratorInfo& g = gen::find_generator("postal-allreduce");
          const ir::Plan plan = g.build(s, {});
          REQUIRE_NOTHROW(passes::verify(plan, kExact));
          const passes::CostReport c = passes::cost(plan);
          const uint32_t m = passes::postal_steps_bound(K, p, lambda);
          CHECK(c.C1 == 2 * m);
          CHECK(c.C2 == 2 * uint64_t{n} * (m - lambda + 1));
          const auto e = g.estimate(s, {});
          CHECK(e.C1 == c.C1);
          CHECK(e.C2 == c.C2);
          CHECK(sends_of(plan).size() == 2 * (K - 1));
          for (uint32_t r = 0; r < K; r += K > 9 ? 4 : 1) CHECK(g.build_rank(s, r).program == plan.ranks[r]);
          if (K <= 9 && p <= 2) CHECK(rt::replay_and_compare(plan, 13, 9, 1).equal);
          ++plans;
        }
  CHECK(plans == 4 * 23 * 4 * 2);
}

TEST_CASE("postal reduce and allreduce: refusals and auto's choice", "[postal-reduce]") {
  CHECK_THAT(test::user_error_of([] { gen::postal_reduce(spec_of(OpKind::Broadcast, 8, 1, 1, 1)); }),
             Catch::Contains("the postal reduce generator computes 'reduce', not 'broadcast'"));
  CHECK_THAT(test::user_error_of([] { gen::postal_allreduce(spec_of(OpKind::Reduce, 8, 1, 1, 1)); }),
             Catch::Contains("the postal allreduce generator computes 'allreduce', not 'reduce'"));
  CHECK_THAT(test::user_error_of([] { gen::postal_reduce(spec_of(OpKind::Reduce, 8, 1, 1, 1, 8)); }),
             Catch::Contains("root = 8"));
  CHECK_THAT(test::user_error_of([] { gen::postal_reduce_local(spec_of(OpKind::Reduce, 8, 1, 1, 1), 8); }),
             Catch::Contains("rank 8 is not a processor"));
  // λ = 1: the same tree and cost as tree-reduce, which auto keeps on the
  // tie. λ > 1: fewer steps than the (p+1)-nomial tree's λ·⌈log K⌉ but a
  // message in every step, so the model decides: at K = 16 and the default
  // model (β = τ = 1, len = 1) λ = 3 ties (12 + 4 against 9 + 7) and λ = 8
  // goes to the postal tree (32 + 4 against 18 + 11).
  const passes::CostModel cm;
  CHECK(gen::choose_generator(spec_of(OpKind::Reduce, 16, 1, 1, 1), cm).name == "tree-reduce");
  CHECK(gen::choose_generator(spec_of(OpKind::Reduce, 16, 1, 1, 3), cm).name == "tree-reduce");
  CHECK(gen::choose_generator(spec_of(OpKind::Reduce, 16, 1, 1, 8), cm).name == "postal-reduce");
  // The allreduce: dissemination for small λ.
  CHECK(gen::choose_generator(spec_of(OpKind::Allreduce, 16, 1, 1, 1), cm).name != "postal-allreduce");
}
