// The relay-and-combine search (docs/search.md): the search re-run for small
// cases against the shipped table, every shipped schedule built for several
// matrices and fields and proven by the checker, the schedule checks and the
// cost report's optimality line. `collplan search` and `bound`:
// tests/cli/test_cli_search.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "gen/prepare_shoot.h"
#include "gen/registry.h"
#include "gen/relay.h"
#include "gen/searched.h"
#include "matrix/codes.h"
#include "matrix/matrix.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/recode.h"
#include "passes/verify.h"
#include "search/relay_sat.h"
#include "search/search.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;
using test::random_encode_spec;

namespace {

// The search for (K, p) must reproduce the shipped table's line.
void check_against_table(uint32_t K, uint32_t p) {
  INFO("K=" << K << " p=" << p);
  const gen::SearchedEntry* e = gen::find_searched(K, p);
  REQUIRE(e != nullptr);
  search::SearchOptions opt;
  opt.time_limit_s = 120;
  const search::SearchOutcome o = search::search_encode(K, p, opt);
  CHECK(o.C1 == e->C1);
  CHECK(o.lemma2 == e->lemma2);
  CHECK(o.prepare_shoot == e->prepare_shoot);
  CHECK(o.best == e->searched);
  CHECK(o.proven_bound == e->proven_bound);
  CHECK(o.schedule.has_value() == e->schedule.has_value());
  if (o.schedule) {
    // The fresh schedule is a valid plan too (it need not be the table's).
    REQUIRE(gen::relay_schedule_problem(*o.schedule).empty());
    const ir::Plan plan = gen::build_relay_plan(*o.schedule, random_encode_spec(K, p, Field::gf256(), 5));
    REQUIRE_NOTHROW(passes::verify(plan, kExact));
  }
}

}  // namespace

TEST_CASE("search: compositions of c into T parts", "[search]") {
  CHECK(search::compositions(3, 3) == std::vector<std::vector<uint32_t>>{{1, 1, 1}});
  CHECK(search::compositions(4, 3) == std::vector<std::vector<uint32_t>>{{1, 1, 2}, {1, 2, 1}, {2, 1, 1}});
  CHECK(search::compositions(2, 3).empty());
  CHECK(search::compositions(7, 4).size() == 20);  // C(6, 3)
}

TEST_CASE("search: re-run for small cases reproduces the shipped table", "[search]") {
  // Found: K=5, 6 (p=1), K=10 (p=2) reach C2 = C1; refuted: K=7, p=1 keeps
  // prepare-and-shoot's 4 (C2 = 3 is unsatisfiable).
  for (auto [K, p] : {std::pair{5u, 1u}, {6u, 1u}, {7u, 1u}, {10u, 2u}, {4u, 3u}}) check_against_table(K, p);
}

TEST_CASE("search: re-run for the larger settled cases reproduces the shipped table", "[search][.slow]") {
  for (auto [K, p] : {std::pair{9u, 1u}, {11u, 2u}, {12u, 2u}, {13u, 2u}, {14u, 2u}, {15u, 2u}})
    check_against_table(K, p);
}

TEST_CASE("search: the table's figures hang together", "[search]") {
  const auto& table = gen::searched_table();
  REQUIRE(table.size() >= 45);  // K = 2..16 for p = 1, 2, 3
  for (uint32_t p = 1; p <= 3; ++p)
    for (uint32_t K = 2; K <= 16; ++K) REQUIRE(gen::find_searched(K, p) != nullptr);
  for (const gen::SearchedEntry& e : table) {
    INFO("K=" << e.K << " p=" << e.p);
    CHECK(e.C1 == passes::lemma1_bound(e.K, e.p));
    CHECK(e.lemma2 == passes::lemma2_bound(e.K, e.p));
    CHECK(e.prepare_shoot == gen::prepare_shoot_shape(e.K, e.p).C2_zero_dropped());
    CHECK(std::max<uint64_t>(e.C1, e.lemma2) <= e.proven_bound);
    CHECK(e.proven_bound <= e.searched);
    CHECK(e.searched <= e.prepare_shoot);
    CHECK(e.schedule.has_value() == (e.searched < e.prepare_shoot));
  }
}

