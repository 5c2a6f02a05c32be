// The TCP transport's messages in pieces (tcp.h, "Messages in pieces"),
// driven through the Transport interface on real loopback sockets: many
// pieces cut differently on each side, empty pieces, one side contiguous
// (the bytes on the wire are the contiguous message's, read by a fake rank
// that speaks the wire format by hand), frames buffered before their receive
// and copied into its pieces, lengths that differ from the pieces' total,
// corrupted payloads, partial writes through a small send buffer, timeouts
// and descriptors the transport refuses.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "runtime/transport/tcp.h"
#include "support/error.h"
#include "tcp_fake_peer.h"

using namespace collplan;
using Clock = std::chrono::steady_clock;

namespace {

constexpr unsigned char kPoison = 0xA5;

// A message's bytes: a pattern that differs at every offset of interest.
std::vector<unsigned char> message(size_t n, uint64_t seed) {
  std::vector<unsigned char> m(n);
  std::mt19937_64 g(seed);
  for (auto& b : m) b = static_cast<unsigned char>(g());
  return m;
}

// A message of pieces of `sizes` laid out in one block of memory in a
// shuffled order with poisoned gaps between them, so that the wire order is
// not the memory order and a write outside a piece shows.
struct Scattered {
  std::vector<unsigned char> mem;
  std::vector<size_t> offset, sizes;

