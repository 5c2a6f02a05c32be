// The .cplan codec. The grammar is in binary.h and docs/plan-format.md; this
// file follows it field by field, in the same order, for both directions.
#include "ir/binary.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::ir {

namespace {

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

// ─── Writing ────────────────────────────────────────────────────────────────

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

void put_u64_at(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint32_t get_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

void write_combo(Writer& w, const std::vector<Term>& terms, uint32_t eb) {
  const uint64_t n = terms.size();
  bool run = n >= 1, ones = true;
  for (size_t i = 0; i < n; ++i) {
    run = run && terms[i].slot == terms[0].slot + i && terms[0].slot + i >= terms[0].slot;  // no wrap-around
    ones = ones && terms[i].coeff == 1;
  }
  // Sizes of the applicable encodings; the shortest wins, ties go to the
  // lower tag, so the encoding is a function of the plan.
  uint8_t best = kComboList;
  uint64_t best_size = 5 + n * (4 + eb);
  auto consider = [&](bool applies, uint8_t tag, uint64_t size) {
    if (applies && size < best_size) {
      best = tag;
      best_size = size;
    }
  };
  consider(run, kComboRun, 9 + n * eb);
  consider(ones, kComboUnitList, 5 + 4 * n);
  consider(ones && n == 1, kComboUnit, 5);
  w.u8(best);
  switch (best) {
    case kComboRun:
      w.u32(terms[0].slot);
      w.u32(static_cast<uint32_t>(n));
      for (const Term& t : terms) w.elem(t.coeff, eb);
      break;
    case kComboUnitList:
      w.u32(static_cast<uint32_t>(n));
      for (const Term& t : terms) w.u32(t.slot);
      break;
    case kComboUnit:
      w.u32(terms[0].slot);
      break;
    default:
      w.u32(static_cast<uint32_t>(n));
      for (const Term& t : terms) {
        w.u32(t.slot);
        w.elem(t.coeff, eb);
      }
  }
}

void write_slots(Writer& w, const std::vector<SlotId>& slots) {
  w.u32(static_cast<uint32_t>(slots.size()));
  for (SlotId s : slots) w.u32(s);
}

void write_blob(std::vector<uint8_t>& out, const Program& prog, uint32_t eb) {
  Writer w{out};
  w.u32(prog.rank);
  w.u32(prog.num_slots);
  write_slots(w, prog.inputs);
  write_slots(w, prog.outputs);
  w.u32(static_cast<uint32_t>(prog.steps.size()));
  for (const Step& st : prog.steps) {
    w.u32(st.t);
    w.u32(static_cast<uint32_t>(st.sends.size()));
    w.u32(static_cast<uint32_t>(st.recvs.size()));
    w.u32(static_cast<uint32_t>(st.ops.size()));
    for (const Send& s : st.sends) {
      w.u32(s.port);
      w.u32(s.to);
      w.u32(static_cast<uint32_t>(s.payload.size()));
      for (const Combo& c : s.payload) write_combo(w, c.terms, eb);
    }
    for (const Recv& r : st.recvs) {
      w.u32(r.port);
      w.u32(r.from);
      w.u32(r.sent_at);
      write_slots(w, r.into);
    }
    for (const Op& o : st.ops) {
      w.u8(o.matrix_col != kNoCol ? kOpHasCol : 0);
      w.u32(o.dst);
      if (o.matrix_col != kNoCol) w.u32(o.matrix_col);
      write_combo(w, o.terms, eb);
    }
  }
}

void write_spec(Writer& w, const Spec& s, uint32_t num_steps) {
  const uint32_t eb = s.field.elem_bytes();
  w.u8(static_cast<uint8_t>(s.op));
  w.u8(static_cast<uint8_t>(s.field.kind()));
  w.u16(s.exclusive ? 1 : 0);  // spec flags
  w.u32(s.K);
  w.u32(s.p);
  w.u32(s.lambda);
  const bool bin = s.field.kind() == FieldKind::GF2m;
  w.u32(bin ? s.field.m() : 0);
  w.u32(bin ? s.field.poly() : 0);
  w.u64(s.field.size());
  w.str(s.algorithm, "algorithm name");
  w.u32(s.blocks);
  w.u32(s.root);
  w.u32(s.N);
  write_slots(w, s.counts);
  const MatrixSpec& m = s.matrix;
  w.str(m.family, "matrix family");
  w.u32(m.rows);
  w.u32(m.cols);
  w.u64(m.seed);
  w.u32(static_cast<uint32_t>(m.points.size()));
  for (Elem e : m.points) w.elem(e, eb);
  write_slots(w, m.perm);
  w.u64(m.entries.size());
  for (Elem e : m.entries) w.elem(e, eb);
  w.str(m.source, "matrix source");
  w.digest(m.digest);
  w.u32(num_steps);
}

Digest digest_of(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Digest d;
  std::memcpy(d.bytes.data(), c.digest, 16);
  return d;
}

// XXH3-128 over [0, 16) and [32, head_end): everything of the preamble, the
// header and the index except the hash field itself, with the single-rank
// flag read as 0 — so a rank extracted from a plan file keeps the plan's
// content hash (its identity). The rank-local flag is hashed as written: a
// rank-local file's hash (of its header and its one index entry) is its own
// and can never be taken for a whole plan's.
Digest content_hash_of(const uint8_t* head, size_t head_end) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> st(XXH3_createState(), &XXH3_freeState);
  COLLPLAN_ASSERT(st != nullptr, "XXH3_createState failed");
  XXH3_128bits_reset(st.get());
  uint8_t first[kHashOffset];
  std::memcpy(first, head, kHashOffset);
  first[kFlagsOffset] &= static_cast<uint8_t>(~kFlagSingleRank);
  XXH3_128bits_update(st.get(), first, kHashOffset);
  XXH3_128bits_update(st.get(), head + kHashOffset + 16, head_end - kHashOffset - 16);
  return digest_of(XXH3_128bits_digest(st.get()));
}

// Preamble + header + index, with the content hash filled in.
std::vector<uint8_t> assemble_head(uint32_t flags, uint64_t file_size, uint32_t num_ranks,
                                   const std::vector<uint8_t>& header, const std::vector<RankIndexEntry>& index) {
  std::vector<uint8_t> head;
  head.reserve(kPreambleSize + header.size() + kIndexEntrySize * index.size());
  Writer w{head};
  head.insert(head.end(), std::begin(kMagic), std::end(kMagic));
  w.u32(kBinaryVersion);
  w.u32(flags);
  head.insert(head.end(), 16, 0);  // content hash, filled below
  w.u64(file_size);
  w.u32(static_cast<uint32_t>(header.size()));
  w.u32(num_ranks);
  head.insert(head.end(), header.begin(), header.end());
  for (const RankIndexEntry& e : index) {
    w.u64(e.offset);
    w.u64(e.length);
    w.u64(e.hash);
  }
  const Digest h = content_hash_of(head.data(), head.size());
  std::copy(h.bytes.begin(), h.bytes.end(), head.begin() + kHashOffset);
  return head;
}

// Builds preamble + header + index (with the content hash filled in) for
// `plan`. Rank blobs are appended to *body when it is given; otherwise they
// are encoded one at a time into a scratch buffer, hashed and dropped.
std::vector<uint8_t> encode_head(const Plan& plan, std::vector<uint8_t>* body) {
  const Spec& spec = plan.spec;
  const uint32_t R = num_ranks(spec);  // N for decentralized-encode
  COLLPLAN_ASSERT(plan.ranks.size() == R, fmt::format("plan has {} programs for {} ranks", plan.ranks.size(), R));
  const uint32_t eb = spec.field.elem_bytes();

  std::vector<uint8_t> header;
  Writer hw{header};
  write_spec(hw, spec, plan.num_steps);
  COLLPLAN_ASSERT(header.size() <= UINT32_MAX, "plan header larger than 4 GiB");

  const uint64_t head_size = kPreambleSize + header.size() + kIndexEntrySize * static_cast<uint64_t>(R);
  std::vector<RankIndexEntry> index(R);
  std::vector<uint8_t> scratch;
  uint64_t offset = head_size;
  for (uint32_t k = 0; k < R; ++k) {
    const Program& prog = plan.ranks[k];
    COLLPLAN_ASSERT(prog.rank == k, fmt::format("ranks[{}] holds the program of rank {}", k, prog.rank));
    std::vector<uint8_t>& buf = body ? *body : scratch;
    if (!body) scratch.clear();
    const size_t start = body ? body->size() : 0;
    write_blob(buf, prog, eb);
    const uint64_t len = buf.size() - start;
    index[k] = RankIndexEntry{offset, len, XXH3_64bits(buf.data() + start, len)};
    offset += len;
  }

  return assemble_head(0, offset, R, header, index);
}

// A rank-local file (RankPlan): the spec header, one index entry and the
// rank's blob, appended to the head.
std::vector<uint8_t> encode_rank_local_image(const RankPlan& rp) {
  const Spec& spec = rp.spec;
  COLLPLAN_ASSERT(rp.program.rank < num_ranks(spec),
                  fmt::format("rank-local program of rank {} for {} ranks", rp.program.rank, num_ranks(spec)));
  std::vector<uint8_t> header;
  Writer hw{header};
  write_spec(hw, spec, rp.num_steps);
  COLLPLAN_ASSERT(header.size() <= UINT32_MAX, "plan header larger than 4 GiB");
  std::vector<uint8_t> blob;
  write_blob(blob, rp.program, spec.field.elem_bytes());
  const uint64_t head_size = kPreambleSize + header.size() + kIndexEntrySize;
  const RankIndexEntry e{head_size, blob.size(), XXH3_64bits(blob.data(), blob.size())};
  std::vector<uint8_t> out =
      assemble_head(kFlagSingleRank | kFlagRankLocal, head_size + blob.size(), num_ranks(spec), header, {e});
  out.insert(out.end(), blob.begin(), blob.end());
  return out;
}

// ─── Reading ────────────────────────────────────────────────────────────────

[[noreturn]] void damaged(uint64_t offset, const std::string& where, const std::string& what) {
  throw UserError(fmt::format("damaged plan file at byte {}{}: {}", offset,
                              where.empty() ? std::string() : " (" + where + ")", what));
}

// A bounds-checked little-endian cursor over [data, data + size), which sits
// at file offset `origin`. Every read checks the bytes left; every error names
// the file offset of the field being read.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, uint64_t origin, std::string where)
      : d_(data), n_(size), origin_(origin), where_(std::move(where)) {}

