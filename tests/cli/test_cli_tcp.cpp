// `collplan run --transport tcp`: one real process per rank on loopback. A
// correct replay on every rank, and a rank killed (SIGKILL) in the middle of
// a long run: every surviving process must end with an error naming it,
// within the timeout. Bad transport options, and `run --trace` over TCP
// (rank 0 writes one trace of every rank).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "loopback_peers.h"
#include "test_util.h"
#include "trace_check.h"

namespace fs = std::filesystem;

namespace {

using collplan::test::loopback_peers;
using collplan::test::read_file;
using collplan::test::run_collplan;
using collplan::test::scratch_dir;

// Starts one process per rank, `collplan <args_of(r)> --rank r` (rank
// killed_rank's behind killed_prefix), waits for all, and returns their exit
// statuses; rank r's stdout and stderr go to dir/out<r>.
std::vector<int> run_ranks(const fs::path& dir, int K, const std::function<std::string(int)>& args_of,
                           const std::string& killed_prefix = "", int killed_rank = -1) {
  std::string script;
  for (int r = 0; r < K; ++r) {
    const std::string prefix = r == killed_rank ? killed_prefix : "";
    script += "( " + prefix + collplan::test::collplan_cli() + " " + args_of(r) + " --rank " + std::to_string(r) +
              " > " + (dir / ("out" + std::to_string(r))).string() + " 2>&1; echo $? > " +
              (dir / ("rc" + std::to_string(r))).string() + " ) &\n";
  }
  script += "wait\n";
  const fs::path sh = dir / "run.sh";
  std::ofstream(sh) << script;
  REQUIRE(collplan::test::run_shell("sh " + sh.string()).status == 0);
  std::vector<int> rc;  // -1: no status written
  for (int r = 0; r < K; ++r) {
    const std::string status = read_file(dir / ("rc" + std::to_string(r)));
    rc.push_back(status.empty() ? -1 : std::atoi(status.c_str()));
  }
  return rc;
}

}  // namespace

TEST_CASE("cli tcp: one process per rank replays correctly and a killed rank is named by the others", "[cli][tcp]") {
  const fs::path dir = scratch_dir("cli-tcp");
  const std::string plan = (dir / "enc.cplan").string();
  REQUIRE(run_collplan("compile --op encode --K 4 --p 2 --field gf65536 -o " + plan).status == 0);

  {
    const std::string peers = loopback_peers(4);
    const std::vector<int> rc =
        run_ranks(dir, 4, [&](int) { return "run " + plan + " --transport tcp --len 1000 --reps 2 --stats --peers " + peers; });
    for (int r = 0; r < 4; ++r) {
      const std::string out = read_file(dir / ("out" + std::to_string(r)));
      INFO("rank " << r << ": " << out);
      CHECK(rc[r] == 0);
      CHECK(out.find("every byte of rank " + std::to_string(r) + " equals the direct computation") != std::string::npos);
      // --stats: this rank's own copy figures.
      CHECK(out.find("rank " + std::to_string(r) + ": engine copies: ") != std::string::npos);
    }
  }

  {
    // Same plan as a peer file; rank 2 is killed after a second of a run that
    // would otherwise go on for minutes.
    const fs::path peers = dir / "peers.txt";
    std::string list = loopback_peers(4);
    for (char& c : list)
      if (c == ',') c = '\n';
    std::ofstream(peers) << "# one host:port per rank\n" << list << "\n";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string args =
        "run " + plan + " --transport tcp --len 64 --reps 100000000 --timeout 1500 --peers " + peers.string();
    const std::vector<int> rc = run_ranks(dir, 4, [&](int) { return args; }, "timeout -s KILL 1 ", 2);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(secs < 1.0 + 1.5 + 3.0);  // the kill, one timeout, slack for a loaded machine
    for (int r : {0, 1, 3}) {
      const std::string out = read_file(dir / ("out" + std::to_string(r)));
      INFO("rank " << r << ": " << out);
      CHECK(rc[r] == 2);
      CHECK(out.find("collplan: error: rank " + std::to_string(r) + ", step") != std::string::npos);
    }
    // The ranks that talk to rank 2 name it; the others may fail through them.
    bool named = false;
    for (int r : {0, 1, 3}) named |= read_file(dir / ("out" + std::to_string(r))).find("rank 2 (127.0.0.1:") != std::string::npos;
    CHECK(named);
  }
}

