// The .cplan encoder: the grammar of binary.h and docs/plan-format.md,
// field by field in the same order as binary_read.cpp decodes it.
#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <span>

#include "ir/binary_format.h"

namespace collplan::ir {

using namespace format;

namespace {

// Appends a rank's blob through a raw cursor into a byte vector that grows
// by doubling; the destructor cuts the vector to the bytes written. The
// blobs are nearly all of a plan file (hundreds of MiB at K = 4096), and a
// capacity check and size update per byte (Writer) was most of their
// encoding. Only this writer may touch the vector while it lives.
class BlobWriter {
 public:
  explicit BlobWriter(std::vector<uint8_t>& b) : b_(b), n_(b.size()) {}
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;
  ~BlobWriter() { b_.resize(n_); }
  void u8(uint8_t v) { *room(1) = v; }
  void u32(uint32_t v) {
    uint8_t* p = room(4);
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
  void elem(Elem v, uint32_t width) {
    // Truncating a coefficient would silently change the plan's meaning.
    COLLPLAN_ASSERT(width == 4 || (v >> (8 * width)) == 0,
                    fmt::format("coefficient {} does not fit a {}-byte field element", v, width));
    uint8_t* p = room(width);
    for (uint32_t i = 0; i < width; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
  }

 private:
  uint8_t* room(size_t k) {
    if (b_.size() - n_ < k) b_.resize(std::max<size_t>(2 * b_.size(), n_ + k + 4096));
    uint8_t* p = b_.data() + n_;
    n_ += k;
    return p;
  }
  std::vector<uint8_t>& b_;
  size_t n_;
};

void write_combo(BlobWriter& w, std::span<const Term> terms, uint32_t eb) {
  const uint64_t n = terms.size();
  if (n == 1 && terms[0].coeff == 1) {  // a copy, most combinations: the unit encoding is the shortest
    w.u8(kComboUnit);
    w.u32(terms[0].slot);
    return;
  }
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

template <class W>
void write_slots(W& w, std::span<const SlotId> slots) {
  w.u32(static_cast<uint32_t>(slots.size()));
  for (SlotId s : slots) w.u32(s);
}

void write_blob(std::vector<uint8_t>& out, const Program& prog, uint32_t eb) {
  BlobWriter w{out};
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
  const bool repair = s.op == OpKind::Repair || s.op == OpKind::Decode;
  w.u16((s.exclusive ? 1 : 0) | (repair ? 2 : 0));  // spec flags
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
  if (repair) {  // flag bit 1: the lost, helper and receiver lists follow
    write_slots(w, s.lost);
    write_slots(w, s.helpers);
    write_slots(w, s.to);
  }
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

}  // namespace

namespace format {

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

}  // namespace format

namespace {

// The head (preamble, header, index) is built in one buffer: the preamble
// and the header first, room for `entries` index entries after them, which
// the caller fills in place (put_index_entry), then sealed (seal_head) once
// the file's size is known. At K = 65536 the index is 1.5 MiB; building it
// apart and copying it into the head held it twice at the writer's peak.
std::vector<uint8_t> start_head(uint32_t num_ranks, const std::vector<uint8_t>& header, uint64_t entries) {
  std::vector<uint8_t> head;
  head.reserve(kPreambleSize + header.size() + kIndexEntrySize * entries);
  Writer w{head};
  head.insert(head.end(), std::begin(kMagic), std::end(kMagic));
  w.u32(kBinaryVersion);
  w.u32(0);                        // flags, written by seal_head
  head.insert(head.end(), 16, 0);  // content hash, likewise
  w.u64(0);                        // file size, likewise
  w.u32(static_cast<uint32_t>(header.size()));
  w.u32(num_ranks);
  head.insert(head.end(), header.begin(), header.end());
  head.resize(head.size() + kIndexEntrySize * entries, 0);
  return head;
}

void put_index_entry(std::vector<uint8_t>& head, size_t header_size, uint64_t k, const RankIndexEntry& e) {
  const size_t at = kPreambleSize + header_size + static_cast<size_t>(kIndexEntrySize * k);
  put_u64_at(head, at, e.offset);
  put_u64_at(head, at + 8, e.length);
  put_u64_at(head, at + 16, e.hash);
}

// Flags and file size written, then the content hash over everything else.
void seal_head(std::vector<uint8_t>& head, uint32_t flags, uint64_t file_size) {
  for (int i = 0; i < 4; ++i) head[kFlagsOffset + i] = static_cast<uint8_t>(flags >> (8 * i));
  put_u64_at(head, kHashOffset + 16, file_size);
  const Digest h = content_hash_of(head.data(), head.size());
  std::copy(h.bytes.begin(), h.bytes.end(), head.begin() + kHashOffset);
}

}  // namespace

// Rank blobs one at a time into a scratch buffer, each handed to `blob` with
// its offset in the file and dropped; the head last, once every blob's
// length and hash are known.
std::vector<uint8_t> format::encode_plan(const Plan& plan, const BlobSink& blob) {
  const Spec& spec = plan.spec;
  const uint32_t R = num_ranks(spec);  // N for decentralized-encode
  COLLPLAN_ASSERT(plan.ranks.size() == R, fmt::format("plan has {} programs for {} ranks", plan.ranks.size(), R));
  const uint32_t eb = spec.field.elem_bytes();

  std::vector<uint8_t> header;
  Writer hw{header};
  write_spec(hw, spec, plan.num_steps);
  COLLPLAN_ASSERT(header.size() <= UINT32_MAX, "plan header larger than 4 GiB");

  std::vector<uint8_t> head = start_head(R, header, R);
  std::vector<uint8_t> scratch;
  uint64_t offset = head.size();
  for (uint32_t k = 0; k < R; ++k) {
    const Program& prog = plan.ranks[k];
    COLLPLAN_ASSERT(prog.rank == k, fmt::format("ranks[{}] holds the program of rank {}", k, prog.rank));
    scratch.clear();
    write_blob(scratch, prog, eb);
    put_index_entry(head, header.size(), k,
                    RankIndexEntry{offset, scratch.size(), XXH3_64bits(scratch.data(), scratch.size())});
    if (blob) blob(offset, scratch.data(), scratch.size());
    offset += scratch.size();
  }
  seal_head(head, 0, offset);
  return head;
}

// A rank-local file (RankPlan): the spec header, one index entry and the
// rank's blob, appended to the head.
std::vector<uint8_t> format::encode_rank_local_image(const RankPlan& rp) {
  const Spec& spec = rp.spec;
  COLLPLAN_ASSERT(rp.program.rank < num_ranks(spec),
                  fmt::format("rank-local program of rank {} for {} ranks", rp.program.rank, num_ranks(spec)));
  std::vector<uint8_t> header;
  Writer hw{header};
  write_spec(hw, spec, rp.num_steps);
  COLLPLAN_ASSERT(header.size() <= UINT32_MAX, "plan header larger than 4 GiB");
  std::vector<uint8_t> blob;
  write_blob(blob, rp.program, spec.field.elem_bytes());
  std::vector<uint8_t> out = start_head(num_ranks(spec), header, 1);
  const uint64_t head_size = out.size();
  put_index_entry(out, header.size(), 0, RankIndexEntry{head_size, blob.size(), XXH3_64bits(blob.data(), blob.size())});
  seal_head(out, kFlagSingleRank | kFlagRankLocal, head_size + blob.size());
  out.insert(out.end(), blob.begin(), blob.end());
  return out;
}


// The blobs land after room for the head, which is copied in last: the
// image is built in place, never copied whole.
std::vector<uint8_t> encode_binary(const Plan& plan) {
  std::vector<uint8_t> out;
  const std::vector<uint8_t> head = encode_plan(plan, [&](uint64_t offset, const uint8_t* data, size_t n) {
    out.resize(static_cast<size_t>(offset));
    out.insert(out.end(), data, data + n);
  });
  if (out.size() < head.size()) out.resize(head.size());
  std::copy(head.begin(), head.end(), out.begin());
  return out;
}

Digest format::head_digest(const std::vector<uint8_t>& head) {
  Digest d;
  std::copy(head.begin() + kHashOffset, head.begin() + kHashOffset + 16, d.bytes.begin());
  return d;
}

Digest plan_digest(const Plan& plan) { return head_digest(encode_plan(plan, nullptr)); }

std::vector<uint8_t> encode_rank_local(const RankPlan& rp) { return encode_rank_local_image(rp); }

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
