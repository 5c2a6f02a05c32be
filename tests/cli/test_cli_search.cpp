// `collplan search` and `collplan bound` as a user runs them: a searched plan
// written and checked, the JSON reports, one-question mode, a table written
// with --write-table, plain collectives, and bad input refused by name. The
// search itself, in process: tests/unit/test_search.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_util.h"

namespace test = collplan::test;

TEST_CASE("cli: search writes a checked plan, reports plain collectives, refuses bad input", "[search][cli]") {
  const std::filesystem::path dir = test::scratch_dir("cli-search");
  const std::string plan = (dir / "s.cplan").string(), sched = (dir / "s.json").string();
  auto r = test::run_collplan("search --op encode --K 6 --p 1 -o " + plan + " --schedule " + sched);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("meets max(C1 bound, Lemma 2): optimal among all universal plans") != std::string::npos);
  r = test::run_collplan("check " + plan);
  CHECK(r.status == 0);
  CHECK(r.output().find("optimality: optimal among universal plans") != std::string::npos);
  r = test::run_collplan("search --op encode --K 7 --p 1 --format json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("searched_C2") == 4);
  CHECK(j.at("proven_bound") == 4);
  CHECK(j.at("plan").at("algorithm") == "prepare-shoot");
  r = test::run_collplan("search --op encode --K 7 --p 1 --sizes 1,1,1");
  CHECK(r.status == 0);
  CHECK(r.output().find("sizes 1,1,1 (all schedules): unsat") != std::string::npos);
  r = test::run_collplan("search --op encode --K 13 --p 2 --sizes 1,1,1 --circulant --format json -o " + plan);
  CHECK(r.status == 0);
  CHECK(nlohmann::json::parse(r.out).at("result") == "sat");
  // `check` reports the search's proven bound too (pipeline::plan_cost), as compile does.
  r = test::run_collplan("check " + plan);
  CHECK(r.status == 0);
  CHECK(r.output().find("search: no relay-and-combine plan with C1 = 3 has C2 < 3") != std::string::npos);
  r = test::run_collplan("bound --K 13 --p 2");
  CHECK(r.status == 0);
  CHECK(r.output().find("no relay-and-combine plan with C1 = 3 has C2 < 3; searched reaches C2 = 3 (optimal)") !=
        std::string::npos);
  r = test::run_collplan("bound --K 13 --p 2 --format json");
  const auto bj = nlohmann::json::parse(r.out).at("search");
  CHECK(bj.at("searched_C2") == 3);
  CHECK(bj.at("calls") == 1);  // one circulant call found it
  CHECK(bj.at("solver").get<std::string>().starts_with("CaDiCaL"));
  const std::string table = (dir / "t.json").string();
  r = test::run_collplan("search --Kmin 5 --Kmax 7 --pmin 1 --pmax 1 --write-table " + table);
  REQUIRE(r.status == 0);
  CHECK(r.output().find("prepare-and-shoot is optimal among relay-and-combine plans") != std::string::npos);  // K = 7
  {
    std::ifstream tin(table);
    const auto tj = nlohmann::json::parse(tin);
    REQUIRE(tj.at("entries").size() == 3);
    CHECK(tj.at("entries").at(0).at("searched_C2") == 3);  // K = 5
    CHECK(tj.at("entries").at(2).at("proven_bound") == 4);  // K = 7
  }
  r = test::run_collplan("search --op allgather --K 12 --p 2");
  CHECK(r.status == 0);
  CHECK(r.output().find("optimal: C1 and C2 meet their lower bounds") != std::string::npos);
  r = test::run_collplan("search --op prefix --K 9 --p 1 --format json");
  CHECK(r.status == 0);
  CHECK(nlohmann::json::parse(r.out).at("optimal") == true);

  for (auto [args, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"search --op encode --K 40 --p 1", "K = 40 is out of range (valid: 2 <= K <= 32"},
           {"search --op encode --K 6 --p 1 --lambda 2", "lambda = 1"},
           {"search --op decentralized-encode --N 6 --K 3", "search supports"},
           {"search --op allgather --K 6 --blocks 2", "one block"},
           {"search --Kmax 8", "--Kmax and --pmax go together"},
           {"search --Kmin 9 --Kmax 8 --pmax 1", "--Kmin 9 .. --Kmax 8 is out of range"},
           {"search --op encode --K 6 --time-limit -1", "--time-limit"},
           {"search --op encode --K 7 --p 1 --sizes 1,1", "--sizes gives 2 rounds"},
           {"search --op encode --K 7 --p 1 --sizes 1,0,1", "round size 0 out of range"},
           {"search --op encode --K 7 --p 1 --circulant", "--circulant asks one question and needs --sizes"},
           {"search --op encode --K 5 --p 1 --schedule /nonexistent-dir/x.json", "cannot write"}}) {
    INFO(args);
    r = test::run_collplan(args);
    CHECK(r.status == 2);
    CHECK(r.output().find(fragment) != std::string::npos);
  }
}
