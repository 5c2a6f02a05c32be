// The reduction-operator checker (passes/verify_reduction.h): every
// generator of reduce, allreduce, reduce-scatter and prefix over exhaustive
// small grids, each plan's three properties asserted with the reason they
// hold or fail, then hand-made plans that are correct FIELD sums over
// GF(2^8) but wrong for an operator ⊕ (a term twice, a cancellation, swapped
// operands, different trees on two ranks). The replays with real operators
// are in tests/integration/test_user_op.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "gen/registry.h"
#include "ir/plan.h"
#include "passes/verify.h"
#include "passes/verify_reduction.h"
#include "pipeline/pipeline.h"
#include "prefix_plans.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using namespace collplan::ir;
using passes::reduction_properties;
using passes::ReductionProperties;
using test::kExact;

namespace {

// What each generator's plans are, as a function of the spec. The grid test
// asserts these; docs/collectives.md ("Replaying with any operator") has the
// same table.
struct Expected {
  bool ordered, consistent;
};

Expected expected(const std::string& g, const Spec& s) {
  const uint32_t K = s.K, p = s.p;
  // Trees and chains into a root combine "own ⊕ received" or "received ⊕
  // own" as a child's subtree arrives; that is rank order only when the root
  // is rank 0 and its children come in increasing order: a single round
  // (K <= p+1) or, for the pipelined reduce, the p = 1 chain 0 ← 1 ← 2 ...
  // Each result is computed once, so they are consistent.
  if (g == "tree-reduce") return {s.root == 0 && K <= p + 1, true};
  // The postal tree reversed: the root hears the children it would have
  // broadcast to last first, so a root with children in two steps folds out
  // of order; with K <= p+1 every child is heard in one step, in port order.
  // The allreduce is that reduce into rank 0, then copies.
  if (g == "postal-reduce") return {s.root == 0 && K <= p + 1, true};
  if (g == "postal-allreduce") return {K <= p + 1, true};
  if (g == "pipelined-reduce") return {s.root == 0 && (p == 1 || K <= p + 1), true};
  // The circulant reduce runs the circulant broadcast backwards: partial
  // sums over wrapped-around rank ranges, in order only for K = 2.
  if (g == "circulant-reduce") return {s.root == 0 && K == 2, true};
  // Reduce-scatter: rank j's block gathers partial sums of ranks j+1, j+2,
  // ... (mod K), starting from its own: wrapped around, never in rank order
  // (K = 2: rank 1 forms x_1 ⊕ x_0). One result per output: consistent.
  if (g == "circulant-reduce-scatter" || g == "dissemination-reduce-scatter") return {false, true};
  // The direct reduce-scatter: own block first, then r − 1, r − 2, ...:
  // the same.
  if (g == "direct-reduce-scatter") return {false, true};
  // Recursive halving: own partial sum first, then the partners' by port
  // (K = 2: rank 1 forms x1 ⊕ x0).
  if (g == "recursive-halving") return {false, true};
  // Every rank folds the sum itself, starting from its own block and going
  // around the circle, so for K >= 3 ranks build different trees (rank 0
  // ((x1⊕x2)⊕x0), rank 1 ((x0⊕x2)⊕x1)): not consistent. K = 2: one node,
  // the same up to operand order.
  if (g == "circulant-allreduce" || g == "dissemination-allreduce") return {false, K == 2};
  // Reduce-scatter, then the allgather copies each block's single result:
  // consistent always. Ordered only where the reduce-scatter part happens to
  // fold in rank order (one block, K = 2, or K = 3 with p = 1).
  if (g == "reduce-scatter-allgather") return {s.blocks == 1 && (K == 2 || (K == 3 && p == 1)), true};
  // Recursive halving: each chunk summed once at its owner, own partial sum
  // first, then the partners' by port; in rank order only for one block on
  // K = 2 (rank 0 owns it: x0 ⊕ x1).
  if (g == "recursive-halving-doubling") return {s.blocks == 1 && K == 2, true};
  // The postal prefix keeps operand order by construction (verify_order
  // proves it); each item's scan appears once.
  if (g == "postal-prefix") return {true, true};
  FAIL("no expectation for generator " << g);
  return {};
}

// The delivered plan: generator, then the default passes (unless `passes`
// says otherwise), checked exactly over the field.
Plan compiled(const Spec& s, const std::string& algorithm, std::vector<std::string> passes = {"drop-zeros", "alloc-slots"}) {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  opt.passes = std::move(passes);
  opt.verify = kExact;
  return pipeline::compile(s, opt).plan;
}

ReductionProperties props_of(const Plan& plan) {
  const ReductionProperties rp = reduction_properties(plan);
  // Every why_not string is set exactly when its property fails.
  CHECK(rp.why_not_exact.empty() == rp.exact);
  CHECK(rp.why_not_ordered.empty() == rp.ordered);
  CHECK(rp.why_not_consistent.empty() == rp.consistent);
  CHECK((!rp.ordered || rp.exact));
  return rp;
}

}  // namespace

