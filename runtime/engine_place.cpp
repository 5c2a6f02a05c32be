// Where every value lives, decided once at construction: which messages are
// handed to the transport straight from / into the slots (zero copy), which
// slots live in the caller's buffers, and the order of the arena's rows.
#include <algorithm>
#include <limits>

#include "ir/slot_layout.h"
#include "runtime/engine_internal.h"

namespace collplan::rt {

namespace {

using Impl = Engine::Impl;

// Virtual time of an access, for the zero-copy hazard analysis: within step
// t the phases are payload evaluation, posting, waiting, scattering staged
// receives, ops.
enum Phase : uint64_t { kEval = 0, kPost = 1, kWait = 2, kScatter = 3, kOps = 4 };
constexpr uint64_t tm(uint64_t t, Phase ph) { return t * 8 + ph; }
constexpr uint64_t step_of(uint64_t time) { return time / 8; }

struct Access {
  uint64_t lo, hi;  // closed interval of virtual time
  bool write;
  int64_t owner;    // receive index for receive writes, -1 otherwise

  bool overlaps(uint64_t from, uint64_t to) const { return lo <= to && from <= hi; }
};

// Every access of every slot, each at its virtual time: inputs are written
// before step 1, outputs read after the last step, receives write their
// slots when they are scattered.
std::vector<std::vector<Access>> slot_accesses(const ir::Program& prog, const Impl::Lowering& lw, uint32_t num_steps) {
  std::vector<std::vector<Access>> acc(prog.num_slots);
  const uint64_t t_end = tm(static_cast<uint64_t>(num_steps) + 1, kEval);
  for (uint32_t s : prog.inputs) acc[s].push_back({0, 0, true, -1});
  for (uint32_t s : prog.outputs) acc[s].push_back({t_end, t_end, false, -1});
  for (const ir::Step& st : prog.steps) {
    for (const ir::Send& s : st.sends)
      for (const ir::Combo& c : s.payload)
        for (const ir::Term& term : c.terms) acc[term.slot].push_back({tm(st.t, kEval), tm(st.t, kEval), false, -1});
    for (const ir::Op& o : st.ops) {
      for (const ir::Term& term : o.terms) acc[term.slot].push_back({tm(st.t, kOps), tm(st.t, kOps), false, -1});
      acc[o.dst].push_back({tm(st.t, kOps), tm(st.t, kOps), true, -1});
    }
  }
  for (size_t i = 0; i < lw.recvs.size(); ++i)
    for (uint32_t s : lw.recvs[i].recv->into)
      acc[s].push_back({tm(lw.recvs[i].due, kScatter), tm(lw.recvs[i].due, kScatter), true, static_cast<int64_t>(i)});
  return acc;
}

// A direct message need not be adjacent rows (it is handed over in pieces,
// or gathered at run time); a receive must not name a slot twice, since its
// pieces would then overlap.
bool distinct(std::span<const uint32_t> v) {
  std::vector<uint32_t> w(v.begin(), v.end());
  std::sort(w.begin(), w.end());
  return !v.empty() && std::adjacent_find(w.begin(), w.end()) == w.end();
}

bool consecutive(std::span<const uint32_t> v) {
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] != v[0] + i) return false;
  return !v.empty();
}

}  // namespace

// The slots a payload consists of when every element is one slot with
// coefficient 1 (it can then be sent from the slots themselves); else none.
std::vector<uint32_t> Engine::Impl::plain_slots(const ir::Send& s) {
  std::vector<uint32_t> slots;
  for (const ir::Combo& c : s.payload) {
    if (c.terms.size() != 1 || c.terms[0].coeff != 1) return {};
    slots.push_back(c.terms[0].slot);
  }
  return slots;
}

