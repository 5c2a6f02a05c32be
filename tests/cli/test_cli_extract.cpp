// `collplan extract` as a user runs it: a single-rank file written, checked
// as far as one rank can be, emitted as the same rank source as the whole
// plan's, and refused where a whole plan is needed. Single-rank files in
// process: tests/unit/test_extract.cpp.
#include <catch2/catch.hpp>

#include <string>

#include "cli_runner.h"
#include "test_util.h"

namespace test = collplan::test;

TEST_CASE("extract CLI: extract, check (says what it cannot check), emit-cpp gives the same rank source", "[extract][cli]") {
  const auto d = test::scratch_dir("cli-extract");
  const std::string plan = (d / "p.cplan").string(), one = (d / "r3.cplan").string();
  REQUIRE(test::run_collplan("compile --K 8 --p 1 --lambda 2 --algorithm postal-allgather -q -o " + plan).status == 0);
  auto r = test::run_collplan("extract " + plan + " --rank 3 -o " + one);
  INFO(r.output());
  REQUIRE(r.status == 0);
  r = test::run_collplan("check " + one);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("rank 3 of 8 (single-rank file)") != std::string::npos);
  CHECK(r.output().find("not checked: matching") != std::string::npos);
  CHECK(r.output().find("C2 >= ") != std::string::npos);
  REQUIRE(test::run_collplan("emit-cpp " + plan + " --rank 3 -o " + (d / "a").string()).status == 0);
  REQUIRE(test::run_collplan("emit-cpp " + one + " -o " + (d / "b").string()).status == 0);
  CHECK(test::read_file(d / "a" / "collplan_plan_rank3.cpp") == test::read_file(d / "b" / "collplan_plan_rank3.cpp"));
  r = test::run_collplan("extract " + plan + " --rank 8 -o " + one);
  CHECK(r.status == 2);
  CHECK(r.output().find("rank 8 is not in this plan (8 ranks, valid 0..7)") != std::string::npos);
  r = test::run_collplan("run " + one);
  CHECK(r.status == 2);
  CHECK(r.output().find("holds only rank 3's program") != std::string::npos);
}