  uint64_t offset() const { return origin_ + pos_; }
  size_t left() const { return n_ - pos_; }
  bool at_end() const { return pos_ == n_; }

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    damaged(origin_ + field_, where_, fmt::format(f, std::forward<Args>(args)...));
  }
  // A rank blob that matches its hash (the file is intact) but breaks a rule
  // of ir/plan.h: the plan is wrong (VerifyError, exit status 1), not the file.
  template <typename... Args>
  [[noreturn]] void wrong(fmt::format_string<Args...> f, Args&&... args) const {
    throw VerifyError(fmt::format("plan file at byte {}{}: {}", origin_ + field_,
                                  where_.empty() ? std::string() : " (" + where_ + ")",
                                  fmt::format(f, std::forward<Args>(args)...)),
                      PlanFault::Structure);
  }

  const uint8_t* take(size_t k, const char* what) {
    field_ = pos_;
    if (left() < k) fail("truncated: {} needs {} bytes, only {} left", what, k, left());
    const uint8_t* p = d_ + pos_;
    pos_ += k;
    return p;
  }
  uint8_t u8(const char* what) { return *take(1, what); }
  uint16_t u16(const char* what) {
    const uint8_t* p = take(2, what);
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
  }
  uint32_t u32(const char* what) { return get_u32(take(4, what)); }
  uint64_t u64(const char* what) { return get_u64(take(8, what)); }
  Elem elem(uint32_t width, const Field& f, const char* what) {
    const uint8_t* p = take(width, what);
    Elem v = 0;
    for (uint32_t i = width; i-- > 0;) v = (v << 8) | p[i];
    if (!f.valid(v)) fail("{} = {} is not an element of {} (valid: 0..{})", what, v, f.name(), f.size() - 1);
    return v;
  }
  // A count of items each at least `min_size` bytes long: refused unless that
  // many could fit in the bytes left, so no count can make us allocate more
  // than the input justifies.
  uint64_t count(uint64_t n, size_t min_size, const char* what) const {
    if (min_size > 0 && n > left() / min_size)
      fail("{} = {} cannot fit in the {} bytes left (each needs at least {} bytes)", what, n, left(), min_size);
    return n;
  }
  uint32_t count32(size_t min_size, const char* what) {
    uint32_t n = u32(what);
    count(n, min_size, what);
    return n;
  }
  std::string str(const char* what) {
    uint32_t n = count32(1, what);
    const uint8_t* p = take(n, what);
    for (uint32_t i = 0; i < n; ++i)
      if (p[i] < 0x20 || p[i] == 0x7F) fail("{} contains control character 0x{:02x} at position {}", what, p[i], i);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  Digest digest(const char* what) {
    Digest d;
    std::memcpy(d.bytes.data(), take(16, what), 16);
    return d;
  }
  // Marks the start of a multi-field item so a later check can point at it.
  void mark() { field_ = pos_; }

 private:
  const uint8_t* d_;
  size_t n_;
  uint64_t origin_;
  std::string where_;
  size_t pos_ = 0;
  size_t field_ = 0;
};