TEST_CASE("reduction properties of every generator over a small grid", "[reduction]") {
  // Every registered generator of the four operations: a new one fails in
  // expected() until its properties are stated there.
  const std::vector<OpKind> ops = {OpKind::Reduce, OpKind::Allreduce, OpKind::ReduceScatter, OpKind::Prefix};
  for (const gen::GeneratorInfo& gi : gen::generators()) {
    const auto which = std::find_if(ops.begin(), ops.end(), [&](OpKind o) { return gi.computes(o); });
    if (which == ops.end()) continue;
    const OpKind op = *which;
    const std::string& g = gi.name;
    uint32_t built = 0;
    for (uint32_t K = 2; K <= 9; ++K)
      for (uint32_t p = 1; p <= 3; ++p)
        for (uint32_t lambda = 1; lambda <= 2; ++lambda)
          for (uint32_t n = 1; n <= 3; ++n)
            for (uint32_t variant : {0u, 1u, 2u}) {
              Spec s = test::plain_spec(op, K, p, n, lambda, Field::gf256());
              if (op == OpKind::Reduce) s.root = variant == 0 ? 0 : variant == 1 ? K - 1 : K / 2;
              // Prefix: n = 1 one item per rank, n > 1 uneven counts with
              // zeros (Algorithm B); variant 1 exclusive.
              if (op == OpKind::Prefix) s.exclusive = variant == 1;
              if (op != OpKind::Reduce && variant > (op == OpKind::Prefix ? 1u : 0u)) continue;
              Plan plan;
              try {
                plan = compiled(s, g);
              } catch (const UserError&) {
                continue;  // the generator does not take this (p, λ), e.g. the circulant ones need p = λ = 1
              }
              ++built;
              INFO(g << " K=" << K << " p=" << p << " lambda=" << lambda << " n=" << n << " root=" << s.root
                     << (s.exclusive ? " exclusive" : "") << (s.counts.empty() ? "" : " counts"));
              const ReductionProperties rp = props_of(plan);
              const Expected want = expected(g, plan.spec);
              // Every generator's plan is exact: each combination joins
              // disjoint partial sums with coefficient 1, so it is right for
              // every commutative operator (MPI's predefined ones).
              CHECK(rp.exact);
              INFO(rp.why_not_ordered << " | " << rp.why_not_consistent);
              CHECK(rp.ordered == want.ordered);
              CHECK(rp.consistent == want.consistent);
              if (op == OpKind::Prefix) CHECK_NOTHROW(passes::verify_order(plan));  // agrees with verify_order
            }
    INFO(g);
    CHECK(built >= 24);  // the circulant generators take p = λ = 1 only: 8 K × 3 n
  }
}

TEST_CASE("reduction properties at a few thousand ranks stay cheap", "[reduction]") {
  const Plan plan = compiled(test::plain_spec(OpKind::Allreduce, 2048, 1, 2, 1, Field::gf256()),
                              "dissemination-allreduce", {});
  const ReductionProperties rp = props_of(plan);
  CHECK(rp.exact);
  CHECK_FALSE(rp.consistent);
  CHECK_THAT(rp.why_not_consistent, Catch::Contains("rank 1 output 0") && Catch::Contains("…"));  // long trees cut
}

