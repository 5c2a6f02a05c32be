// Plan files on disk: whole reads, the head and one rank's blob read alone,
// and writes through a temporary file (binary.h).
#include <sys/mman.h>

#include "ir/binary_format.h"
#include "support/limits.h"
#include "support/safe_file.h"

namespace collplan::ir {

using namespace format;

namespace {

constexpr const char* kWhat = "plan file";

// A regular file of at most kMaxPlanFileBytes (support/safe_file.h).
files::InputFile open_for_reading(const std::string& path) {
  return files::InputFile(path, kWhat, kMaxPlanFileBytes);
}

// Reads and checks the head (preamble, header, index) of an open file.
Head read_head_from(const files::InputFile& f, std::vector<uint8_t>& head) {
  const uint64_t size = f.size();
  head.resize(static_cast<size_t>(std::min<uint64_t>(size, kPreambleSize)));
  f.read_at(0, head.data(), head.size());
  Preamble pre = parse_preamble(head.data(), head.size(), size);
  head.resize(static_cast<size_t>(pre.head_size));
  f.read_at(0, head.data(), head.size());
  Head h = parse_head(head.data(), pre);
  if (h.single_rank) {
    uint8_t first4[4] = {};
    const size_t avail = static_cast<size_t>(std::min<uint64_t>(4, size - h.head_size));
    f.read_at(h.head_size, first4, avail);
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

// Through a temporary renamed into place (support/safe_file.h).
void write_bytes(const std::vector<uint8_t>& bytes, const std::string& path) {
  files::OutputFile f(path, kWhat);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

}  // namespace

// Blobs are written as they are encoded, in batches, after room left for
// the head, which is written last (its index needs every blob's length and
// hash): the file's image is never held whole beside the plan. A FIFO or a
// character device is written in order, so the blobs are gathered first.
Digest write_binary(const Plan& plan, const std::string& path) {
  files::OutputFile f(path, kWhat);
  std::vector<uint8_t> head;
  if (f.seekable()) {
    // Reserved once and never grown: growing it by doubling held the old
    // block beside one twice its size, 12 MiB at the compile's peak. Half a
    // MiB per write is few system calls (about 420 for an allgather plan of
    // 210 MiB) and little beside the plan (a 4 MiB batch was more than half
    // the size of a broadcast plan of 65536 ranks, 7.3 MiB).
    constexpr size_t kBatch = size_t{512} << 10;
    std::vector<uint8_t> batch;
    batch.reserve(kBatch);
    uint64_t batch_at = 0;
    auto flush = [&] {
      f.write_at(batch_at, batch.data(), batch.size());
      batch.clear();
    };
    head = encode_plan(plan, [&](uint64_t offset, const uint8_t* data, size_t n) {
      if (batch.size() + n > kBatch && !batch.empty()) flush();
      if (n >= kBatch) return f.write_at(offset, data, n);  // a blob as large as a batch goes out alone
      if (batch.empty()) batch_at = offset;
      batch.insert(batch.end(), data, data + n);  // blobs are contiguous
    });
    if (!batch.empty()) flush();
    f.write_at(0, head.data(), head.size());
  } else {
    std::vector<uint8_t> body;
    head = encode_plan(plan, [&](uint64_t, const uint8_t* data, size_t n) { body.insert(body.end(), data, data + n); });
    f.write(head.data(), head.size());
    f.write(body.data(), body.size());
  }
  f.commit();
  return head_digest(head);
}


void write_rank_local(const RankPlan& rp, const std::string& path) { write_bytes(encode_rank_local_image(rp), path); }

void extract_rank(const std::string& in, Rank r, const std::string& out) {
  const files::InputFile f = open_for_reading(in);
  std::vector<uint8_t> bytes(static_cast<size_t>(f.size()));
  f.read_at(0, bytes.data(), bytes.size());
  write_bytes(with_path(in, [&] { return extract_rank_image(bytes.data(), bytes.size(), r); }), out);
}

Plan read_binary(const std::string& path) {
  const files::InputFile f = open_for_reading(path);
  std::vector<uint8_t> bytes(static_cast<size_t>(f.size()));
  f.read_at(0, bytes.data(), bytes.size());
  return with_path(path, [&] { return decode_binary(bytes.data(), bytes.size()); });
}

PlanHeader read_header(const std::string& path) {
  const files::InputFile f = open_for_reading(path);
  std::vector<uint8_t> head;
  return with_path(path, [&] { return read_head_from(f, head).h; });
}

Program read_rank(const std::string& path, Rank r, PlanHeader* header_out) {
  const files::InputFile f = open_for_reading(path);
  return with_path(path, [&] {
    std::vector<uint8_t> head_bytes;
    Head head = read_head_from(f, head_bytes);
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
    f.read_at(e.offset, blob.data(), blob.size());
    Program prog = read_blob(blob.data(), e, r, spec, head.h.num_steps);
    if (header_out) *header_out = std::move(head.h);
    return prog;
  });
}

MappedPlan::MappedPlan(const std::string& path) : path_(path) {
  const files::InputFile f = open_for_reading(path);
  size_ = f.size();
  if (size_ == 0) user_error("{}: damaged plan file at byte 0: not a collplan binary plan (the file is empty)", path);
  void* p = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, f.fd(), 0);
  if (p == MAP_FAILED) user_error("cannot map plan file '{}' into memory: {}", path, std::strerror(errno));
  data_ = static_cast<const uint8_t*>(p);
  try {
    with_path(path, [&] {
      Preamble pre = parse_preamble(data_, static_cast<size_t>(size_), size_);
      Head head = parse_head(data_, pre);
      if (head.single_rank) {
        RankIndexEntry e;
        const Rank r = single_rank_entry(head, data_ + head.head_size, static_cast<size_t>(size_ - head.head_size),
                                         size_, &e);
        user_error("this file holds only rank {}'s program of a {}-rank plan; a single-rank file is checked "
                   "without --streaming",
                   r, num_ranks(head.h.spec));
      }
      header_ = std::move(head.h);
    });
  } catch (...) {
    ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
    throw;
  }
}

MappedPlan::~MappedPlan() { ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_)); }

Program MappedPlan::rank(Rank r) const {
  COLLPLAN_ASSERT(r < header_.index.size(), "MappedPlan::rank: rank out of range");
  const RankIndexEntry& e = header_.index[r];
  return with_path(path_, [&] { return read_blob(data_ + e.offset, e, r, header_.spec, header_.num_steps); });
}

StepCursor MappedPlan::open(Rank r, std::vector<SlotId>* inputs, std::vector<SlotId>* outputs) const {
  return with_path(path_, [&] { return open_steps(data_, header_, r, inputs, outputs); });
}

void MappedPlan::read_step(StepCursor& c, Step& st, bool advance) const {
  with_path(path_, [&] { read_step_at(data_, header_, c, st, advance); });
}

}  // namespace collplan::ir
