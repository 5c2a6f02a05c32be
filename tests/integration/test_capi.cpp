// The C API (runtime/capi/collplan.h, collplan_tcp.h): plans opened from
// files and bytes, the queries a caller sizes buffers with, replays on
// threads and on TCP over loopback (real sockets) compared byte for byte with
// the direct computation and the C++ engine, and bad input answered with the
// right status code and a message naming the bad value.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "collplan.h"
#include "collplan_tcp.h"
#include "ir/binary.h"
#include "loopback_peers.h"
#include "matrix/matrix.h"
#include "pipeline/pipeline.h"
#include "runtime/check/replay.h"
#include "runtime/transport/tcp.h"
#include "runtime/transport/threads.h"
#include "test_util.h"

using namespace collplan;
using test::compiled;
using test::loopback_peers;
using test::random_encode_spec;

namespace {

ir::Plan encode_plan(uint32_t K, uint32_t p, const Field& f, uint64_t seed) {
  return compiled(random_encode_spec(K, p, f, seed), "prepare-shoot");
}

ir::Plan block_plan(OpKind op, uint32_t K, uint32_t p, uint32_t n, const Field& f, const std::string& algorithm,
                    std::vector<uint32_t> counts = {}) {
  Spec s;
  s.op = op;
  s.K = K;
  s.p = p;
  s.blocks = n;
  s.field = f;
  s.counts = std::move(counts);
  return compiled(s, algorithm);
}

struct Named {
  const char* name;
  ir::Plan plan;
};

std::vector<Named> sample_plans() {
  return {
      {"prepare-shoot gf256 K=5 p=2", encode_plan(5, 2, Field::gf256(), 1)},
      {"prepare-shoot gf65536 K=4", encode_plan(4, 1, Field::gf65536(), 2)},
      {"reduce-scatter-allgather prime:65537 K=5 n=7",
       block_plan(OpKind::Allreduce, 5, 1, 7, Field::prime(65537), "reduce-scatter-allgather")},
      {"circulant-allgatherv gf256 K=4", block_plan(OpKind::Allgatherv, 4, 1, 2, Field::gf256(), "circulant-allgatherv",
                                                    {3, 0, 2, 1})},
  };
}

// A plan handle from the plan's bytes; closes itself.
struct Handle {
  collplan_plan* h = nullptr;
  explicit Handle(const ir::Plan& plan) {
    const std::vector<uint8_t> bytes = ir::encode_binary(plan);
    REQUIRE(collplan_open_bytes(bytes.data(), bytes.size(), &h) == COLLPLAN_OK);
    REQUIRE(h != nullptr);
  }
  ~Handle() { collplan_close(h); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

// Rank r's inputs and expected outputs (the direct computation), each
// concatenated into the one buffer the C API takes.
struct Packed {
  std::vector<unsigned char> in, expected;
};
Packed packed(const ir::Plan& plan, ir::Rank r, size_t len, uint64_t seed) {
  const rt::RankReplayData d = rt::rank_replay_data(plan, r, len, seed);
  Packed p;
  for (const auto& v : d.inputs) p.in.insert(p.in.end(), v.begin(), v.end());
  for (const auto& v : d.expected) p.expected.insert(p.expected.end(), v.begin(), v.end());
  return p;
}

// The C++ engine on threads with the same inputs, outputs concatenated per rank.
std::vector<std::vector<unsigned char>> engine_outputs(const ir::Plan& plan, size_t len, uint64_t seed) {
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  const size_t row = len * plan.spec.field.elem_bytes();
  std::vector<rt::RankReplayData> data;
  std::vector<std::vector<const void*>> in(K);
  std::vector<std::vector<std::vector<unsigned char>>> out(K);
  std::vector<std::vector<void*>> outp(K);
  for (uint32_t r = 0; r < K; ++r) data.push_back(rt::rank_replay_data(plan, r, len, seed));
  for (uint32_t r = 0; r < K; ++r) {
    for (const auto& v : data[r].inputs) in[r].push_back(v.data());
    out[r].assign(plan.ranks[r].outputs.size(), std::vector<unsigned char>(row));
    for (auto& v : out[r]) outp[r].push_back(v.data());
  }
  rt::run_threads(plan, len, in, outp);
  std::vector<std::vector<unsigned char>> res(K);
  for (uint32_t r = 0; r < K; ++r)
    for (const auto& v : out[r]) res[r].insert(res[r].end(), v.begin(), v.end());
  return res;
}

std::string last_error() { return collplan_last_error(); }

struct TcpRank {
  int status = -1;
  std::string error;
  std::vector<unsigned char> out;
};

// Every rank of the plan as a thread calling collplan_run_tcp; counts[r] is
// rank r's count (all `len` when empty); ranks in `absent` never start.
std::vector<TcpRank> run_tcp(const collplan_plan* h, const ir::Plan& plan, size_t len, uint64_t seed, int timeout_ms,
                             std::vector<size_t> counts = {}, std::vector<uint32_t> absent = {}) {
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  for (int attempt = 0;; ++attempt) {
    const std::string peers = loopback_peers(K);
    std::vector<TcpRank> res(K);
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < K; ++r) {
      if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
      threads.emplace_back([&, r] {
        const size_t n = counts.empty() ? len : counts[r];
        const Packed p = packed(plan, r, n, seed);
        res[r].out.assign(p.expected.size(), 0xA5);
        res[r].status = collplan_run_tcp(h, peers.c_str(), static_cast<int>(r), p.in.data(), res[r].out.data(), n,
                                         timeout_ms);
        res[r].error = collplan_last_error();
      });
    }
    for (auto& t : threads) t.join();
    // Another process may have taken a port between our probe and the bind.
    bool port_taken = false;
    for (const TcpRank& t : res)
      if (t.status != COLLPLAN_OK && t.error.find("cannot listen") != std::string::npos) port_taken = true;
    if (!port_taken || attempt == 3) return res;
  }
}

}  // namespace

TEST_CASE("capi: a plan opened from bytes or a file answers what callers size buffers with", "[capi]") {
  for (const Named& c : sample_plans()) {
    INFO(c.name);
    const ir::Plan& plan = c.plan;
    Handle h(plan);
    const int K = static_cast<int>(plan.ranks.size());
    CHECK(collplan_num_ranks(h.h) == K);
    CHECK(collplan_operation(h.h) == static_cast<int>(plan.spec.op));
    CHECK(std::string(collplan_operation_name(h.h)) == op_name(plan.spec.op));
    CHECK(std::string(collplan_field_name(h.h)) == plan.spec.field.name());
    CHECK(collplan_elem_size(h.h) == plan.spec.field.elem_bytes());
    for (int r = 0; r < K; ++r) {
      CHECK(collplan_num_inputs(h.h, r) == static_cast<int>(plan.ranks[r].inputs.size()));
      CHECK(collplan_num_outputs(h.h, r) == static_cast<int>(plan.ranks[r].outputs.size()));
      CHECK(collplan_input_count(h.h, r, 1000) == plan.ranks[r].inputs.size() * 1000);
      CHECK(collplan_output_count(h.h, r, 1000) == plan.ranks[r].outputs.size() * 1000);
    }
    char digest[33];
    REQUIRE(collplan_digest(h.h, digest) == COLLPLAN_OK);
    CHECK(std::string(digest) == ir::plan_digest(plan).hex());

    // The same plan from a file.
    const test::TempFile file("plan.cplan");
    const std::string& path = file.path;
    ir::write_binary(plan, path);
    collplan_plan* f = nullptr;
    REQUIRE(collplan_open_file(path.c_str(), &f) == COLLPLAN_OK);
    char d2[33];
    REQUIRE(collplan_digest(f, d2) == COLLPLAN_OK);
    CHECK(std::string(d2) == std::string(digest));
    collplan_close(f);
  }
  CHECK(std::string(collplan_status_name(COLLPLAN_ERR_PLAN)) == "bad plan");
  CHECK(std::string(collplan_status_name(42)) == "unknown status");
  collplan_close(nullptr);  // ignored
}

TEST_CASE("capi: threads replays equal the direct computation and the C++ engine byte for byte", "[capi]") {
  for (const Named& c : sample_plans())
    for (size_t len : {size_t{1}, size_t{4099}}) {
      INFO(c.name << " len " << len);
      const ir::Plan& plan = c.plan;
      const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
      Handle h(plan);
      std::vector<Packed> data;
      std::vector<std::vector<unsigned char>> out(K);
      std::vector<const void*> sp(K);
      std::vector<void*> rp(K);
      for (uint32_t r = 0; r < K; ++r) {
        data.push_back(packed(plan, r, len, 5 + len));
        out[r].assign(collplan_output_count(h.h, static_cast<int>(r), len) * collplan_elem_size(h.h), 0xA5);
        REQUIRE(out[r].size() == data[r].expected.size());
        sp[r] = data[r].in.data();
        rp[r] = out[r].data();
      }
      for (int rep = 0; rep < 2; ++rep) {  // a handle runs again
        REQUIRE(collplan_run_threads(h.h, sp.data(), rp.data(), len) == COLLPLAN_OK);
        const auto eng = engine_outputs(plan, len, 5 + len);
        for (uint32_t r = 0; r < K; ++r) {
          INFO("rank " << r);
          CHECK(out[r] == data[r].expected);
          CHECK(out[r] == eng[r]);
        }
      }
    }
}

TEST_CASE("capi: TCP replays on loopback equal the direct computation byte for byte", "[capi][tcp]") {
  const std::vector<Named> plans = sample_plans();
  for (size_t i : {size_t{0}, size_t{2}}) {
    const Named& c = plans[i];
    INFO(c.name);
    Handle h(c.plan);
    const size_t len = 4099;
    const auto res = run_tcp(h.h, c.plan, len, 11, 5000);
    const auto eng = engine_outputs(c.plan, len, 11);
    for (uint32_t r = 0; r < res.size(); ++r) {
      INFO("rank " << r << ": " << res[r].error);
      REQUIRE(res[r].status == COLLPLAN_OK);
      CHECK(res[r].out == packed(c.plan, r, len, 11).expected);
      CHECK(res[r].out == eng[r]);
    }
  }
}

TEST_CASE("capi: a persistent TCP collective runs again on its connections", "[capi][tcp]") {
  const ir::Plan plan = block_plan(OpKind::Allgather, 5, 2, 1, Field::gf65536(), "dissemination-allgather");
  Handle h(plan);
  const uint32_t K = 5;
  std::vector<std::vector<int>> status(K);
  std::vector<std::vector<std::vector<unsigned char>>> outs(K);
  std::vector<std::string> errors(K);
  const std::vector<size_t> lens = {1, 4099, 100};
  for (int attempt = 0;; ++attempt) {
    const std::string peers = loopback_peers(K);
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < K; ++r)
      threads.emplace_back([&, r] {
        status[r].clear();
        outs[r].clear();
        collplan_tcp_collective* c = nullptr;
        status[r].push_back(collplan_tcp_init(h.h, peers.c_str(), static_cast<int>(r), 5000, &c));
        errors[r] = collplan_last_error();
        if (status[r].back() != COLLPLAN_OK) return;
        for (size_t i = 0; i < lens.size(); ++i) {
          const Packed p = packed(plan, r, lens[i], 40 + i);
          outs[r].emplace_back(p.expected.size(), 0xA5);
          status[r].push_back(collplan_tcp_run(c, p.in.data(), outs[r].back().data(), lens[i]));
          if (status[r].back() != COLLPLAN_OK) errors[r] = collplan_last_error();
        }
        collplan_tcp_free(c);
      });
    for (auto& t : threads) t.join();
    bool port_taken = false;
    for (uint32_t r = 0; r < K; ++r)
      if (status[r][0] != COLLPLAN_OK && errors[r].find("cannot listen") != std::string::npos) port_taken = true;
    if (!port_taken || attempt == 3) break;
  }
  for (uint32_t r = 0; r < K; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    REQUIRE(status[r] == std::vector<int>(1 + lens.size(), COLLPLAN_OK));
    for (size_t i = 0; i < lens.size(); ++i) CHECK(outs[r][i] == packed(plan, r, lens[i], 40 + i).expected);
  }
  CHECK(collplan_tcp_run(nullptr, nullptr, nullptr, 1) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("coll is NULL"));
  CHECK(collplan_tcp_init(h.h, "127.0.0.1:1", 0, 0, nullptr) == COLLPLAN_ERR_ARGUMENT);
  collplan_tcp_collective* c = reinterpret_cast<collplan_tcp_collective*>(&c);
  CHECK(collplan_tcp_init(h.h, "127.0.0.1:1,127.0.0.1:2", 0, 0, &c) == COLLPLAN_ERR_ARGUMENT);
  CHECK(c == nullptr);
  CHECK_THAT(last_error(), Catch::Contains("collplan_tcp_init: the peer list '127.0.0.1:1,127.0.0.1:2' has 2 entries"));
  collplan_tcp_free(nullptr);  // ignored
}

