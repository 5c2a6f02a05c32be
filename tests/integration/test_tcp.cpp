// The TCP transport on loopback: every rank a thread with its own
// TcpTransport and real sockets. Correct replays against the direct
// computation; refused handshakes; dead, silent and corrupting peers end in
// named errors within the timeout, and leave the outputs untouched.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "gen/registry.h"
#include "ir/binary.h"
#include "matrix/matrix.h"
#include "pipeline/pipeline.h"
#include "runtime/engine.h"
#include "runtime/check/replay.h"
#include "runtime/transport/tcp.h"
#include "runtime/transport/threads.h"
#include "support/error.h"
#include <fmt/format.h>
#include "repair_spec.h"
#include "tcp_fake_peer.h"
#include "test_util.h"

using namespace collplan;
using test::compiled;
using test::random_encode_spec;
using Clock = std::chrono::steady_clock;

namespace {

ir::Plan encode_plan(uint32_t K, uint32_t p, uint32_t lambda, const Field& f, uint64_t seed,
                     const std::string& algorithm = "prepare-shoot") {
  return compiled(random_encode_spec(K, p, f, seed, lambda), algorithm);
}

// How one rank takes part: runs the plan, or misbehaves.
enum class Role { run, silent, dies, wrong_plan };

struct RankResult {
  std::optional<std::string> error;  // the UserError, if the rank failed
  double seconds = 0;                // until it returned or failed
  std::vector<std::vector<unsigned char>> outputs;
  std::vector<std::vector<unsigned char>> expected;
  size_t buffered = 0;
  size_t gathered = 0;  // engine: split messages staged for want of pieces
  size_t split = 0;     // engine: messages handed to the transport in pieces
  uint64_t staged = 0;  // engine: bytes it copied itself in the last run
};

// Runs every rank of `plan` as a thread with its own TCP transport on
// 127.0.0.1, `runs` times, and returns what each rank saw. Outputs are
// poisoned with 0xA5 before each run.
std::vector<RankResult> run_tcp(const ir::Plan& plan, size_t len, uint64_t seed, rt::TcpOptions opt,
                                const std::vector<Role>& roles = {}, const std::vector<rt::TcpOptions>& per_rank = {},
                                int runs = 1, rt::EngineOptions eopt = {},
                                const std::function<void(const std::vector<std::string>&)>& before = {}) {
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  std::vector<int> fds(K);
  std::vector<std::string> peers(K);
  for (uint32_t r = 0; r < K; ++r) {
    uint16_t port = 0;
    fds[r] = rt::tcp_listen("127.0.0.1:0", &port);
    peers[r] = "127.0.0.1:" + std::to_string(port);
  }
  if (before) before(peers);  // every rank listens, none has started
  const Digest digest = ir::plan_digest(plan);
  std::vector<RankResult> res(K);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < K; ++r)
    threads.emplace_back([&, r] {
      const Role role = roles.empty() ? Role::run : roles[r];
      const auto t0 = Clock::now();
      RankResult& out = res[r];
      try {
        Digest d = digest;
        if (role == Role::wrong_plan) d.bytes[0] ^= 0xFF;
        rt::TcpTransport tr(peers, r, d, per_rank.empty() ? opt : per_rank[r], fds[r]);
        if (role == Role::silent) {
          // Connected, then says nothing for three timeouts.
          std::this_thread::sleep_for(3 * opt.timeout);
          return;
        }
        if (role == Role::dies) return;  // closes every connection at once
        rt::Engine eng(plan, r, eopt);
        const rt::RankReplayData data = rt::rank_replay_data(plan, r, len, seed);
        out.expected = data.expected;
        out.outputs.assign(data.expected.size(), std::vector<unsigned char>(len * eng.elem_bytes()));
        std::vector<const void*> in;
        std::vector<void*> o;
        for (const auto& v : data.inputs) in.push_back(v.data());
        for (auto& v : out.outputs) o.push_back(v.data());
        for (int i = 0; i < runs; ++i) {
          for (auto& v : out.outputs) std::memset(v.data(), 0xA5, v.size());
          eng.run(tr, in.data(), o.data(), len);
        }
        out.buffered = tr.buffered_frames();
        out.gathered = eng.stats().gathered_messages;
        out.split = eng.stats().split_messages;
        out.staged = eng.stats().staged_bytes;
      } catch (const UserError& e) {
        out.error = e.what();
      }
      out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    });
  for (auto& t : threads) t.join();
  return res;
}

bool poisoned(const RankResult& r) {
  for (const auto& v : r.outputs)
    for (unsigned char b : v)
      if (b != 0xA5) return false;
  return true;
}

