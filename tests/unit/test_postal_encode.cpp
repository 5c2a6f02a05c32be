// All-to-all encode under postal latency (postal prepare-and-shoot): every
// split m on an exhaustive small grid verifies exactly, its cost equals the
// formula computed without the plan, the all-gather split meets the postal
// lower bound, and the cost model's choice is never worse than the others.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gen/postal_encode.h"
#include "gen/prepare_shoot.h"
#include "gen/registry.h"
#include "matrix/matrix.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "runtime/check/replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;

TEST_CASE("postal encode: every split, K <= 32, p <= 3, lambda <= 4, exact verification", "[postal_encode][heavy]") {
  const Field f = Field::gf256();
  for (uint32_t lambda = 1; lambda <= 4; ++lambda)
    for (uint32_t p = 1; p <= 3; ++p)
      for (uint32_t K = 2; K <= 32; ++K) {
        const Spec s = make_encode_spec(K, p, lambda, f, matrix_random(K, 97 * K + 7 * p + lambda, f));
        for (uint32_t m = 2; m <= K; ++m) {
          INFO("K=" << K << " p=" << p << " lambda=" << lambda << " m=" << m);
          const ir::Plan plan = gen::postal_prepare_shoot(s, m);
          REQUIRE_NOTHROW(passes::verify(plan, kExact));
          const auto c = passes::cost(plan);
          const auto e = gen::postal_split_cost(K, p, lambda, m);
          REQUIRE(c.C1 == e.C1);
          REQUIRE(c.C2 == e.C2);
          if (m == K) REQUIRE(c.C1 == passes::postal_steps_bound(K, p, lambda));
        }
      }
}

TEST_CASE("postal encode: the postal bound is min{t : G(t) >= K} and lambda = 1 recovers log_{p+1} K", "[postal_encode]") {
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t K = 2; K <= 300; ++K) {
      REQUIRE(gen::postal_T(K, p, 1) == passes::lemma1_bound(K, p));
      REQUIRE(gen::postal_T(K, p, 3) == passes::postal_steps_bound(K, p, 3));
      // With λ = 1 the split m = (p+1)^{Tp} of prepare-and-shoot is also
      // C1-optimal here.
      const auto sh = gen::prepare_shoot_shape(K, p);
      if (sh.m <= K) REQUIRE(gen::postal_split_cost(K, p, 1, static_cast<uint32_t>(sh.m)).C1 == sh.C1());
    }
}

TEST_CASE("postal encode: the cost model picks the cheapest split and generator", "[postal_encode]") {
  for (uint32_t lambda : {1u, 2u, 5u})
    for (uint32_t K : {16u, 100u, 1000u})
      for (double beta : {0.0, 1.0, 1000.0, 1e9}) {
        passes::CostModel cm{beta, 1.0, 64};
        const uint32_t m = gen::choose_postal_split(K, 2, lambda, cm);
        const auto best = gen::postal_split_cost(K, 2, lambda, m);
        for (uint32_t other = 2; other <= K; other += (K > 100 ? 37 : 1)) {
          const auto c = gen::postal_split_cost(K, 2, lambda, other);
          REQUIRE(cm.time(best.C1, best.C2) <= cm.time(c.C1, c.C2));
        }
        // Start-up cost dominating: the C1-optimal all-gather wins.
        if (beta == 1e9) REQUIRE(best.C1 == passes::postal_steps_bound(K, 2, lambda));
        const Spec s = make_encode_spec(K, 2, lambda, Field::gf256(), matrix_identity(K, Field::gf256()));
        const auto& g = gen::choose_generator(s, cm);
        const auto ge = g.estimate(s, cm);
        for (const auto& h : gen::generators()) {
          if (std::find(h.ops.begin(), h.ops.end(), OpKind::Encode) == h.ops.end()) continue;
          if (h.why_not && !h.why_not(s, cm).empty()) continue;  // cannot compute this matrix
          const auto he = h.estimate(s, cm);
          REQUIRE(cm.time(ge.C1, ge.C2) <= cm.time(he.C1, he.C2));
        }
      }
}

TEST_CASE("postal encode: bad splits are user errors", "[postal_encode]") {
  const Spec s = make_encode_spec(8, 2, 2, Field::gf256(), matrix_random(8, 1, Field::gf256()));
  REQUIRE_THROWS_AS(gen::postal_prepare_shoot(s, 1), UserError);
  REQUIRE_THROWS_AS(gen::postal_prepare_shoot(s, 9), UserError);
}