  Scattered(std::vector<size_t> sz, uint64_t seed) : sizes(std::move(sz)) {
    std::vector<size_t> order(sizes.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    offset.resize(sizes.size());
    size_t at = 3;
    for (size_t i : order) {
      offset[i] = at;
      at += sizes[i] + 3;
    }
    mem.assign(at, kPoison);
  }
  size_t bytes() const { return std::accumulate(sizes.begin(), sizes.end(), size_t{0}); }
  std::vector<rt::SendPiece> send_pieces() const {
    std::vector<rt::SendPiece> p;
    for (size_t i = 0; i < sizes.size(); ++i) p.push_back({mem.data() + offset[i], sizes[i]});
    return p;
  }
  std::vector<rt::RecvPiece> recv_pieces() {
    std::vector<rt::RecvPiece> p;
    for (size_t i = 0; i < sizes.size(); ++i) p.push_back({mem.data() + offset[i], sizes[i]});
    return p;
  }
  void fill(const std::vector<unsigned char>& m) {
    size_t at = 0;
    for (size_t i = 0; i < sizes.size(); at += sizes[i], ++i)
      std::memcpy(mem.data() + offset[i], m.data() + at, sizes[i]);
  }
  std::vector<unsigned char> gather() const {
    std::vector<unsigned char> m;
    for (size_t i = 0; i < sizes.size(); ++i)
      m.insert(m.end(), mem.begin() + static_cast<long>(offset[i]),
               mem.begin() + static_cast<long>(offset[i] + sizes[i]));
    return m;
  }
  // Every byte outside the pieces still poisoned.
  bool gaps_untouched() const {
    std::vector<bool> inside(mem.size(), false);
    for (size_t i = 0; i < sizes.size(); ++i)
      for (size_t k = 0; k < sizes[i]; ++k) inside[offset[i] + k] = true;
    for (size_t k = 0; k < mem.size(); ++k)
      if (!inside[k] && mem[k] != kPoison) return false;
    return true;
  }
};

// Piece sizes that sum to `total`: `n` cuts at pseudo-random places, so some
// pieces are empty (equal cuts) and the others of every size.
std::vector<size_t> cuts(size_t total, size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<size_t> at{0, total};
  for (size_t i = 1; i < n; ++i) at.push_back(g() % (total + 1));
  std::sort(at.begin(), at.end());
  std::vector<size_t> sizes;
  for (size_t i = 1; i < at.size(); ++i) sizes.push_back(at[i] - at[i - 1]);
  return sizes;
}

// A message from rank 0 to rank 1 sent in step `step`, as each side posts it.
rt::SendDesc send_desc(uint32_t step) {
  rt::SendDesc d;
  d.to = 1;
  d.step = step;
  return d;
}
rt::RecvDesc recv_desc(uint32_t step) {
  rt::RecvDesc d;
  d.from = 0;
  d.sent_at = step;
  return d;
}
// The descriptor `d` of a message in `pieces` summing to `bytes`.
template <class Desc, class Piece>
Desc in_pieces(Desc d, const std::vector<Piece>& pieces, size_t bytes) {
  d.bytes = bytes;
  d.data = pieces.empty() ? nullptr : pieces[0].data;
  d.pieces = pieces.data();
  d.num_pieces = static_cast<uint32_t>(pieces.size());
  return d;
}
// The descriptor `d` of a message in one buffer.
template <class Desc, class Buffer>
Desc in_buffer(Desc d, Buffer& buf) {
  d.data = buf.data();
  d.bytes = buf.size();
  return d;
}

rt::TcpOptions quick_options() {
  rt::TcpOptions o;
  o.connect_timeout = std::chrono::milliseconds(3000);
  o.timeout = std::chrono::milliseconds(3000);
  return o;
}

// Ranks 0 and 1 of a two-rank job on loopback, each built in its own thread
// (each constructor waits for the other's handshake).
struct Pair {
  std::unique_ptr<rt::TcpTransport> t[2];
};
Pair connect_pair(const rt::TcpOptions& o0, const rt::TcpOptions& o1) {
  int fd[2];
  std::vector<std::string> peers(2);
  for (int r = 0; r < 2; ++r) {
    uint16_t port = 0;
    fd[r] = rt::tcp_listen("127.0.0.1:0", &port);
    peers[r] = "127.0.0.1:" + std::to_string(port);
  }
  Pair p;
  std::string error[2];
  std::thread th[2];
  for (int r = 0; r < 2; ++r)
    th[r] = std::thread([&, r] {
      try {
        p.t[r] = std::make_unique<rt::TcpTransport>(peers, static_cast<ir::Rank>(r), Digest{}, r ? o1 : o0, fd[r]);
      } catch (const std::exception& e) {
        error[r] = e.what();
      }
    });
  for (auto& t : th) t.join();
  REQUIRE(error[0] == "");
  REQUIRE(error[1] == "");
  return p;
}

struct Outcome {
  rt::Status status = rt::Status::ok;
  std::string detail;
};

// Rank 0 posts `sends` (in order) and waits for them; rank 1 posts `recvs`
// and waits for them; each rank in its own thread, both with `max_requests`
// request ids. With `expect`, rank 1 first announces `expected` (else it has
// no plan for the run and reads frames only into posted receives).
struct Run {
  Outcome sender, receiver;
};
Run exchange(Pair& p, const std::vector<rt::SendDesc>& sends, const std::vector<rt::RecvDesc>& recvs,
             const std::vector<rt::RecvDesc>* expected = nullptr) {
  Run out;
  auto side = [](rt::TcpTransport& t, auto post, size_t n, const std::vector<rt::RecvDesc>* exp, Outcome& o) {
    o.status = t.begin(static_cast<uint32_t>(std::max<size_t>(n, 1)));
    if (o.status == rt::Status::ok && exp) o.status = t.expect(exp->data(), exp->size());
    std::vector<rt::ReqId> ids;
    for (size_t i = 0; i < n && o.status == rt::Status::ok; ++i) {
      o.status = post(t, static_cast<rt::ReqId>(i));
      ids.push_back(static_cast<rt::ReqId>(i));
    }
    size_t failed = 0;
    if (o.status == rt::Status::ok) o.status = t.wait(ids.data(), ids.size(), &failed);
    if (o.status == rt::Status::ok) o.status = t.end();
    if (o.status != rt::Status::ok) {
      o.detail = t.error_detail();
      t.abandon();
    }
  };
  std::thread s([&] {
    side(*p.t[0], [&](rt::TcpTransport& t, rt::ReqId i) { return t.post_send(i, sends[i]); }, sends.size(), nullptr,
         out.sender);
  });
  side(*p.t[1], [&](rt::TcpTransport& t, rt::ReqId i) { return t.post_recv(i, recvs[i]); }, recvs.size(), expected,
       out.receiver);
  s.join();
  return out;
}

// Rank 0 sends `first` in step 1 and `second` in step 2 (contiguous, small
// enough for the socket buffers: its sends are done at once, its requests
// 0 and 1 left to wait for). Rank 1 announces the run (`expected`: step 1,
// then step 2) and waits for the step-2 message first (request 1), so the
// step-1 frame arrives with no receive posted and is buffered.
void buffer_step1(Pair& p, const std::vector<unsigned char>& first, const std::vector<unsigned char>& second,
                  const std::vector<rt::RecvDesc>& expected) {
  REQUIRE(p.t[1]->begin(2) == rt::Status::ok);
  REQUIRE(p.t[1]->expect(expected.data(), expected.size()) == rt::Status::ok);
  REQUIRE(p.t[0]->begin(2) == rt::Status::ok);
  REQUIRE(p.t[0]->post_send(0, in_buffer(send_desc(1), first)) == rt::Status::ok);
  REQUIRE(p.t[0]->post_send(1, in_buffer(send_desc(2), second)) == rt::Status::ok);
  REQUIRE(p.t[1]->post_recv(1, expected[1]) == rt::Status::ok);
  size_t failed = 0;
  const rt::ReqId two = 1;
  REQUIRE(p.t[1]->wait(&two, 1, &failed) == rt::Status::ok);
  REQUIRE(p.t[1]->buffered_frames() == 1);
}

}  // namespace

TEST_CASE("tcp pieces: a message cut differently on each side, or contiguous on one, arrives byte for byte",
          "[tcp][pieces]") {
  const size_t n = 40000;
  const std::vector<unsigned char> msg = message(n, 1);
  for (const bool keyed : {false, true}) {
    rt::TcpOptions o = quick_options();
    if (keyed) o.key = rt::wire::random_bytes32();
    // Every combination: pieces (the most a message may have, and a few)
    // or one buffer on each side.
    for (const size_t send_n : {size_t{0}, size_t{rt::kTcpMaxPieces}, size_t{7}})
      for (const size_t recv_n : {size_t{0}, size_t{rt::kTcpMaxPieces}, size_t{300}}) {
        INFO((keyed ? "keyed" : "keyless") << ", send pieces " << send_n << ", receive pieces " << recv_n);
        Pair p = connect_pair(o, o);
        Scattered src(send_n ? cuts(n, send_n, 10 + send_n) : std::vector<size_t>{n}, 20);
        Scattered dst(recv_n ? cuts(n, recv_n, 30 + recv_n) : std::vector<size_t>{n}, 40);
        src.fill(msg);
        const auto sp = src.send_pieces();
        const auto rp = dst.recv_pieces();
        std::vector<unsigned char> contiguous(n, kPoison);
        const rt::SendDesc sd = send_n ? in_pieces(send_desc(1), sp, n) : in_buffer(send_desc(1), msg);
        const rt::RecvDesc rd = recv_n ? in_pieces(recv_desc(1), rp, n) : in_buffer(recv_desc(1), contiguous);
        const Run run = exchange(p, {sd}, {rd});
        REQUIRE(run.sender.status == rt::Status::ok);
        REQUIRE(run.receiver.status == rt::Status::ok);
        CHECK((recv_n ? dst.gather() : contiguous) == msg);
        CHECK(dst.gaps_untouched());
        CHECK(p.t[1]->buffered_frames() == 0);
      }
  }
}

TEST_CASE("tcp pieces: empty pieces anywhere, and messages of no bytes at all", "[tcp][pieces]") {
  for (const bool keyed : {false, true}) {
    INFO((keyed ? "keyed" : "keyless"));
    rt::TcpOptions o = quick_options();
    if (keyed) o.key = rt::wire::random_bytes32();
    Pair p = connect_pair(o, o);
    const std::vector<unsigned char> msg = message(10, 2);
    // Empty first, in the middle (several in a row) and last.
    Scattered src({0, 3, 0, 0, 4, 3, 0}, 1), dst({0, 0, 1, 0, 9, 0}, 2);
    Scattered empty_src({0, 0, 0}, 3), empty_dst({0, 0}, 4);
    src.fill(msg);
    const auto sp = src.send_pieces(), esp = empty_src.send_pieces();
    const auto rp = dst.recv_pieces(), erp = empty_dst.recv_pieces();
    // Two runs, so the second's frames meet a connection the first used.
    for (int run_no = 0; run_no < 2; ++run_no) {
      INFO("run " << run_no);
      const Run run = exchange(p, {in_pieces(send_desc(1), sp, 10), in_pieces(send_desc(2), esp, 0)},
                               {in_pieces(recv_desc(1), rp, 10), in_pieces(recv_desc(2), erp, 0)});
      REQUIRE(run.sender.status == rt::Status::ok);
      REQUIRE(run.receiver.status == rt::Status::ok);
      CHECK(dst.gather() == msg);
      CHECK(dst.gaps_untouched());
      CHECK(empty_dst.gaps_untouched());
    }
  }
}

TEST_CASE("tcp pieces: a frame that arrives before its receive is copied into the receive's pieces",
          "[tcp][pieces]") {
  // Rank 1 knows the run (expect) and first waits for the step-2 message:
  // the step-1 frame before it arrives with no receive posted and is
  // buffered, then copied into the pieces of its receive.
  const size_t n = 5000;
  const std::vector<unsigned char> first = message(n, 3), second = message(64, 4);
  for (const bool keyed : {false, true}) {
    INFO((keyed ? "keyed" : "keyless"));
    rt::TcpOptions o = quick_options();
    if (keyed) o.key = rt::wire::random_bytes32();
    Pair p = connect_pair(o, o);
    Scattered dst(cuts(n, 50, 5), 6);
    const auto rp = dst.recv_pieces();
    std::vector<unsigned char> second_in(64);
    const std::vector<rt::RecvDesc> expected = {in_pieces(recv_desc(1), rp, n), in_buffer(recv_desc(2), second_in)};
    buffer_step1(p, first, second, expected);
    REQUIRE(p.t[1]->post_recv(0, expected[0]) == rt::Status::ok);
    size_t failed = 0;
    const rt::ReqId one = 0, sends[2] = {0, 1};
    REQUIRE(p.t[1]->wait(&one, 1, &failed) == rt::Status::ok);
    REQUIRE(p.t[0]->wait(sends, 2, &failed) == rt::Status::ok);
    CHECK(dst.gather() == first);
    CHECK(dst.gaps_untouched());
    CHECK(second_in == second);
    CHECK(p.t[1]->buffered_frames() == 0);
    CHECK(p.t[0]->end() == rt::Status::ok);
    CHECK(p.t[1]->end() == rt::Status::ok);
  }
}

TEST_CASE("tcp pieces: a frame longer or shorter than the pieces' total is a size mismatch", "[tcp][pieces]") {
  const size_t n = 1000;
  for (const long delta : {-1L, +1L, -999L, +4000L}) {
    INFO("the frame is " << delta << " bytes off the pieces' total");
    Pair p = connect_pair(quick_options(), quick_options());
    const std::vector<unsigned char> msg = message(static_cast<size_t>(static_cast<long>(n) + delta), 7);
    Scattered dst(cuts(n, 9, 8), 9);
    const auto rp = dst.recv_pieces();
    // No expect(): the frame's header passes and meets the posted receive.
    const Run run = exchange(p, {in_buffer(send_desc(1), msg)}, {in_pieces(recv_desc(1), rp, n)});
    CHECK(run.receiver.status == rt::Status::size_mismatch);
    CHECK_THAT(run.receiver.detail,
               Catch::Contains("rank 0 (127.0.0.1:") &&
                   Catch::Contains(fmt::format("sent {} bytes, the plan expects {}", msg.size(), n)));
    CHECK(dst.gaps_untouched());
  }
  // A buffered frame (the run's length, from expect()) met by a receive
  // whose pieces hold less.
  Pair p = connect_pair(quick_options(), quick_options());
  const std::vector<unsigned char> msg = message(n, 10), tail = message(8, 11);
  std::vector<unsigned char> whole(n), tail_in(8);
  Scattered short_dst(cuts(n - 10, 5, 12), 13);
  const auto rp = short_dst.recv_pieces();
  buffer_step1(p, msg, tail, {in_buffer(recv_desc(1), whole), in_buffer(recv_desc(2), tail_in)});
  REQUIRE(p.t[1]->post_recv(0, in_pieces(recv_desc(1), rp, n - 10)) == rt::Status::ok);
  size_t failed = 0;
  const rt::ReqId one = 0;
  CHECK(p.t[1]->wait(&one, 1, &failed) == rt::Status::size_mismatch);
  CHECK_THAT(p.t[1]->error_detail(), Catch::Contains(fmt::format("sent {} bytes, the plan expects {}", n, n - 10)));
  CHECK(short_dst.gaps_untouched());
  p.t[1]->abandon();
}

TEST_CASE("tcp pieces: a corrupted payload fails its CRC or MAC when received into pieces", "[tcp][pieces]") {
  for (const bool keyed : {false, true}) {
    INFO((keyed ? "keyed" : "keyless"));
    rt::TcpOptions o = quick_options();
    if (keyed) o.key = rt::wire::random_bytes32();
    rt::TcpOptions bad = o;
    bad.corrupt_step = 3;
    Pair p = connect_pair(bad, o);
    const size_t n = 3000;
    const std::vector<unsigned char> msg = message(n, 12);
    Scattered src(cuts(n, 20, 13), 14), dst(cuts(n, 33, 15), 16);
    src.fill(msg);
    const auto sp = src.send_pieces();
    const auto rp = dst.recv_pieces();
    const Run run = exchange(p, {in_pieces(send_desc(3), sp, n)}, {in_pieces(recv_desc(3), rp, n)});
    CHECK(run.sender.status == rt::Status::ok);
    CHECK(run.receiver.status == rt::Status::failed);
    CHECK_THAT(run.receiver.detail,
               Catch::Contains("the frame from rank 0 (127.0.0.1:") &&
                   Catch::Contains(keyed ? "step 3, port 0) failed its payload MAC check (corrupted or forged)"
                                         : "step 3, port 0) failed its payload CRC32C check (corrupted)"));
  }
}

TEST_CASE("tcp pieces: large frames through a small send buffer resume mid-piece after partial writes",
          "[tcp][pieces]") {
  const size_t n = size_t{3} << 20;
  const std::vector<unsigned char> msg = message(n, 17);
  for (const bool keyed : {false, true}) {
    INFO((keyed ? "keyed" : "keyless"));
    rt::TcpOptions o = quick_options();
    o.send_buffer_bytes = 4096;
    if (keyed) o.key = rt::wire::random_bytes32();
    Pair p = connect_pair(o, o);
    // Odd sizes, so the socket stops inside pieces and inside the header.
    Scattered src(cuts(n, rt::kTcpMaxPieces, 18), 19), dst(cuts(n, 777, 20), 21);
    Scattered src2(cuts(n / 3, 5, 22), 23), dst2(cuts(n / 3, 640, 24), 25);
    src.fill(msg);
    const std::vector<unsigned char> msg2(msg.begin(), msg.begin() + static_cast<long>(n / 3));
    src2.fill(msg2);
    const auto sp = src.send_pieces(), sp2 = src2.send_pieces();
    const auto rp = dst.recv_pieces(), rp2 = dst2.recv_pieces();
    const Run run =
        exchange(p, {in_pieces(send_desc(1), sp, n), in_pieces(send_desc(2), sp2, n / 3)},
                 {in_pieces(recv_desc(1), rp, n), in_pieces(recv_desc(2), rp2, n / 3)});
    INFO("sender: " << run.sender.detail << "; receiver: " << run.receiver.detail);
    REQUIRE(run.sender.status == rt::Status::ok);
    REQUIRE(run.receiver.status == rt::Status::ok);
    CHECK(dst.gather() == msg);
    CHECK(dst2.gather() == msg2);
    CHECK(dst.gaps_untouched());
    CHECK(dst2.gaps_untouched());
    // Partial writes, dozens of them (about one per 64 KiB on loopback).
    CHECK(p.t[0]->short_writes() > 10);
  }
}

TEST_CASE("tcp pieces: a receive in pieces that nothing arrives for times out naming the peer", "[tcp][pieces]") {
  rt::TcpOptions o = quick_options();
  o.timeout = std::chrono::milliseconds(300);
  Pair p = connect_pair(o, o);
  Scattered dst(cuts(100, 4, 26), 27);
  const auto rp = dst.recv_pieces();
  REQUIRE(p.t[1]->begin(1) == rt::Status::ok);
  REQUIRE(p.t[1]->post_recv(0, in_pieces(recv_desc(5), rp, 100)) == rt::Status::ok);
  size_t failed = 9;
  const rt::ReqId id = 0;
  const auto t0 = Clock::now();
  CHECK(p.t[1]->wait(&id, 1, &failed) == rt::Status::timeout);
  CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 2.0);
  CHECK(failed == 0);
  CHECK_THAT(p.t[1]->error_detail(),
             Catch::Contains("rank 0 (127.0.0.1:") &&
                 Catch::Contains("sent nothing for its message of step 5 on port 0"));
  CHECK(dst.gaps_untouched());
  p.t[1]->abandon();
}