TEST_CASE("capi: plans that cannot be read are refused with a code and a message naming them", "[capi]") {
  const ir::Plan plan = encode_plan(5, 2, Field::gf256(), 3);
  const std::vector<uint8_t> good = ir::encode_binary(plan);
  collplan_plan* h = reinterpret_cast<collplan_plan*>(&h);  // must be reset to NULL on failure

  const test::TempFile missing_file("no-such-plan.cplan");
  const std::string& missing = missing_file.path;
  CHECK(collplan_open_file(missing.c_str(), &h) == COLLPLAN_ERR_IO);
  CHECK(h == nullptr);
  CHECK_THAT(last_error(), Catch::Contains(missing) && Catch::Contains("cannot open"));
  // A directory and a device are I/O errors (not internal ones), refused
  // before reading: /dev/zero would be read until memory ran out.
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK(collplan_open_file(dir.c_str(), &h) == COLLPLAN_ERR_IO);
  CHECK_THAT(last_error(), Catch::Contains(dir) && Catch::Contains("it is a directory"));
  CHECK(collplan_open_file("/dev/zero", &h) == COLLPLAN_ERR_IO);
  CHECK_THAT(last_error(), Catch::Contains("'/dev/zero': it is a character device, not a regular file"));
  CHECK(h == nullptr);

  // A damaged byte in the middle: the content hash catches it.
  std::vector<uint8_t> bad = good;
  bad[bad.size() / 2] ^= 0x40;
  CHECK(collplan_open_bytes(bad.data(), bad.size(), &h) == COLLPLAN_ERR_PLAN);
  CHECK(h == nullptr);
  CHECK_THAT(last_error(), Catch::StartsWith("collplan_open_bytes: "));
  // The same damage from a file names the file.
  const test::TempFile damaged("damaged.cplan");
  const std::string& path = damaged.path;
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    std::fwrite(bad.data(), 1, bad.size(), f);
    std::fclose(f);
  }
  CHECK(collplan_open_file(path.c_str(), &h) == COLLPLAN_ERR_PLAN);
  CHECK_THAT(last_error(), Catch::Contains(path));
  // Truncated, not a plan at all, empty.
  CHECK(collplan_open_bytes(good.data(), good.size() - 3, &h) == COLLPLAN_ERR_PLAN);
  const char junk[] = "this is not a plan file at all";
  CHECK(collplan_open_bytes(junk, sizeof junk, &h) == COLLPLAN_ERR_PLAN);
  CHECK(collplan_open_bytes(good.data(), 0, &h) == COLLPLAN_ERR_PLAN);
  // One rank's file is not a whole plan.
  const std::vector<uint8_t> one = ir::extract_rank_image(good.data(), good.size(), 2);
  CHECK(collplan_open_bytes(one.data(), one.size(), &h) == COLLPLAN_ERR_PLAN);
  CHECK(h == nullptr);
  // NULL arguments.
  CHECK(collplan_open_bytes(nullptr, 10, &h) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("data is NULL"));
  CHECK(collplan_open_bytes(good.data(), good.size(), nullptr) == COLLPLAN_ERR_ARGUMENT);
  CHECK(collplan_open_file(nullptr, &h) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("path is NULL"));

  // A plan the decoder takes but the engine cannot replay (a receive whose
  // sent_at is not t − λ + 1): refused when run, as a bad plan.
  ir::Plan wrong = plan;
  bool edited = false;
  for (auto& prog : wrong.ranks)
    for (auto& st : prog.steps)
      for (auto& rv : st.recvs)
        if (!edited && st.t > 1) {
          rv.sent_at = st.t - 1;
          edited = true;
        }
  REQUIRE(edited);
  Handle w(wrong);
  const size_t len = 8;
  std::vector<std::vector<unsigned char>> in(5, std::vector<unsigned char>(len)), out(5, std::vector<unsigned char>(len));
  std::vector<const void*> sp;
  std::vector<void*> rp;
  for (int r = 0; r < 5; ++r) {
    sp.push_back(in[r].data());
    rp.push_back(out[r].data());
  }
  CHECK(collplan_run_threads(w.h, sp.data(), rp.data(), len) == COLLPLAN_ERR_PLAN);
  CHECK_THAT(last_error(), Catch::Contains("rank 0, step 2: receive of a message sent in step 1"));
}