TEST_CASE("search: docs/search.md shows the shipped table", "[search]") {
  std::ifstream in(std::string(COLLPLAN_SOURCE_DIR) + "/docs/search.md");
  REQUIRE(in);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const gen::SearchedEntry& e : gen::searched_table()) {
    const std::string searched = e.searched < e.prepare_shoot ? fmt::format("**{}**", e.searched)
                                                              : fmt::format("{}", e.searched);
    const std::string row = fmt::format("| {} | {} | {} | {} | {} | {} | {} |", e.K, e.p, e.C1, e.lemma2,
                                        e.prepare_shoot, searched, e.proven_bound);
    INFO(row);
    CHECK(doc.find(row) != std::string::npos);
  }
}

TEST_CASE("searched: every shipped schedule computes every matrix (checker, exact)", "[search]") {
  for (const gen::SearchedEntry& e : gen::searched_table()) {
    if (!e.schedule) continue;
    for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)}) {
      const uint32_t K = e.K;
      std::vector<uint32_t> perm(K);
      for (uint32_t i = 0; i < K; ++i) perm[i] = (i * 5 + 2) % K;
      std::vector<MatrixSpec> mats = {matrix_random(K, 1, f), matrix_random(K, 99, f), matrix_identity(K, f)};
      if (K % 5 != 0) mats.push_back(matrix_permutation(perm, f));
      for (const MatrixSpec& ms : mats) {
        INFO("K=" << K << " p=" << e.p << " field " << f.name() << " matrix " << ms.family);
        Spec spec = random_encode_spec(K, e.p, f, 1);
        spec.matrix = ms;
        pipeline::CompileOptions opt;
        opt.algorithm = "searched";
        const pipeline::CompileResult r = pipeline::compile(spec, opt);  // verified after every stage
        CHECK(r.plan.num_steps == e.C1);
        CHECK(r.cost.C2 == e.searched);  // drop-zeros is structural: every matrix keeps the schedule's C2
        CHECK(r.cost.C2 >= e.proven_bound);
        REQUIRE_NOTHROW(passes::verify(r.plan, kExact));
      }
    }
  }
}

TEST_CASE("searched: auto picks it where it beats prepare-and-shoot, recode and the cost report", "[search]") {
  const Field f = Field::gf256();
  Spec spec = random_encode_spec(13, 2, f, 3);
  const pipeline::CompileResult r = pipeline::compile(spec, {});
  CHECK(r.plan.spec.algorithm == "searched");
  CHECK(r.cost.C2 == 3);
  CHECK(r.cost.optimality == "optimal among universal plans (C1 and C2 meet their bounds)");
  // Universal: recode puts another matrix into the same schedule.
  ir::Plan again = r.plan;
  const MatrixSpec other = matrix_random(13, 4242, f);
  passes::recode(again, other);
  REQUIRE_NOTHROW(passes::verify(again, kExact));
  ir::Plan stale = r.plan;
  stale.spec.matrix = other;
  REQUIRE_THROWS_AS(passes::verify(stale, kExact), VerifyError);

  // K = 7, p = 1: prepare-and-shoot's 4 is the least among relay-and-combine plans.
  pipeline::CompileOptions ps;
  ps.algorithm = "prepare-shoot";
  const pipeline::CompileResult r7 = pipeline::compile(random_encode_spec(7, 1, f, 1), ps);
  CHECK(r7.cost.C2 == 4);
  CHECK(r7.cost.search_lb_C2 == 4);
  CHECK(r7.cost.optimality.find("relay-and-combine") != std::string::npos);
  // K = 13, p = 2 by prepare-and-shoot: 5, not optimal.
  const pipeline::CompileResult r13 = pipeline::compile(random_encode_spec(13, 2, f, 1), ps);
  CHECK(r13.cost.C2 == 5);
  CHECK(r13.cost.optimality == "not proven optimal");
  CHECK(passes::cost_text(r13.cost, 1, 1, 1).find("search: no relay-and-combine plan with C1 = 3 has C2 < 3") !=
        std::string::npos);
  // Outside the table, or lambda > 1: searched says why not.
  CHECK(gen::searched_why_not(random_encode_spec(40, 2, f, 1)).find("no searched schedule for K = 40") != std::string::npos);
  Spec lam = random_encode_spec(13, 2, f, 1);
  lam.lambda = 2;
  CHECK(gen::searched_why_not(lam).find("lambda = 1") != std::string::npos);
}

