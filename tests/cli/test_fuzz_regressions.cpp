// Regressions for what the fuzz harnesses (fuzz/, docs/fuzzing.md) found in
// what the CLI reads, run as a user runs it: one case per finding, on the
// smallest input that showed it. The in-process ones:
// tests/unit/test_fuzz_regressions.cpp.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <utility>

#include "cli_runner.h"
#include "test_util.h"

namespace test = collplan::test;

TEST_CASE("fuzz: spec file numbers must be non-negative integers the flag holds", "[fuzz][cli]") {
  // fuzz_spec: {"K": 1e34} reached nlohmann's get<uint32_t>(), a float to
  // integer conversion out of range (undefined behaviour, UBSan); -1 became
  // K = 4294967295, 4294967296 became 0 and 4.5 became 4, all silently.
  const auto dir = test::scratch_dir("cli-fuzz");
  const std::string spec = (dir / "s.json").string(), out = (dir / "s.cplan").string();
  const std::pair<const char*, const char*> bad[] = {
      {R"({"op":"encode","K":1e34})", R"(key "K" has the wrong type: expected an integer)"},
      {R"({"op":"encode","K":-1})", R"(key "K": -1 is negative)"},
      {R"({"op":"encode","K":4294967296})", R"(key "K": 4294967296 is too large)"},
      {R"({"op":"encode","K":4.5})", R"(key "K" has the wrong type: expected an integer)"},
      {R"({"op":"encode","K":4,"seed":-3})", R"(key "seed": -3 is negative)"},
  };
  for (const auto& [text, needle] : bad) {
    std::ofstream(spec) << text;
    const auto r = test::run_collplan("compile -q --spec " + spec + " -o " + out);
    INFO(text << "\n" << r.output());
    CHECK(r.status == 2);
    CHECK(r.output().find(needle) != std::string::npos);
  }
  // The whole u64 range is still a seed.
  std::ofstream(spec) << R"({"op":"encode","K":4,"seed":18446744073709551615})";
  CHECK(test::run_collplan("compile -q --spec " + spec + " -o " + out).status == 0);
}