TEST_CASE("capi: bad arguments return COLLPLAN_ERR_ARGUMENT naming the value, outputs untouched", "[capi]") {
  const ir::Plan plan = encode_plan(5, 2, Field::gf256(), 4);
  Handle h(plan);
  // Queries.
  CHECK(collplan_num_ranks(nullptr) == -1);
  CHECK_THAT(last_error(), Catch::Contains("collplan_num_ranks: plan is NULL"));
  CHECK(collplan_operation(nullptr) == -1);
  CHECK(collplan_operation_name(nullptr) == nullptr);
  CHECK(collplan_field_name(nullptr) == nullptr);
  CHECK(collplan_elem_size(nullptr) == 0);
  CHECK(collplan_num_inputs(h.h, 5) == -1);
  CHECK_THAT(last_error(), Catch::Contains("rank 5 does not exist: the plan has ranks 0..4"));
  CHECK(collplan_num_outputs(h.h, -1) == -1);
  CHECK_THAT(last_error(), Catch::Contains("rank -1 does not exist"));
  CHECK(collplan_input_count(h.h, 9, 10) == 0);
  CHECK_THAT(last_error(), Catch::Contains("rank 9"));
  {
    Handle wide(encode_plan(4, 1, Field::gf65536(), 4));  // 2-byte elements
    CHECK(collplan_output_count(wide.h, 0, SIZE_MAX / 2 + 1) == 0);
    CHECK_THAT(last_error(), Catch::Contains("count = 9223372036854775808 is too large"));
  }
  CHECK(collplan_digest(h.h, nullptr) == COLLPLAN_ERR_ARGUMENT);

  // Threads runs.
  const size_t len = 16;
  std::vector<std::vector<unsigned char>> in(5, std::vector<unsigned char>(len, 1)),
      out(5, std::vector<unsigned char>(len, 0xA5));
  std::vector<const void*> sp;
  std::vector<void*> rp;
  for (int r = 0; r < 5; ++r) {
    sp.push_back(in[r].data());
    rp.push_back(out[r].data());
  }
  auto untouched = [&] {
    for (const auto& v : out)
      for (unsigned char b : v)
        if (b != 0xA5) return false;
    return true;
  };
  CHECK(collplan_run_threads(nullptr, sp.data(), rp.data(), len) == COLLPLAN_ERR_ARGUMENT);
  CHECK(collplan_run_threads(h.h, nullptr, rp.data(), len) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("sendbufs is NULL"));
  CHECK(collplan_run_threads(h.h, sp.data(), nullptr, len) == COLLPLAN_ERR_ARGUMENT);
  CHECK(collplan_run_threads(h.h, sp.data(), rp.data(), 0) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("count = 0"));
  // Counts no arena can hold are the caller's argument too.
  CHECK(collplan_run_threads(h.h, sp.data(), rp.data(), SIZE_MAX / 2) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("9223372036854775807 elements"));
  sp[2] = nullptr;
  CHECK(collplan_run_threads(h.h, sp.data(), rp.data(), len) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("sendbufs[2] is NULL but rank 2 has 1 input vector(s)"));
  sp[2] = in[2].data();
  rp[4] = nullptr;
  CHECK(collplan_run_threads(h.h, sp.data(), rp.data(), len) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("recvbufs[4] is NULL"));
  rp[4] = out[4].data();
  CHECK(untouched());

  // TCP runs: refused before any socket is opened.
  const std::string peers = "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5";
  CHECK(collplan_run_tcp(h.h, peers.c_str(), 5, in[0].data(), out[0].data(), len, 0) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("collplan_run_tcp: rank 5 does not exist"));
  CHECK(collplan_run_tcp(h.h, peers.c_str(), -2, in[0].data(), out[0].data(), len, 0) == COLLPLAN_ERR_ARGUMENT);
  CHECK(collplan_run_tcp(h.h, nullptr, 0, in[0].data(), out[0].data(), len, 0) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("peers is NULL"));
  CHECK(collplan_run_tcp(h.h, "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", 0, in[0].data(), out[0].data(), len, 0) ==
        COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("has 3 entries but the plan has 5 ranks"));
  CHECK(collplan_run_tcp(h.h, "127.0.0.1:1,nohost,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5", 0, in[0].data(),
                         out[0].data(), len, 0) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("'nohost'"));
  CHECK(collplan_run_tcp(h.h, peers.c_str(), 0, nullptr, out[0].data(), len, 0) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("sendbuf is NULL"));
  CHECK(collplan_run_tcp(h.h, peers.c_str(), 0, in[0].data(), nullptr, len, 0) == COLLPLAN_ERR_ARGUMENT);
  CHECK(collplan_run_tcp(h.h, peers.c_str(), 0, in[0].data(), out[0].data(), 0, 0) == COLLPLAN_ERR_ARGUMENT);
  CHECK(collplan_run_tcp(h.h, peers.c_str(), 0, in[0].data(), out[0].data(), SIZE_MAX / 2, 0) ==
        COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("9223372036854775807 elements"));
  CHECK(collplan_run_tcp(h.h, peers.c_str(), 0, in[0].data(), out[0].data(), len, -5) == COLLPLAN_ERR_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("timeout_ms = -5"));
  CHECK(untouched());

  // The message is per thread: another thread's failure leaves ours.
  CHECK(collplan_num_ranks(nullptr) == -1);
  const std::string mine = last_error();
  std::string theirs;
  std::thread([&] {
    collplan_num_inputs(h.h, 77);
    theirs = collplan_last_error();
  }).join();
  CHECK_THAT(theirs, Catch::Contains("rank 77"));
  CHECK(last_error() == mine);
}

