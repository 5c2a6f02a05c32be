#include "runtime/transport/tcp_wire.h"

#include <isa-l/crc.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::rt {

uint32_t crc32c(const void* data, size_t len, uint32_t crc) {
  // ISA-L's crc32_iscsi works on the raw register (no final inversion) and
  // takes an int length.
  uint32_t state = ~crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (len > 0) {
    const int n = static_cast<int>(std::min<size_t>(len, size_t{1} << 30));
    state = crc32_iscsi(p, n, state);
    p += n;
    len -= static_cast<size_t>(n);
  }
  return ~state;
}

namespace wire {

namespace {

constexpr char kHelloMagic[8] = {'C', 'P', 'L', 'N', 'T', 'C', 'P', '2'};
constexpr char kProofLabel[] = "collplan tcp v2 key proof";
constexpr char kSessionLabel[] = "collplan tcp v2 session";

void put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// HMAC-SHA-256 of the concatenation of `parts`.
struct Part {
  const void* data;
  size_t n;
};
Mac hmac(const unsigned char* key, size_t key_len, std::initializer_list<Part> parts) {
  std::vector<unsigned char> msg;
  for (const Part& p : parts) msg.insert(msg.end(), static_cast<const unsigned char*>(p.data),
                                         static_cast<const unsigned char*>(p.data) + p.n);
  Mac out{};
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key, static_cast<int>(key_len), msg.data(), msg.size(), out.data(), &len) ||
      len != out.size())
    resource_error(ResourceError::Kind::Memory, "HMAC-SHA-256 failed (libcrypto)");
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void encode_hello(const Hello& h, unsigned char out[kHelloBytes]) {
  std::memcpy(out, kHelloMagic, 8);
  put32(out + 8, h.rank);
  put32(out + 12, h.ranks);
  std::memcpy(out + 16, h.digest.bytes.data(), 16);
  put32(out + 32, h.flags);
  std::memcpy(out + 36, h.nonce.data(), 32);
  put32(out + 68, crc32c(out, 68));
}

std::string check_hello_start(const unsigned char* in, size_t n) {
  if (std::memcmp(in, kHelloMagic, std::min<size_t>(n, 7)) != 0) return "it is not a collplan TCP hello (wrong magic)";
  if (n >= 8 && in[7] != kHelloMagic[7])
    return fmt::format("it speaks collplan TCP protocol version '{}', this rank version '{}'", static_cast<char>(in[7]),
                       kHelloMagic[7]);
  return {};
}

std::string parse_hello(const unsigned char* in, size_t n, Hello* out) {
  if (n != kHelloBytes) return fmt::format("a hello is {} bytes, not {}", kHelloBytes, n);
  if (std::string why = check_hello_start(in, n); !why.empty()) return why;
  if (get32(in + 68) != crc32c(in, 68)) return "its hello failed its CRC32C check";
  Hello h;
  h.rank = get32(in + 8);
  h.ranks = get32(in + 12);
  std::memcpy(h.digest.bytes.data(), in + 16, 16);
  h.flags = get32(in + 32);
  if (h.flags & ~kHelloKeyed) return fmt::format("its hello has unknown flags {:#x}", h.flags);
  std::memcpy(h.nonce.data(), in + 36, 32);
  *out = h;
  return {};
}

Mac proof(const Key& key, char role, const Hello& c, const Hello& a) {
  unsigned char ranks[8];
  put32(ranks, c.rank);
  put32(ranks + 4, a.rank);
  return hmac(key.data(), key.size(),
              {{kProofLabel, sizeof kProofLabel}, {&role, 1}, {c.nonce.data(), 32}, {a.nonce.data(), 32}, {ranks, 8},
               {c.digest.bytes.data(), 16}, {a.digest.bytes.data(), 16}});
}

bool equal(const unsigned char* a, const unsigned char* b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

Nonce random_bytes32() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1)
    resource_error(ResourceError::Kind::Memory, "the system's random number generator failed (RAND_bytes)");
  return n;
}

SessionKeys session_keys(const Key& key, const Hello& mine, const Hello& theirs, bool connecting) {
  const Hello& c = connecting ? mine : theirs;
  const Hello& a = connecting ? theirs : mine;
  auto derive = [&](char dir) {
    return hmac(key.data(), key.size(), {{kSessionLabel, sizeof kSessionLabel}, {&dir, 1}, {c.nonce.data(), 32},
                                         {a.nonce.data(), 32}});
  };
  const Key c_to_a = derive('C'), a_to_c = derive('A');
  return connecting ? SessionKeys{c_to_a, a_to_c} : SessionKeys{a_to_c, c_to_a};
}

std::string key_hex(const Key& k) {
  std::string s;
  for (unsigned char b : k) s += fmt::format("{:02x}", b);
  return s;
}