std::string errors_of(const std::vector<RankResult>& res) {
  std::string s;
  for (size_t r = 0; r < res.size(); ++r) s += "rank " + std::to_string(r) + ": " + res[r].error.value_or("ok") + "\n";
  return s;
}

// A blocking client socket connected to "127.0.0.1:port".
int test_connect(const std::string& peer) {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(peer.substr(peer.rfind(':') + 1))));
  a.sin_addr.s_addr = htonl(0x7F000001);
  REQUIRE(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return s;
}

// "127.0.0.1:port" of a client socket, as the transport logs it.
std::string local_address(int s) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

// Collects the transports' log lines (strays) from every rank's thread.
class Log {
 public:
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(m_);
      text_ += line + "\n";
    };
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(m_);
    return text_;
  }

 private:
  std::mutex m_;
  std::string text_;
};

rt::TcpOptions fast_timeouts() {
  rt::TcpOptions o;
  o.connect_timeout = std::chrono::milliseconds(3000);
  o.timeout = std::chrono::milliseconds(400);
  return o;
}

}  // namespace

TEST_CASE("tcp: crc32c matches the standard check value and a bitwise reference", "[tcp]") {
  CHECK(rt::crc32c("123456789", 9) == 0xE3069283u);
  CHECK(rt::crc32c("", 0) == 0u);
  auto bitwise = [](const unsigned char* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
  };
  std::vector<unsigned char> buf(1000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 131 + 7);
  for (size_t n : {size_t{1}, size_t{3}, size_t{64}, size_t{999}}) {
    CHECK(rt::crc32c(buf.data(), n) == bitwise(buf.data(), n));
    CHECK(rt::crc32c(buf.data() + n / 2, n - n / 2, rt::crc32c(buf.data(), n / 2)) == bitwise(buf.data(), n));
  }
}

TEST_CASE("tcp: peer lists from a file or the command line", "[tcp]") {
  CHECK(rt::parse_peers("127.0.0.1:5000,localhost:5001,[::1]:5002") ==
        std::vector<std::string>{"127.0.0.1:5000", "localhost:5001", "[::1]:5002"});
  const std::string path = "tcp_peers_test.txt";
  {
    std::ofstream f(path);
    f << "# rank 0\n127.0.0.1:7000\n\n  127.0.0.1:7001   # rank 1\n";
  }
  CHECK(rt::parse_peers(path) == std::vector<std::string>{"127.0.0.1:7000", "127.0.0.1:7001"});
  std::remove(path.c_str());
  CHECK_THROWS_WITH(rt::parse_peers("127.0.0.1:5000,nohost"), Catch::Contains("'nohost' is not host:port"));
  CHECK_THROWS_WITH(rt::parse_peers("h:5000,h:70000"), Catch::Contains("port '70000'"));
  const Digest d{};
  CHECK_THROWS_WITH(rt::TcpTransport({"127.0.0.1:1", "127.0.0.1:2"}, 2, d), Catch::Contains("--rank 2 does not exist"));
}