TEST_CASE("tcp pieces: piece lists the transport does not take are refused, naming the count", "[tcp][pieces]") {
  rt::TcpOptions o = quick_options();
  o.max_pieces = 4;
  Pair p = connect_pair(o, o);
  CHECK(p.t[0]->max_pieces() == 4);
  Scattered five(std::vector<size_t>{1, 2, 3, 4, 5}, 28), four(std::vector<size_t>{1, 2, 3, 4}, 29);
  const auto sp5 = five.send_pieces(), sp4 = four.send_pieces();
  REQUIRE(p.t[0]->begin(2) == rt::Status::ok);
  CHECK(p.t[0]->post_send(0, in_pieces(send_desc(1), sp5, 15)) == rt::Status::failed);
  CHECK_THAT(p.t[0]->error_detail(), Catch::Contains("a message in 5 pieces: this TCP transport takes 1..4"));
  CHECK(p.t[0]->post_send(0, in_pieces(send_desc(1), sp4, 11)) == rt::Status::failed);
  CHECK_THAT(p.t[0]->error_detail(), Catch::Contains("a message of 11 bytes whose 4 pieces do not sum to it"));
  const auto rp4 = four.recv_pieces();
  REQUIRE(p.t[1]->begin(1) == rt::Status::ok);
  CHECK(p.t[1]->post_recv(0, in_pieces(recv_desc(1), rp4, 9)) == rt::Status::failed);
  CHECK_THAT(p.t[1]->error_detail(), Catch::Contains("a message of 9 bytes whose 4 pieces do not sum to it"));
  rt::RecvDesc no_list = in_pieces(recv_desc(1), rp4, 10);
  no_list.pieces = nullptr;
  CHECK(p.t[1]->post_recv(0, no_list) == rt::Status::failed);
  CHECK_THAT(p.t[1]->error_detail(), Catch::Contains("a message in 4 pieces with no piece list"));
  // A refused post takes no request id: the same id then works.
  const std::vector<unsigned char> msg = message(10, 30);
  four.fill(msg);
  Scattered dst(std::vector<size_t>{10}, 31);
  const auto rp = dst.recv_pieces();
  REQUIRE(p.t[1]->post_recv(0, in_pieces(recv_desc(1), rp, 10)) == rt::Status::ok);
  REQUIRE(p.t[0]->post_send(0, in_pieces(send_desc(1), sp4, 10)) == rt::Status::ok);
  size_t failed = 0;
  const rt::ReqId id = 0;
  CHECK(p.t[1]->wait(&id, 1, &failed) == rt::Status::ok);
  CHECK(p.t[0]->wait(&id, 1, &failed) == rt::Status::ok);
  CHECK(dst.gather() == msg);

  for (const uint32_t bad : {0u, rt::kTcpMaxPieces + 1}) {
    rt::TcpOptions b = quick_options();
    b.max_pieces = bad;
    CHECK_THROWS_WITH(rt::TcpTransport({"127.0.0.1:1", "127.0.0.1:2"}, 0, Digest{}, b),
                      Catch::Contains(fmt::format("TCP max_pieces {} is out of range (valid: 1..{}", bad,
                                                  rt::kTcpMaxPieces)));
  }
  rt::TcpOptions b = quick_options();
  b.send_buffer_bytes = -1;
  CHECK_THROWS_WITH(rt::TcpTransport({"127.0.0.1:1", "127.0.0.1:2"}, 0, Digest{}, b),
                    Catch::Contains("TCP send buffer size -1 is negative"));
}

