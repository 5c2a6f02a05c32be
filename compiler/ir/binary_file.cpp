// Plan files on disk: whole reads, the head and one rank's blob read alone,
// and writes through a temporary file (binary.h).
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "ir/binary_format.h"

namespace collplan::ir {

using namespace format;

namespace {

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


void write_rank_local(const RankPlan& rp, const std::string& path) { write_bytes(encode_rank_local_image(rp), path); }

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

}  // namespace collplan::ir