TEST_CASE("tcp: replays equal the direct computation and the threads transport for several plan families", "[tcp]") {
  struct Case {
    const char* name;
    ir::Plan plan;
  };
  Spec bc;
  bc.op = OpKind::Broadcast;
  bc.K = 6;
  bc.lambda = 2;
  bc.root = 4;
  bc.blocks = 3;
  Spec pre;
  pre.op = OpKind::Prefix;
  pre.K = 5;
  pre.field = Field::prime(65537);
  auto block_op = [](OpKind op, uint32_t K, uint32_t p, uint32_t n, const std::string& algorithm) {
    Spec s;
    s.op = op;
    s.K = K;
    s.p = p;
    s.blocks = n;
    return compiled(s, algorithm);
  };
  const std::vector<Case> cases = {
      {"dissemination-reduce-scatter K=6 p=2", block_op(OpKind::ReduceScatter, 6, 2, 2, "dissemination-reduce-scatter")},
      {"reduce-scatter-allgather K=5 n=7", block_op(OpKind::Allreduce, 5, 1, 7, "reduce-scatter-allgather")},
      {"dissemination-allgather K=7 p=3", block_op(OpKind::Allgather, 7, 3, 1, "dissemination-allgather")},
      {"prepare-shoot gf256 K=5 p=2", encode_plan(5, 2, 1, Field::gf256(), 1)},
      {"prepare-shoot gf65536 K=4 p=1", encode_plan(4, 1, 1, Field::gf65536(), 2)},
      {"postal-prepare-shoot prime K=7 lambda=2", encode_plan(7, 2, 2, Field::prime(2147483647), 3,
                                                              "postal-prepare-shoot")},
      {"postal-allgather K=4 lambda=3", encode_plan(4, 1, 3, Field::gf256(), 4, "postal-allgather")},
      {"postal-broadcast K=6", compiled(bc, "postal-broadcast")},
      {"postal-prefix K=5", compiled(pre, "postal-prefix")},
  };
  for (const Case& c : cases)
    for (size_t len : {size_t{1}, size_t{4099}}) {
      INFO(c.name << " len " << len);
      const auto res = run_tcp(c.plan, len, 77 + len, fast_timeouts(), {}, {}, 2);
      // Differential: the in-process threads transport on the same inputs.
      const uint32_t K = static_cast<uint32_t>(c.plan.ranks.size());
      std::vector<rt::RankReplayData> data;
      std::vector<std::vector<const void*>> in(K);
      std::vector<std::vector<std::vector<unsigned char>>> thr(K);
      std::vector<std::vector<void*>> out(K);
      for (uint32_t r = 0; r < K; ++r) data.push_back(rt::rank_replay_data(c.plan, r, len, 77 + len));
      for (uint32_t r = 0; r < K; ++r) {
        for (const auto& v : data[r].inputs) in[r].push_back(v.data());
        thr[r].assign(data[r].expected.size(), std::vector<unsigned char>(len * c.plan.spec.field.elem_bytes()));
        for (auto& v : thr[r]) out[r].push_back(v.data());
      }
      rt::run_threads(c.plan, len, in, out);
      for (size_t r = 0; r < res.size(); ++r) {
        INFO("rank " << r);
        REQUIRE(!res[r].error);
        CHECK(rt::first_mismatch(c.plan.spec.field, static_cast<ir::Rank>(r), res[r].expected, res[r].outputs) == "");
        CHECK(res[r].outputs == thr[r]);
        CHECK(res[r].buffered == 0);
      }
    }
}

TEST_CASE("tcp: every operation, received into the caller's buffers or staged, equals the direct computation",
          "[tcp]") {
  // Messages that the caller's separate output buffers split go to TCP in
  // pieces; with max_pieces = 1 through the engine's fallback staging.
  size_t gathered = 0, split = 0;
  std::set<OpKind> covered;
  for (const auto& [K, p, lambda] : {std::tuple{5u, 1u, 1u}, std::tuple{4u, 1u, 2u}})
    for (OpKind op : all_ops()) {
      if (op == OpKind::DecentralizedEncode) continue;
      Spec s = op == OpKind::Encode ? make_encode_spec(K, p, lambda, Field::gf256(), matrix_random(K, 3, Field::gf256()))
                                    : Spec{};
      if (op == OpKind::Repair || op == OpKind::Decode)  // an RS [K + 2, K - 1] code, two lost
        s = test::repair_spec(op_name(op), K + 2, K - 1, "1,3", Field::gf256(), "rs", true, p, lambda);
      s.op = op;
      s.p = p;
      s.lambda = lambda;
      if (!is_code_op(op)) s.K = K;
      if (op != OpKind::Encode && op != OpKind::Prefix && !is_code_op(op)) s.blocks = 2;
      if (op == OpKind::Broadcast || op == OpKind::Reduce) s.root = K - 1;
      if (op == OpKind::Allgatherv)
        for (uint32_t j = 0; j < K; ++j) s.counts.push_back(1 + (3 * j) % 4);
      // The first generator that computes it (the circulant ones need λ = 1).
      std::string algorithm;
      for (const gen::Candidate& c : gen::candidates(s, passes::CostModel{}))
        if (algorithm.empty() && c.why_not.empty()) algorithm = c.generator->name;
      if (algorithm.empty()) continue;
      covered.insert(op);
      const ir::Plan plan = compiled(s, algorithm);
      for (const bool zero_copy : {true, false})
        for (const uint32_t max_pieces : {rt::kTcpMaxPieces, 1u}) {
          INFO(op_name(op) << " " << plan.spec.algorithm << " K " << K << " p " << p << " lambda " << lambda
                           << " zero_copy " << zero_copy << " max_pieces " << max_pieces);
          rt::TcpOptions opt = fast_timeouts();
          opt.max_pieces = max_pieces;
          const auto res = run_tcp(plan, 33, 5, opt, {}, {}, 2, rt::EngineOptions{zero_copy, true});
          for (size_t r = 0; r < res.size(); ++r) {
            INFO("rank " << r);
            REQUIRE(!res[r].error);
            CHECK(rt::first_mismatch(plan.spec.field, static_cast<ir::Rank>(r), res[r].expected, res[r].outputs) ==
                  "");
            if (!zero_copy || max_pieces > 1) CHECK(res[r].gathered == 0);
            if (!zero_copy || max_pieces == 1) CHECK(res[r].split == 0);
            gathered += res[r].gathered;
            split += res[r].split;
          }
        }
    }
  CHECK(gathered > 0);
  CHECK(split > 0);
  CHECK(covered.size() == all_ops().size() - 1);
}

