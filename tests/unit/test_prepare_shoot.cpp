// Prepare-and-shoot: exhaustive verification over the small grid, the cost
// formulas and examples of docs/design.md ("Prepare-and-shoot"), randomized
// verification at scale, and re-coding.
#include <catch2/catch.hpp>

#include "gen/prepare_shoot.h"
#include "matrix/matrix.h"
#include "passes/alloc_slots.h"
#include "passes/cost.h"
#include "passes/drop_zeros.h"
#include "pipeline/pipeline.h"
#include "passes/recode.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;
using test::random_encode_spec;

namespace {

std::vector<Field> three_fields() { return {Field::gf256(), Field::gf65536(), Field::prime(65537)}; }

}  // namespace

TEST_CASE("prepare-and-shoot shape: C1 and C2 of the worked examples", "[prepare_shoot]") {
  struct Ex {
    uint32_t K, p, C1;
    uint64_t C2;
  };
  // Worked examples (K, p, C1, C2 before drop-zeros), also in docs/design.md.
  const Ex ex[] = {{4, 1, 2, 2},   {8, 1, 3, 4},    {9, 2, 2, 2},      {16, 2, 3, 5},    {64, 1, 6, 14},
                   {65, 2, 4, 8},  {1000, 2, 7, 53}, {1024, 1, 10, 62}, {4096, 2, 8, 80}};
  for (const Ex& e : ex) {
    INFO("K=" << e.K << " p=" << e.p);
    auto sh = gen::prepare_shoot_shape(e.K, e.p);
    CHECK(sh.C1() == e.C1);
    CHECK(sh.C2() == e.C2);
    CHECK(sh.C1() == passes::lemma1_bound(e.K, e.p));
  }
}

TEST_CASE("prepare-and-shoot: exhaustive exact verification, K 2..64, p 1..4, three fields", "[prepare_shoot][sweep][heavy]") {
  for (const Field& f : three_fields())
    for (uint32_t p = 1; p <= 4; ++p)
      for (uint32_t K = 2; K <= 64; ++K) {
        INFO(f.name() << " K=" << K << " p=" << p);
        Spec spec = random_encode_spec(K, p, f, 1000 * K + p);
        ir::Plan plan = gen::prepare_shoot(spec);
        passes::VerifyOptions vo;
        vo.mode = passes::VerifyMode::Exact;
        REQUIRE_NOTHROW(passes::verify(plan, vo));
        const auto sh = gen::prepare_shoot_shape(K, p);
        const auto c = passes::cost(plan);
        REQUIRE(c.C1 == sh.C1());
        REQUIRE(c.C1 == passes::lemma1_bound(K, p));
        REQUIRE(c.C2 == sh.C2());
        REQUIRE(c.step_sizes == sh.round_sizes());
        // The drop-zeros pass keeps the plan correct and never raises C2.
        passes::drop_zeros(plan);
        REQUIRE_NOTHROW(passes::verify(plan, vo));
        const auto c2 = passes::cost(plan);
        REQUIRE(c2.C1 == sh.C1());
        REQUIRE(c2.C2 <= sh.C2());
        REQUIRE(c2.C2 == sh.C2_zero_dropped());  // exact on this whole grid
        // Slot allocation keeps it correct and never needs more slots.
        const uint32_t before = plan.ranks[0].num_slots;
        passes::alloc_slots(plan);
        REQUIRE_NOTHROW(passes::verify(plan, vo));
        REQUIRE(plan.ranks[0].num_slots <= before);
      }
}

TEST_CASE("prepare-and-shoot with lambda > 1 stretches rounds and stays correct", "[prepare_shoot]") {
  for (uint32_t lambda : {2u, 3u, 5u})
    for (uint32_t K : {2u, 5u, 9u, 17u, 40u})
      for (uint32_t p : {1u, 2u, 3u}) {
        INFO("K=" << K << " p=" << p << " lambda=" << lambda);
        Spec spec = random_encode_spec(K, p, Field::gf256(), 7 * K + p, lambda);
        ir::Plan plan = gen::prepare_shoot(spec);
        passes::VerifyOptions vo;
        vo.mode = passes::VerifyMode::Exact;
        REQUIRE_NOTHROW(passes::verify(plan, vo));
        REQUIRE(passes::cost(plan).C1 == lambda * gen::prepare_shoot_shape(K, p).C1());
      }
}

