// The TCP transport's wire format as pure functions over byte buffers: the
// hello, the key proof, the frame header and its check against what the plan
// allows, the job key and the frame MAC. No sockets here: tcp_connect.cpp
// (handshakes) and tcp.cpp (frames) do the I/O, and fuzz/fuzz_tcp_wire.cpp
// drives the parsers. The layout of every message is in tcp.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/plan.h"
#include "ir/spec.h"

namespace collplan::rt {

// CRC-32C (Castagnoli, as in iSCSI): crc32c("123456789") = 0xE3069283.
// `crc` continues an earlier value: crc32c(b, crc32c(a)) = crc32c(a ‖ b).
uint32_t crc32c(const void* data, size_t len, uint32_t crc = 0);

namespace wire {

using Nonce = std::array<unsigned char, 32>;
using Key = std::array<unsigned char, 32>;
using Mac = std::array<unsigned char, 32>;

// ─── Hello ───────────────────────────────────────────────────────────────────

constexpr size_t kHelloBytes = 72;
constexpr uint32_t kHelloKeyed = 1;  // flags: the sender holds a job key

struct Hello {
  uint32_t rank = 0, ranks = 0, flags = 0;
  Digest digest;
  Nonce nonce{};
};

void encode_hello(const Hello& h, unsigned char out[kHelloBytes]);
// The hello in `in`, or an empty string and *out set; otherwise why it is not
// a collplan hello (wrong magic, version or CRC).
std::string parse_hello(const unsigned char* in, size_t n, Hello* out);
// The first n bytes of a hello still to be completed: empty while they can
// be the start of one, else why not (so garbage is refused at once).
std::string check_hello_start(const unsigned char* in, size_t n);

// The proof that the sender of `role` ('C' the connecting side, 'A' the
// accepting side) holds `key`: HMAC-SHA-256 over a protocol label, the role,
// both nonces, both ranks and both digests as the hellos carried them (so a
// proof checks the key alone; the digests are compared after it).
Mac proof(const Key& key, char role, const Hello& connector, const Hello& acceptor);
// Constant-time comparison (CRYPTO_memcmp).
bool equal(const unsigned char* a, const unsigned char* b, size_t n);
// A fresh random nonce or key (RAND_bytes; ResourceError if it fails).
Nonce random_bytes32();

// Per-direction session keys derived from the job key and both nonces.
struct SessionKeys {
  Key send, recv;
};
SessionKeys session_keys(const Key& key, const Hello& mine, const Hello& theirs, bool connecting);

// ─── Job key ─────────────────────────────────────────────────────────────────

// 64 hex digits (a trailing newline and surrounding blanks allowed).
std::string key_hex(const Key& k);
// The key in `text`, or UserError naming `where`.
Key parse_key(const std::string& text, const std::string& where);

// ─── Frames ──────────────────────────────────────────────────────────────────

constexpr uint32_t kFrameMagic = 0x52465043;  // "CPFR" little-endian
constexpr size_t kFrameHeaderBytes = 32;
constexpr size_t kFrameMacBytes = 16;  // HMAC-SHA-256 truncated, after the payload (keyed jobs)

struct FrameHeader {
  uint32_t magic, port, step, reserved;
  uint64_t length;
  uint32_t payload_crc, header_crc;
};
static_assert(sizeof(FrameHeader) == kFrameHeaderBytes, "frame header is 32 bytes on the wire");

// Sets magic and header_crc; the caller fills the rest.
void seal_header(FrameHeader& h);

// One message this rank receives in a run: from `from`, sent in `step` on
// `port`, `bytes` long.
struct Expected {
  ir::Rank from = 0;
  ir::StepNo step = 0;
  ir::Port port = 0;
  uint64_t bytes = 0;
};

// Every message this rank may receive in a run, sorted for lookup.
class FrameLimits {
 public:
  FrameLimits() = default;
  explicit FrameLimits(std::vector<Expected> e);
  // The index of (from, step, port), or -1.
  int64_t find(ir::Rank from, ir::StepNo step, ir::Port port) const;
  const Expected& operator[](size_t i) const { return e_[i]; }
  size_t size() const { return e_.size(); }

 private:
  std::vector<Expected> e_;
};

// The checks of a frame header that need no plan: the magic, the header CRC
// and the reserved field. Empty if it is good; otherwise the error, naming
// `who` (the peer).
std::string check_header_integrity(const FrameHeader& h, const std::string& who);

// Checks a frame header from rank `from` against the plan before anything is
// allocated for it: check_header_integrity, then a (step, port) the plan has
// from that rank, and the plan's length for it. Empty and *index set if it is
// good; otherwise the protocol error, naming the field and the allowed value
// (`who` names the peer).
std::string check_header(const FrameHeader& h, const FrameLimits& limits, ir::Rank from, const std::string& who,
                         int64_t* index);

// The frame MAC of a keyed job: HMAC-SHA-256(session key, sequence number ‖
// header ‖ payload), its first 16 bytes. Incremental, for payloads that
// arrive in pieces.
class FrameMac {
 public:
  FrameMac();
  ~FrameMac();
  FrameMac(const FrameMac&) = delete;
  FrameMac& operator=(const FrameMac&) = delete;
  void start(const Key& key, uint64_t seq, const FrameHeader& h);
  void update(const void* data, size_t n);
  void finish(unsigned char out[kFrameMacBytes]);

 private:
  void* ctx_;
};

}  // namespace wire
}  // namespace collplan::rt