// No staging over TCP (`collplan run --stats`): every generator of the
// plain collectives, p = 1 and 2, each output in a buffer of its own (as
// `collplan run` holds them), copies nothing of its own: messages that span
// output buffers go to TCP in pieces (docs/runtime.md, "Zero copy"). Then
// ranks that take pieces and ranks that stage them (max_pieces = 1) in one
// job: the bytes on the wire do not depend on how either side cuts them.
TEST_CASE("tcp: no plain collective's plan makes the engine stage a copy, and ranks with and without pieces mix",
          "[tcp][pieces]") {
  const uint32_t K = 6;
  const size_t len = 257;
  size_t plans = 0, split = 0;
  for (OpKind op : {OpKind::Allgather, OpKind::Allgatherv, OpKind::Broadcast, OpKind::Reduce, OpKind::Allreduce,
                    OpKind::ReduceScatter})
    for (uint32_t p : {1u, 2u}) {
      const Spec s = test::plain_spec(op, K, p, 4, 1, Field::gf256());
      for (const gen::Candidate& c : gen::candidates(s, passes::CostModel{})) {
        if (!c.why_not.empty()) continue;
        const ir::Plan plan = compiled(s, c.generator->name);
        ++plans;
        INFO(op_name(op) << " p " << p << " " << c.generator->name);
        std::vector<rt::TcpOptions> mixed(K, fast_timeouts());
        for (uint32_t r = 0; r < K; r += 2) mixed[r].max_pieces = 1;
        for (const bool mix : {false, true}) {
          INFO((mix ? "even ranks stage (max_pieces 1)" : "every rank takes pieces"));
          const auto res = run_tcp(plan, len, plans, fast_timeouts(), {}, mix ? mixed : std::vector<rt::TcpOptions>{});
          for (uint32_t r = 0; r < K; ++r) {
            INFO("rank " << r);
            REQUIRE(!res[r].error);
            CHECK(rt::first_mismatch(plan.spec.field, r, res[r].expected, res[r].outputs) == "");
            if (!mix || r % 2 == 1) {
              CHECK(res[r].staged == 0);
              CHECK(res[r].gathered == 0);
              split += res[r].split;
            }
          }
        }
      }
    }
  CHECK(plans >= 12);
  CHECK(split > 0);
}

TEST_CASE("tcp: repair and decode over a grid of codes, loss patterns, fields and generators", "[tcp][repair]") {
  size_t runs = 0;
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)})
    for (const auto& [op, N, K, lost, systematic] :
         {std::tuple{"repair", 5u, 3u, "1", true}, std::tuple{"repair", 6u, 3u, "0,4", false},
          std::tuple{"repair", 7u, 4u, "2,3,6", true}, std::tuple{"decode", 5u, 2u, "3", true},
          std::tuple{"decode", 6u, 3u, "0,5", false}})
      for (const gen::Candidate& c : gen::candidates(test::repair_spec(op, N, K, lost, f, "rs", systematic, 1, 1, 2),
                                                     passes::CostModel{})) {
        if (!c.why_not.empty()) continue;
        const ir::Plan plan =
            compiled(test::repair_spec(op, N, K, lost, f, "rs", systematic, 1, 1, 2), c.generator->name);
        INFO(op << " N " << N << " K " << K << " lost " << lost << " " << f.name() << " " << c.generator->name);
        const auto res = run_tcp(plan, 21, 9, fast_timeouts(), {}, {}, 2);
        for (size_t r = 0; r < res.size(); ++r) {
          INFO("rank " << r);
          REQUIRE(!res[r].error);
          CHECK(rt::first_mismatch(f, static_cast<ir::Rank>(r), res[r].expected, res[r].outputs) == "");
        }
        ++runs;
      }
  CHECK(runs == 3 * (5 + 5 + 5 + 4 + 4));
}