Field read_field(Reader& rd, uint8_t kind) {
  uint32_t m = rd.u32("field m");
  uint32_t poly = rd.u32("field polynomial");
  uint64_t q = rd.u64("field size q");
  try {
    if (kind == static_cast<uint8_t>(FieldKind::GF2m)) {
      Field f = Field::gf2m(m, poly);
      if (q != f.size()) rd.fail("field size q = {} does not match GF(2^{}) (expected {})", q, m, f.size());
      return f;
    }
    if (m != 0 || poly != 0) rd.fail("prime field with m = {}, poly = {} (both must be 0)", m, poly);
    return Field::prime(q);
  } catch (const UserError& e) {
    if (std::string_view(e.what()).starts_with("damaged plan file")) throw;
    rd.fail("{}", e.what());
  }
}

void read_slot_list(Reader& rd, std::vector<uint32_t>& out, const char* what, uint32_t limit,
                    const char* limit_name) {
  uint32_t n = rd.count32(4, what);
  out.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t v = rd.u32(what);
    if (v >= limit) rd.wrong("{}[{}] = {} is out of range ({} = {}, valid 0..{})", what, i, v, limit_name, limit,
                            static_cast<int64_t>(limit) - 1);
    out[i] = v;
  }
}

void read_u32_list(Reader& rd, std::vector<uint32_t>& out, const char* what) {
  uint32_t n = rd.count32(4, what);
  out.resize(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = rd.u32(what);
}

Spec read_spec(Reader& rd, uint32_t& num_steps) {
  Spec s;
  rd.mark();
  uint8_t op = rd.u8("op");
  if (std::find(all_ops().begin(), all_ops().end(), static_cast<OpKind>(op)) == all_ops().end())
    rd.fail("unknown operation code {} (valid: 1..{})", op, all_ops().size());
  s.op = static_cast<OpKind>(op);
  uint8_t kind = rd.u8("field kind");
  if (kind != static_cast<uint8_t>(FieldKind::GF2m) && kind != static_cast<uint8_t>(FieldKind::Prime))
    rd.fail("unknown field kind {} (valid: 1 = gf2m, 2 = prime)", kind);
  const uint16_t flags = rd.u16("spec flags");
  if (flags & ~1u) rd.fail("spec flags are {:#x} (valid: bit 0 = exclusive prefix)", flags);
  s.exclusive = flags & 1;
  s.K = rd.u32("K");
  s.p = rd.u32("p");
  s.lambda = rd.u32("lambda");
  s.field = read_field(rd, kind);
  const uint32_t eb = s.field.elem_bytes();
  s.algorithm = rd.str("algorithm name");
  s.blocks = rd.u32("blocks");
  s.root = rd.u32("root");
  s.N = rd.u32("N");
  read_u32_list(rd, s.counts, "counts");

  MatrixSpec& m = s.matrix;
  m.family = rd.str("matrix family");
  m.rows = rd.u32("matrix rows");
  m.cols = rd.u32("matrix cols");
  m.seed = rd.u64("matrix seed");
  uint32_t np = rd.count32(eb, "matrix points count");
  m.points.resize(np);
  for (uint32_t i = 0; i < np; ++i) m.points[i] = rd.elem(eb, s.field, "matrix point");
  read_u32_list(rd, m.perm, "matrix perm");
  uint64_t ne = rd.count(rd.u64("matrix entries count"), eb, "matrix entries count");
  if (m.family == "explicit" && ne != static_cast<uint64_t>(m.rows) * m.cols)
    rd.fail("explicit matrix has {} entries, expected rows*cols = {}*{} = {}", ne, m.rows, m.cols,
            static_cast<uint64_t>(m.rows) * m.cols);
  m.entries.resize(ne);
  for (uint64_t i = 0; i < ne; ++i) m.entries[i] = rd.elem(eb, s.field, "matrix entry");
  m.source = rd.str("matrix source");
  m.digest = rd.digest("matrix digest");
  num_steps = rd.u32("num_steps");
  return s;
}

struct Head {
  PlanHeader h;
  uint64_t head_size = 0;
  bool single_rank = false;
};

// Index entries a file holds: one per rank, or one for a rank-local file.
uint64_t index_entries(bool rank_local, uint32_t num_ranks) { return rank_local ? 1 : num_ranks; }

struct Preamble {
  bool single_rank = false;
  bool rank_local = false;
  uint32_t header_size = 0;
  uint32_t num_ranks = 0;
  uint64_t file_size = 0;
  uint64_t head_size = 0;
};

// Checks the fixed 48-byte preamble against the actual file size.
Preamble parse_preamble(const uint8_t* data, size_t avail, uint64_t actual_size) {
  if (avail < sizeof kMagic || std::memcmp(data, kMagic, sizeof kMagic) != 0)
    damaged(0, "", "not a collplan binary plan (bad magic; expected 89 43 50 4C 41 4E 0D 0A)");
  Reader rd(data, std::min<size_t>(avail, kPreambleSize), 0, "preamble");
  rd.take(sizeof kMagic, "magic");
  uint32_t version = rd.u32("version");
  if (version != kBinaryVersion)
    rd.fail("unsupported format version {} (this collplan reads version {})", version, kBinaryVersion);
  const uint32_t flags = rd.u32("flags");
  if (flags != 0 && flags != kFlagSingleRank && flags != (kFlagSingleRank | kFlagRankLocal))
    rd.fail("flags = {:#x} (valid in version 1: 0, 1 = single rank, 3 = single rank compiled alone)", flags);
  rd.take(16, "content hash");
  Preamble pre;
  pre.single_rank = flags & kFlagSingleRank;
  pre.rank_local = flags & kFlagRankLocal;
  pre.file_size = rd.u64("file size");
  // An extracted single-rank file keeps the whole plan's file size; its own
  // size is checked against its rank's index entry (single_rank_entry). A
  // rank-local file has no whole plan: its file size is its own.
  if ((!pre.single_rank || pre.rank_local) && pre.file_size != actual_size)
    rd.fail("the file is {} bytes but its preamble says {} (truncated or extended)", actual_size, pre.file_size);
  pre.header_size = rd.u32("header size");
  pre.num_ranks = rd.u32("rank count");
  const uint64_t entries = index_entries(pre.rank_local, pre.num_ranks);
  pre.head_size = kPreambleSize + static_cast<uint64_t>(pre.header_size) + kIndexEntrySize * entries;
  if (pre.head_size > actual_size)
    rd.fail("header ({} bytes) and index ({} entries) need {} bytes, the file has {}", pre.header_size, entries,
            pre.head_size, actual_size);
  return pre;
}

// Parses preamble + header + index from `head` (at least pre.head_size bytes).
Head parse_head(const uint8_t* head, const Preamble& pre) {
  Head out;
  out.head_size = pre.head_size;
  out.single_rank = pre.single_rank;
  PlanHeader& h = out.h;
  h.version = kBinaryVersion;
  h.compiled_alone = pre.rank_local;
  h.file_size = pre.file_size;
  std::memcpy(h.content_hash.bytes.data(), head + kHashOffset, 16);
  Digest actual = content_hash_of(head, pre.head_size);
  if (!(actual == h.content_hash))
    damaged(kHashOffset, "content hash",
            fmt::format("header and index do not match the content hash (stored {}, computed {})",
                        h.content_hash.hex(), actual.hex()));

  Reader rd(head + kPreambleSize, pre.header_size, kPreambleSize, "header");
  h.spec = read_spec(rd, h.num_steps);
  if (!rd.at_end()) rd.fail("{} unread bytes at the end of the header", rd.left());
  try {
    validate_spec_basics(h.spec, pre.rank_local ? kMaxRankLocalRanks : kMaxPlanRanks);
  } catch (const UserError& e) {
    damaged(kPreambleSize, "header", fmt::format("invalid spec: {}", e.what()));
  }
  if (num_ranks(h.spec) != pre.num_ranks)
    damaged(44, "preamble",
            fmt::format("rank count {} differs from the spec's {} ranks", pre.num_ranks, num_ranks(h.spec)));

  const uint64_t index_at = kPreambleSize + pre.header_size;
  const uint64_t entries = index_entries(pre.rank_local, pre.num_ranks);
  Reader ir(head + index_at, kIndexEntrySize * static_cast<size_t>(entries), index_at, "index");
  h.index.resize(static_cast<size_t>(entries));
  uint64_t expect = pre.head_size;
  for (uint32_t k = 0; k < entries; ++k) {
    RankIndexEntry& e = h.index[k];
    e.offset = ir.u64("blob offset");
    if (e.offset != expect)
      ir.fail("rank {} blob starts at {}, expected {} (blobs follow the index in rank order, without gaps)", k,
              e.offset, expect);
    e.length = ir.u64("blob length");
    if (e.length > pre.file_size - e.offset)
      ir.fail("rank {} blob of {} bytes at {} runs past the end of the file ({} bytes)", k, e.length, e.offset,
              pre.file_size);
    e.hash = ir.u64("blob hash");
    expect = e.offset + e.length;
  }
  if (expect != pre.file_size)
    damaged(pre.head_size, "index",
            fmt::format("rank blobs end at byte {} but the file has {} bytes", expect, pre.file_size));
  return out;
}

// A single-rank file: which rank its one blob holds (the blob's first u32,
// `first4` = the 4 bytes after the index), checked against the index and the
// actual size. Returns the rank; *entry gets the blob's place in this file.
Rank single_rank_entry(const Head& head, const uint8_t* first4, size_t avail, uint64_t actual_size,
                       RankIndexEntry* entry) {
  if (avail < 4) damaged(head.head_size, "single-rank blob", "missing (the file ends after the index)");
  const Rank r = get_u32(first4);
  if (r >= num_ranks(head.h.spec))
    damaged(head.head_size, "single-rank blob",
            fmt::format("holds rank {}, but the plan has {} ranks", r, num_ranks(head.h.spec)));
  *entry = head.h.index[head.h.compiled_alone ? 0 : r];
  if (actual_size != head.head_size + entry->length)
    damaged(head.head_size, "single-rank blob",
            fmt::format("the file is {} bytes, but rank {}'s blob of {} bytes after the index makes {}", actual_size, r,
                        entry->length, head.head_size + entry->length));
  entry->offset = head.head_size;
  return r;
}

void read_combo(Reader& rd, std::vector<Term>& terms, uint32_t num_slots, const Field& f, uint32_t eb) {
  auto slot = [&](const char* what) {
    SlotId v = rd.u32(what);
    if (v >= num_slots) rd.wrong("term reads slot {}, but the rank has {} slots", v, num_slots);
    return v;
  };
  const uint8_t tag = rd.u8("combination tag");
  switch (tag) {
    case kComboList: {
      const uint32_t n = rd.count32(4 + eb, "term count");
      terms.resize(n);
      for (Term& t : terms) {
        t.slot = slot("term slot");
        t.coeff = rd.elem(eb, f, "coefficient");
      }
      break;
    }
    case kComboRun: {
      const uint32_t base = rd.u32("run base slot");
      const uint32_t n = rd.count32(eb, "run length");
      if (static_cast<uint64_t>(base) + n > num_slots)
        rd.wrong("run of {} slots from slot {} passes the rank's {} slots", n, base, num_slots);
      terms.resize(n);
      for (uint32_t i = 0; i < n; ++i) terms[i] = Term{base + i, rd.elem(eb, f, "coefficient")};
      break;
    }
    case kComboUnitList: {
      const uint32_t n = rd.count32(4, "term count");
      terms.resize(n);
      for (Term& t : terms) t = Term{slot("term slot"), 1};
      break;
    }
    case kComboUnit:
      terms.assign(1, Term{slot("term slot"), 1});
      break;
    default:
      rd.fail("unknown combination tag {} (valid: 0 = list, 1 = run, 2 = unit list, 3 = unit)", tag);
  }
}

Program read_blob(const uint8_t* data, const RankIndexEntry& e, Rank r, const Spec& spec, uint32_t num_steps) {
  const std::string where = fmt::format("rank {}", r);
  if (uint64_t h = XXH3_64bits(data, e.length); h != e.hash)
    damaged(e.offset, where,
            fmt::format("rank blob does not match its hash (index says {:016x}, computed {:016x})", e.hash, h));
  Reader rd(data, e.length, e.offset, where);
  const Field& f = spec.field;
  const uint32_t eb = f.elem_bytes();
  Program prog;
  prog.rank = rd.u32("rank");
  if (prog.rank != r) rd.wrong("blob of rank {} holds rank {}", r, prog.rank);
  prog.num_slots = rd.u32("num_slots");
  read_slot_list(rd, prog.inputs, "inputs", prog.num_slots, "num_slots");
  read_slot_list(rd, prog.outputs, "outputs", prog.num_slots, "num_slots");
  uint32_t nsteps = rd.count32(kMinStep, "step record count");
  if (nsteps > num_steps) rd.fail("{} step records in a plan of {} steps", nsteps, num_steps);
  // Containers grow as items are actually parsed (not by the stored counts),
  // so memory stays proportional to the bytes consumed.
  StepNo prev = 0;
  for (uint32_t i = 0; i < nsteps; ++i) {
    Step& st = prog.steps.emplace_back();
    st.t = rd.u32("step number");
    if (st.t <= prev || st.t > num_steps)
      rd.wrong("step number {} after step {} (steps increase strictly within 1..{})", st.t, prev, num_steps);
    prev = st.t;
    const uint32_t nsend = rd.count32(kMinSend, "send count");
    const uint32_t nrecv = rd.count32(kMinRecv, "receive count");
    const uint32_t nop = rd.count32(kMinOp, "op count");
    for (uint32_t j = 0; j < nsend; ++j) {
      Send& s = st.sends.emplace_back();
      s.port = rd.u32("send port");
      if (s.port >= spec.p) rd.wrong("send port {} (step {}) is not a port (p = {}, valid 0..{})", s.port, st.t,
                                    spec.p, spec.p - 1);
      s.to = rd.u32("send destination");
      if (s.to >= num_ranks(spec))
        rd.wrong("send destination {} (step {}) is not a rank (valid 0..{})", s.to, st.t, num_ranks(spec) - 1);
      const uint32_t nel = rd.count32(kMinCombo, "payload size");
      for (uint32_t x = 0; x < nel; ++x) read_combo(rd, s.payload.emplace_back().terms, prog.num_slots, f, eb);
    }
    for (uint32_t j = 0; j < nrecv; ++j) {
      Recv& rv = st.recvs.emplace_back();
      rv.port = rd.u32("receive port");
      if (rv.port >= spec.p) rd.wrong("receive port {} (step {}) is not a port (p = {}, valid 0..{})", rv.port, st.t,
                                     spec.p, spec.p - 1);
      rv.from = rd.u32("receive source");
      if (rv.from >= num_ranks(spec))
        rd.wrong("receive source {} (step {}) is not a rank (valid 0..{})", rv.from, st.t, num_ranks(spec) - 1);
      rv.sent_at = rd.u32("sent_at");
      if (rv.sent_at < 1 || rv.sent_at > st.t)
        rd.wrong("receive in step {} of a message sent at step {} (valid 1..{})", st.t, rv.sent_at, st.t);
      read_slot_list(rd, rv.into, "receive slots", prog.num_slots, "num_slots");
    }
    for (uint32_t j = 0; j < nop; ++j) {
      Op& o = st.ops.emplace_back();
      const uint8_t flags = rd.u8("op flags");
      if (flags & ~kOpHasCol) rd.fail("op flags {:#04x} has unknown bits (valid: 0 or 1)", flags);
      o.dst = rd.u32("op destination");
      if (o.dst >= prog.num_slots) rd.wrong("op writes slot {}, but the rank has {} slots", o.dst, prog.num_slots);
      if (flags & kOpHasCol) {
        o.matrix_col = rd.u32("matrix column");
        if (o.matrix_col >= spec.matrix.cols)
          rd.wrong("op claims matrix column {}, but the matrix has {} columns", o.matrix_col, spec.matrix.cols);
      }
      read_combo(rd, o.terms, prog.num_slots, f, eb);
    }
  }
  if (!rd.at_end()) {
    rd.mark();
    rd.fail("{} unread bytes at the end of the rank blob", rd.left());
  }
  // A size over a limit (exit status 2), not damage: the hash matched.
  if (prog.num_slots > slot_limit(prog))
    throw UserError(fmt::format("plan file at byte {}{}: num_slots = {} but the program writes at most {} slots "
                                "(valid: num_slots <= {}, 4 per write + 64)",
                                e.offset + 4, where.empty() ? std::string() : " (" + where + ")", prog.num_slots,
                                (slot_limit(prog) - 64) / 4, slot_limit(prog)));
  return prog;
}

// ─── Files ──────────────────────────────────────────────────────────────────

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

FilePtr open_for_reading(const std::string& path, uint64_t& size) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) user_error("cannot read plan file '{}': it is a directory", path);
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) user_error("cannot read plan file '{}': {}", path, std::strerror(errno));
  if (std::fseek(f.get(), 0, SEEK_END) != 0) user_error("cannot read plan file '{}': {}", path, std::strerror(errno));
  long end = std::ftell(f.get());
  if (end < 0) user_error("cannot read plan file '{}': {}", path, std::strerror(errno));
  size = static_cast<uint64_t>(end);
  return f;
}

