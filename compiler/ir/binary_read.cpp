// The .cplan decoder: every field bounds-checked, every count capped by the
// bytes left before anything is allocated, every error naming the file
// offset (binary.h, docs/plan-format.md).
#include <xxhash.h>

#include <algorithm>
#include <string_view>

#include "ir/binary_format.h"

namespace collplan::ir {

using namespace format;

namespace {

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

// Into a std::vector or a Slots (a program's inputs and outputs, a receive's slots).
template <class List>
void read_slot_list(Reader& rd, List& out, const char* what, uint32_t limit, const char* limit_name) {
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
  if (flags & ~3u)
    rd.fail("spec flags are {:#x} (valid: bit 0 = exclusive prefix, bit 1 = repair or decode lists)", flags);
  const bool repair = s.op == OpKind::Repair || s.op == OpKind::Decode;
  if (((flags & 2) != 0) != repair)
    rd.fail("spec flag bit 1 (repair or decode lists) is {} for operation {}", (flags & 2) ? "set" : "clear",
            op_name(s.op));
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
  if (repair) {
    read_u32_list(rd, s.lost, "lost ranks");
    read_u32_list(rd, s.helpers, "helpers");
    read_u32_list(rd, s.to, "receiving ranks");
  }

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

}  // namespace

namespace format {

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

}  // namespace format

namespace {

template <class TermList>
void read_combo(Reader& rd, TermList& terms, uint32_t num_slots, const Field& f, uint32_t eb) {
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

}  // namespace

namespace {

// The blob's head: rank, slot count, input and output slots, and the count
// of step records that follow (checked against the plan's step count).
// Into a Program's lists (Slots) or a streaming reader's std::vectors.
template <class List>
uint32_t read_blob_head(Reader& rd, Rank r, uint32_t num_steps, uint32_t& num_slots, List& inputs, List& outputs) {
  const Rank rank = rd.u32("rank");
  if (rank != r) rd.wrong("blob of rank {} holds rank {}", r, rank);
  num_slots = rd.u32("num_slots");
  read_slot_list(rd, inputs, "inputs", num_slots, "num_slots");
  read_slot_list(rd, outputs, "outputs", num_slots, "num_slots");
  const uint32_t nsteps = rd.count32(kMinStep, "step record count");
  if (nsteps > num_steps) rd.fail("{} step records in a plan of {} steps", nsteps, num_steps);
  return nsteps;
}

// One step record into `st` (cleared first); `prev` is the step of the
// record before it (0 for the first). Containers grow as items are actually
// parsed (not by the stored counts), so memory stays proportional to the
// bytes consumed.
void read_step(Reader& rd, Step& st, StepNo prev, uint32_t num_slots, const Spec& spec, uint32_t num_steps) {
  const Field& f = spec.field;
  const uint32_t eb = f.elem_bytes();
  st.sends.clear();
  st.recvs.clear();
  st.ops.clear();
  st.t = rd.u32("step number");
  if (st.t <= prev || st.t > num_steps)
    rd.wrong("step number {} after step {} (steps increase strictly within 1..{})", st.t, prev, num_steps);
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
    for (uint32_t x = 0; x < nel; ++x) read_combo(rd, s.payload.emplace_back().terms, num_slots, f, eb);
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
    read_slot_list(rd, rv.into, "receive slots", num_slots, "num_slots");
  }
  for (uint32_t j = 0; j < nop; ++j) {
    Op& o = st.ops.emplace_back();
    const uint8_t flags = rd.u8("op flags");
    if (flags & ~kOpHasCol) rd.fail("op flags {:#04x} has unknown bits (valid: 0 or 1)", flags);
    o.dst = rd.u32("op destination");
    if (o.dst >= num_slots) rd.wrong("op writes slot {}, but the rank has {} slots", o.dst, num_slots);
    if (flags & kOpHasCol) {
      o.matrix_col = rd.u32("matrix column");
      if (o.matrix_col >= spec.matrix.cols)
        rd.wrong("op claims matrix column {}, but the matrix has {} columns", o.matrix_col, spec.matrix.cols);
    }
    read_combo(rd, o.terms, num_slots, f, eb);
  }
}

void check_blob_hash(const uint8_t* data, const RankIndexEntry& e, const std::string& where) {
  if (uint64_t h = XXH3_64bits(data, e.length); h != e.hash)
    damaged(e.offset, where,
            fmt::format("rank blob does not match its hash (index says {:016x}, computed {:016x})", e.hash, h));
}

}  // namespace

namespace format {

Program read_blob(const uint8_t* data, const RankIndexEntry& e, Rank r, const Spec& spec, uint32_t num_steps) {
  const std::string where = fmt::format("rank {}", r);
  check_blob_hash(data, e, where);
  Reader rd(data, e.length, e.offset, where);
  Program prog;
  prog.rank = r;
  const uint32_t nsteps = read_blob_head(rd, r, num_steps, prog.num_slots, prog.inputs, prog.outputs);
  StepNo prev = 0;
  for (uint32_t i = 0; i < nsteps; ++i) {
    read_step(rd, prog.steps.emplace_back(), prev, prog.num_slots, spec, num_steps);
    prev = prog.steps.back().t;
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

}  // namespace format

// ─── Step by step (binary.h, StepCursor) ────────────────────────────────────

namespace {

// Where the next step record starts: peeks its step number (the record's
// first field) so that a caller can schedule ranks without decoding.
void peek_next(const uint8_t* blob, const RankIndexEntry& e, StepCursor& c) {
  c.next_t = 0;
  if (c.steps_left == 0) return;
  if (e.length - c.pos < 4)
    damaged(e.offset + c.pos, fmt::format("rank {}", c.rank), "truncated: step number needs 4 bytes");
  c.next_t = get_u32(blob + c.pos);
}

}  // namespace

StepCursor open_steps(const uint8_t* file, const PlanHeader& h, Rank r, std::vector<SlotId>* inputs,
                      std::vector<SlotId>* outputs) {
  COLLPLAN_ASSERT(r < h.index.size() && !h.only_rank, "open_steps: rank not in a whole plan's index");
  const RankIndexEntry& e = h.index[r];
  Reader rd(file + e.offset, e.length, e.offset, fmt::format("rank {}", r));
  StepCursor c;
  c.rank = r;
  std::vector<SlotId> in, out;
  c.steps_left = read_blob_head(rd, r, h.num_steps, c.num_slots, inputs ? *inputs : in, outputs ? *outputs : out);
  c.pos = rd.offset() - e.offset;
  peek_next(file + e.offset, e, c);
  return c;
}

void read_step_at(const uint8_t* file, const PlanHeader& h, StepCursor& c, Step& st, bool advance) {
  COLLPLAN_ASSERT(c.steps_left > 0, "read_step_at: no step record left");
  const RankIndexEntry& e = h.index[c.rank];
  Reader rd(file + e.offset + c.pos, e.length - c.pos, e.offset + c.pos, fmt::format("rank {}", c.rank));
  read_step(rd, st, c.prev, c.num_slots, h.spec, h.num_steps);
  if (!advance) return;
  c.pos += rd.offset() - (e.offset + c.pos);
  c.prev = st.t;
  --c.steps_left;
  if (c.steps_left == 0 && c.pos != e.length)
    damaged(e.offset + c.pos, fmt::format("rank {}", c.rank),
            fmt::format("{} unread bytes at the end of the rank blob", e.length - c.pos));
  peek_next(file + e.offset, e, c);
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

}  // namespace collplan::ir
