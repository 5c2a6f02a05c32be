// `collplan show` drawing plans (SVG, DOT, HTML, the summary) as a user runs
// it, and bad picture flags refused as bad input (exit 2). The renderers in
// process: tests/unit/test_render.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "test_util.h"

namespace test = collplan::test;

TEST_CASE("cli render: show draws files, and bad picture flags are user errors (exit 2)", "[cli][render]") {
  namespace fs = std::filesystem;
  const fs::path dir = test::scratch_dir("cli-render");
  const std::string plan = (dir / "enc.cplan").string();
  // collplan's exit status; its stdout and stderr in *out.
  auto run = [&](const std::string& args, std::string* out = nullptr) {
    const auto r = test::run_collplan(args);
    if (out) *out = r.output();
    return r.status;
  };
  REQUIRE(run("compile -q --op encode --K 9 --p 2 -o " + plan) == 0);
  std::string out;
  CHECK(run("show " + plan + " --svg " + (dir / "a.svg").string() + " --dot " + (dir / "a.dot").string() + " --html " +
            (dir / "a.html").string(), &out) == 0);
  CHECK(fs::file_size(dir / "a.svg") > 0);
  CHECK(fs::file_size(dir / "a.dot") > 0);
  CHECK(fs::file_size(dir / "a.html") > 0);
  CHECK(run("show " + plan + " --summary", &out) == 0);
  CHECK(out.find("busiest port") != std::string::npos);

  struct Bad {
    std::string args, says;
  };
  for (const Bad& b : {Bad{"--svg x.svg --ranks 5-3", "--ranks 5-3: the range is reversed"},
                       Bad{"--svg x.svg --ranks 0-9", "--ranks 0-9: out of range"},
                       Bad{"--svg x.svg --steps 1-3", "--steps 1-3: out of range; valid: A-B or A with 1 <= A <= B <= 2"},
                       Bad{"--svg x.svg --steps two", "--steps two: not a number"},
                       Bad{"--svg x.svg --rank 3", "--ranks A-B instead"},
                       Bad{"--svg x.svg --trace t.json", "add --html FILE"},
                       Bad{"--ranks 0-3", "add --svg, --dot or --html"},
                       Bad{"--summary --diagram --svg x.svg", "excludes"},
                       Bad{"--html x.html --trace " + plan, "--trace " + plan + ": not JSON"},
                       Bad{"--svg " + (dir / "no" / "such" / "dir.svg").string(), "cannot write --svg file"}}) {
    INFO(b.args);
    const int rc = run("show " + plan + " " + b.args, &out);
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Matchers::Contains(b.says));
  }
}