namespace {

// A hand-made allreduce, K = 3, p = 2, λ = 1, one block, over GF(2^8): in
// step 1 every rank sends its input to both others, then rank k folds
// the terms listed in orders[k] (items = source ranks) left to right into
// its output. extra[k] holds further ops run first, whose slots the fold
// can name as item 100 + index.
Plan allreduce3(const std::vector<std::vector<uint32_t>>& orders) {
  Spec s = test::plain_spec(OpKind::Allreduce, 3, 2, 1, 1, Field::gf256());
  s.algorithm = "hand";
  Plan plan = make_plan(s, 1);
  std::vector<std::vector<SlotId>> held(3, std::vector<SlotId>(3));  // held[k][r]: rank r's input at rank k
  for (Rank k = 0; k < 3; ++k) {
    Program& pr = plan.ranks[k];
    pr.inputs = {pr.new_slot()};
    held[k][k] = pr.inputs[0];
  }
  for (Rank k = 0; k < 3; ++k)
    for (Port port = 0; port < 2; ++port) {
      const Rank to = (k + 1 + port) % 3;
      Program& src = plan.ranks[k];
      src.at(1).sends.push_back(make_send(plan, src, port, to, {unit(src.inputs[0])}));
      Program& dst = plan.ranks[to];
      const SlotId got = dst.new_slot();
      dst.at(1).recvs.push_back(make_recv(plan, dst, 1, port, k, {got}));
      held[to][k] = got;
    }
  for (Rank k = 0; k < 3; ++k) {
    Program& pr = plan.ranks[k];
    std::vector<Term> terms;
    for (uint32_t r : orders[k]) terms.push_back(Term{held[k][r], 1});
    const SlotId out = pr.new_slot();
    pr.at(1).ops.push_back(make_op(pr, out, terms));
    pr.outputs = {out};
  }
  return plan;
}

const std::vector<uint32_t> kInOrder = {0, 1, 2};

}  // namespace

