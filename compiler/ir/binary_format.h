// The .cplan format's shared pieces for its three files: binary_write.cpp
// (encoding), binary_read.cpp (decoding bytes) and binary_file.cpp (files).
// Private to ir/; the grammar is in binary.h and docs/plan-format.md.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/binary.h"
#include "support/error.h"

namespace collplan::ir::format {

constexpr uint8_t kMagic[8] = {0x89, 'C', 'P', 'L', 'A', 'N', 0x0D, 0x0A};
constexpr size_t kPreambleSize = 48;   // magic 8, version 4, flags 4, hash 16, file_size 8, header_size 4, K 4
constexpr size_t kHashOffset = 16;     // content_hash lives in bytes [16, 32)
constexpr size_t kIndexEntrySize = 24;  // offset, length, hash: u64 each
constexpr size_t kFlagsOffset = 12;     // preamble flags (u32)
constexpr uint32_t kFlagSingleRank = 1;  // flags bit 0: one rank's program, not a plan
constexpr uint32_t kFlagRankLocal = 2;   // flags bit 1 (with bit 0): that rank compiled alone, one index entry
// Combination encodings; the writer picks the shortest that applies.
constexpr uint8_t kComboList = 0;      // n, (slot, coeff)[n]
constexpr uint8_t kComboRun = 1;       // base, n, coeff[n]: slots base..base+n-1
constexpr uint8_t kComboUnitList = 2;  // n, slot[n]: every coefficient 1
constexpr uint8_t kComboUnit = 3;      // slot: the single term 1·slot
constexpr uint8_t kOpHasCol = 1;       // op flags bit 0: a matrix_col follows

// Smallest encodings, used to cap counts by the bytes left before allocating.
constexpr size_t kMinCombo = 5;   // tag + n (an empty list) or tag + slot (a unit)
constexpr size_t kMinStep = 16;   // t + three counts
constexpr size_t kMinSend = 12;   // port, to, n
constexpr size_t kMinRecv = 16;   // port, from, sent_at, n
constexpr size_t kMinOp = 5 + kMinCombo;  // flags + dst + combo

struct Writer {
  std::vector<uint8_t>& b;
  void u8(uint8_t v) { b.push_back(v); }
  void u16(uint16_t v) {
    for (int i = 0; i < 2; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void elem(Elem v, uint32_t width) {
    // Truncating a coefficient would silently change the plan's meaning.
    COLLPLAN_ASSERT(width == 4 || (v >> (8 * width)) == 0,
                    fmt::format("coefficient {} does not fit a {}-byte field element", v, width));
    for (uint32_t i = 0; i < width; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void str(const std::string& s, const char* what) {
    // The reader refuses control characters (they would garble dumps and
    // terminals), so the writer must not produce them.
    for (char c : s)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
        user_error("{} '{}' contains control character {:#04x}: plan files store printable names only", what, s,
                   static_cast<unsigned>(static_cast<unsigned char>(c)));
    u32(static_cast<uint32_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
  }
  void digest(const Digest& d) { b.insert(b.end(), d.bytes.begin(), d.bytes.end()); }
};

inline void put_u64_at(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

inline uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint32_t get_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}


// XXH3-128 of the head with the hash field left out (binary_write.cpp).
Digest content_hash_of(const uint8_t* head, size_t head_end);

struct Head {
  PlanHeader h;
  uint64_t head_size = 0;
  bool single_rank = false;
};

// Index entries a file holds: one per rank, or one for a rank-local file.
inline uint64_t index_entries(bool rank_local, uint32_t num_ranks) { return rank_local ? 1 : num_ranks; }

struct Preamble {
  bool single_rank = false;
  bool rank_local = false;
  uint32_t header_size = 0;
  uint32_t num_ranks = 0;
  uint64_t file_size = 0;
  uint64_t head_size = 0;
};

// Encoding a whole plan (binary_write.cpp): each rank's blob, in rank
// order, is handed to `blob` (when given) with its offset in the file; the
// bytes are valid during the call only. Returns the head: preamble, header
// and index, with every rank hash and the content hash filled in. The file
// is the head followed by the blobs (the first blob's offset is the head's
// size).
using BlobSink = std::function<void(uint64_t offset, const uint8_t* data, size_t n)>;
std::vector<uint8_t> encode_plan(const Plan& plan, const BlobSink& blob);
// The content hash a head carries (the plan's identity, plan_digest).
Digest head_digest(const std::vector<uint8_t>& head);

// Parsing (binary_read.cpp).
Preamble parse_preamble(const uint8_t* data, size_t avail, uint64_t actual_size);
Head parse_head(const uint8_t* head, const Preamble& pre);
Rank single_rank_entry(const Head& head, const uint8_t* first4, size_t avail, uint64_t actual_size,
                       RankIndexEntry* entry);
Program read_blob(const uint8_t* data, const RankIndexEntry& e, Rank r, const Spec& spec, uint32_t num_steps);
// A rank-local file's bytes (binary_write.cpp).
std::vector<uint8_t> encode_rank_local_image(const RankPlan& rp);

}  // namespace collplan::ir::format