TEST_CASE("capi: TCP ranks that disagree on count, or a rank that never starts, fail with a transport error",
          "[capi][tcp]") {
  const ir::Plan plan = encode_plan(4, 1, Field::gf256(), 6);
  Handle h(plan);
  SECTION("counts differ") {
    const auto res = run_tcp(h.h, plan, 64, 1, 1500, {64, 64, 65, 64});
    for (uint32_t r = 0; r < res.size(); ++r) {
      INFO("rank " << r << ": " << res[r].error);
      CHECK(res[r].status == COLLPLAN_ERR_TRANSPORT);
      CHECK_THAT(res[r].error, Catch::StartsWith("collplan_run_tcp: "));
    }
  }
  SECTION("rank 3 never starts") {
    const auto res = run_tcp(h.h, plan, 64, 1, 800, {}, {3});
    for (uint32_t r = 0; r < 3; ++r) {
      INFO("rank " << r << ": " << res[r].error);
      CHECK(res[r].status == COLLPLAN_ERR_TRANSPORT);
    }
    // Ranks below 3 connect to it and name it.
    CHECK_THAT(res[0].error, Catch::Contains("rank 3"));
  }
}

TEST_CASE("capi: a TCP collective with a job key runs, and a key file that is not one is the caller argument",
          "[capi][tcp]") {
  const ir::Plan plan = block_plan(OpKind::Allgather, 3, 1, 1, Field::gf256(), "dissemination-allgather");
  Handle h(plan);
  const uint32_t K = 3;
  const test::TempFile key("capi-job.key");
  rt::write_key_file(key.path, true);
  std::vector<int> status(K, -1);
  std::vector<std::string> errors(K);
  std::vector<std::vector<unsigned char>> outs(K);
  const size_t len = 77;
  const std::string peers = loopback_peers(K);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < K; ++r)
    threads.emplace_back([&, r] {
      collplan_tcp_collective* c = nullptr;
      status[r] = collplan_tcp_init_keyed(h.h, peers.c_str(), static_cast<int>(r), 5000, key.path.c_str(), &c);
      if (status[r] != COLLPLAN_OK) {
        errors[r] = collplan_last_error();
        return;
      }
      const Packed p = packed(plan, r, len, 9);
      outs[r].assign(p.expected.size(), 0xA5);
      status[r] = collplan_tcp_run(c, p.in.data(), outs[r].data(), len);
      if (status[r] != COLLPLAN_OK) errors[r] = collplan_last_error();
      collplan_tcp_free(c);
    });
  for (auto& t : threads) t.join();
  for (uint32_t r = 0; r < K; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    CHECK(status[r] == COLLPLAN_OK);
    CHECK(outs[r] == packed(plan, r, len, 9).expected);
  }
  collplan_tcp_collective* c = nullptr;
  CHECK(collplan_tcp_init_keyed(h.h, "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", 0, 0, "/dev/null", &c) ==
        COLLPLAN_ERR_ARGUMENT);
  CHECK(c == nullptr);
  CHECK_THAT(last_error(), Catch::Contains("collplan_tcp_init_keyed") &&
                               Catch::Contains("job key file '/dev/null': it is a character device, not a regular file"));
}
