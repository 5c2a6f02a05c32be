// `collplan run --transport tcp`: one real process per rank on loopback. A
// correct replay on every rank, and a rank killed (SIGKILL) in the middle of
// a long run: every surviving process must end with an error naming it,
// within the timeout.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/transport/tcp.h"

namespace fs = std::filesystem;

namespace {

fs::path scratch_dir() {
  auto d = fs::temp_directory_path() / ("collplan-tcp-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// K loopback addresses on ports that were free a moment ago.
std::string free_peers(int K) {
  std::string list;
  std::vector<int> fds;
  for (int r = 0; r < K; ++r) {
    uint16_t port = 0;
    fds.push_back(collplan::rt::tcp_listen("127.0.0.1:0", &port));
    list += (r ? "," : "") + std::string("127.0.0.1:") + std::to_string(port);
  }
  for (int fd : fds) ::close(fd);
  return list;
}

// Starts one process per rank (rank r's command is prefix(r) + collplan run
// ...), waits for all, and returns their exit statuses; output in dir/out<r>.
std::vector<int> run_ranks(const fs::path& dir, int K, const std::string& args, const std::string& killed_prefix = "",
                           int killed_rank = -1) {
  std::string script;
  for (int r = 0; r < K; ++r) {
    const std::string prefix = r == killed_rank ? killed_prefix : "";
    script += "( " + prefix + std::string(COLLPLAN_CLI) + " " + args + " --rank " + std::to_string(r) + " > " +
              (dir / ("out" + std::to_string(r))).string() + " 2>&1; echo $? > " +
              (dir / ("rc" + std::to_string(r))).string() + " ) &\n";
  }
  script += "wait\n";
  const fs::path sh = dir / "run.sh";
  std::ofstream(sh) << script;
  REQUIRE(std::system(("sh " + sh.string()).c_str()) == 0);
  std::vector<int> rc;
  for (int r = 0; r < K; ++r) rc.push_back(std::atoi(slurp(dir / ("rc" + std::to_string(r))).c_str()));
  return rc;
}

}  // namespace

TEST_CASE("cli tcp: one process per rank replays correctly and a killed rank is named by the others", "[cli][tcp]") {
  const fs::path dir = scratch_dir();
  const std::string plan = (dir / "enc.cplan").string();
  REQUIRE(std::system((std::string(COLLPLAN_CLI) + " compile --op encode --K 4 --p 2 --field gf65536 -o " + plan +
                       " > /dev/null 2>&1")
                          .c_str()) == 0);

  {
    const std::vector<int> rc =
        run_ranks(dir, 4, "run " + plan + " --transport tcp --len 1000 --reps 2 --peers " + free_peers(4));
    for (int r = 0; r < 4; ++r) {
      const std::string out = slurp(dir / ("out" + std::to_string(r)));
      INFO("rank " << r << ": " << out);
      CHECK(rc[r] == 0);
      CHECK(out.find("every byte of rank " + std::to_string(r) + " equals the direct computation") != std::string::npos);
    }
  }

  {
    // Same plan as a peer file; rank 2 is killed after a second of a run that
    // would otherwise go on for minutes.
    const fs::path peers = dir / "peers.txt";
    std::string list = free_peers(4);
    for (char& c : list)
      if (c == ',') c = '\n';
    std::ofstream(peers) << "# one host:port per rank\n" << list << "\n";
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int> rc = run_ranks(
        dir, 4, "run " + plan + " --transport tcp --len 64 --reps 100000000 --timeout 1500 --peers " + peers.string(),
        "timeout -s KILL 1 ", 2);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(secs < 1.0 + 1.5 + 3.0);  // the kill, one timeout, slack for a loaded machine
    for (int r : {0, 1, 3}) {
      const std::string out = slurp(dir / ("out" + std::to_string(r)));
      INFO("rank " << r << ": " << out);
      CHECK(rc[r] == 2);
      CHECK(out.find("collplan: error: rank " + std::to_string(r) + ", step") != std::string::npos);
    }
    // The ranks that talk to rank 2 name it; the others may fail through them.
    bool named = false;
    for (int r : {0, 1, 3}) named |= slurp(dir / ("out" + std::to_string(r))).find("rank 2 (127.0.0.1:") != std::string::npos;
    CHECK(named);
  }
  if (std::getenv("COLLPLAN_KEEP_TEST_DIR") == nullptr) fs::remove_all(dir);
}

TEST_CASE("cli tcp: bad transport options are named", "[cli][tcp]") {
  const fs::path dir = scratch_dir();
  const std::string plan = (dir / "enc4.cplan").string();
  REQUIRE(std::system((std::string(COLLPLAN_CLI) + " compile --op encode --K 4 -o " + plan + " > /dev/null 2>&1").c_str()) ==
          0);
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
      {"--transport carrier-pigeon", "carrier-pigeon"},
  };
  for (const Case& c : cases) {
    const std::string cmd = std::string(COLLPLAN_CLI) + " run " + plan + " " + c.args + " > " +
                            (dir / "err").string() + " 2>&1";
    const int st = std::system(cmd.c_str());
    const std::string out = slurp(dir / "err");
    INFO(c.args << ": " << out);
    REQUIRE(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 2);
    CHECK(out.find(c.needle) != std::string::npos);
  }
  fs::remove_all(dir);
}