TEST_CASE("prepare-and-shoot: identity, permutation and Vandermonde matrices", "[prepare_shoot]") {
  const Field f = Field::prime(65537);
  for (uint32_t K : {2u, 3u, 10u, 31u}) {
    std::vector<uint32_t> perm(K);
    for (uint32_t i = 0; i < K; ++i) perm[i] = (i * 7 + 3) % K;
    if (K % 7 == 0) continue;
    std::vector<Elem> pts(K);
    for (uint32_t i = 0; i < K; ++i) pts[i] = f.pow(3, i + 1);
    for (const MatrixSpec& ms : {matrix_identity(K, f), matrix_permutation(perm, f), matrix_vandermonde(pts, f)}) {
      Spec spec = random_encode_spec(K, 2, f, 1);
      spec.matrix = ms;
      INFO(ms.family << " K=" << K);
      REQUIRE_NOTHROW(passes::verify(gen::prepare_shoot(spec), kExact));
    }
  }
}

TEST_CASE("zero-drop lowers C2 to 66 at K=4096, p=2 (paper: 80)", "[prepare_shoot][.slow]") {
  Spec spec = random_encode_spec(4096, 2, Field::gf256(), 3);
  pipeline::CompileOptions opt;
  opt.algorithm = "prepare-shoot";
  auto res = pipeline::compile(spec, opt);
  CHECK(res.generator_cost.C2 == 80);
  CHECK(res.cost.C2 == 66);
  CHECK(gen::prepare_shoot_shape(4096, 2).C2_zero_dropped() == 66);
  CHECK(res.cost.C1 == 8);
  CHECK(res.verify.mode == passes::VerifyMode::Randomized);
}

TEST_CASE("prepare-and-shoot: randomized verification up to K = 1000", "[prepare_shoot][.slow]") {
  for (uint32_t p : {1u, 2u, 3u})
    for (uint32_t K : {65u, 100u, 243u, 256u, 257u, 500u, 729u, 999u, 1000u}) {
      INFO("K=" << K << " p=" << p);
      Spec spec = random_encode_spec(K, p, Field::prime(2147483647), K + p);
      ir::Plan plan = gen::prepare_shoot(spec);
      auto rep = passes::verify(plan, {passes::VerifyMode::Randomized, 0, 99});
      REQUIRE(rep.trials >= 2);
      REQUIRE(passes::cost(plan).C2 == gen::prepare_shoot_shape(K, p).C2());
    }
}

TEST_CASE("randomized verification at K = 1000 (quick tier, one field)", "[prepare_shoot]") {
  Spec spec = random_encode_spec(1000, 2, Field::gf256(), 5);
  ir::Plan plan = gen::prepare_shoot(spec);
  auto rep = passes::verify(plan, {passes::VerifyMode::Randomized, 0, 42});
  CHECK(rep.trials == 5);
  CHECK(rep.error_log2 <= -40.0);
}

TEST_CASE("re-coding a universal plan computes the new matrix", "[recode]") {
  for (uint32_t K : {2u, 7u, 16u, 50u}) {
    const Field f = Field::gf65536();
    Spec spec = random_encode_spec(K, 2, f, 11);
    ir::Plan plan = gen::prepare_shoot(spec);
    passes::drop_zeros(plan);
    ir::Plan again = plan;
    const MatrixSpec other = matrix_random(K, 12345, f);
    passes::recode(again, other);
    REQUIRE(again.spec.matrix.digest == other.digest);
    REQUIRE_NOTHROW(passes::verify(again, kExact));
    // The old plan does not compute the new matrix: the checker notices.
    ir::Plan stale = plan;
    stale.spec.matrix = other;
    REQUIRE_THROWS_AS(passes::verify(stale, kExact), VerifyError);
    // Re-coding with the original matrix gives back the original plan.
    passes::recode(again, spec.matrix);
    REQUIRE(again == plan);
  }
}
