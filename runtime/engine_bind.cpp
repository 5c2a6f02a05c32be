// Rows turned into addresses: the arena (prepare), then the caller's buffers
// and the transport's message descriptors (bind), redone only when ℓ, the
// buffer pointers or the transport's max_pieces() change.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <new>

#include "runtime/engine_internal.h"

namespace collplan::rt {

size_t Engine::arena_bytes(size_t len) const {
  size_t row = 0, total = 0;
  // No object is larger than PTRDIFF_MAX bytes (and prepare() rounds the
  // arena up to 64 bytes): a vector or an arena past that is refused here,
  // not left to the allocator.
  constexpr size_t kLargest = static_cast<size_t>(PTRDIFF_MAX) - 63;
  if (__builtin_mul_overflow(len, impl_->eb, &row) ||
      __builtin_mul_overflow(row, size_t{impl_->arena_rows}, &total) || row > kLargest || total > kLargest)
    user_error("rank {}: vectors of {} elements need an arena larger than the address space", impl_->rank, len);
  return total;
}

void Engine::prepare(size_t len) {
  Impl& m = *impl_;
  if (len == 0) user_error("vector length len = 0 is invalid: len >= 1 elements");
  if (len == m.len && m.arena) return;
  const size_t bytes = arena_bytes(len);
  // 64-byte aligned base: rows themselves are packed, but the first row and
  // every large row start well aligned for the SIMD kernels.
  const size_t alloc = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void* a = std::aligned_alloc(64, alloc);
  if (!a) throw std::bad_alloc();
  // Unwritten slots read as zero, deterministically. Staging and scratch rows
  // are always written before they are read: left untouched, the pages of
  // fallback staging that a run never uses are never faulted in.
  std::memset(a, 0, static_cast<size_t>(m.zeroed_rows) * len * m.eb);
  std::free(m.arena);
  m.arena = static_cast<std::byte*>(a);
  m.arena_size = bytes;
  m.len = len;
  m.row = len * m.eb;
  m.bound = false;  // every address changes
}

// Rebinding costs O(messages); the common case, a persistent collective
// called on the same buffers, compares pointers only.
void Engine::Impl::bind_if_changed(const void* const* in, void* const* out, uint32_t max_pieces) {
  if (!bound || max_pieces != bound_pieces || !std::equal(in, in + inputs.size(), bound_in.begin()) ||
      !std::equal(out, out + outputs.size(), bound_out.begin()))
    bind(in, out, max_pieces);
}

// Resolves every unit's address for the caller's buffers `in`, `out` and a
// transport taking up to `max_pieces` pieces per message.
void Engine::Impl::bind(const void* const* in, void* const* out, uint32_t max_pieces) {
  bound_in.assign(in, in + inputs.size());
  bound_out.assign(out, out + outputs.size());
  bound_pieces = max_pieces;
  choose_private_copies();
  resolve_addresses();

  // Messages: one buffer, a list of pieces the transport takes, or (more
  // pieces than it takes) the fallback staging rows.
  send_pieces.clear();
  recv_pieces.clear();
  send_pieces.reserve(msg_units.size());  // no reallocation below: descriptors point into it
  recv_pieces.reserve(msg_units.size());
  stats.split_messages = stats.gathered_messages = 0;
  send_desc.resize(sends.size());
  gather.assign(sends.size(), 0);
  for (size_t i = 0; i < sends.size(); ++i) {
    const SendPlan& s = sends[i];
    send_desc[i] = SendDesc{s.port, s.to, s.step, nullptr, static_cast<size_t>(s.count) * row};
    gather[i] = locate(s, max_pieces, send_desc[i], send_pieces);
  }
  recv_desc.resize(recvs.size());
  scatter.assign(recvs.size(), 0);
  for (size_t i = 0; i < recvs.size(); ++i) {
    const RecvPlan& r = recvs[i];
    recv_desc[i] = RecvDesc{r.port, r.from, r.sent_at, nullptr, static_cast<size_t>(r.count) * row};
    scatter[i] = locate(r, max_pieces, recv_desc[i], recv_pieces);
  }
  bound = true;
}

// Overlapping caller buffers: outputs that overlap each other are produced
// privately and copied out in order after the last step; otherwise inputs
// that overlap an output are copied privately before step 1. Both reproduce
// "read every input before step 1, write the outputs in order after the
// last step".
void Engine::Impl::choose_private_copies() {
  std::vector<std::pair<uintptr_t, uintptr_t>> o;  // [begin, end) sorted
  for (void* p : bound_out) o.emplace_back(reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + row);
  std::sort(o.begin(), o.end());
  priv_outputs = false;
  for (size_t j = 1; j < o.size(); ++j) priv_outputs |= o[j].first < o[j - 1].second;
  // With no slot in a caller's buffer every input is read before step 1 and
  // every output written after the last step anyway.
  if (stats.inputs_in_place + stats.outputs_in_place == 0) priv_outputs = false;
  priv_inputs = false;
  if (!priv_outputs && stats.inputs_in_place + stats.outputs_in_place > 0)
    for (const void* p : bound_in) {
      const uintptr_t b = reinterpret_cast<uintptr_t>(p), e = b + row;
      // The first output starting at or after e cannot overlap; the one
      // before it is the only candidate (outputs are disjoint here).
      auto it = std::lower_bound(o.begin(), o.end(), std::make_pair(e, uintptr_t{0}));
      if (it != o.begin() && std::prev(it)->second > b) priv_inputs = true;
    }
  const size_t need = (priv_outputs ? outputs.size() : priv_inputs ? inputs.size() : 0) * row;
  if (need > priv_size) {
    void* a = std::aligned_alloc(64, (need + 63) / 64 * 64);
    if (!a) throw std::bad_alloc();
    std::free(priv);
    priv = static_cast<std::byte*>(a);
    priv_size = need;
  }
}

// Every unit's address (the caller's buffers or their private copies, then
// the layout's units), and the dot calls' pointer arrays.
void Engine::Impl::resolve_addresses() {
  const uint32_t n_in = static_cast<uint32_t>(inputs.size()), n_out = static_cast<uint32_t>(outputs.size());
  rp.resize(static_cast<size_t>(units) + n_in + n_out);
  for (uint32_t i = 0; i < n_in; ++i)
    rp[units + i] = priv_inputs ? priv + static_cast<size_t>(i) * row
                                : static_cast<std::byte*>(const_cast<void*>(bound_in[i]));
  for (uint32_t j = 0; j < n_out; ++j)
    rp[units + n_in + j] = priv_outputs ? priv + static_cast<size_t>(j) * row : static_cast<std::byte*>(bound_out[j]);
  for (uint32_t u = 0; u < units; ++u)
    rp[u] = alias[u] != kNone ? rp[alias[u]] : arena + static_cast<size_t>(arena_row[u]) * row;

  ptrs.clear();
  for (DotCall& dc : dots) {
    dc.ptr_off = static_cast<uint32_t>(ptrs.size());
    for (uint32_t u : dc.src_units) ptrs.push_back(at(u));
    for (uint32_t u : dc.dst_units) ptrs.push_back(at(u));
  }
  for (Instr& ins : instrs)
    if (ins.code == Code::dot) ins.src = dots[ins.tab].ptr_off;
}

// Pieces of the direct message whose rows are msg_units[off, off+count):
// runs of rows adjacent in memory merged. Returns how many; appends them.
template <class Piece>
uint32_t Engine::Impl::pieces_of(uint32_t off, uint32_t count, std::vector<Piece>& out) const {
  uint32_t n = 0;
  std::byte* end = nullptr;
  for (uint32_t e = 0; e < count; ++e) {
    std::byte* p = at(msg_units[off + e]);
    if (n > 0 && p == end) {
      out.back().bytes += row;
    } else {
      out.push_back(Piece{p, row});
      ++n;
    }
    end = p + row;
  }
  return n;
}

// Points the descriptor `d` (a SendDesc or RecvDesc) at message `msg`: its
// staging rows; or, direct, its rows as one buffer, as a list of pieces
// (appended to `pieces`) when the transport takes that many, else its
// fallback staging rows. Returns true in the last case: the round loop must
// then gather a send into, or scatter a receive from, the fallback rows.
template <class Desc, class Piece>
bool Engine::Impl::locate(const MessageRows& msg, uint32_t max_pieces, Desc& d, std::vector<Piece>& pieces) {
  if (!msg.direct) {
    // An empty staged message may sit past the last row: no row to name.
    d.data = msg.count ? at(msg.unit) : arena;
    return false;
  }
  const size_t first = pieces.size();
  const uint32_t n = pieces_of(msg.unit, msg.count, pieces);
  d.data = pieces[first].data;
  if (n == 1) {
    pieces.resize(first);
    return false;
  }
  if (n <= max_pieces) {
    d.pieces = pieces.data() + first;
    d.num_pieces = n;
    ++stats.split_messages;
    return false;
  }
  COLLPLAN_ASSERT(msg.fallback != kNone, "a split message without fallback staging");
  pieces.resize(first);
  d.data = at(msg.fallback);
  ++stats.gathered_messages;
  return true;
}

}  // namespace collplan::rt
