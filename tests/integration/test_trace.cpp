// Replay traces (runtime/trace.h): the decorator's events on the threads
// transport (counts, bytes, steps, tiling), the Chrome trace JSON's shape,
// and `collplan run --trace` over TCP (rank 0 gathers every rank's events).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "loopback_peers.h"
#include "matrix/matrix.h"
#include "passes/pipeline.h"
#include "runtime/replay.h"
#include "runtime/trace.h"
#include "runtime/transport/tcp.h"
#include "test_util.h"

using namespace collplan;
namespace fs = std::filesystem;

namespace {

ir::Plan encode_plan(uint32_t K, uint32_t p, uint32_t lambda, const char* algorithm) {
  return test::compiled(test::random_encode_spec(K, p, Field::gf256(), 3, lambda), algorithm);
}

struct Traced {
  std::vector<std::unique_ptr<rt::TracingTransport>> tracers;
  rt::ReplayReport rep;
};

Traced traced_replay(const ir::Plan& plan, size_t len, size_t reps) {
  Traced t;
  t.tracers.resize(plan.ranks.size());
  rt::ThreadsOptions opt;
  opt.wrap = [&](ir::Rank r, rt::Transport& ep) {
    t.tracers[r] = std::make_unique<rt::TracingTransport>(ep, plan.spec.lambda);
    return t.tracers[r].get();
  };
  t.rep = rt::replay_and_compare(plan, len, 1, reps, opt);
  return t;
}

// The checks a Chrome trace viewer relies on; returns the distinct pids.
std::set<uint32_t> check_chrome_trace(const nlohmann::json& j) {
  REQUIRE(j.is_object());
  REQUIRE(j.contains("traceEvents"));
  REQUIRE(j["traceEvents"].is_array());
  std::set<uint32_t> pids;
  for (const auto& e : j["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    REQUIRE(e.contains("tid"));
    REQUIRE(e.contains("name"));
    REQUIRE(e["name"].is_string());
    if (e["ph"] == "M") continue;
    REQUIRE(e["ph"] == "X");
    REQUIRE(e["ts"].is_number());
    REQUIRE(e["dur"].is_number());
    CHECK(e["ts"].get<double>() >= 0);
    CHECK(e["dur"].get<double>() >= 0);
    CHECK(e["pid"] == e["tid"]);
    pids.insert(e["pid"].get<uint32_t>());
  }
  return pids;
}

}  // namespace

TEST_CASE("trace: the decorator records every post and wait of every run, by step", "[trace]") {
  for (const auto& [K, p, lambda, algo] : {std::tuple(9u, 2u, 1u, "prepare-shoot"),
                                           std::tuple(7u, 1u, 3u, "postal-prepare-shoot")}) {
    const ir::Plan plan = encode_plan(K, p, lambda, algo);
    const size_t len = 100, reps = 3;
    const Traced t = traced_replay(plan, len, reps);
    REQUIRE(t.rep.equal);  // tracing changes nothing in the result
    const size_t eb = plan.spec.field.elem_bytes();
    for (ir::Rank r = 0; r < K; ++r) {
      const auto& ev = t.tracers[r]->events();
      std::map<rt::TraceKind, size_t> n;
      uint64_t sent_bytes = 0;
      for (const auto& e : ev) {
        ++n[e.kind];
        CHECK(e.rank == r);
        CHECK(e.t1_ns >= e.t0_ns);
        CHECK((e.run >= 1 && e.run <= reps));
        if (e.kind == rt::TraceKind::post_send) sent_bytes += e.bytes;
        if (e.kind == rt::TraceKind::wait || e.kind == rt::TraceKind::step)
          CHECK((e.step >= 1 && e.step <= plan.num_steps));
      }
      size_t sends = 0, recvs = 0, elems = 0;
      for (const auto& st : plan.ranks[r].steps) {
        sends += st.sends.size();
        recvs += st.recvs.size();
        for (const auto& s : st.sends) elems += s.payload.size();
      }
      CHECK(n[rt::TraceKind::run] == reps);
      CHECK(n[rt::TraceKind::post_send] == sends * reps);
      CHECK(n[rt::TraceKind::post_recv] == recvs * reps);
      CHECK(sent_bytes == elems * len * eb * reps);
      // Posts carry their message's step; step spans tile each run.
      for (uint32_t run = 1; run <= reps; ++run) {
        int64_t run0 = 0, run1 = 0, prev_end = -1;
        for (const auto& e : ev)
          if (e.run == run && e.kind == rt::TraceKind::run) run0 = e.t0_ns, run1 = e.t1_ns;
        for (const auto& e : ev) {
          if (e.run != run || e.kind != rt::TraceKind::step) continue;
          CHECK(e.t0_ns >= run0);
          CHECK(e.t1_ns <= run1);
          if (prev_end >= 0) CHECK(e.t0_ns == prev_end);
          prev_end = e.t1_ns;
        }
        CHECK(prev_end == run1);
      }
    }
  }
}

TEST_CASE("trace: the Chrome trace JSON has one track per rank and non-negative spans", "[trace]") {
  const ir::Plan plan = encode_plan(9, 2, 1, "prepare-shoot");
  const Traced t = traced_replay(plan, 64, 2);
  std::vector<rt::TraceEvent> all;
  for (const auto& tr : t.tracers) all.insert(all.end(), tr->events().begin(), tr->events().end());
  const nlohmann::json j = rt::trace_json(all, {{"digest", "x"}});
  CHECK(check_chrome_trace(j).size() == 9);
  CHECK(j["otherData"]["digest"] == "x");
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"]) names.insert(e["name"].get<std::string>());
  for (const char* n : {"run", "step 1", "step 2", "post_send", "post_recv", "wait", "combine", "process_name"})
    CHECK(names.count(n) == 1);
  // Written to a file, it parses back to the same events.
  const fs::path f = fs::temp_directory_path() / ("collplan-trace-" + std::to_string(::getpid()) + ".json");
  rt::write_trace(f.string(), all, {{"digest", "x"}});
  std::ifstream in(f);
  const nlohmann::json back = nlohmann::json::parse(in);
  CHECK(back["traceEvents"] == j["traceEvents"]);
  fs::remove(f);
}

TEST_CASE("cli trace: run --trace over TCP writes one trace of every rank, from rank 0", "[cli][tcp][trace]") {
  const fs::path dir = test::scratch_dir("cli-trace-tcp");
  const std::string plan = (dir / "enc.cplan").string();
  REQUIRE(test::run_collplan("compile --op encode --K 4 --p 2 -o " + plan).status == 0);
  const std::string peers = test::loopback_peers(4);
  std::string script;
  for (int r = 0; r < 4; ++r)
    script += "( " + test::collplan_cli() + " run " + plan + " --transport tcp --peers " + peers + " --rank " +
              std::to_string(r) + " --len 50 --reps 2 --trace " + (dir / ("t" + std::to_string(r) + ".json")).string() +
              " > " + (dir / ("out" + std::to_string(r))).string() + " 2>&1; echo $? > " +
              (dir / ("rc" + std::to_string(r))).string() + " ) &\n";
  script += "wait\n";
  std::ofstream(dir / "run.sh") << script;
  REQUIRE(test::run_shell("sh " + (dir / "run.sh").string()).status == 0);
  for (int r = 0; r < 4; ++r) {
    std::ifstream rc(dir / ("rc" + std::to_string(r)));
    int code = -1;
    rc >> code;
    std::stringstream out;
    out << std::ifstream(dir / ("out" + std::to_string(r))).rdbuf();
    INFO("rank " << r << ": " << out.str());
    CHECK(code == 0);
    // Only rank 0 writes the trace.
    CHECK(fs::exists(dir / ("t" + std::to_string(r) + ".json")) == (r == 0));
  }
  std::ifstream in(dir / "t0.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  CHECK(check_chrome_trace(j).size() == 4);
  CHECK(j["otherData"]["transport"] == "tcp");
}
