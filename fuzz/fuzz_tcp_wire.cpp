// Harness: the TCP transport's wire parsers (runtime/transport/tcp_wire.h),
// what a peer, or anything that reaches a rank's port, can send: the hello
// (parse_hello, and check_hello_start on its first bytes), the frame header
// and its check against a small synthetic plan's receives (check_header),
// and the job key text (parse_key).
//
// Input: byte 0 picks what the rest is: 0 a hello, 1 a sequence of frame
// headers (32 bytes each) from the peer byte 1 names (0..3), 2 a key file's
// text. Checks beyond "no crash": an accepted hello encodes back to the same
// 72 bytes; an accepted frame header names a message of the plan with
// exactly its length; a refused one says why, naming the peer.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "runtime/transport/tcp_wire.h"

using namespace collplan;
using namespace collplan::rt;
using collplan::fuzz::clean;

namespace {

// Rank 0 of a 4-rank plan receives these: three messages from rank 1, one
// from rank 2 (of length 0), one from rank 3 of 2^20 bytes.
const wire::FrameLimits& limits() {
  static const wire::FrameLimits l({{1, 1, 0, 64}, {1, 2, 0, 128}, {1, 2, 1, 128}, {2, 3, 0, 0}, {3, 1, 0, 1u << 20}});
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t kind = data[0] % 3;
  const unsigned char* p = data + 2;
  const size_t n = size - 2;
  if (kind == 0) {
    // The early check on a hello's first bytes never refuses the start of
    // one that parses.
    const std::string early = wire::check_hello_start(p, std::min(n, wire::kHelloBytes));
    wire::Hello h;
    if (!wire::parse_hello(p, n, &h).empty()) return 0;
    COLLPLAN_FUZZ_REQUIRE(early.empty());
    unsigned char again[wire::kHelloBytes];
    wire::encode_hello(h, again);
    COLLPLAN_FUZZ_REQUIRE(n == wire::kHelloBytes && std::memcmp(again, p, n) == 0);
    COLLPLAN_FUZZ_REQUIRE((h.flags & ~wire::kHelloKeyed) == 0);
  } else if (kind == 1) {
    const ir::Rank from = data[1] % 4;
    const std::string who = "rank " + std::to_string(from);
    for (size_t off = 0; off + wire::kFrameHeaderBytes <= n; off += wire::kFrameHeaderBytes) {
      wire::FrameHeader h;
      std::memcpy(&h, p + off, sizeof h);
      // Half the headers resealed (magic and CRC right), so mutations reach
      // the plan checks behind the CRC, as a peer's would.
      if (h.reserved & 0x80000000u) {
        h.reserved &= 0x7FFFFFFFu;
        wire::seal_header(h);
      }
      int64_t index = -1;
      const std::string why = wire::check_header(h, limits(), from, who, &index);
      // What check_header accepts passes the plan-free checks too.
      COLLPLAN_FUZZ_REQUIRE(!why.empty() || wire::check_header_integrity(h, who).empty());
      if (why.empty()) {
        COLLPLAN_FUZZ_REQUIRE(index >= 0 && static_cast<size_t>(index) < limits().size());
        const wire::Expected& e = limits()[static_cast<size_t>(index)];
        COLLPLAN_FUZZ_REQUIRE(e.from == from && e.step == h.step && e.port == h.port && e.bytes == h.length);
      } else {
        COLLPLAN_FUZZ_REQUIRE(why.find(who) != std::string::npos);
      }
    }
  } else {
    const std::string text(reinterpret_cast<const char*>(p), n);
    std::string hex;
    if (clean([&] { hex = wire::key_hex(wire::parse_key(text, "fuzz.key")); })) {
      COLLPLAN_FUZZ_REQUIRE(hex.size() == 64);
      COLLPLAN_FUZZ_REQUIRE(clean([&] { (void)wire::parse_key(hex, "again"); }));
    }
  }
  return 0;
}
