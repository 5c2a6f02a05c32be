// `collplan emit-cpp` as a user runs it: one rank into a self-contained
// folder that compiles alone, rank lists and names, and bad input named. The
// C++ backend and the code it emits: tests/emit/test_emit_cpp.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "emit_support.h"

namespace test = collplan::test;
using namespace emit_test;

TEST_CASE("emit-cpp CLI: one rank, self-contained directory, compiles alone, bad input named", "[emit][cli]") {
  const auto d = scratch("cli");
  const std::string plan = (d / "p.cplan").string(), out = (d / "out").string();
  REQUIRE(test::run_collplan("compile --K 9 --p 2 --field gf65536 -q -o " + plan).status == 0);
  auto r = test::run_collplan("emit-cpp " + plan + " -o " + out + " --rank 5 --name dev --copy-runtime");
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("wrote 9 files") != std::string::npos);  // header, rank 5, the seven runtime headers
  REQUIRE(fs::exists(d / "out" / "dev_rank5.cpp"));
  CHECK_FALSE(fs::exists(d / "out" / "dev_rank4.cpp"));
  const std::string cmd = cxx() + " -O2 -I" + out + " -c " + (d / "out" / "dev_rank5.cpp").string() + " -o " + (d / "r5.o").string();
  const CmdResult built = run_cmd(cmd);
  INFO(cmd << "\n" << built.output);
  CHECK(built.status == 0);
  r = test::run_collplan("emit-cpp " + plan + " -o " + out + " --rank 9");
  CHECK(r.status == 2);
  CHECK(r.output().find("rank 9 does not exist (valid: 0..8)") != std::string::npos);
  r = test::run_collplan("emit-cpp " + plan + " -o " + out + " --ranks 1,3-x");
  CHECK(r.status == 2);
  CHECK(r.output().find("'3-x' is not a rank or a range A-B of ranks (valid ranks: 0..8)") != std::string::npos);
  r = test::run_collplan("emit-cpp " + plan + " -o " + out + " --ranks 5-2");
  CHECK(r.status == 2);
  CHECK(r.output().find("range '5-2' runs backwards") != std::string::npos);
  r = test::run_collplan("emit-cpp " + plan + " -o " + out + " --ranks 2,0-3");
  CHECK(r.status == 2);
  CHECK(r.output().find("names rank 2 twice") != std::string::npos);
  r = test::run_collplan("emit-cpp " + plan + " -o " + out + " --ranks 0,2,4-5 --name sub");
  INFO(r.output());
  CHECK(r.status == 0);
  for (int k : {0, 2, 4, 5}) CHECK(fs::exists(d / "out" / ("sub_rank" + std::to_string(k) + ".cpp")));
  CHECK_FALSE(fs::exists(d / "out" / "sub_rank3.cpp"));
  r = test::run_collplan("emit-cpp " + plan + " -o " + out + " --name a-b");
  CHECK(r.status == 2);
  CHECK(r.output().find("'a-b' is not a C++ identifier") != std::string::npos);
}