TEST_CASE("tcp: a peer holding another plan is refused at the handshake", "[tcp]") {
  const ir::Plan plan = encode_plan(4, 1, 1, Field::gf256(), 5);
  std::vector<Role> roles(4, Role::run);
  roles[2] = Role::wrong_plan;
  rt::TcpOptions opt = fast_timeouts();
  opt.connect_timeout = std::chrono::milliseconds(1500);  // ranks that lose their peers wait this long
  const auto res = run_tcp(plan, 16, 1, opt, roles);
  INFO(errors_of(res));
  for (const auto& r : res) REQUIRE(r.error);
  // Rank 2 and the ranks it handshook with name the other plan's digest.
  CHECK_THAT(*res[2].error, Catch::Contains("refusing the TCP connection") && Catch::Contains("holds plan") &&
                                Catch::Contains("every rank must replay the same plan"));
  CHECK_THAT(*res[0].error, Catch::Contains("refusing the TCP connection with rank 2 (127.0.0.1:") &&
                                Catch::Contains(ir::plan_digest(plan).hex()));
  for (const auto& r : res) CHECK(r.outputs.empty());  // no rank got as far as running
}

TEST_CASE("tcp: a silent peer ends every rank in a named timeout with outputs untouched", "[tcp]") {
  const ir::Plan plan = encode_plan(4, 1, 1, Field::gf256(), 6);
  std::vector<Role> roles(4, Role::run);
  roles[3] = Role::silent;
  const rt::TcpOptions opt = fast_timeouts();
  // Without zero copy the engine writes outputs only after the last step
  // (with it, receives land in the output buffers as they arrive).
  const auto res = run_tcp(plan, 64, 1, opt, roles, {}, 1, rt::EngineOptions{false, true});
  INFO(errors_of(res));
  bool named = false;
  for (uint32_t r = 0; r < 3; ++r) {
    REQUIRE(res[r].error);
    CHECK_THAT(*res[r].error, Catch::Contains("step"));
    // Within the timeout (plus setup and scheduling slack), not 3 timeouts.
    CHECK(res[r].seconds < 2.0 * opt.timeout.count() / 1000.0 + 1.0);
    CHECK(poisoned(res[r]));
    named |= res[r].error->find("rank 3 (127.0.0.1:") != std::string::npos &&
             res[r].error->find("sent nothing for its message of step") != std::string::npos;
  }
  CHECK(named);
}

TEST_CASE("tcp: a peer that dies is named at once by every rank that needs it", "[tcp]") {
  const ir::Plan plan = encode_plan(5, 2, 1, Field::gf256(), 7);
  std::vector<Role> roles(5, Role::run);
  roles[1] = Role::dies;
  rt::TcpOptions opt = fast_timeouts();
  opt.timeout = std::chrono::milliseconds(5000);  // the closed connection is noticed long before this
  const auto res = run_tcp(plan, 64, 1, opt, roles, {}, 1, rt::EngineOptions{false, true});
  INFO(errors_of(res));
  bool named = false;
  for (uint32_t r : {0u, 2u, 3u, 4u}) {
    REQUIRE(res[r].error);
    CHECK(res[r].seconds < 4.0);
    CHECK(poisoned(res[r]));
    named |= res[r].error->find("rank 1 (127.0.0.1:") != std::string::npos &&
             res[r].error->find("closed the connection") != std::string::npos;
  }
  CHECK(named);
}

TEST_CASE("tcp: a corrupted frame is detected by its CRC", "[tcp]") {
  const ir::Plan plan = encode_plan(4, 1, 1, Field::gf65536(), 8);
  std::vector<rt::TcpOptions> per_rank(4, fast_timeouts());
  per_rank[0].corrupt_step = 1;
  // Without zero copy a refused frame never reaches the output buffers (with
  // it, the frame lands in them before its CRC is checked).
  const auto res = run_tcp(plan, 100, 1, fast_timeouts(), {}, per_rank, 1, rt::EngineOptions{false, true});
  INFO(errors_of(res));
  // Rank 0's step-1 message goes to rank 1, which must refuse it; ranks that
  // no longer need rank 1 may finish correctly.
  bool detected = false;
  for (size_t k = 0; k < res.size(); ++k) {
    const RankResult& r = res[k];
    if (!r.error) {
      CHECK(rt::first_mismatch(plan.spec.field, static_cast<ir::Rank>(k), r.expected, r.outputs) == "");
      continue;
    }
    CHECK(poisoned(r));
    detected |= r.error->find("the frame from rank 0 (127.0.0.1:") != std::string::npos &&
                r.error->find("step 1, port 0) failed its payload CRC32C check") != std::string::npos;
  }
  CHECK(detected);
}