TEST_CASE("relay schedules: malformed ones are named, never built", "[search]") {
  gen::RelaySchedule s;
  s.K = 3;
  s.p = 1;
  s.sizes = {1, 1};
  // Round 1: 0→1, 1→2, 2→0 raw; round 2: partials on to the sink.
  s.rounds = {{{0, 0, 1, {0}, {}}, {1, 0, 2, {1}, {}}, {2, 0, 0, {2}, {}}},
              {{0, 0, 1, {}, {1}}, {1, 0, 2, {}, {2}}, {2, 0, 0, {}, {0}}}};
  // Sink 1 holds x_1, x_0; rank 0 holds x_0, x_2 and sends a partial for 1: covered.
  REQUIRE(gen::relay_schedule_problem(s) == "");
  REQUIRE_NOTHROW(passes::verify(gen::build_relay_plan(s, random_encode_spec(3, 1, Field::gf256(), 1)), kExact));

  auto bad = s;
  bad.rounds[1][0].to = 2;  // port 0 of rank 2 would receive twice
  CHECK(gen::relay_schedule_problem(bad).find("used twice") != std::string::npos);
  bad = s;
  bad.rounds[0][0].raws = {2};  // rank 0 does not hold x_2 in round 1
  CHECK(gen::relay_schedule_problem(bad).find("does not hold") != std::string::npos);
  bad = s;
  bad.rounds[1][0].partials = {1, 2};  // two elements in a size-1 round
  CHECK(gen::relay_schedule_problem(bad).find("more than d = 1") != std::string::npos);
  bad = s;
  bad.rounds[1].clear();
  CHECK(gen::relay_schedule_problem(bad).find("not covered") != std::string::npos);
  bad = s;
  bad.rounds[0][0].port = 1;
  CHECK(gen::relay_schedule_problem(bad).find("out of range") != std::string::npos);
  CHECK_THROWS_AS(gen::build_relay_plan(bad, random_encode_spec(3, 1, Field::gf256(), 1)), InternalError);
  // JSON round trip, and a malformed document.
  CHECK(gen::relay_schedule_json(gen::relay_schedule_from_json(gen::relay_schedule_json(s))) ==
        gen::relay_schedule_json(s));
  CHECK_THROWS_WITH(gen::relay_schedule_from_json(nlohmann::json{{"K", 3}}), Catch::Contains("missing key 'p'"));
}

TEST_CASE("search: the solver's answers, one by one", "[search]") {
  search::RelayQuery q;
  q.K = 7;
  q.p = 1;
  q.sizes = {1, 1, 1};
  const search::RelayAnswer no = search::solve_relay(q);  // K = 7, p = 1 cannot do C2 = 3
  CHECK(no.result == search::SatResult::Unsat);
  CHECK_FALSE(no.schedule.has_value());
  CHECK(no.learned > 0);
  q.K = 6;
  const search::RelayAnswer yes = search::solve_relay(q);
  REQUIRE(yes.result == search::SatResult::Sat);
  REQUIRE(yes.schedule.has_value());
  CHECK(yes.schedule->C2() == 3);
  q.K = 40;
  CHECK_THROWS_WITH(search::solve_relay(q), Catch::Contains("K = 40 is out of range"));
  q.K = 6;
  q.sizes = {1, 0, 1};
  CHECK_THROWS_WITH(search::solve_relay(q), Catch::Contains("message size 0 is out of range"));
}

TEST_CASE("drop-zeros: a zero partial inside a message's sum loses its term with its receive", "[search]") {
  // A searched schedule under decentralized-padded: the padded ranks hold
  // zero, so some partials are structurally zero while the sums that include
  // them are not. drop-zeros removed the zero element's receive but kept its
  // term in the sum, leaving a read of a never-written slot.
  const Field f = Field::gf256();
  Spec s = make_decentralized_spec(5, 1, 1, 1, f, matrix_explicit(random_matrix(1, 5, 7, f), f));
  pipeline::CompileOptions opt;
  opt.algorithm = "decentralized-padded";
  const pipeline::CompileResult r = pipeline::compile(s, opt);  // verified after drop-zeros
  CHECK(r.plan.spec.algorithm.find("by searched") != std::string::npos);
  CHECK(r.cost.C2 == 3);
}
