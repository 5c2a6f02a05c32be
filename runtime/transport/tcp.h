// The TCP transport: one process (or thread) per rank, one TCP connection per
// pair of ranks, for machines without MPI. The wire format's pure functions
// are in tcp_wire.h, the handshakes in tcp_connect.cpp, peer lists and key
// files in tcp_files.cpp, the frames in tcp.cpp; docs/runtime.md ("TCP")
// is the user's account.
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
// Every handshake runs at once in one poll loop, each with its own deadline
// (handshake_timeout, or the connect deadline if sooner). On a new connection
// the connecting side C sends a hello, the accepting side A answers with its
// own:
//   "CPLNTCP2" | rank u32 | ranks u32 | plan digest (16 bytes) | flags u32 |
//   nonce (32 random bytes) | CRC32C u32 of the 68 bytes before it
// (integers little-endian; flags bit 0: the sender holds a job key). With a
// job key C then sends its proof, A checks it and sends its own: HMAC-SHA-256
// with the key over a label, the role (C or A), both nonces, both ranks and
// both digests (wire::proof). An accepted connection that does not complete
// a valid handshake in time (garbage, silence, a half hello, another ranks
// count, a rank that cannot connect to this one or is already connected, no
// key or a wrong key) is a stray: it is closed, one line naming its address
// and the reason goes to the log (stderr by default), and accepting goes on.
// A connection that passes these checks (with a key: that proved the key) but
// holds another plan digest is a real peer with another plan: the
// constructor throws a UserError naming it and both digests. When the connect
// deadline passes with ranks missing, the UserError names them (and why the
// last attempt of each failed). On the connecting side an address that does
// not complete the handshake is retried until the deadline.
//
// ─── Frames ──────────────────────────────────────────────────────────────────
//
// Every message is one frame:
//   magic u32 "CPFR" | port u32 | step u32 (sent_at) | reserved u32 (0) |
//   length u64 | payload CRC32C u32 (0 with a key) | header CRC32C u32 (of
//   the 28 bytes before it) | payload (length bytes) | with a key: MAC (16
//   bytes)
// The receiver checks every header before it allocates or reads anything for
// it (wire::check_header): the magic, the header CRC, a (step, port) the
// plan has from that peer and exactly the plan's length for it (the engine
// hands the run's receives over in expect()); anything else is a protocol
// error naming the peer, the field and the allowed value, and ends the run.
// A frame is matched to the posted receive from that peer with the same
// (port, step) (frames that arrive first are buffered until their receive is
// posted; TCP keeps each connection's frames in order, so repeated runs
// cannot mix up: a frame whose message already arrived in this run belongs
// to the next run and waits, unread, until expect() of that run), received
// straight into the receive's buffer or pieces when one is posted, and its
// payload checked when complete: with a key, the MAC, HMAC-SHA-256 (first 16
// bytes) with the direction's session key over the frame's sequence number,
// header and payload, so a frame cannot be forged, replayed or reordered;
// without a key the payload CRC32C (integrity against accidents only). A wrong payload
// CRC or MAC is Status::failed naming peer, step and port; a length other
// than the posted receive's is Status::size_mismatch.
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
// leaves them untouched.
//
// ─── Messages in pieces ─────────────────────────────────────────────────────
//
// A message the caller's buffers split (transport.h, SendDesc::pieces) goes
// out with no copy: sendmsg over the iovec [header, piece 0, piece 1, …,
// MAC], the payload CRC32C or MAC computed over the pieces in order, so the
// bytes on the wire are those of the contiguous message and either side may
// cut it differently or not at all. A partial write resumes at the piece and
// offset where the socket stopped. A frame is read straight into the
// receive's pieces (recvmsg over the pieces left and the MAC), its CRC or MAC
// updated piece by piece; a frame buffered before its receive was posted is
// copied into the pieces when it is. Empty pieces are skipped. The pieces of
// a descriptor must sum to its bytes (else the post fails), so a frame of
// another length is Status::size_mismatch as for one buffer.
// max_pieces() is kTcpMaxPieces (TcpOptions::max_pieces may lower it): the
// header, the pieces and the MAC then fit one iovec of IOV_MAX (1024 on
// Linux) entries, so a frame costs one sendmsg, and its payload one
// recvmsg, whenever the socket has room, as a contiguous one does. A message
// in more pieces (over a thousand separate runs of rows) would need several
// calls per frame; the engine gathers it into staging instead.
//
// Running out of file descriptors (socket, accept, connect: EMFILE, ENFILE)
// is a ResourceError(Descriptors) naming the limit; the constructor checks
// RLIMIT_NOFILE against the ranks count first.
//
// Message lengths are the engine's; byte order is the host's on both sides
// (transport.h), which the handshake does not check: all supported hosts are
// little-endian.
#pragma once

