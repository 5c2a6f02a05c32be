// The TCP transport: one process (or thread) per rank, one TCP connection per
// pair of ranks, for machines without MPI.
//
// ─── Peers and connections ──────────────────────────────────────────────────
//
// A peer list gives every rank's address, "host:port" (IPv4/IPv6 literal or a
// name getaddrinfo resolves), entry r for rank r; the list must be the same
// on every rank. Rank r listens on its own entry's address, connects to every
// rank below it (retrying until the connect timeout: peers may start in any
// order) and accepts a connection from every rank above it. Setup happens in
// the constructor, outside any run.
//
// ─── Handshake ───────────────────────────────────────────────────────────────
//
// On every new connection both sides send, and then check, a hello:
//   "CPLNTCP1" | rank u32 | ranks u32 | plan digest (16 bytes) | CRC32C u32
// (integers little-endian). The connecting side sends first. A hello with a
// wrong magic or CRC, a rank other than the one expected at that address, a
// different rank count or a different plan digest is refused on both sides:
// the constructor throws a UserError naming the peer, its address and both
// digests. So two ranks never exchange data unless they replay the same plan.
//
// ─── Frames ──────────────────────────────────────────────────────────────────
//
// Every message is one frame:
//   magic u32 "CPFR" | port u32 | step u32 (sent_at) | reserved u32 |
//   length u64 | payload CRC32C u32 | header CRC32C u32 (of the 28 bytes
//   before it) | payload (length bytes)
// The receiver checks the header CRC before it trusts the length, matches the
// frame to the posted receive from that peer with the same (port, step)
// (frames that arrive first are buffered until their receive is posted; TCP
// keeps each connection's frames in order, so repeated runs cannot mix up),
// receives the payload straight into the receive's buffer when one is posted,
// and checks the payload CRC when it is complete. A wrong header or payload
// CRC is Status::failed naming peer, step and port; a length other than the
// plan's is Status::size_mismatch.
//
// ─── Progress and timeouts ──────────────────────────────────────────────────
//
// Single-threaded: post_send() queues the frame and writes what the socket
// takes at once; wait() polls every connection, writing queued frames and
// reading (and buffering) whatever arrives, until the waited requests are
// done. A wait that has not completed within `timeout` fails with
// Status::timeout, and error_detail() names the peer, its address and the
// step and port of the message it did not deliver or take; a connection the
// peer closed (its process died or gave up) fails at once the same way. So a
// dead or silent peer is a clear error within the timeout, never a hang.
// After a failure abandon() closes every connection, so the peers learn of it
// promptly too. A frame is received straight into the engine's buffer, which
// with zero copy may be the caller's output buffer (engine.h), so a failed
// run may leave outputs partly written; with EngineOptions::zero_copy = false
// the engine writes its outputs only after the last step, and a failed run
// leaves them untouched. TCP keeps the default max_pieces() = 1: messages
// the caller's buffers split are gathered by the engine.
//
// Message lengths are the engine's; byte order is the host's on both sides
// (transport.h), which the handshake does not check: all supported hosts are
// little-endian.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/spec.h"
#include "runtime/transport.h"

