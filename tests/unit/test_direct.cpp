// The direct allgather(v) and reduce-scatter (gen/direct.h): every plan
// through the exact checker over an exhaustive small grid, C1 and C2
// against the closed forms and the estimates, every message one rank's
// own data, rank-local equality, replays, refusals and auto's choice.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "gen/direct.h"
#include "gen/registry.h"
#include "passes/cost.h"
#include "passes/verify.h"
#include "runtime/check/replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;

namespace {

void check_direct(OpKind op, const char* name, uint32_t K, uint32_t p, uint32_t lambda, uint32_t n,
                  const std::vector<uint32_t>& counts = {}) {
  INFO(fmt::format("{} K = {}, p = {}, n = {}, lambda = {}, counts {}", name, K, p, n, lambda, counts.size()));
  Spec s = test::plain_spec(op, K, p, n, lambda, Field::gf256());
  s.counts = counts;
  const gen::GeneratorInfo& g = gen::find_generator(name);
  const ir::Plan plan = g.build(s, {});
  REQUIRE_NOTHROW(passes::verify(plan, kExact));
  const passes::CostReport c = passes::cost(plan);
  const uint32_t T = (K - 1 + p - 1) / p;
  const uint64_t most = counts.empty() ? n : *std::max_element(counts.begin(), counts.end());
  CHECK(c.C1 == T + lambda - 1);
  CHECK(c.C2 == T * most);
  const auto e = g.estimate(s, {});
  CHECK(e.C1 == c.C1);
  CHECK(e.C2 == c.C2);
  // Every rank meets every other once: one message each way, its own data.
  size_t messages = 0;
  for (const ir::Program& prog : plan.ranks)
    for (const ir::Step& st : prog.steps)
      for (const ir::Send& snd : st.sends) {
        ++messages;
        CHECK(st.t <= T);
        for (const ir::Combo& cb : snd.payload) {
          REQUIRE(cb.terms.size() == 1);
          CHECK(std::find(prog.inputs.begin(), prog.inputs.end(), cb.terms[0].slot) != prog.inputs.end());
        }
      }
  size_t senders = K;
  if (!counts.empty()) senders = static_cast<size_t>(std::count_if(counts.begin(), counts.end(), [](uint32_t x) { return x > 0; }));
  CHECK(messages == senders * (K - 1));
  for (uint32_t r = 0; r < K; r += K > 9 ? 4 : 1) CHECK(g.build_rank(s, r).program == plan.ranks[r]);
  if (K <= 9 && p <= 2) CHECK(rt::replay_and_compare(plan, 11, 3, 1).equal);
}

}  // namespace

TEST_CASE("direct allgather and reduce-scatter: exact, closed-form costs, one message per pair", "[direct]") {
  size_t plans = 0;
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t K = 2; K <= 24; ++K)
      for (uint32_t lambda : {1u, 2u, 3u, K - 1})
        for (uint32_t n : {1u, 3u}) {
          check_direct(OpKind::Allgather, "direct-allgather", K, p, lambda, n);
          check_direct(OpKind::ReduceScatter, "direct-reduce-scatter", K, p, lambda, n);
          std::vector<uint32_t> counts(K);
          for (uint32_t a = 0; a < K; ++a) counts[a] = (a * 7 + K + n) % 4;  // zeros among them
          if (std::any_of(counts.begin(), counts.end(), [](uint32_t x) { return x > 0; }))
            check_direct(OpKind::Allgatherv, "direct-allgather", K, p, lambda, 1, counts);
          plans += 3;
        }
  CHECK(plans == 3 * 4 * 23 * 4 * 2);
}

TEST_CASE("direct allgather and reduce-scatter: refusals and auto's choice", "[direct]") {
  CHECK_THAT(test::user_error_of([] {
               gen::direct_allgather(test::plain_spec(OpKind::ReduceScatter, 8, 1, 1, 1, Field::gf256()));
             }),
             Catch::Contains("direct-allgather"));
  CHECK_THAT(test::user_error_of([] {
               gen::direct_reduce_scatter(test::plain_spec(OpKind::Allgather, 8, 1, 1, 1, Field::gf256()));
             }),
             Catch::Contains("direct-reduce-scatter"));
  CHECK_THAT(test::user_error_of([] {
               gen::direct_allgather_local(test::plain_spec(OpKind::Allgather, 8, 1, 1, 1, Field::gf256()), 8);
             }),
             Catch::Contains("rank 8 is not a processor"));
  // λ = 1: the dissemination schedules' C2 in fewer steps, so auto keeps
  // them; λ = 3, K = 4: 5 steps against 6, the same C2.
  const passes::CostModel cm;
  for (OpKind op : {OpKind::Allgather, OpKind::ReduceScatter}) {
    CHECK(std::string(gen::choose_generator(test::plain_spec(op, 16, 1, 1, 1, Field::gf256()), cm).name)
              .rfind("direct", 0) != 0);
    CHECK(std::string(gen::choose_generator(test::plain_spec(op, 4, 1, 1, 3, Field::gf256()), cm).name)
              .rfind("direct", 0) == 0);
  }
}