// An asynchronous access (a message the transport may read or write between
// posting and completion) is allowed only if nothing conflicting touches the
// same slot inside its interval. Receives are decided first, in program
// order: a direct receive's writes then span its whole interval, which the
// later decisions see.
void Engine::Impl::choose_direct_messages(const ir::Program& prog, Lowering& lw) const {
  lw.recv_direct.assign(lw.recvs.size(), 0);
  lw.send_direct.assign(lw.sends.size(), 0);
  if (!opt.zero_copy) return;
  std::vector<std::vector<Access>> acc = slot_accesses(prog, lw, num_steps);
  for (size_t i = 0; i < lw.recvs.size(); ++i) {
    const ir::Recv& r = *lw.recvs[i].recv;
    if (!distinct(r.into)) continue;
    const int64_t owner = static_cast<int64_t>(i);
    const uint64_t lo = tm(r.sent_at, kPost), hi = tm(lw.recvs[i].due, kScatter);
    bool ok = true;
    for (uint32_t s : r.into)
      for (const Access& a : acc[s])
        if (a.owner != owner && a.overlaps(lo, hi)) ok = false;
    if (!ok) continue;
    lw.recv_direct[i] = 1;
    for (uint32_t s : r.into)
      for (Access& a : acc[s])
        if (a.owner == owner) a.lo = lo;
  }
  // A direct send also notes its slots' first write after its window: the
  // step it must complete by if it does not complete when due (late_step).
  lw.send_next_write.assign(lw.sends.size(), 0);
  for (size_t i = 0; i < lw.sends.size(); ++i) {
    const std::vector<uint32_t> slots = plain_slots(*lw.sends[i].send);
    if (slots.empty()) continue;
    const uint64_t due = lw.sends[i].t + lambda - 1;
    const uint64_t lo = tm(lw.sends[i].t, kPost), hi = tm(due, kWait);
    bool ok = true;
    uint64_t next = std::numeric_limits<uint64_t>::max();
    for (uint32_t sl : slots)
      for (const Access& a : acc[sl])
        if (a.write && a.overlaps(lo, hi)) ok = false;
        else if (a.write && a.lo > hi) next = std::min(next, a.lo);
    lw.send_direct[i] = ok;
    if (next == std::numeric_limits<uint64_t>::max()) continue;  // never written again
    const uint64_t step = step_of(next);
    lw.send_next_write[i] = step <= due ? Lowering::kSameStep : static_cast<ir::StepNo>(step);
  }
}

// With zero copy, slots live in the caller's buffers where ir::caller_homes
// says (the rule emitted C++ follows too); other slots in the arena.
void Engine::Impl::choose_homes(const ir::Program& prog, Lowering& lw) const {
  static_assert(ir::kNoHome == kNone, "one marker for a slot in the arena");
  if (opt.zero_copy) lw.home = ir::caller_homes(prog);
  else lw.home.assign(num_slots, kNone);
}

// A direct message whose rows are not surely one buffer (consecutive arena
// rows) gets fallback staging rows, used when the caller's buffers split it
// into more pieces than the transport takes.
void Engine::Impl::mark_fallbacks(Lowering& lw) const {
  auto arena_homed = [&](uint32_t sl) { return lw.home[sl] == kNone; };
  auto surely_contiguous = [&](std::span<const uint32_t> v) {
    return v.size() == 1 || (consecutive(v) && std::all_of(v.begin(), v.end(), arena_homed));
  };
  lw.send_fallback.assign(lw.sends.size(), 0);
  lw.recv_fallback.assign(lw.recvs.size(), 0);
  for (size_t i = 0; i < lw.sends.size(); ++i)
    if (lw.send_direct[i]) lw.send_fallback[i] = !surely_contiguous(plain_slots(*lw.sends[i].send));
  for (size_t i = 0; i < lw.recvs.size(); ++i)
    if (lw.recv_direct[i]) lw.recv_fallback[i] = !surely_contiguous(lw.recvs[i].recv->into);
}