TEST_CASE("reduction checker: hand-made allreduces, each mutation reported precisely", "[reduction]") {
  SECTION("in order everywhere: exact, ordered, consistent") {
    const ReductionProperties rp = props_of(allreduce3({kInOrder, kInOrder, kInOrder}));
    CHECK((rp.exact && rp.ordered && rp.consistent));
  }
  SECTION("swapped operands of one node: exact and consistent, not ordered") {
    const Plan m = allreduce3({kInOrder, {1, 0, 2}, kInOrder});
    CHECK_NOTHROW(passes::verify(m, kExact));
    const ReductionProperties rp = props_of(m);
    CHECK(rp.exact);
    CHECK(rp.consistent);  // (x1⊕x0)⊕x2 rounds like (x0⊕x1)⊕x2
    CHECK_THAT(rp.why_not_ordered, Catch::Contains("rank 1 step 1 op 0") &&
                                       Catch::Contains("combines block 0 of ranks {1} then block 0 of ranks {0}") &&
                                       Catch::Contains("out of order"));
  }
  SECTION("a different tree on one rank: exact, not consistent, not ordered") {
    const Plan m = allreduce3({kInOrder, kInOrder, {0, 2, 1}});
    const ReductionProperties rp = props_of(m);
    CHECK(rp.exact);
    CHECK_THAT(rp.why_not_ordered, Catch::Contains("rank 2 step 1 op 0") && Catch::Contains("not adjacent"));
    CHECK_THAT(rp.why_not_consistent, Catch::Contains("rank 2 output 0") && Catch::Contains("((x0⊕x2)⊕x1)") &&
                                          Catch::Contains("rank 0 output 0") && Catch::Contains("((x0⊕x1)⊕x2)"));
  }
  SECTION("a term three times: a field sum (x + x = 0 in GF(2^8)), not exact") {
    const Plan m = allreduce3({kInOrder, {0, 1, 2, 2, 2}, kInOrder});
    CHECK_NOTHROW(passes::verify(m, kExact));
    const ReductionProperties rp = props_of(m);
    CHECK_FALSE(rp.exact);
    CHECK_THAT(rp.why_not_exact, Catch::Contains("rank 1 step 1 op 0") && Catch::Contains("(term 3, slot") &&
                                     Catch::Contains("ranks {2} twice"));
    CHECK_THAT(rp.why_not_ordered, Catch::StartsWith("not exact: rank 1 step 1 op 0"));
  }
  SECTION("a cancellation: (x0 ⊕ x1 ⊕ x2 ⊕ x1) ⊕ x1, right over GF(2^8), not exact") {
    Plan m = allreduce3({kInOrder, kInOrder, kInOrder});
    Program& p0 = m.ranks[0];
    Op& fold = p0.steps[0].ops[0];
    const SlotId x1 = fold.terms[1].slot;
    const SlotId t = p0.new_slot();
    std::vector<Term> first(fold.terms.begin(), fold.terms.end());
    first.push_back(Term{x1, 1});  // x0 + x1 + x2 + x1 = x0 + x2 over the field
    fold.terms = {Term{t, 1}, Term{x1, 1}};
    p0.steps[0].ops.insert(p0.steps[0].ops.begin(), make_op(p0, t, first));
    CHECK_NOTHROW(passes::verify(m, kExact));
    const ReductionProperties rp = props_of(m);
    CHECK_FALSE(rp.exact);
    CHECK_THAT(rp.why_not_exact, Catch::Contains("rank 0 step 1 op 0") &&
                                     Catch::Contains("combines block 0 of ranks {0..2} with block 0 of ranks {1}") &&
                                     Catch::Contains("ranks {1} twice"));
  }
  SECTION("an item missing (the field checker rejects it too)") {
    const Plan m = allreduce3({kInOrder, kInOrder, {0, 2}});
    CHECK_THROWS_AS(passes::verify(m, kExact), VerifyError);
    const ReductionProperties rp = props_of(m);
    CHECK_FALSE(rp.exact);
    CHECK_THAT(rp.why_not_exact, Catch::Contains("rank 2 output 0") && Catch::Contains("holds block 0 of ranks {0,2}") &&
                                     Catch::Contains("needs block 0 of ranks {0..2} (missing {1})"));
  }
  SECTION("a coefficient other than 1: neither exact nor consistent") {
    Plan m = allreduce3({kInOrder, kInOrder, kInOrder});
    m.ranks[1].steps[0].ops[0].terms[2].coeff = 3;
    const ReductionProperties rp = props_of(m);
    CHECK_FALSE(rp.exact);
    CHECK_FALSE(rp.consistent);
    CHECK_THAT(rp.why_not_exact, Catch::Contains("rank 1 step 1 op 0") && Catch::Contains("coefficient 3"));
  }
  SECTION("a coefficient in a payload names the send") {
    Plan m = allreduce3({kInOrder, kInOrder, kInOrder});
    m.ranks[2].steps[0].sends[1].payload[0].terms[0].coeff = 5;
    CHECK_THAT(props_of(m).why_not_exact,
               Catch::Contains("rank 2 step 1 send 1 (port 1 to rank 1, element 0)") && Catch::Contains("coefficient 5"));
  }
  SECTION("no value at an output, and combined") {
    Plan m = allreduce3({kInOrder, {}, kInOrder});
    CHECK_THAT(props_of(m).why_not_exact, Catch::Contains("rank 1 output 0") && Catch::Contains("holds no value"));
    Plan c = allreduce3({kInOrder, kInOrder, kInOrder});
    Program& p1 = c.ranks[1];
    const SlotId none = p1.new_slot();
    p1.steps[0].ops.insert(p1.steps[0].ops.begin(), make_op(p1, none, {}));
    p1.steps[0].ops[1].terms.push_back(Term{none, 1});
    CHECK_THAT(props_of(c).why_not_exact,
               Catch::Contains("rank 1 step 1 op 1") && Catch::Contains("cannot combine no value"));
  }
  SECTION("two blocks mixed") {
    Plan m = compiled(test::plain_spec(OpKind::Allreduce, 2, 1, 2, 1, Field::gf256()), "dissemination-allreduce", {});
    Op& o = m.ranks[0].steps.back().ops.at(0);
    REQUIRE(o.terms.size() == 2);
    o.terms[0].slot = m.ranks[0].inputs[1];  // block 1 of rank 0 into block 0's sum
    CHECK_THAT(props_of(m).why_not_exact, Catch::Contains("rank 0 step") && Catch::Contains("two different blocks"));
  }
}

TEST_CASE("reduction checker on compiled plans: a swap in an ordered chain", "[reduction]") {
  Spec s = test::plain_spec(OpKind::Reduce, 5, 1, 2, 1, Field::gf256());
  s.root = 0;
  Plan plan = compiled(s, "pipelined-reduce");
  REQUIRE(props_of(plan).ordered);
  // Swap the operands of the first two-term op anywhere: still the same
  // field sum, still exact, no longer in rank order.
  Op* target = nullptr;
  Rank at = 0;
  for (Program& pr : plan.ranks)
    for (Step& st : pr.steps)
      for (Op& o : st.ops)
        if (!target && o.terms.size() == 2) target = &o, at = pr.rank;
  REQUIRE(target);
  std::swap(target->terms[0], target->terms[1]);
  CHECK_NOTHROW(passes::verify(plan, kExact));
  const ReductionProperties rp = props_of(plan);
  CHECK(rp.exact);
  CHECK(rp.consistent);
  CHECK_THAT(rp.why_not_ordered, Catch::Contains("rank " + std::to_string(at) + " step") && Catch::Contains("out of order"));
}