// A rotated allgather's messages span two or more of a rank's output
// buffers (separate allocations in `collplan run`): TCP sends and receives
// them in pieces, so `--stats` shows no byte staged on any rank, with and
// without a job key (the MAC over the pieces).
TEST_CASE("cli tcp: messages that span output buffers travel in pieces with nothing staged", "[cli][tcp][pieces]") {
  const fs::path dir = scratch_dir("cli-tcp-pieces");
  const std::string plan = (dir / "ag.cplan").string();
  REQUIRE(run_collplan("compile --op allgather --K 5 --blocks 3 --algorithm circulant-allgather -o " + plan).status ==
          0);
  const std::string key = (dir / "job.key").string();
  REQUIRE(run_collplan("keygen -o " + key).status == 0);
  for (const std::string& extra : {std::string(), " --key-file " + key}) {
    INFO("options:" << extra);
    const std::string peers = loopback_peers(5);
    const std::vector<int> rc = run_ranks(dir, 5, [&](int) {
      return "run " + plan + " --transport tcp --len 999 --reps 2 --stats --peers " + peers + extra;
    });
    for (int r = 0; r < 5; ++r) {
      const std::string out = read_file(dir / ("out" + std::to_string(r)));
      INFO("rank " << r << ": " << out);
      CHECK(rc[r] == 0);
      CHECK(out.find("every byte of rank " + std::to_string(r) + " equals the direct computation") != std::string::npos);
      CHECK(out.find("rank " + std::to_string(r) + ": engine copies: 0 bytes staged, ") != std::string::npos);
    }
  }
}

TEST_CASE("cli tcp: bad transport options are named", "[cli][tcp]") {
  const fs::path dir = scratch_dir("cli-tcp-options");
  const std::string plan = (dir / "enc4.cplan").string();
  REQUIRE(run_collplan("compile --op encode --K 4 -o " + plan).status == 0);
  struct Case {
    std::string args, needle;
  };
  const std::vector<Case> cases = {
      {"--transport tcp --rank 0", "--transport tcp needs --peers"},
      {"--transport tcp --peers 127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4", "needs --rank"},
      {"--transport tcp --rank 0 --peers 127.0.0.1:1,127.0.0.1:2,127.0.0.1:3",
       "--peers lists 3 addresses but the plan has 4 ranks"},
      {"--transport tcp --rank 4 --peers 127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4", "--rank 4 does not exist"},
      {"--transport tcp --rank 0 --peers 127.0.0.1:1,127.0.0.1,127.0.0.1:3,127.0.0.1:4",
       "peer address '127.0.0.1' is not host:port"},
      {"--transport tcp --rank 0 --peers /dev/zero", "peer file '/dev/zero': it is a character device, not a regular file"},
      {"--transport tcp --rank 0 --peers 127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5",
       "has more than 4 entries"},
      {"--transport tcp --rank 0 --peers 127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4 --key-file /dev/null",
       "job key file '/dev/null': it is a character device, not a regular file"},
      {"--transport carrier-pigeon", "carrier-pigeon"},
  };
  for (const Case& c : cases) {
    const auto r = run_collplan("run " + plan + " " + c.args);
    INFO(c.args << ": " << r.output());
    CHECK(r.status == 2);
    CHECK(r.output().find(c.needle) != std::string::npos);
  }
}

TEST_CASE("cli trace: run --trace over TCP writes one trace of every rank, from rank 0", "[cli][tcp][trace]") {
  const fs::path dir = scratch_dir("cli-trace-tcp");
  const std::string plan = (dir / "enc.cplan").string();
  REQUIRE(run_collplan("compile --op encode --K 4 --p 2 -o " + plan).status == 0);
  const std::string peers = loopback_peers(4);
  const auto trace = [&](int r) { return dir / ("t" + std::to_string(r) + ".json"); };
  const std::vector<int> rc = run_ranks(dir, 4, [&](int r) {
    return "run " + plan + " --transport tcp --peers " + peers + " --len 50 --reps 2 --trace " + trace(r).string();
  });
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r << ": " << read_file(dir / ("out" + std::to_string(r))));
    CHECK(rc[r] == 0);
    // Only rank 0 writes the trace.
    CHECK(fs::exists(trace(r)) == (r == 0));
  }
  const nlohmann::json j = nlohmann::json::parse(read_file(trace(0)));
  CHECK(collplan::test::check_chrome_trace(j).size() == 4);
  CHECK(j["otherData"]["transport"] == "tcp");
}

