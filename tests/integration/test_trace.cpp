// Replay traces (runtime/trace.h): the decorator's events on the threads
// transport (counts, bytes, steps, tiling) and the Chrome trace JSON's shape.
// `collplan run --trace` over TCP: tests/cli/test_cli_tcp.cpp.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "matrix/matrix.h"
#include "pipeline/pipeline.h"
#include "runtime/check/replay.h"
#include "runtime/trace.h"
#include "runtime/transport/tcp.h"
#include "test_util.h"
#include "trace_check.h"

using namespace collplan;

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
  CHECK(test::check_chrome_trace(j).size() == 9);
  CHECK(j["otherData"]["digest"] == "x");
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"]) names.insert(e["name"].get<std::string>());
  for (const char* n : {"run", "step 1", "step 2", "post_send", "post_recv", "wait", "combine", "process_name"})
    CHECK(names.count(n) == 1);
  // Written to a file, it parses back to the same events.
  const test::TempFile f("trace.json");
  rt::write_trace(f.path, all, {{"digest", "x"}});
  std::ifstream in(f.path);
  const nlohmann::json back = nlohmann::json::parse(in);
  CHECK(back["traceEvents"] == j["traceEvents"]);
}