TEST_CASE("reduction checker on prefix plans agrees with the order checker", "[reduction]") {
  const Plan good = test::doubling_plan(test::prefix_spec(8, 1, true));
  CHECK(props_of(good).ordered);
  Plan swapped = good;
  auto& terms = test::op_at(swapped, 5, 2, 0).terms;
  std::swap(terms[0], terms[1]);
  const ReductionProperties rp = props_of(swapped);
  CHECK(rp.exact);
  CHECK_THAT(rp.why_not_ordered, Catch::Contains("rank 5 step 2 op 0") && Catch::Contains("out of order"));
  CHECK_THAT(test::order_error(swapped), Catch::Contains("rank 5 step 2 op 0"));
  Plan given = good;
  given.ranks[0].outputs = given.ranks[0].inputs;  // exclusive item 0 must be "no value"
  CHECK_THAT(props_of(given).why_not_exact, Catch::Contains("rank 0 output 0 (slot") &&
                                                Catch::Contains("the exclusive prefix needs no value"));
}

TEST_CASE("reduction checker refuses other operations and broken structure", "[reduction]") {
  Plan m = allreduce3({kInOrder, kInOrder, kInOrder});
  Plan other = m;
  other.spec.op = OpKind::Allgather;
  CHECK_THROWS_WITH(reduction_properties(other), Catch::Contains("allgather") && Catch::Contains("reduce, allreduce"));
  CHECK_THROWS_AS(reduction_properties(other), UserError);
  Plan broken = m;
  broken.ranks[1].steps[0].recvs.pop_back();
  CHECK_THROWS_AS(reduction_properties(broken), VerifyError);
}

TEST_CASE("collplan check reports the operators a reduction plan is right for", "[reduction][cli]") {
  const auto d = test::scratch_dir("reduction-check");
  // dissemination-allreduce at K = 5: exact, out of order, different trees.
  REQUIRE(test::run_collplan("compile --op allreduce --K 5 --algorithm dissemination-allreduce -o ar.cplan", d).status ==
          0);
  const auto text = test::run_collplan("check ar.cplan", d);
  CHECK(text.status == 0);  // informative: a plan right over the field passes
  CHECK_THAT(text.out, Catch::Contains("operators: any commutative (exact); non-commutative: no (rank ") &&
                           Catch::Contains("out of order") &&
                           Catch::Contains("identical bits on every rank: no (rank 1 output 0"));
  const auto js = test::run_collplan("check ar.cplan --format json", d);
  REQUIRE(js.status == 0);
  const auto j = nlohmann::json::parse(js.out)["operators"];
  CHECK(j["exact"] == true);
  CHECK(j["ordered"] == false);
  CHECK(j["consistent"] == false);
  CHECK_FALSE(j.contains("why_not_exact"));
  CHECK_THAT(j["why_not_consistent"].get<std::string>(), Catch::Contains("rank 0 output 0"));
  // pipelined-reduce into rank 0 with p = 1: the chain keeps rank order.
  REQUIRE(test::run_collplan("compile --op reduce --K 4 --algorithm pipelined-reduce -o r.cplan", d).status == 0);
  CHECK_THAT(test::run_collplan("check r.cplan", d).out,
             Catch::Contains("operators: any commutative (exact); non-commutative: yes (ordered); identical bits on "
                             "every rank: yes"));
  const auto streamed = test::run_collplan("check r.cplan --streaming --format json", d);
  CHECK_THAT(nlohmann::json::parse(streamed.out)["operators"].get<std::string>(),
             Catch::Contains("not checked by --streaming"));
  // Other operations have no such line.
  REQUIRE(test::run_collplan("compile --op allgather --K 4 -o ag.cplan", d).status == 0);
  const auto ag = test::run_collplan("check ag.cplan", d);
  CHECK_THAT(ag.out, !Catch::Contains("operators:"));
  CHECK_FALSE(nlohmann::json::parse(test::run_collplan("check ag.cplan --format json", d).out).contains("operators"));
}