void read_at(FILE* f, const std::string& path, uint64_t offset, uint8_t* out, size_t n) {
  if (std::fseek(f, static_cast<long>(offset), SEEK_SET) != 0 || std::fread(out, 1, n, f) != n)
    user_error("cannot read plan file '{}': {} bytes at offset {} could not be read", path, n, offset);
}

// Reads and checks the head (preamble, header, index) of an open file.
Head read_head_from(FILE* f, const std::string& path, uint64_t size, std::vector<uint8_t>& head) {
  head.resize(static_cast<size_t>(std::min<uint64_t>(size, kPreambleSize)));
  read_at(f, path, 0, head.data(), head.size());
  Preamble pre = parse_preamble(head.data(), head.size(), size);
  head.resize(static_cast<size_t>(pre.head_size));
  read_at(f, path, 0, head.data(), head.size());
  Head h = parse_head(head.data(), pre);
  if (h.single_rank) {
    uint8_t first4[4] = {};
    const size_t avail = static_cast<size_t>(std::min<uint64_t>(4, size - h.head_size));
    read_at(f, path, h.head_size, first4, avail);
    RankIndexEntry e;
    h.h.only_rank = single_rank_entry(h, first4, avail, size, &e);
  }
  return h;
}

template <typename Fn>
auto with_path(const std::string& path, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const UserError& e) {
    std::string msg = e.what();
    if (msg.starts_with("cannot ")) throw;  // already names the path
    throw UserError(fmt::format("{}: {}", path, msg));
  } catch (const VerifyError& e) {
    throw VerifyError(fmt::format("{}: {}", path, e.what()), e.kind());
  }
}

}  // namespace