TEST_CASE("tcp: a client that is not collplan is ignored, and the rank it kept out is named", "[tcp]") {
  uint16_t port = 0;
  const int fd = rt::tcp_listen("127.0.0.1:0", &port);
  // Speaks another protocol to rank 0, where rank 1 would connect; rank 1 never comes.
  const int s = test_connect("127.0.0.1:" + std::to_string(port));
  const char junk[64] = "GET / HTTP/1.0\r\n\r\n";
  REQUIRE(::write(s, junk, sizeof junk) == sizeof junk);
  rt::TcpOptions opt = fast_timeouts();
  opt.connect_timeout = std::chrono::milliseconds(1000);
  Log log;
  opt.log = log.sink();
  CHECK_THROWS_WITH(rt::TcpTransport({"127.0.0.1:" + std::to_string(port), "127.0.0.1:1"}, 0, Digest{}, opt, fd),
                    Catch::Contains("rank 1 never joined within 1000 ms"));
  CHECK_THAT(log.text(), Catch::Contains("ignoring a connection from " + local_address(s)) &&
                             Catch::Contains("not a collplan TCP hello"));
  ::close(s);
}

TEST_CASE("tcp: stray connections before the peers (garbage, silence, half a hello) are ignored", "[tcp]") {
  const ir::Plan plan = encode_plan(4, 2, 1, Field::gf256(), 9);
  std::vector<rt::TcpOptions> per_rank(4, fast_timeouts());
  Log log;
  for (rt::TcpOptions& o : per_rank) {
    o.handshake_timeout = std::chrono::milliseconds(500);
    o.log = log.sink();
  }
  std::vector<int> strays;
  std::vector<std::string> addresses;
  const auto res = run_tcp(plan, 100, 3, fast_timeouts(), {}, per_rank, 2, {}, [&](const std::vector<std::string>& peers) {
    // Queued in rank 0's backlog before any rank starts, so it meets them first.
    const int garbage = test_connect(peers[0]);
    unsigned char junk[64];
    for (size_t i = 0; i < sizeof junk; ++i) junk[i] = static_cast<unsigned char>(i * 37 + 11);
    REQUIRE(::write(garbage, junk, sizeof junk) == sizeof junk);
    const int silent = test_connect(peers[0]);
    const int half = test_connect(peers[0]);
    rt::wire::Hello h;
    h.rank = 3;
    h.ranks = 4;
    h.digest = ir::plan_digest(plan);
    unsigned char hello[rt::wire::kHelloBytes];
    rt::wire::encode_hello(h, hello);
    REQUIRE(::write(half, hello, 30) == 30);
    strays = {garbage, silent, half};
    for (int s : strays) addresses.push_back(local_address(s));
  });
  INFO(errors_of(res) << log.text());
  for (size_t r = 0; r < res.size(); ++r) {
    REQUIRE(!res[r].error);
    CHECK(rt::first_mismatch(plan.spec.field, static_cast<ir::Rank>(r), res[r].expected, res[r].outputs) == "");
  }
  // Each stray got its one line, naming its address (the silent ones: timed
  // out, or closed when every rank had joined).
  for (const std::string& a : addresses) CHECK_THAT(log.text(), Catch::Contains("connection from " + a));
  CHECK_THAT(log.text(), Catch::Contains("not a collplan TCP hello"));
  for (int s : strays) ::close(s);
}

