// The operand-order checker (passes/verify_order.h) on prefix plans built by
// hand (prefix_plans.h), each then broken in the ways that matter for a
// non-commutative operator: the linear checker accepts some of these breaks,
// the order checker must not. The user-operator replay of the same plans is
// in tests/integration/test_user_op.cpp.
#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "ir/plan.h"
#include "passes/verify.h"
#include "passes/verify_order.h"
#include "prefix_plans.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using namespace collplan::ir;
using test::chain_plan;
using test::doubling_plan;
using test::kExact;
using test::op_at;
using test::order_error;
using test::prefix_spec;

TEST_CASE("order checker accepts hand-built prefix plans", "[order]") {
  for (uint32_t lambda : {1u, 2u, 3u})
    for (bool excl : {false, true}) {
      INFO("lambda " << lambda << (excl ? " exclusive" : " inclusive"));
      for (uint32_t K : {2u, 3u, 5u, 8u, 11u}) {
        INFO("K " << K);
        const Plan d = doubling_plan(prefix_spec(K, lambda, excl));
        CHECK(order_error(d).empty());
        CHECK_NOTHROW(passes::verify(d, kExact));
        const Plan c = chain_plan(prefix_spec(K, lambda, excl));
        CHECK(order_error(c).empty());
        CHECK_NOTHROW(passes::verify(c, kExact));
      }
      const Plan blocks = chain_plan(prefix_spec(4, lambda, excl, {2, 1, 3, 2}));
      CHECK(order_error(blocks).empty());
      CHECK_NOTHROW(passes::verify(blocks, kExact));
    }
}

TEST_CASE("order checker rejects each mutation with a precise message", "[order]") {
  const Plan good = doubling_plan(prefix_spec(8, 1, false));
  REQUIRE(order_error(good).empty());
  // In round 2 (step 2) rank 5 forms [2,3] ⊕ [4,5] with op 0.
  Plan probe = good;
  REQUIRE(op_at(probe, 5, 2, 0).terms.size() == 2);

  SECTION("swapped operands: linear checker accepts, order checker rejects") {
    Plan m = good;
    auto& terms = op_at(m, 5, 2, 0).terms;
    std::swap(terms[0], terms[1]);
    CHECK_NOTHROW(passes::verify(m, kExact));
    const std::string e = order_error(m);
    CHECK_THAT(e, Catch::Contains("rank 5 step 2 op 0") && Catch::Contains("combines [4,5] then [2,3]") &&
                      Catch::Contains("out of order"));
  }
  SECTION("coefficient other than 1") {
    Plan m = good;
    op_at(m, 3, 1, 0).terms[1].coeff = 2;
    const std::string e = order_error(m);
    CHECK_THAT(e, Catch::Contains("rank 3 step 1 op 0") && Catch::Contains("coefficient 2"));
  }
  SECTION("coefficient other than 1 in a payload") {
    Plan m = good;
    m.ranks[2].steps[0].sends[0].payload[0].terms[0].coeff = 3;
    CHECK_THAT(order_error(m), Catch::Contains("rank 2 step 1 send 0") && Catch::Contains("coefficient 3"));
  }
  SECTION("non-adjacent intervals") {
    Plan m = good;
    // Rank 5's own value [4,5] replaced by its input [5,5]: item 4 is skipped.
    op_at(m, 5, 2, 0).terms[1].slot = m.ranks[5].inputs[0];
    CHECK_THAT(order_error(m), Catch::Contains("rank 5 step 2 op 0") &&
                                   Catch::Contains("combines [2,3] then [5,5]") &&
                                   Catch::Contains("not adjacent (items 4..4 missing)"));
  }
  SECTION("overlapping intervals") {
    Plan m = good;
    // Rank 5 combines its round-1 result [4,5] with its input [5,5].
    Op& o = op_at(m, 5, 2, 0);
    o.terms = {o.terms[1], Term{m.ranks[5].inputs[0], 1}};
    CHECK_THAT(order_error(m), Catch::Contains("combines [4,5] then [5,5]") && Catch::Contains("overlapping"));
  }
  SECTION("wrong output interval") {
    Plan m = good;
    m.ranks[4].outputs = m.ranks[4].inputs;
    CHECK_THAT(order_error(m), Catch::Contains("rank 4 output 0") && Catch::Contains("is [4,4]") &&
                                   Catch::Contains("needs [0,4]"));
  }
  SECTION("empty result where a value is needed, and combined") {
    Plan m = doubling_plan(prefix_spec(4, 1, true));
    REQUIRE(order_error(m).empty());
    Plan a = m;
    a.ranks[0].outputs = a.ranks[0].inputs;  // exclusive item 0 must be "no value"
    CHECK_THAT(order_error(a), Catch::Contains("rank 0 output 0") && Catch::Contains("needs no value"));
    Plan b = m;
    // Rank 1's round-1 op gets an empty operand in front.
    Program& p1 = b.ranks[1];
    const SlotId none = p1.new_slot();
    Op& o = op_at(b, 1, 1, 0);
    o.terms.insert(o.terms.begin(), Term{none, 1});
    p1.steps[0].ops.insert(p1.steps[0].ops.begin(), make_op(p1, none, {}));
    CHECK_THAT(order_error(b), Catch::Contains("rank 1 step 1 op 1") && Catch::Contains("combines no value"));
  }
  SECTION("a receive moved one step early is a structural error") {
    Plan m = doubling_plan(prefix_spec(8, 2, false));
    REQUIRE(order_error(m).empty());
    // Rank 1 receives in step 2 what rank 0 sent in step 1; move the receive
    // into step 1 so its value would be combined one step too early.
    Program& p1 = m.ranks[1];
    REQUIRE(p1.steps[0].t == 1);
    REQUIRE(p1.steps[1].t == 2);
    REQUIRE(p1.steps[1].recvs.size() == 1);
    p1.steps[0].recvs.push_back(p1.steps[1].recvs[0]);
    p1.steps[1].recvs.clear();
    CHECK_THAT(order_error(m), Catch::Contains("rank 1 step 1 port 0") && Catch::Contains("latency violated"));
  }
  SECTION("only prefix plans") {
    Plan m = good;
    m.spec.op = OpKind::Allreduce;
    CHECK_THROWS_AS(passes::verify_order(m), UserError);
  }
}