Key parse_key(const std::string& text, const std::string& where) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  if (e - b != 64)
    user_error("{} is not a collplan job key: it must hold 64 hex digits (`collplan keygen` writes one), it holds {} "
               "characters",
               where, e - b);
  Key k{};
  for (size_t i = 0; i < 32; ++i) {
    const int hi = hex_value(text[b + 2 * i]), lo = hex_value(text[b + 2 * i + 1]);
    if (hi < 0 || lo < 0) user_error("{} is not a collplan job key: character {} is not a hex digit", where, b + 2 * i + 1);
    k[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return k;
}

// ─── frames ──────────────────────────────────────────────────────────────────

void seal_header(FrameHeader& h) {
  h.magic = kFrameMagic;
  h.header_crc = crc32c(&h, offsetof(FrameHeader, header_crc));
}

FrameLimits::FrameLimits(std::vector<Expected> e) : e_(std::move(e)) {
  std::sort(e_.begin(), e_.end(), [](const Expected& a, const Expected& b) {
    return std::tie(a.from, a.step, a.port) < std::tie(b.from, b.step, b.port);
  });
}

int64_t FrameLimits::find(ir::Rank from, ir::StepNo step, ir::Port port) const {
  const auto key = std::tie(from, step, port);
  auto it = std::lower_bound(e_.begin(), e_.end(), key, [](const Expected& a, const auto& k) {
    return std::tie(a.from, a.step, a.port) < k;
  });
  if (it == e_.end() || std::tie(it->from, it->step, it->port) != key) return -1;
  return it - e_.begin();
}

std::string check_header_integrity(const FrameHeader& h, const std::string& who) {
  if (h.magic != kFrameMagic)
    return fmt::format("protocol error: a frame header from {} has magic {:#010x}, not {:#010x} (\"CPFR\")", who,
                       h.magic, kFrameMagic);
  if (h.header_crc != crc32c(&h, offsetof(FrameHeader, header_crc)))
    return fmt::format("a frame header from {} failed its CRC32C check (corrupted)", who);
  if (h.reserved != 0)
    return fmt::format("protocol error: a frame header from {} has reserved field {}, not 0", who, h.reserved);
  return {};
}

std::string check_header(const FrameHeader& h, const FrameLimits& limits, ir::Rank from, const std::string& who,
                         int64_t* index) {
  if (std::string why = check_header_integrity(h, who); !why.empty()) return why;
  const int64_t i = limits.find(from, h.step, h.port);
  if (i < 0) {
    // Name what the plan does allow from this peer.
    std::string steps;
    size_t n = 0;
    for (size_t k = 0; k < limits.size(); ++k)
      if (limits[k].from == from) {
        if (n < 8) steps += fmt::format("{}(step {}, port {})", n ? ", " : "", limits[k].step, limits[k].port);
        ++n;
      }
    if (n > 8) steps += fmt::format(", … {} in all", n);
    return fmt::format("protocol error: {} sent a frame for step {}, port {}, which the plan does not have from it "
                       "(allowed: {})",
                       who, h.step, h.port, n ? steps : std::string("no message at all"));
  }
  if (h.length != limits[static_cast<size_t>(i)].bytes)
    return fmt::format("protocol error: {} sent a frame of length {} for step {}, port {}; the plan allows {} bytes",
                       who, h.length, h.step, h.port, limits[static_cast<size_t>(i)].bytes);
  *index = i;
  return {};
}

FrameMac::FrameMac() : ctx_(nullptr) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (mac) ctx_ = EVP_MAC_CTX_new(mac);
  EVP_MAC_free(mac);
  if (!ctx_) resource_error(ResourceError::Kind::Memory, "cannot set up HMAC-SHA-256 (libcrypto)");
}

FrameMac::~FrameMac() { EVP_MAC_CTX_free(static_cast<EVP_MAC_CTX*>(ctx_)); }

void FrameMac::start(const Key& key, uint64_t seq, const FrameHeader& h) {
  auto* ctx = static_cast<EVP_MAC_CTX*>(ctx_);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  EVP_MAC_init(ctx, key.data(), key.size(), params);
  unsigned char s[8];
  for (int i = 0; i < 8; ++i) s[i] = static_cast<unsigned char>(seq >> (8 * i));
  EVP_MAC_update(ctx, s, sizeof s);
  EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(&h), sizeof h);
}

void FrameMac::update(const void* data, size_t n) {
  if (n) EVP_MAC_update(static_cast<EVP_MAC_CTX*>(ctx_), static_cast<const unsigned char*>(data), n);
}

void FrameMac::finish(unsigned char out[kFrameMacBytes]) {
  unsigned char full[32];
  size_t len = 0;
  EVP_MAC_final(static_cast<EVP_MAC_CTX*>(ctx_), full, &len, sizeof full);
  std::memcpy(out, full, kFrameMacBytes);
}

}  // namespace wire
}  // namespace collplan::rt