namespace {

// A fake rank 0 of a 2-rank plan: completes a valid (keyless) handshake with
// rank 1 using the wire functions, then sends `header` and holds the
// connection open until `done`.
void fake_rank0(int listen_fd, const Digest& digest, rt::wire::FrameHeader header, const std::atomic<bool>& done) {
  const int s = test::fake_handshake(listen_fd, digest, 0, 2);
  REQUIRE(::send(s, &header, sizeof header, MSG_NOSIGNAL) == sizeof header);
  while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::close(s);
}

long max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

TEST_CASE("tcp: a frame header the plan does not allow is a protocol error before any allocation", "[tcp]") {
  const ir::Plan plan = encode_plan(2, 1, 1, Field::gf256(), 10);
  // A message rank 1 receives from rank 0, and its length at len = 64.
  const size_t len = 64;
  std::optional<ir::Recv> rv;
  for (const ir::Step& st : plan.ranks[1].steps)
    for (const ir::Recv& r : st.recvs)
      if (r.from == 0 && !rv) rv = r;
  REQUIRE(rv);
  const uint64_t allowed = rv->into.size() * len * plan.spec.field.elem_bytes();
  struct Case {
    const char* name;
    uint32_t step, port;
    uint64_t length;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"2^63", rv->sent_at, rv->port, uint64_t{1} << 63,
       fmt::format("frame of length 9223372036854775808 for step {}, port {}; the plan allows {} bytes", rv->sent_at,
                   rv->port, allowed)},
      {"2^33", rv->sent_at, rv->port, uint64_t{1} << 33, fmt::format("the plan allows {} bytes", allowed)},
      {"2^30", rv->sent_at, rv->port, uint64_t{1} << 30, fmt::format("the plan allows {} bytes", allowed)},
      {"step", 999, rv->port, allowed, "a frame for step 999"},
      {"port", rv->sent_at, 77, allowed, "port 77, which the plan does not have from it"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    uint16_t port0 = 0, port1 = 0;
    const int fd0 = rt::tcp_listen("127.0.0.1:0", &port0), fd1 = rt::tcp_listen("127.0.0.1:0", &port1);
    const std::vector<std::string> peers = {"127.0.0.1:" + std::to_string(port0), "127.0.0.1:" + std::to_string(port1)};
    rt::wire::FrameHeader h{0, c.port, c.step, 0, c.length, 0, 0};
    rt::wire::seal_header(h);
    std::atomic<bool> done{false};
    std::thread fake([&] { fake_rank0(fd0, ir::plan_digest(plan), h, done); });
    const long rss0 = max_rss_kib();
    std::optional<std::string> error;
    const auto t0 = Clock::now();
    try {
      rt::TcpTransport tr(peers, 1, ir::plan_digest(plan), fast_timeouts(), fd1);
      rt::Engine eng(plan, 1);
      const rt::RankReplayData data = rt::rank_replay_data(plan, 1, len, 1);
      std::vector<std::vector<unsigned char>> out(data.expected.size(), std::vector<unsigned char>(len));
      std::vector<const void*> in;
      std::vector<void*> o;
      for (const auto& v : data.inputs) in.push_back(v.data());
      for (auto& v : out) o.push_back(v.data());
      eng.run(tr, in.data(), o.data(), len);
    } catch (const UserError& e) {
      error = e.what();
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    done = true;
    fake.join();
    ::close(fd0);
    REQUIRE(error);
    CHECK_THAT(*error, Catch::Contains("protocol error: rank 0 (127.0.0.1:" + std::to_string(port0) + ")") &&
                           Catch::Contains(c.needle));
    CHECK(secs < 2.0);  // at the header, not at a timeout
    CHECK(max_rss_kib() - rss0 < 256 * 1024);
  }
}

TEST_CASE("tcp: with a job key every rank proves it and frames carry a MAC", "[tcp]") {
  const ir::Plan plan = encode_plan(4, 2, 1, Field::gf65536(), 11);
  rt::TcpOptions opt = fast_timeouts();
  opt.key = rt::wire::random_bytes32();
  SECTION("the same key everywhere: correct replays, twice") {
    const auto res = run_tcp(plan, 300, 5, opt, {}, {}, 2);
    for (size_t r = 0; r < res.size(); ++r) {
      INFO("rank " << r << ": " << res[r].error.value_or("ok"));
      REQUIRE(!res[r].error);
      CHECK(rt::first_mismatch(plan.spec.field, static_cast<ir::Rank>(r), res[r].expected, res[r].outputs) == "");
      CHECK(res[r].buffered == 0);
    }
  }
  SECTION("a frame changed on the way fails its MAC") {
    std::vector<rt::TcpOptions> per_rank(4, opt);
    per_rank[0].corrupt_step = 1;
    const auto res = run_tcp(plan, 100, 1, opt, {}, per_rank, 1, rt::EngineOptions{false, true});
    INFO(errors_of(res));
    bool detected = false;
    for (const RankResult& r : res)
      detected |= r.error && r.error->find("the frame from rank 0 (127.0.0.1:") != std::string::npos &&
                  r.error->find("failed its payload MAC check (corrupted or forged)") != std::string::npos;
    CHECK(detected);
  }
  for (const bool no_key : {false, true}) {
    DYNAMIC_SECTION((no_key ? "rank 2 has no key" : "rank 2 has another key")) {
      std::vector<rt::TcpOptions> per_rank(4, opt);
      Log log;
      for (rt::TcpOptions& o : per_rank) {
        o.connect_timeout = std::chrono::milliseconds(1500);
        o.log = log.sink();
      }
      if (no_key)
        per_rank[2].key.reset();
      else
        per_rank[2].key = rt::wire::random_bytes32();
      const auto res = run_tcp(plan, 16, 1, opt, {}, per_rank);
      INFO(errors_of(res) << log.text());
      for (uint32_t r : {0u, 1u, 3u}) {
        REQUIRE(res[r].error);
        CHECK_THAT(*res[r].error, Catch::Contains("rank 2 never joined with the job key within 1500 ms"));
        CHECK(res[r].seconds < 1.5 + 1.5);
      }
      REQUIRE(res[2].error);
      CHECK_THAT(*res[2].error, Catch::Contains("never joined"));
      CHECK_THAT(log.text(), Catch::Contains(no_key ? "it holds no job key and this job has one"
                                                    : "it could not prove the job key"));
    }
  }
}

TEST_CASE("tcp: a peer holding another plan and the key is a real mismatch", "[tcp]") {
  // Two ranks, so the one handshake decides (with more, a rank may give up
  // on a mismatch elsewhere first and close this handshake half way).
  const ir::Plan plan = encode_plan(2, 1, 1, Field::gf256(), 12);
  rt::TcpOptions opt = fast_timeouts();
  opt.key = rt::wire::random_bytes32();
  opt.connect_timeout = std::chrono::milliseconds(1500);
  const auto res = run_tcp(plan, 16, 1, opt, {Role::run, Role::wrong_plan});
  INFO(errors_of(res));
  for (const auto& r : res) REQUIRE(r.error);
  CHECK_THAT(*res[0].error, Catch::Contains("refusing the TCP connection with rank 1 (127.0.0.1:") &&
                                Catch::Contains("every rank must replay the same plan"));
  CHECK_THAT(*res[1].error, Catch::Contains("refusing the TCP connection with rank 0 (127.0.0.1:") &&
                                Catch::Contains("holds plan " + ir::plan_digest(plan).hex()));
}

TEST_CASE("tcp: the wire format: hellos, key proofs, key text", "[tcp]") {
  rt::wire::Hello h;
  h.rank = 5;
  h.ranks = 9;
  h.flags = rt::wire::kHelloKeyed;
  h.digest.bytes[3] = 7;
  h.nonce = rt::wire::random_bytes32();
  unsigned char b[rt::wire::kHelloBytes];
  rt::wire::encode_hello(h, b);
  rt::wire::Hello back;
  REQUIRE(rt::wire::parse_hello(b, sizeof b, &back) == "");
  CHECK((back.rank == 5 && back.ranks == 9 && back.flags == 1 && back.digest == h.digest && back.nonce == h.nonce));
  b[20] ^= 1;
  CHECK_THAT(rt::wire::parse_hello(b, sizeof b, &back), Catch::Contains("CRC32C"));
  b[7] = '1';
  CHECK_THAT(rt::wire::parse_hello(b, sizeof b, &back), Catch::Contains("version '1'"));
  CHECK_THAT(rt::wire::parse_hello(b, 10, &back), Catch::Contains("72 bytes"));

  const rt::wire::Key k1 = rt::wire::random_bytes32(), k2 = rt::wire::random_bytes32();
  rt::wire::Hello a = h;
  a.rank = 2;
  a.nonce = rt::wire::random_bytes32();
  CHECK(rt::wire::proof(k1, 'C', h, a) == rt::wire::proof(k1, 'C', h, a));
  CHECK(rt::wire::proof(k1, 'C', h, a) != rt::wire::proof(k2, 'C', h, a));
  CHECK(rt::wire::proof(k1, 'C', h, a) != rt::wire::proof(k1, 'A', h, a));  // a proof cannot be reflected
  const auto sc = rt::wire::session_keys(k1, h, a, true), sa = rt::wire::session_keys(k1, a, h, false);
  CHECK((sc.send == sa.recv && sc.recv == sa.send && sc.send != sc.recv));

  CHECK(rt::wire::parse_key(rt::wire::key_hex(k1) + "\n", "k") == k1);
  CHECK_THROWS_WITH(rt::wire::parse_key("abc", "the job key file 'k'"), Catch::Contains("64 hex digits"));
  CHECK_THROWS_WITH(rt::wire::parse_key(std::string(63, 'a') + "g", "k"), Catch::Contains("not a hex digit"));
}

TEST_CASE("tcp: peer lists that are not regular files or are too long are refused", "[tcp]") {
  const auto t0 = Clock::now();
  CHECK_THROWS_WITH(rt::parse_peers("/dev/zero"), Catch::Contains("'/dev/zero': it is a character device, not a regular file"));
  CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 1.0);
  CHECK_THROWS_WITH(rt::parse_peers("h:1,h:2,h:3", 2), Catch::Contains("more than 2 entries"));
  CHECK(rt::parse_peers("h:1,h:2", 2).size() == 2);
}