TEST_CASE("cli tcp: keygen writes a 0600 key and never over an existing file without --force", "[cli][tcp]") {
  const fs::path dir = scratch_dir("cli-keygen");
  const std::string key = (dir / "job.key").string();
  auto r = run_collplan("keygen -o " + key);
  REQUIRE(r.status == 0);
  struct stat st{};
  REQUIRE(::stat(key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const std::string first = read_file(key);
  CHECK(first.size() == 65);
  CHECK(first.find_first_not_of("0123456789abcdef\n") == std::string::npos);
  r = run_collplan("keygen -o " + key);
  CHECK(r.status == 2);
  CHECK(r.output().find("exists; keygen does not overwrite a key (--force replaces it)") != std::string::npos);
  CHECK(read_file(key) == first);
  REQUIRE(run_collplan("keygen --force -o " + key).status == 0);
  CHECK(read_file(key) != first);
  REQUIRE(::stat(key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("cli tcp: ranks with the same key replay, and a rank with another key is kept out and named", "[cli][tcp]") {
  const fs::path dir = scratch_dir("cli-tcp-keys");
  const std::string plan = (dir / "enc.cplan").string();
  REQUIRE(run_collplan("compile --op encode --K 3 --p 1 -o " + plan).status == 0);
  const std::string k1 = (dir / "k1").string(), k2 = (dir / "k2").string();
  REQUIRE(run_collplan("keygen -o " + k1).status == 0);
  REQUIRE(run_collplan("keygen -o " + k2).status == 0);
  {
    const std::string peers = loopback_peers(3);
    const std::vector<int> rc = run_ranks(
        dir, 3, [&](int) { return "run " + plan + " --transport tcp --len 500 --reps 2 --key-file " + k1 + " --peers " + peers; });
    for (int r = 0; r < 3; ++r) {
      const std::string out = read_file(dir / ("out" + std::to_string(r)));
      INFO("rank " << r << ": " << out);
      CHECK(rc[r] == 0);
      CHECK(out.find("every byte of rank " + std::to_string(r) + " equals the direct computation") != std::string::npos);
    }
  }
  {
    const std::string peers = loopback_peers(3);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int> rc = run_ranks(dir, 3, [&](int r) {
      return "run " + plan + " --transport tcp --len 50 --connect-timeout 2000 --key-file " + (r == 1 ? k2 : k1) +
             " --peers " + peers;
    });
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(secs < 2.0 + 3.0);  // the connect deadline, slack for a loaded machine
    for (int r : {0, 2}) {
      const std::string out = read_file(dir / ("out" + std::to_string(r)));
      INFO("rank " << r << ": " << out);
      CHECK(rc[r] == 2);
      CHECK(out.find("rank 1 never joined with the job key within 2000 ms") != std::string::npos);
    }
    // Rank 0 logged rank 1's attempt as a stray.
    CHECK(read_file(dir / "out0").find("ignoring a connection from 127.0.0.1:") != std::string::npos);
    CHECK(rc[1] == 2);
  }
}

TEST_CASE("cli tcp: too few file descriptors for the job is an immediate resource error", "[cli][tcp]") {
  const fs::path dir = scratch_dir("cli-tcp-nofile");
  const std::string plan = (dir / "enc32.cplan").string();
  REQUIRE(run_collplan("compile --op encode --K 32 -o " + plan).status == 0);
  std::string peers;
  for (int r = 0; r < 32; ++r) peers += (r ? "," : "") + std::string("127.0.0.1:") + std::to_string(1 + r);
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = collplan::test::run_shell("sh -c 'ulimit -n 16; exec " + collplan::test::collplan_cli() + " run " +
                                             plan + " --transport tcp --rank 7 --peers " + peers + "' 2>&1");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(res.output());
  CHECK(res.status == 4);
  CHECK(res.output().find("out of file descriptors (the limit is 16, `ulimit -n`; a 32-rank TCP job needs about 48 "
                          "per rank)") != std::string::npos);
  CHECK(secs < 2.0);
}