// The bytes on the wire, seen by a fake rank 0 that speaks the format by
// hand: a message sent in pieces is the contiguous message's frame (header
// CRC, payload CRC32C of the whole, payload in order), and a hand-made frame
// dribbled a few bytes at a time lands in a receive's pieces; one with a
// flipped payload byte fails its CRC.
TEST_CASE("tcp pieces: the frame of a message in pieces is the contiguous message's, byte for byte",
          "[tcp][pieces]") {
  const size_t n = 2000;
  const std::vector<unsigned char> msg = message(n, 32);
  uint16_t port0 = 0, port1 = 0;
  const int fd0 = rt::tcp_listen("127.0.0.1:0", &port0), fd1 = rt::tcp_listen("127.0.0.1:0", &port1);
  const std::vector<std::string> peers = {"127.0.0.1:" + std::to_string(port0), "127.0.0.1:" + std::to_string(port1)};
  // Rank 1, the real transport, in a thread: sends msg in pieces, then
  // receives two frames into pieces (the second corrupted).
  Scattered src(cuts(n, 61, 33), 34), good(cuts(n, 45, 35), 36), bad(cuts(n, 3, 37), 38);
  src.fill(msg);
  const auto sp = src.send_pieces();
  const auto gp = good.recv_pieces(), bp = bad.recv_pieces();
  std::string error;
  Outcome sent, got_good, got_bad;
  std::thread rank1([&] {
    try {
      rt::TcpTransport t(peers, 1, Digest{}, quick_options(), fd1);
      size_t failed = 0;
      const rt::ReqId ids[3] = {0, 1, 2};
      if (t.begin(3) != rt::Status::ok) throw std::runtime_error("begin failed: " + t.error_detail());
      rt::SendDesc sd = in_pieces(send_desc(4), sp, n);
      sd.to = 0;
      sd.port = 2;
      sent.status = t.post_send(0, sd);
      if (sent.status == rt::Status::ok) sent.status = t.wait(&ids[0], 1, &failed);
      rt::RecvDesc g = in_pieces(recv_desc(5), gp, n), b = in_pieces(recv_desc(6), bp, n);
      got_good.status = t.post_recv(1, g);
      if (got_good.status == rt::Status::ok) got_good.status = t.wait(&ids[1], 1, &failed);
      got_bad.status = t.post_recv(2, b);
      if (got_bad.status == rt::Status::ok) got_bad.status = t.wait(&ids[2], 1, &failed);
      got_bad.detail = t.error_detail();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  const int s = test::fake_handshake(fd0, Digest{}, 0, 2);
  // The frame rank 1 sent in pieces.
  rt::wire::FrameHeader h{};
  REQUIRE(::recv(s, &h, sizeof h, MSG_WAITALL) == sizeof h);
  CHECK(rt::wire::check_header_integrity(h, "rank 1") == "");
  CHECK((h.port == 2 && h.step == 4 && h.length == n));
  CHECK(h.payload_crc == rt::crc32c(msg.data(), n));
  std::vector<unsigned char> payload(n);
  REQUIRE(::recv(s, payload.data(), n, MSG_WAITALL) == static_cast<ssize_t>(n));
  CHECK(payload == msg);
  // A frame as any sender writes it, a few bytes per send(), then the same
  // with one payload byte flipped after its CRC.
  auto frame = [&](uint32_t step, bool flip) {
    rt::wire::FrameHeader f{0, 0, step, 0, n, rt::crc32c(msg.data(), n), 0};
    rt::wire::seal_header(f);
    std::vector<unsigned char> bytes(sizeof f);
    std::memcpy(bytes.data(), &f, sizeof f);
    bytes.insert(bytes.end(), msg.begin(), msg.end());
    if (flip) bytes[sizeof f + n / 2] ^= 0x10;
    return bytes;
  };
  const std::vector<unsigned char> f5 = frame(5, false), f6 = frame(6, true);
  for (size_t at = 0; at < f5.size(); at += 97) {
    const size_t k = std::min<size_t>(97, f5.size() - at);
    REQUIRE(::send(s, f5.data() + at, k, MSG_NOSIGNAL) == static_cast<ssize_t>(k));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  REQUIRE(::send(s, f6.data(), f6.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(f6.size()));
  rank1.join();
  ::close(s);
  ::close(fd0);
  REQUIRE(error == "");
  CHECK(sent.status == rt::Status::ok);
  CHECK(got_good.status == rt::Status::ok);
  CHECK(good.gather() == msg);
  CHECK(good.gaps_untouched());
  CHECK(got_bad.status == rt::Status::failed);
  CHECK_THAT(got_bad.detail, Catch::Contains("step 6, port 0) failed its payload CRC32C check (corrupted)"));
  CHECK(bad.gaps_untouched());
}