// ─── Public API ─────────────────────────────────────────────────────────────

std::vector<uint8_t> encode_binary(const Plan& plan) {
  std::vector<uint8_t> body;
  std::vector<uint8_t> out = encode_head(plan, &body);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Digest plan_digest(const Plan& plan) {
  std::vector<uint8_t> head = encode_head(plan, nullptr);
  Digest d;
  std::copy(head.begin() + kHashOffset, head.begin() + kHashOffset + 16, d.bytes.begin());
  return d;
}

bool looks_like_binary_plan(const uint8_t* data, size_t size) {
  return size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0;
}

Plan decode_binary(const uint8_t* data, size_t size) {
  Preamble pre = parse_preamble(data, size, size);
  Head head = parse_head(data, pre);
  if (head.single_rank) {
    RankIndexEntry e;
    const Rank r = single_rank_entry(head, data + head.head_size, size - head.head_size, size, &e);
    user_error("this file holds only rank {}'s program of a {}-rank plan ({}); load it as one rank (read_rank, "
               "`collplan show/check/emit-cpp`)",
               r, num_ranks(head.h.spec),
               head.h.compiled_alone ? "compiled alone with `collplan compile --rank`; no whole plan exists"
                                     : "extracted with `collplan extract`");
  }
  Plan plan;
  plan.spec = std::move(head.h.spec);
  plan.num_steps = head.h.num_steps;
  plan.ranks.resize(num_ranks(plan.spec));
  for (uint32_t k = 0; k < num_ranks(plan.spec); ++k) {
    const RankIndexEntry& e = head.h.index[k];
    plan.ranks[k] = read_blob(data + e.offset, e, k, plan.spec, plan.num_steps);
  }
  return plan;
}

namespace {

// Writes through a temporary file renamed into place.
void write_bytes(const std::vector<uint8_t>& bytes, const std::string& path) {
  const std::string tmp = path + ".tmp";
  FilePtr f(std::fopen(tmp.c_str(), "wb"));
  if (!f) user_error("cannot write plan file '{}': {}", path, std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f.get()) == bytes.size();
  ok = (std::fclose(f.release()) == 0) && ok;
  if (!ok) {
    int err = errno;
    std::remove(tmp.c_str());
    user_error("cannot write plan file '{}': {}", path, std::strerror(err));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    user_error("cannot write plan file '{}': {}", path, ec.message());
  }
}

}  // namespace

void write_binary(const Plan& plan, const std::string& path) { write_bytes(encode_binary(plan), path); }

std::vector<uint8_t> encode_rank_local(const RankPlan& rp) { return encode_rank_local_image(rp); }

void write_rank_local(const RankPlan& rp, const std::string& path) { write_bytes(encode_rank_local_image(rp), path); }

std::vector<uint8_t> extract_rank_image(const uint8_t* data, size_t size, Rank r) {
  Preamble pre = parse_preamble(data, size, size);
  Head head = parse_head(data, pre);
  const Spec& spec = head.h.spec;
  if (r >= num_ranks(spec))
    user_error("rank {} is not in this plan ({} ranks, valid 0..{})", r, num_ranks(spec), num_ranks(spec) - 1);
  RankIndexEntry e = head.h.index[head.h.compiled_alone ? 0 : r];
  if (head.single_rank) {
    const Rank only = single_rank_entry(head, data + head.head_size, size - head.head_size, size, &e);
    if (only != r)
      user_error("rank {} is not in this file: it holds only rank {} ({})", r, only,
                 head.h.compiled_alone ? "compiled alone with `collplan compile --rank`"
                                       : "extracted with `collplan extract`");
  }
  read_blob(data + e.offset, e, r, spec, head.h.num_steps);  // checks its hash and contents
  std::vector<uint8_t> out(data, data + head.head_size);
  out[kFlagsOffset] |= kFlagSingleRank;
  out.insert(out.end(), data + e.offset, data + e.offset + e.length);
  return out;
}

void extract_rank(const std::string& in, Rank r, const std::string& out) {
  uint64_t size = 0;
  FilePtr f = open_for_reading(in, size);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  read_at(f.get(), in, 0, bytes.data(), bytes.size());
  write_bytes(with_path(in, [&] { return extract_rank_image(bytes.data(), bytes.size(), r); }), out);
}

Plan read_binary(const std::string& path) {
  uint64_t size = 0;
  FilePtr f = open_for_reading(path, size);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  read_at(f.get(), path, 0, bytes.data(), bytes.size());
  return with_path(path, [&] { return decode_binary(bytes.data(), bytes.size()); });
}

PlanHeader read_header(const std::string& path) {
  uint64_t size = 0;
  FilePtr f = open_for_reading(path, size);
  std::vector<uint8_t> head;
  return with_path(path, [&] { return read_head_from(f.get(), path, size, head).h; });
}

Program read_rank(const std::string& path, Rank r, PlanHeader* header_out) {
  uint64_t size = 0;
  FilePtr f = open_for_reading(path, size);
  return with_path(path, [&] {
    std::vector<uint8_t> head_bytes;
    Head head = read_head_from(f.get(), path, size, head_bytes);
    const Spec& spec = head.h.spec;
    if (r >= num_ranks(spec))
      user_error("rank {} is not in this plan ({} ranks, valid 0..{})", r, num_ranks(spec), num_ranks(spec) - 1);
    if (head.h.only_rank && *head.h.only_rank != r)
      user_error("rank {} is not in this file: it holds only rank {} ({})", r, *head.h.only_rank,
                 head.h.compiled_alone ? "compiled alone with `collplan compile --rank`"
                                       : "extracted with `collplan extract`");
    RankIndexEntry e = head.h.index[head.h.compiled_alone ? 0 : r];
    if (head.h.only_rank) e.offset = head.head_size;
    std::vector<uint8_t> blob(static_cast<size_t>(e.length));
    read_at(f.get(), path, e.offset, blob.data(), blob.size());
    Program prog = read_blob(blob.data(), e, r, spec, head.h.num_steps);
    if (header_out) *header_out = std::move(head.h);
    return prog;
  });
}

PlanHeader decode_header(const uint8_t* data, size_t size) {
  Preamble pre = parse_preamble(data, size, size);
  Head head = parse_head(data, pre);
  if (head.single_rank) {
    RankIndexEntry e;
    head.h.only_rank = single_rank_entry(head, data + head.head_size, size - head.head_size, size, &e);
  }
  return std::move(head.h);
}

Program decode_rank(const uint8_t* data, size_t size, Rank r, PlanHeader* header_out) {
  PlanHeader h = decode_header(data, size);
  const Spec& spec = h.spec;
  if (r >= num_ranks(spec))
    user_error("rank {} is not in this plan ({} ranks, valid 0..{})", r, num_ranks(spec), num_ranks(spec) - 1);
  if (h.only_rank && *h.only_rank != r)
    user_error("rank {} is not in this file: it holds only rank {} ({})", r, *h.only_rank,
               h.compiled_alone ? "compiled alone with `collplan compile --rank`" : "extracted with `collplan extract`");
  RankIndexEntry e = h.index[h.compiled_alone ? 0 : r];
  if (h.only_rank) e.offset = size - e.length;  // the blob follows the index (single_rank_entry checked the size)
  Program prog = read_blob(data + e.offset, e, r, spec, h.num_steps);
  if (header_out) *header_out = std::move(h);
  return prog;
}

void reseal_binary(std::vector<uint8_t>& file) {
  if (file.size() < kPreambleSize) return;
  const uint32_t header_size = get_u32(file.data() + 40);
  const uint64_t entries = index_entries(get_u32(file.data() + kFlagsOffset) & kFlagRankLocal,
                                         get_u32(file.data() + 44));
  const uint64_t head_size = kPreambleSize + uint64_t{header_size} + kIndexEntrySize * entries;
  if (head_size > file.size()) return;  // nothing to seal; the decoder reports the bad sizes
  const uint64_t index_at = kPreambleSize + header_size;
  for (uint64_t k = 0; k < entries; ++k) {
    const size_t at = static_cast<size_t>(index_at + kIndexEntrySize * k);
    const uint64_t off = get_u64(file.data() + at), len = get_u64(file.data() + at + 8);
    if (off > file.size() || len > file.size() - off) continue;  // the decoder will report it
    put_u64_at(file, at + 16, XXH3_64bits(file.data() + off, static_cast<size_t>(len)));
  }
  const Digest h = content_hash_of(file.data(), static_cast<size_t>(head_size));
  std::copy(h.bytes.begin(), h.bytes.end(), file.begin() + kHashOffset);
}

}  // namespace collplan::ir