#include <poll.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/spec.h"
#include "runtime/transport.h"
#include "runtime/transport/tcp_wire.h"

namespace collplan::rt {

// iovec entries one sendmsg or recvmsg takes: IOV_MAX (Linux's UIO_MAXIOV).
constexpr uint32_t kTcpIovMax = 1024;
// The most pieces a TCP message may have: the iovec less the frame header's
// and the MAC's entries ("Messages in pieces").
constexpr uint32_t kTcpMaxPieces = kTcpIovMax - 2;

struct TcpOptions {
  // How long setup may take: connecting (with retries) and the handshakes.
  std::chrono::milliseconds connect_timeout{10'000};
  // How long one connection may take to complete its handshake once it is
  // open (capped by the connect deadline); a stray gets no longer.
  std::chrono::milliseconds handshake_timeout{3'000};
  // How long one wait() may block before it fails with Status::timeout.
  std::chrono::milliseconds timeout{10'000};
  // The job key (read_key_file, job_key): peers must prove it and frames
  // carry a MAC. Without one, CRC32C only: for trusted networks.
  std::optional<wire::Key> key;
  // Where a stray connection is reported (one line, no newline); empty:
  // "collplan: rank R: ..." on stderr.
  std::function<void(const std::string&)> log;
  // Fault injection for tests: flip one bit of the payload CRC (or the MAC)
  // of the first frame this rank sends in step `corrupt_step`, as if a
  // payload bit had flipped on the way (0: never).
  uint32_t corrupt_step = 0;
  // The most pieces one message may have (max_pieces(), "Messages in
  // pieces"): 1..kTcpMaxPieces; 1 makes the engine gather split messages
  // itself. The bytes on the wire do not depend on it.
  uint32_t max_pieces = kTcpMaxPieces;
  // SO_SNDBUF of every connection in bytes (the kernel doubles it, with a
  // floor); 0 keeps the system's default. A small one makes the kernel take
  // a large frame in many partial writes (tests use it).
  int send_buffer_bytes = 0;
};

// The largest peer file parse_peers reads.
constexpr size_t kMaxPeerFileBytes = size_t{1} << 20;

// Parses a peer list: either a regular file with one "host:port" per line
// ('#' starts a comment, blank lines are skipped; at most 1 MiB) or, when no
// file of that name exists, a comma-separated list; at most `max_peers`
// entries. UserError naming the bad entry or the limit.
std::vector<std::string> parse_peers(const std::string& file_or_list, size_t max_peers = 1u << 20);

// The job key in `path` (a regular file of 64 hex digits, as `collplan
// keygen` writes). UserError naming the file.
wire::Key read_key_file(const std::string& path);
// Writes a fresh random key to `path` as 64 hex digits and a newline, mode
// 0600, created exclusively (UserError if it exists, unless `force`).
void write_key_file(const std::string& path, bool force);
// The key of `key_file` if given, else of the file $COLLPLAN_TCP_KEY_FILE
// names if set, else none.
std::optional<wire::Key> job_key(const std::string& key_file);

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
  Status expect(const RecvDesc* recvs, size_t n) override;
  Status post_send(ReqId id, const SendDesc& d) override;
  Status post_recv(ReqId id, const RecvDesc& d) override;
  Status wait(const ReqId* ids, size_t n, size_t* failed_index) override;
  Status end() override;
  void abandon() override;
  std::string error_detail() const override { return detail_; }
  uint32_t max_pieces() const override { return opt_.max_pieces; }

  // Frames received before their receive was posted, held now (0 after a
  // complete run of a verified plan).
  size_t buffered_frames() const;
  // Writes the socket took only part of, since construction (tests: a large
  // frame in pieces through a small send buffer resumes mid-iovec).
  uint64_t short_writes() const { return short_writes_; }

  using FrameHeader = wire::FrameHeader;

 private:
  // A message's memory in order: the descriptor's piece list, or its one
  // buffer (`one`). Points into the engine's list, valid until completion.
  template <class Piece>
  struct Pieces {
    Piece one{};
    const Piece* list = nullptr;
    uint32_t n = 0;
    uint32_t count() const { return list ? n : 1; }
    const Piece& operator[](uint32_t i) const { return list ? list[i] : one; }
  };
  // A position in Pieces: byte `off` of piece `i`.
  struct Cursor {
    uint32_t i = 0;
    size_t off = 0;
  };
  struct Request {
    bool active = false, is_send = false, done = false;
    Status status = Status::ok;
    uint32_t peer = 0;
    ir::Port port = 0;
    ir::StepNo step = 0;
    Pieces<RecvPiece> dst;  // receives: where the payload goes
    size_t bytes = 0;
    std::string why;  // failed requests: what went wrong (names the peer)
  };
  struct OutFrame {
    ReqId id;
    FrameHeader hdr;
    Pieces<SendPiece> src;
    size_t bytes;
    size_t sent;  // of sizeof(hdr) + bytes + mac bytes
    Cursor at;    // the payload's next byte to send
    unsigned char mac[wire::kFrameMacBytes];
  };
  struct Buffered {
    ir::Port port;
    ir::StepNo step;
    bool ok;  // its CRC or MAC matched
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
    bool held = false;    // hdr is the next run's: not read further until expect()
    int64_t target = -1;  // request id receiving the payload, or −1: buffered
    Pieces<RecvPiece> dst;  // the target's pieces, or `incoming`
    Cursor at;              // the payload's next byte in dst
    size_t got = 0;
    uint32_t crc = 0;  // CRC32C of the payload's first `got` bytes
    unsigned char mac[wire::kFrameMacBytes];
    size_t mac_got = 0;
    std::vector<unsigned char> incoming;  // payload of a frame with no receive posted
    std::vector<Buffered> buffered;
    std::vector<std::vector<unsigned char>> spare;  // buffers to reuse
    // Keyed jobs: session keys and frame sequence numbers per direction.
    wire::SessionKeys keys{};
    uint64_t send_seq = 0, recv_seq = 0;
    std::unique_ptr<wire::FrameMac> rmac;  // of the frame being read
  };
  struct Setup;  // tcp_connect.cpp

  void setup(int listen_fd);
  // Checks a descriptor's piece list (count, sizes) and returns its memory;
  // false and detail_ set if it is not one this transport takes.
  template <class Piece, class Desc>
  bool pieces_of(const Desc& d, Pieces<Piece>* out);
  Status progress_write(uint32_t p);
  Status progress_read(uint32_t p);
  // A complete header of peer p: checked against the plan, then matched.
  Status accept_header(uint32_t p);
  void frame_done(uint32_t p);
  // A frame accepted outside progress_read (expect, post_recv) with nothing
  // more to read: done now, not at the peer's next bytes.
  void complete_if_empty(uint32_t p);
  // Completes receive r with buffered frame i of peer p (and recycles it).
  void take_buffered(uint32_t p, size_t i, Request& r);
  Status peer_lost(uint32_t p, const std::string& why);
  Status protocol_error(std::string why);
  std::string who(uint32_t p) const;
  void log(const std::string& line) const;

  std::vector<std::string> peers_;
  ir::Rank rank_;
  Digest digest_;
  TcpOptions opt_;
  std::vector<Peer> conn_;
  std::vector<Request> reqs_;
  std::vector<pollfd> pfds_;  // one per peer (fd −1 for this rank)
  wire::FrameLimits limits_;
  std::vector<bool> arrived_;  // per limits_ entry: its frame came in this run
  std::vector<uint32_t> remaining_;  // per peer: its frames of this run still to come
  bool expected_ = false;      // expect() was called (limits_ is the run's)
  std::unique_ptr<wire::FrameMac> send_mac_;
  std::vector<iovec> iov_;  // kTcpIovMax entries: one sendmsg or recvmsg
  uint64_t short_writes_ = 0;
  bool broken_ = false;
  bool corrupted_ = false;
  std::string detail_;
};

}  // namespace collplan::rt
