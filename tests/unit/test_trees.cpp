// Tree broadcast and reduce (gen/trees.h): exact verification over a grid of
// K, p, λ, roots and block counts; C1 and C2 equal to the formulas of the
// generator files (computed here from the definitions, not from the
// generators' helpers); the registry's estimates equal the built plans'.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>
#include <string>

#include "gen/registry.h"
#include "gen/trees.h"
#include "passes/cost.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;
using test::log_ceil;

namespace {

Spec tree_spec(OpKind op, uint32_t K, uint32_t p, uint32_t lambda, uint32_t root, uint32_t blocks) {
  Spec s;
  s.op = op;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.root = root;
  s.blocks = blocks;
  s.field = Field::gf256();
  return s;
}

// Depth of the heap p-ary tree: the number of parent hops from K−1 to 0.
uint32_t depth(uint32_t K, uint32_t p) {
  uint32_t d = 0;
  for (uint32_t x = K - 1; x != 0; x = (x - 1) / p) ++d;
  return d;
}

// Number of steps in which some node of the pipelined tree sends: the union
// of the intervals [1 + dλ, n + dλ], d < D, counted step by step.
uint64_t pipelined_send_steps(uint32_t n, uint32_t D, uint32_t lambda) {
  uint64_t c = 0;
  for (uint64_t t = 1; t <= n + uint64_t{D} * lambda; ++t) {
    bool any = false;
    for (uint32_t d = 0; d < D; ++d) any |= t >= 1 + uint64_t{d} * lambda && t <= n + uint64_t{d} * lambda;
    c += any;
  }
  return c;
}

void check_registry_estimate(const Spec& s, const std::string& name, const passes::CostReport& c) {
  const auto e = gen::find_generator(name).estimate(s, passes::CostModel{});
  CHECK(e.C1 == c.C1);
  CHECK(e.C2 == c.C2);
}

// Every K <= maxK, p <= 3, three roots, the given block counts; λ = 2, 3 on
// a sample (every third K, root 0) unless all_lambda.
uint32_t check_tree_grid(uint32_t maxK, const std::vector<uint32_t>& blocks, bool all_lambda) {
  uint32_t cases = 0;
  for (uint32_t K = 2; K <= maxK; ++K)
    for (uint32_t p = 1; p <= 3; ++p)
      for (uint32_t lambda : {1u, 2u, 3u})
        for (uint32_t root : {0u, K / 2, K - 1})
          for (uint32_t n : blocks) {
            if (!all_lambda && lambda > 1 && (K % 3 != 0 || root != 0)) continue;
            INFO("K=" << K << " p=" << p << " lambda=" << lambda << " root=" << root << " n=" << n);
            const Spec b = tree_spec(OpKind::Broadcast, K, p, lambda, root, n);
            const Spec r = tree_spec(OpKind::Reduce, K, p, lambda, root, n);
            const uint32_t T = log_ceil(K, p), D = depth(K, p);
            for (const ir::Plan& plan : {gen::tree_broadcast(b), gen::tree_reduce(r)}) {
              passes::verify(plan, kExact);
              const auto c = passes::cost(plan);
              CHECK(c.C1 == lambda * T);
              CHECK(c.C2 == uint64_t{n} * T);
              check_registry_estimate(plan.spec, plan.spec.op == OpKind::Broadcast ? "tree-broadcast" : "tree-reduce", c);
            }
            for (const ir::Plan& plan : {gen::pipelined_broadcast(b), gen::pipelined_reduce(r)}) {
              passes::verify(plan, kExact);
              const auto c = passes::cost(plan);
              CHECK(c.C1 == n - 1 + D * lambda);
              CHECK(c.C2 == pipelined_send_steps(n, D, lambda));
              check_registry_estimate(
                  plan.spec, plan.spec.op == OpKind::Broadcast ? "pipelined-broadcast" : "pipelined-reduce", c);
            }
            ++cases;
          }
  return cases;
}

}  // namespace

TEST_CASE("tree and pipelined broadcast/reduce: exact, costs as stated", "[trees]") {
  CHECK(check_tree_grid(20, {1, 4}, false) > 250);
}

TEST_CASE("tree and pipelined broadcast/reduce: every K <= 64, p <= 3, lambda <= 3", "[trees][.slow]") {
  CHECK(check_tree_grid(64, {1, 2, 5}, true) == 63 * 3 * 3 * 3 * 3);
}

TEST_CASE("auto picks the pipelined tree for long buffers and the nomial tree for short ones", "[trees]") {
  const Spec longb = tree_spec(OpKind::Reduce, 16, 2, 1, 0, 64);
  CHECK(gen::choose_generator(longb, passes::CostModel{}).name == "pipelined-reduce");
  const Spec shortb = tree_spec(OpKind::Reduce, 16, 2, 1, 0, 1);
  CHECK(gen::choose_generator(shortb, passes::CostModel{}).name == "tree-reduce");
}

TEST_CASE("tree generators reject the wrong operation and bad roots", "[trees]") {
  CHECK_THROWS_WITH(gen::tree_reduce(tree_spec(OpKind::Broadcast, 8, 1, 1, 0, 1)), Catch::Contains("'broadcast'"));
  CHECK_THROWS_WITH(gen::pipelined_broadcast(tree_spec(OpKind::Reduce, 8, 1, 1, 0, 1)), Catch::Contains("'reduce'"));
  CHECK_THROWS_WITH(gen::tree_broadcast(tree_spec(OpKind::Broadcast, 8, 1, 1, 9, 1)), Catch::Contains("root = 9"));
}