namespace collplan::rt {

// CRC-32C (Castagnoli, as in iSCSI): crc32c("123456789") = 0xE3069283.
// `crc` continues an earlier value: crc32c(b, crc32c(a)) = crc32c(a ‖ b).
uint32_t crc32c(const void* data, size_t len, uint32_t crc = 0);

struct TcpOptions {
  // How long setup may take: connecting (with retries) and the handshakes.
  std::chrono::milliseconds connect_timeout{10'000};
  // How long one wait() may block before it fails with Status::timeout.
  std::chrono::milliseconds timeout{10'000};
  // Fault injection for tests: flip one payload byte of the first frame this
  // rank sends in step `corrupt_step` after computing its CRC (0: never).
  uint32_t corrupt_step = 0;
};

// Parses a peer list: either a file with one "host:port" per line ('#'
// starts a comment, blank lines are skipped) or, when no file of that name
// exists, a comma-separated list. UserError naming the bad entry.
std::vector<std::string> parse_peers(const std::string& file_or_list);

// A listening socket bound to `host_port` (port 0: the system picks one,
// returned in *port). For callers that must know every port before the
// transports are built (tests); the transport otherwise binds itself.
int tcp_listen(const std::string& host_port, uint16_t* port = nullptr);

class TcpTransport final : public Transport {
 public:
  // Connects rank `rank` to every peer and completes the handshakes (throws
  // UserError on any failure, naming the peer). `listen_fd`, if >= 0, is a
  // socket from tcp_listen() for peers[rank]; the transport takes it over.
  TcpTransport(std::vector<std::string> peers, ir::Rank rank, const Digest& plan_digest, TcpOptions opt = {},
               int listen_fd = -1);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  ir::Rank rank() const override { return rank_; }
  uint32_t size() const override { return static_cast<uint32_t>(peers_.size()); }
  Status begin(uint32_t max_requests) override;
  Status post_send(ReqId id, const SendDesc& d) override;
  Status post_recv(ReqId id, const RecvDesc& d) override;
  Status wait(const ReqId* ids, size_t n, size_t* failed_index) override;
  Status end() override;
  void abandon() override;
  std::string error_detail() const override { return detail_; }

  // Frames received before their receive was posted, held now (0 after a
  // complete run of a verified plan).
  size_t buffered_frames() const;

  struct FrameHeader {
    uint32_t magic, port, step, reserved;
    uint64_t length;
    uint32_t payload_crc, header_crc;
  };
  static_assert(sizeof(FrameHeader) == 32, "frame header is 32 bytes on the wire");

 private:
  struct Request {
    bool active = false, is_send = false, done = false;
    Status status = Status::ok;
    uint32_t peer = 0;
    ir::Port port = 0;
    ir::StepNo step = 0;
    unsigned char* data = nullptr;
    size_t bytes = 0;
    std::string why;  // failed requests: what went wrong (names the peer)
  };
  struct OutFrame {
    ReqId id;
    FrameHeader hdr;
    const unsigned char* data;
    size_t bytes;
    size_t sent;  // of sizeof(hdr) + bytes
  };
  struct Buffered {
    ir::Port port;
    ir::StepNo step;
    bool crc_ok;
    std::vector<unsigned char> data;
  };
  struct Peer {
    int fd = -1;
    bool closed = false;
    std::vector<OutFrame> out;  // queue, head at out_head
    size_t out_head = 0;
    // Incoming frame being read.
    FrameHeader hdr{};
    size_t hdr_got = 0;
    bool in_payload = false;
    int64_t target = -1;  // request id receiving the payload, or −1: buffered
    unsigned char* dst = nullptr;
    size_t got = 0;
    uint32_t crc = 0;
    std::vector<unsigned char> incoming;  // payload of a frame with no receive posted
    std::vector<Buffered> buffered;
    std::vector<std::vector<unsigned char>> spare;  // buffers to reuse
  };

  void setup(int listen_fd);
  void handshake(uint32_t peer, int fd, bool connecting, std::chrono::steady_clock::time_point deadline);
  Status progress_write(uint32_t p);
  Status progress_read(uint32_t p);
  void frame_done(uint32_t p);
  // Completes receive r with buffered frame i of peer p (and recycles it).
  void take_buffered(uint32_t p, size_t i, Request& r);
  Status peer_lost(uint32_t p, const std::string& why);
  std::string who(uint32_t p) const;

  std::vector<std::string> peers_;
  ir::Rank rank_;
  Digest digest_;
  TcpOptions opt_;
  std::vector<Peer> conn_;
  std::vector<Request> reqs_;
  std::vector<pollfd> pfds_;  // one per peer (fd −1 for this rank)
  bool broken_ = false;
  bool corrupted_ = false;
  std::string detail_;
};

}  // namespace collplan::rt