namespace {

// Units of the staging banks from `next` on: bank b serves the messages sent
// in steps ≡ b (mod λ), staged ones and the run-time fallbacks of direct
// ones, and is as large as the largest step using it. Send banks first.
void lay_out_banks(Impl::Lowering& lw, uint32_t lambda, uint32_t num_steps, uint64_t& next) {
  std::vector<uint64_t> send_need(static_cast<size_t>(num_steps) + 1, 0), recv_need(send_need.size(), 0);
  for (size_t i = 0; i < lw.sends.size(); ++i)
    if (!lw.send_direct[i] || lw.send_fallback[i]) send_need[lw.sends[i].t] += lw.sends[i].send->payload.size();
  for (size_t i = 0; i < lw.recvs.size(); ++i)
    if (!lw.recv_direct[i] || lw.recv_fallback[i]) recv_need[lw.recvs[i].recv->sent_at] += lw.recvs[i].recv->into.size();
  std::vector<uint64_t> send_size(lambda, 0), recv_size(lambda, 0);
  for (uint32_t t = 1; t <= num_steps; ++t) {
    send_size[t % lambda] = std::max(send_size[t % lambda], send_need[t]);
    recv_size[t % lambda] = std::max(recv_size[t % lambda], recv_need[t]);
  }
  lw.send_bank.resize(lambda);
  lw.recv_bank.resize(lambda);
  for (uint32_t b = 0; b < lambda; ++b) lw.send_bank[b] = next, next += send_size[b];
  for (uint32_t b = 0; b < lambda; ++b) lw.recv_bank[b] = next, next += recv_size[b];
}

// An op needs the scratch row when its dst is read after being written.
bool needs_scratch(const ir::Program& prog) {
  for (const ir::Step& st : prog.steps)
    for (const ir::Op& o : st.ops)
      if (Impl::dst_use(Impl::nonzero(o.terms), o.dst) == Impl::DstUse::elsewhere) return true;
  return false;
}

// The most terms of any combination: one wider than a dot call is split,
// and needs the dot scratch rows.
size_t max_terms(const ir::Program& prog) {
  size_t m = 0;
  for (const ir::Step& st : prog.steps) {
    for (const ir::Send& s : st.sends)
      for (const ir::Combo& c : s.payload) m = std::max(m, c.terms.size());
    for (const ir::Op& o : st.ops) m = std::max(m, o.terms.size());
  }
  return m;
}

}  // namespace

// Units in order: slots, send staging banks, receive staging banks, scratch
// rows. Then arena rows for the units that are not aliases of the caller's
// buffers, in unit order (so consecutive arena units stay adjacent); slot
// rows come first, since prepare() zeroes them.
void Engine::Impl::lay_out_arena(const ir::Program& prog, Lowering& lw) {
  uint64_t next = num_slots;
  lay_out_banks(lw, lambda, num_steps, next);
  scratch_unit = static_cast<uint32_t>(next);
  next += needs_scratch(prog);
  dot_scratch_unit = static_cast<uint32_t>(next);
  dot_scratch_rows = opt.use_dot && max_terms(prog) > kDotMaxSources ? static_cast<uint32_t>(kDotMaxRows) : 0;
  next += dot_scratch_rows;
  if (next > std::numeric_limits<uint32_t>::max())
    user_error("rank {}: the program needs {} arena rows, more than the runtime supports (2^32 - 1)", rank, next);
  units = static_cast<uint32_t>(next);

  alias.assign(units, kNone);
  arena_row.assign(units, kNone);
  arena_rows = 0;
  for (uint32_t u = 0; u < units; ++u) {
    if (u < num_slots && lw.home[u] != kNone) {
      alias[u] = units + lw.home[u];
      continue;
    }
    arena_row[u] = arena_rows++;
    if (u < num_slots) zeroed_rows = arena_rows;
  }
  if (static_cast<uint64_t>(units) + inputs.size() + outputs.size() > std::numeric_limits<uint32_t>::max())
    user_error("rank {}: the program needs more rows than the runtime supports (2^32 - 1)", rank);
}

}  // namespace collplan::rt
