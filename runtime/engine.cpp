#include "runtime/engine.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <utility>

#include <fmt/format.h>

#include "ir/slot_layout.h"
#include "runtime/gf/gf_kernels.h"

namespace collplan::rt {

namespace {

enum class Code : uint8_t { zero, copy, mul, add, mad, dot };

// One kernel call. Rows ("units") are indices into the arena; the byte
// address is unit · ℓ · elem_bytes, resolved in the loop (a multiply) or, for
// dot's pointer arrays, by prepare().
struct Instr {
  Code code;
  uint32_t tab = 0;  // mul/mad: index into mads; dot: index into dots
  uint32_t src = 0;  // source row; dot: offset of its source pointers in ptrs
  uint32_t dst = 0;  // destination row; dot: offset of its destination pointers
};

struct DotCall {
  gf::DotTables tables;
  std::vector<uint32_t> src_units, dst_units;
  uint32_t ptr_off = 0;  // sources at ptrs[ptr_off..+k), destinations after
};

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// A message is either staged (its `count` elements are consecutive rows from
// `unit` on, in a staging bank) or direct: its elements are the rows
// msg_units[unit .. unit+count), wherever those live. A direct message that
// may turn out split at run time (its rows are not all consecutive arena
// rows) also has `fallback`, `count` staging rows it is gathered into
// (sends) or scattered from (receives) when the transport takes fewer
// pieces than it has.
struct SendPlan {
  ir::Port port = 0;
  ir::Rank to = 0;
  ir::StepNo step = 0;
  uint32_t unit = 0, count = 0;
  uint32_t fallback = kNone;
  ReqId id = 0;
  bool zero_copy = false;
};

struct RecvPlan {
  ir::Port port = 0;
  ir::Rank from = 0;
  ir::StepNo sent_at = 0, due = 0;
  uint32_t unit = 0, count = 0;
  uint32_t fallback = kNone;
  ReqId id = 0;
  bool direct = false;
};

// Everything step t does, as ranges into the flat arrays.
struct StepCode {
  ir::StepNo t = 0;
  uint32_t eval_b = 0, eval_e = 0;    // instrs: payload evaluation
  uint32_t send_b = 0, send_e = 0;    // sends posted in t
  uint32_t rpost_b = 0, rpost_e = 0;  // receives posted in t (messages sent in t)
  uint32_t wait_b = 0, wait_e = 0;    // requests due in t
  uint32_t after_b = 0, after_e = 0;  // instrs: staged receives, then ops
};

// What a waited-for request was, for the error message.
struct WaitRef {
  bool is_send = false;
  uint32_t index = 0;  // into sends / recvs
};

// Virtual time of an access, for the zero-copy hazard analysis: within step
// t the phases are payload evaluation, posting, waiting, scattering staged
// receives, ops.
enum Phase : uint64_t { kEval = 0, kPost = 1, kWait = 2, kScatter = 3, kOps = 4 };
constexpr uint64_t tm(uint64_t t, Phase ph) { return t * 8 + ph; }

struct Access {
  uint64_t lo, hi;  // closed interval of virtual time
  bool write;
  int64_t owner;    // receive index for receive writes, -1 otherwise
};

constexpr size_t kDotMaxSources = 32;  // k per dot call (k + m <= 64: no allocation in the kernel)
constexpr size_t kDotMaxRows = 32;     // m per dot call

}  // namespace

struct Engine::Impl {
  Field field = Field::gf256();
  size_t eb = 1;
  ir::Rank rank = 0;
  uint32_t K = 0, p = 1, lambda = 1, num_steps = 0, num_slots = 0;
  EngineOptions opt;

  std::vector<uint32_t> inputs, outputs;  // slot rows
  // Units: [0, units) are the slots, staging banks and scratch rows of the
  // layout; unit units + i is the caller's input i, units + n_in + j its
  // output j. A slot that lives in a caller's buffer aliases that unit
  // (alias[u] != kNone); every other unit u < units is arena row arena_row[u].
  std::vector<uint32_t> alias, arena_row;
  uint32_t arena_rows = 0, zeroed_rows = 0;  // rows; the first zeroed_rows are zeroed by prepare()
  std::vector<uint32_t> msg_units;           // rows of the direct messages
  uint32_t pro_b = 0, pro_e = 0, epi_b = 0, epi_e = 0;  // instrs before step 1 and after the last step
  std::vector<Instr> instrs;
  std::vector<gf::MadTable> mads;
  std::map<Elem, uint32_t> mad_index;
  std::vector<DotCall> dots;
  std::vector<SendPlan> sends;
  std::vector<RecvPlan> recvs;
  std::vector<ReqId> wait_ids;
  std::vector<WaitRef> wait_refs;
  std::vector<StepCode> steps;
  uint32_t scratch_unit = 0;       // op whose dst is read after being written
  uint32_t dot_scratch_unit = 0;   // partial sums of dot calls split by source
  uint32_t dot_scratch_rows = 0;
  uint32_t units = 0;
  Stats stats;

  // Resolved by prepare() (the arena) and bind() (the caller's buffers).
  size_t len = 0, row = 0;
  std::byte* arena = nullptr;
  size_t arena_size = 0;
  std::vector<std::byte*> rp;  // unit -> address
  std::vector<void*> ptrs;
  std::vector<SendDesc> send_desc;
  std::vector<RecvDesc> recv_desc;
  std::vector<SendPiece> send_pieces;
  std::vector<RecvPiece> recv_pieces;
  std::vector<char> gather, scatter;  // per send / receive: through `fallback` this run
  // What bind() was last called with: run() rebinds only when it changes.
  bool bound = false;
  uint32_t bound_pieces = 0;
  std::vector<const void*> bound_in;
  std::vector<void*> bound_out;
  // Private copies when the caller's buffers overlap (see engine.h).
  bool priv_inputs = false, priv_outputs = false;
  std::byte* priv = nullptr;
  size_t priv_size = 0;

  ~Impl() {
    std::free(arena);
    std::free(priv);
  }

  // ── construction ──
  void validate(const ir::Program& prog);
  void compile(const ir::Program& prog);
  uint32_t mad_table(Elem c);
  void emit(Code c, uint32_t src, uint32_t dst, uint32_t tab = 0) { instrs.push_back(Instr{c, tab, src, dst}); }
  void emit_dot(const std::vector<uint32_t>& src_units, const std::vector<std::pair<uint32_t, std::vector<Elem>>>& rows);
  void emit_direct(const std::vector<ir::Term>& nz, uint32_t target);
  void emit_op(const ir::Op& op, std::vector<const ir::Op*>& group);
  void flush_op_group(std::vector<const ir::Op*>& group);
  bool joins_group(const std::vector<const ir::Op*>& group, const ir::Op& op) const;

  // ── run ──
  std::byte* at(uint32_t unit) const { return rp[unit]; }
  void bind(const void* const* in, void* const* out, uint32_t max_pieces);
  template <class Piece>
  uint32_t pieces_of(uint32_t off, uint32_t count, std::vector<Piece>& out) const;
  void exec(uint32_t b, uint32_t e) const;
  [[noreturn]] void fail(Transport& tr, Status st, ir::StepNo t, const WaitRef* ref, const char* what) const;
};

// ─── validation ──────────────────────────────────────────────────────────────

void Engine::Impl::validate(const ir::Program& prog) {
  auto check_terms = [&](const std::vector<ir::Term>& terms, ir::StepNo t, const char* where) {
    for (const ir::Term& term : terms) {
      if (term.slot >= prog.num_slots)
        user_error("rank {}, step {}: {} reads slot {}, the program has {} slots", rank, t, where, term.slot,
                   prog.num_slots);
      if (!field.valid(term.coeff))
        user_error("rank {}, step {}: {} has coefficient {}, not an element of {} (valid: 0..{})", rank, t, where,
                   term.coeff, field.name(), field.size() - 1);
    }
  };
  std::vector<char> seen(prog.num_slots, 0);
  for (uint32_t s : prog.inputs) {
    if (s >= prog.num_slots) user_error("rank {}: input slot {} >= num_slots {}", rank, s, prog.num_slots);
    if (seen[s]) user_error("rank {}: slot {} is loaded with two inputs", rank, s);
    seen[s] = 1;
  }
  for (uint32_t s : prog.outputs)
    if (s >= prog.num_slots) user_error("rank {}: output slot {} >= num_slots {}", rank, s, prog.num_slots);
  ir::StepNo prev = 0;
  for (const ir::Step& st : prog.steps) {
    const ir::StepNo t = st.t;
    if (t <= prev) user_error("rank {}: step {} follows step {} (steps must increase)", rank, t, prev);
    if (t < 1 || t > num_steps) user_error("rank {}: step {} is outside 1..{}", rank, t, num_steps);
    prev = t;
    std::vector<char> sport(p, 0), rport(p, 0);
    for (const ir::Send& s : st.sends) {
      if (s.port >= p) user_error("rank {}, step {}: send on port {}, valid ports are 0..{}", rank, t, s.port, p - 1);
      if (sport[s.port]++) user_error("rank {}, step {}: two sends on port {}", rank, t, s.port);
      if (s.to >= K || s.to == rank)
        user_error("rank {}, step {}: send to rank {} (valid: 0..{} except {})", rank, t, s.to, K - 1, rank);
      if (static_cast<uint64_t>(t) + lambda - 1 > num_steps)
        user_error("rank {}, step {}: a message sent now arrives in step {}, after the last step {}", rank, t,
                   static_cast<uint64_t>(t) + lambda - 1, num_steps);
      for (const ir::Combo& c : s.payload) check_terms(c.terms, t, "a send payload");
    }
    for (const ir::Recv& r : st.recvs) {
      if (r.port >= p)
        user_error("rank {}, step {}: receive on port {}, valid ports are 0..{}", rank, t, r.port, p - 1);
      if (rport[r.port]++) user_error("rank {}, step {}: two receives on port {}", rank, t, r.port);
      if (r.from >= K || r.from == rank)
        user_error("rank {}, step {}: receive from rank {} (valid: 0..{} except {})", rank, t, r.from, K - 1, rank);
      if (static_cast<uint64_t>(r.sent_at) + lambda - 1 != t || r.sent_at < 1)
        user_error("rank {}, step {}: receive of a message sent in step {}; with lambda = {} it must be step {}", rank,
                   t, r.sent_at, lambda, static_cast<int64_t>(t) - lambda + 1);
      for (uint32_t s : r.into)
        if (s >= prog.num_slots)
          user_error("rank {}, step {}: receive into slot {}, the program has {} slots", rank, t, s, prog.num_slots);
    }
    for (const ir::Op& o : st.ops) {
      if (o.dst >= prog.num_slots)
        user_error("rank {}, step {}: op writes slot {}, the program has {} slots", rank, t, o.dst, prog.num_slots);
      check_terms(o.terms, t, "an op");
    }
  }
}

// ─── compilation ─────────────────────────────────────────────────────────────

uint32_t Engine::Impl::mad_table(Elem c) {
  auto [it, fresh] = mad_index.try_emplace(c, static_cast<uint32_t>(mads.size()));
  if (fresh) mads.push_back(gf::prepare_mad(field, c));
  return it->second;
}

static bool all_ones(const std::vector<ir::Term>& terms) {
  return std::all_of(terms.begin(), terms.end(), [](const ir::Term& t) { return t.coeff == 1; });
}

static std::vector<ir::Term> nonzero(const std::vector<ir::Term>& terms) {
  std::vector<ir::Term> nz;
  for (const ir::Term& t : terms)
    if (t.coeff != 0) nz.push_back(t);
  return nz;
}

// Worth a dot call: two or more terms, not a plain sum (a sum is cheaper as
// copy + adds, which need no tables).
static bool dot_worthy(const std::vector<ir::Term>& nz) { return nz.size() >= 2 && !all_ones(nz); }

// rows[j] = (destination row, coefficients over src_units). Split so that no
// kernel call exceeds kDotMaxSources × kDotMaxRows; source chunks after the
// first are summed through dot scratch rows.
void Engine::Impl::emit_dot(const std::vector<uint32_t>& src_units,
                            const std::vector<std::pair<uint32_t, std::vector<Elem>>>& rows) {
  const size_t k = src_units.size();
  for (size_t r0 = 0; r0 < rows.size(); r0 += kDotMaxRows) {
    const size_t m = std::min(kDotMaxRows, rows.size() - r0);
    for (size_t s0 = 0; s0 < k; s0 += kDotMaxSources) {
      const size_t kc = std::min(kDotMaxSources, k - s0);
      COLLPLAN_ASSERT(s0 == 0 || dot_scratch_rows > 0, "a split dot call without dot scratch rows");
      DotCall dc;
      dc.src_units.assign(src_units.begin() + s0, src_units.begin() + s0 + kc);
      std::vector<Elem> coeffs(m * kc);
      for (size_t j = 0; j < m; ++j) {
        for (size_t i = 0; i < kc; ++i) coeffs[j * kc + i] = rows[r0 + j].second[s0 + i];
        dc.dst_units.push_back(s0 == 0 ? rows[r0 + j].first : dot_scratch_unit + static_cast<uint32_t>(j));
      }
      dc.tables = gf::prepare_dot(field, kc, m, coeffs.data());
      emit(Code::dot, 0, 0, static_cast<uint32_t>(dots.size()));
      dots.push_back(std::move(dc));
      ++stats.dot_calls;
      if (s0 > 0)
        for (size_t j = 0; j < m; ++j) emit(Code::add, dot_scratch_unit + static_cast<uint32_t>(j), rows[r0 + j].first);
    }
  }
}

// target := Σ nz, where target is not among the sources (nz has no zero
// coefficients).
void Engine::Impl::emit_direct(const std::vector<ir::Term>& nz, uint32_t target) {
  if (nz.empty()) {
    emit(Code::zero, 0, target);
  } else if (opt.use_dot && dot_worthy(nz)) {
    std::vector<uint32_t> src;
    std::vector<Elem> co;
    for (const ir::Term& t : nz) {
      src.push_back(t.slot);
      co.push_back(t.coeff);
    }
    emit_dot(src, {{target, co}});
  } else {
    const ir::Term& f = nz.front();
    if (f.coeff == 1)
      emit(Code::copy, f.slot, target);
    else
      emit(Code::mul, f.slot, target, mad_table(f.coeff));
    for (size_t i = 1; i < nz.size(); ++i) {
      if (nz[i].coeff == 1)
        emit(Code::add, nz[i].slot, target);
      else
        emit(Code::mad, nz[i].slot, target, mad_table(nz[i].coeff));
    }
  }
}

static bool same_sources(const std::vector<ir::Term>& a, const std::vector<ir::Term>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](const ir::Term& x, const ir::Term& y) { return x.slot == y.slot; });
}

static bool reads_slot(const std::vector<ir::Term>& terms, uint32_t s) {
  return std::any_of(terms.begin(), terms.end(), [&](const ir::Term& t) { return t.slot == s; });
}

// A pending run of consecutive dot-candidate ops becomes one dot call over
// the union of their sources (the shoot initialisation of prepare-and-shoot
// is such a run), so each source row is read once for all of them instead of
// once per op. Rows get coefficient 0 for union sources they do not use; a
// run is extended only while that padding stays below a third of the
// coefficients. The ops are independent (no dst is a source or another
// dst of the run), which is what makes computing them together exact.
static void distinct_slots(const std::vector<ir::Term>& terms, std::vector<uint32_t>& out) {
  for (const ir::Term& t : terms)
    if (std::find(out.begin(), out.end(), t.slot) == out.end()) out.push_back(t.slot);
}

void Engine::Impl::flush_op_group(std::vector<const ir::Op*>& group) {
  if (group.empty()) return;
  std::vector<uint32_t> src;
  for (const ir::Op* o : group) distinct_slots(o->terms, src);
  std::vector<std::pair<uint32_t, std::vector<Elem>>> rows;
  for (const ir::Op* o : group) {
    std::vector<Elem> co(src.size(), 0);
    for (const ir::Term& t : o->terms) {
      Elem& c = co[std::find(src.begin(), src.end(), t.slot) - src.begin()];
      c = field.add(c, t.coeff);  // a slot named twice: its coefficients add
    }
    rows.emplace_back(o->dst, std::move(co));
  }
  emit_dot(src, rows);
  group.clear();
}

bool Engine::Impl::joins_group(const std::vector<const ir::Op*>& group, const ir::Op& op) const {
  if (group.empty()) return false;
  std::vector<uint32_t> src, mine;
  size_t used = 0;  // coefficients the ops really have (distinct slots per op)
  for (const ir::Op* g : group) {
    if (g->dst == op.dst || reads_slot(op.terms, g->dst)) return false;
    std::vector<uint32_t> d;
    distinct_slots(g->terms, d);
    used += d.size();
    distinct_slots(g->terms, src);
  }
  if (std::find(src.begin(), src.end(), op.dst) != src.end()) return false;
  distinct_slots(op.terms, mine);
  used += mine.size();
  distinct_slots(op.terms, src);
  // A union wider than one dot call needs the dot scratch rows, which the
  // arena has only if some single combination is that wide.
  size_t widest = op.terms.size();
  for (const ir::Op* g : group) widest = std::max(widest, g->terms.size());
  if (src.size() > std::max(kDotMaxSources, widest)) return false;
  return 2 * src.size() * (group.size() + 1) <= 3 * used;
}

void Engine::Impl::emit_op(const ir::Op& op, std::vector<const ir::Op*>& group) {
  const std::vector<ir::Term> nz = nonzero(op.terms);
  const bool groupable = opt.use_dot && dot_worthy(nz) && !reads_slot(op.terms, op.dst);
  if (groupable) {
    if (!joins_group(group, op)) flush_op_group(group);
    group.push_back(&op);
    return;
  }
  flush_op_group(group);
  size_t dst_uses = 0;
  for (const ir::Term& t : nz) dst_uses += t.slot == op.dst;
  if (dst_uses == 0) {
    emit_direct(nz, op.dst);
  } else if (dst_uses == 1 && nz.front().slot == op.dst) {
    // dst := c·dst + Σ rest: scale in place, then accumulate. Sound because
    // no later term reads dst.
    if (nz.front().coeff != 1) emit(Code::mul, op.dst, op.dst, mad_table(nz.front().coeff));
    for (size_t i = 1; i < nz.size(); ++i) {
      if (nz[i].coeff == 1)
        emit(Code::add, nz[i].slot, op.dst);
      else
        emit(Code::mad, nz[i].slot, op.dst, mad_table(nz[i].coeff));
    }
  } else {
    // dst is read after it would be overwritten: evaluate aside, then copy.
    emit_direct(nz, scratch_unit);
    emit(Code::copy, scratch_unit, op.dst);
  }
}

void Engine::Impl::compile(const ir::Program& prog) {
  num_slots = prog.num_slots;
  inputs = prog.inputs;
  outputs = prog.outputs;

  // Index the program's steps and collect the sends and receives.
  struct RawSend {
    const ir::Send* s;
    ir::StepNo t;
  };
  struct RawRecv {
    const ir::Recv* r;
    ir::StepNo t;
  };
  std::vector<RawSend> raw_sends;
  std::vector<RawRecv> raw_recvs;
  for (const ir::Step& st : prog.steps) {
    for (const ir::Send& s : st.sends) raw_sends.push_back({&s, st.t});
    for (const ir::Recv& r : st.recvs) raw_recvs.push_back({&r, st.t});
  }

  // ── Zero-copy decisions (see engine.h). Every slot access gets a virtual
  // time interval; an asynchronous access (a message the transport may read
  // or write between posting and completion) is allowed only if nothing
  // conflicting touches the same slot inside its interval.
  std::vector<std::vector<Access>> acc(num_slots);
  const uint64_t t_end = tm(static_cast<uint64_t>(num_steps) + 1, kEval);
  for (uint32_t s : inputs) acc[s].push_back({0, 0, true, -1});
  for (uint32_t s : outputs) acc[s].push_back({t_end, t_end, false, -1});
  for (const ir::Step& st : prog.steps) {
    for (const ir::Send& s : st.sends)
      for (const ir::Combo& c : s.payload)
        for (const ir::Term& term : c.terms) acc[term.slot].push_back({tm(st.t, kEval), tm(st.t, kEval), false, -1});
    for (const ir::Op& o : st.ops) {
      for (const ir::Term& term : o.terms) acc[term.slot].push_back({tm(st.t, kOps), tm(st.t, kOps), false, -1});
      acc[o.dst].push_back({tm(st.t, kOps), tm(st.t, kOps), true, -1});
    }
  }
  for (size_t i = 0; i < raw_recvs.size(); ++i)
    for (uint32_t s : raw_recvs[i].r->into)
      acc[s].push_back({tm(raw_recvs[i].t, kScatter), tm(raw_recvs[i].t, kScatter), true, static_cast<int64_t>(i)});

  auto consecutive = [](const std::vector<uint32_t>& v) {
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] != v[0] + i) return false;
    return !v.empty();
  };
  // A direct message need not be adjacent rows any more (it is handed over in
  // pieces, or gathered at run time); a receive must not name a slot twice,
  // since its pieces would then overlap.
  auto distinct = [&](const std::vector<uint32_t>& v) {
    std::vector<uint32_t> w = v;
    std::sort(w.begin(), w.end());
    return !v.empty() && std::adjacent_find(w.begin(), w.end()) == w.end();
  };
  std::vector<char> direct(raw_recvs.size(), 0), zc(raw_sends.size(), 0);
  if (opt.zero_copy) {
    for (size_t i = 0; i < raw_recvs.size(); ++i) {
      const ir::Recv& r = *raw_recvs[i].r;
      if (!distinct(r.into)) continue;
      const uint64_t lo = tm(r.sent_at, kPost), hi = tm(raw_recvs[i].t, kScatter);
      bool ok = true;
      for (uint32_t s : r.into)
        for (const Access& a : acc[s])
          if (a.owner != static_cast<int64_t>(i) && a.lo <= hi && lo <= a.hi) ok = false;
      if (!ok) continue;
      direct[i] = 1;
      for (uint32_t s : r.into)
        for (Access& a : acc[s])
          if (a.owner == static_cast<int64_t>(i)) a.lo = lo;
    }
    for (size_t i = 0; i < raw_sends.size(); ++i) {
      const ir::Send& s = *raw_sends[i].s;
      std::vector<uint32_t> slots;
      bool units = true;
      for (const ir::Combo& c : s.payload) {
        if (c.terms.size() != 1 || c.terms[0].coeff != 1) units = false;
        else slots.push_back(c.terms[0].slot);
      }
      if (!units || slots.empty()) continue;
      const uint64_t lo = tm(raw_sends[i].t, kPost), hi = tm(raw_sends[i].t + lambda - 1, kWait);
      bool ok = true;
      for (uint32_t sl : slots)
        for (const Access& a : acc[sl])
          if (a.write && a.lo <= hi && lo <= a.hi) ok = false;
      zc[i] = ok;
    }
  }

  // ── Homes (see "The caller's buffers" in engine.h). With zero copy, an
  // output slot lives in its output buffer for the whole run (its first
  // listing, if it is listed twice), and an input slot that is never written
  // and is no output is read from its input buffer. An input slot that is
  // also an output is copied into the output buffer before step 1; other
  // input slots into the arena as before.
  const uint32_t n_in = static_cast<uint32_t>(inputs.size()), n_out = static_cast<uint32_t>(outputs.size());
  std::vector<uint32_t> home(num_slots, kNone);  // kNone: arena; else an extended unit offset (i or n_in + j)
  if (opt.zero_copy) {
    std::vector<char> written(num_slots, 0);
    for (const ir::Step& st : prog.steps) {
      for (const ir::Recv& r : st.recvs)
        for (uint32_t sl : r.into) written[sl] = 1;
      for (const ir::Op& o : st.ops) written[o.dst] = 1;
    }
    for (uint32_t j = 0; j < n_out; ++j)
      if (home[outputs[j]] == kNone) home[outputs[j]] = n_in + j;
    for (uint32_t i = 0; i < n_in; ++i)
      if (home[inputs[i]] == kNone && !written[inputs[i]]) home[inputs[i]] = i;
  }
  auto arena_homed = [&](uint32_t sl) { return home[sl] == kNone; };
  auto surely_contiguous = [&](const std::vector<uint32_t>& v) {
    return v.size() == 1 || (consecutive(v) && std::all_of(v.begin(), v.end(), arena_homed));
  };
  std::vector<char> send_fb(raw_sends.size(), 0), recv_fb(raw_recvs.size(), 0);
  for (size_t i = 0; i < raw_sends.size(); ++i)
    if (zc[i]) {
      std::vector<uint32_t> slots;
      for (const ir::Combo& c : raw_sends[i].s->payload) slots.push_back(c.terms[0].slot);
      send_fb[i] = !surely_contiguous(slots);
    }
  for (size_t i = 0; i < raw_recvs.size(); ++i)
    if (direct[i]) recv_fb[i] = !surely_contiguous(raw_recvs[i].r->into);

  // ── Arena layout: slots, send staging banks, receive staging banks,
  // scratch rows. Bank b serves the messages sent in steps ≡ b (mod λ),
  // staged ones and the run-time fallbacks of direct ones.
  std::vector<uint64_t> send_need(static_cast<size_t>(num_steps) + 1, 0), recv_need(send_need.size(), 0);
  for (size_t i = 0; i < raw_sends.size(); ++i)
    if (!zc[i] || send_fb[i]) send_need[raw_sends[i].t] += raw_sends[i].s->payload.size();
  for (size_t i = 0; i < raw_recvs.size(); ++i)
    if (!direct[i] || recv_fb[i]) recv_need[raw_recvs[i].r->sent_at] += raw_recvs[i].r->into.size();
  std::vector<uint64_t> send_bank(lambda, 0), recv_bank(lambda, 0);
  for (uint32_t t = 1; t <= num_steps; ++t) {
    send_bank[t % lambda] = std::max(send_bank[t % lambda], send_need[t]);
    recv_bank[t % lambda] = std::max(recv_bank[t % lambda], recv_need[t]);
  }
  uint64_t next = num_slots;
  std::vector<uint64_t> send_bank_base(lambda), recv_bank_base(lambda);
  for (uint32_t b = 0; b < lambda; ++b) send_bank_base[b] = next, next += send_bank[b];
  for (uint32_t b = 0; b < lambda; ++b) recv_bank_base[b] = next, next += recv_bank[b];
  bool need_scratch = false, need_dot_scratch = false;
  for (const ir::Step& st : prog.steps)
    for (const ir::Op& o : st.ops) {
      const auto nz = nonzero(o.terms);
      size_t uses = 0;
      for (const ir::Term& t : nz) uses += t.slot == o.dst;
      if (uses > 1 || (uses == 1 && nz.front().slot != o.dst)) need_scratch = true;
    }
  auto max_terms = [&] {
    size_t m = 0;
    for (const ir::Step& st : prog.steps) {
      for (const ir::Send& s : st.sends)
        for (const ir::Combo& c : s.payload) m = std::max(m, c.terms.size());
      for (const ir::Op& o : st.ops) m = std::max(m, o.terms.size());
    }
    return m;
  };
  need_dot_scratch = opt.use_dot && max_terms() > kDotMaxSources;
  scratch_unit = static_cast<uint32_t>(next);
  next += need_scratch;
  dot_scratch_unit = static_cast<uint32_t>(next);
  dot_scratch_rows = need_dot_scratch ? static_cast<uint32_t>(kDotMaxRows) : 0;
  next += dot_scratch_rows;
  if (next > std::numeric_limits<uint32_t>::max())
    user_error("rank {}: the program needs {} arena rows, more than the runtime supports (2^32 - 1)", rank, next);
  units = static_cast<uint32_t>(next);
  // Arena rows for the units that are not aliases of the caller's buffers,
  // in unit order (so consecutive arena units stay adjacent). Slot rows come
  // first: prepare() zeroes them.
  alias.assign(units, kNone);
  arena_row.assign(units, kNone);
  arena_rows = 0;
  for (uint32_t u = 0; u < units; ++u) {
    if (u < num_slots && home[u] != kNone) {
      alias[u] = units + home[u];
      continue;
    }
    arena_row[u] = arena_rows++;
    if (u < num_slots) zeroed_rows = arena_rows;
  }
  if (static_cast<uint64_t>(units) + n_in + n_out > std::numeric_limits<uint32_t>::max())
    user_error("rank {}: the program needs more rows than the runtime supports (2^32 - 1)", rank);

  // Before step 1: inputs into their slots unless read in place, and a zero
  // fill for an output slot read before it is first written (the arena's
  // slots start zeroed; a caller's buffer does not).
  pro_b = static_cast<uint32_t>(instrs.size());
  for (uint32_t i = 0; i < n_in; ++i)
    if (home[inputs[i]] != i) emit(Code::copy, units + i, inputs[i]);
  {
    // First access of every slot in the plan's order (ir/plan.h: inputs,
    // then per step payloads, receives, ops in order): 1 written, 2 read.
    std::vector<uint8_t> first(num_slots, 0);
    auto touch = [&](uint32_t sl, uint8_t how) {
      if (!first[sl]) first[sl] = how;
    };
    for (uint32_t sl : inputs) touch(sl, 1);
    for (const ir::Step& st : prog.steps) {
      for (const ir::Send& snd : st.sends)
        for (const ir::Combo& c : snd.payload)
          for (const ir::Term& term : c.terms) touch(term.slot, 2);
      for (const ir::Recv& r : st.recvs)
        for (uint32_t sl : r.into) touch(sl, 1);
      for (const ir::Op& o : st.ops) {
        for (const ir::Term& term : o.terms) touch(term.slot, 2);
        touch(o.dst, 1);
      }
    }
    for (uint32_t sl = 0; sl < num_slots; ++sl)
      if (home[sl] != kNone && home[sl] >= n_in && first[sl] != 1) emit(Code::zero, 0, sl);
  }
  pro_e = static_cast<uint32_t>(instrs.size());

  // ── Request ids: an id is taken when a request is posted and returned
  // after the wait that completes it (λ−1 steps later).
  std::vector<std::vector<size_t>> send_posts(num_steps + 1), recv_posts(num_steps + 1);
  for (size_t i = 0; i < raw_sends.size(); ++i) send_posts[raw_sends[i].t].push_back(i);
  for (size_t i = 0; i < raw_recvs.size(); ++i) recv_posts[raw_recvs[i].r->sent_at].push_back(i);

  sends.resize(raw_sends.size());
  recvs.resize(raw_recvs.size());
  std::vector<ReqId> free_ids;
  uint32_t id_count = 0;
  auto take = [&] {
    if (free_ids.empty()) return id_count++;
    const ReqId id = free_ids.back();
    free_ids.pop_back();
    return id;
  };

  size_t si = 0;  // cursor into prog.steps
  for (ir::StepNo t = 1; t <= num_steps; ++t) {
    const ir::Step* st = si < prog.steps.size() && prog.steps[si].t == t ? &prog.steps[si++] : nullptr;
    const int64_t due_from = static_cast<int64_t>(t) - lambda + 1;  // messages sent then are due now
    const bool has_due = due_from >= 1 && (!send_posts[due_from].empty() || !recv_posts[due_from].empty());
    if (!st && send_posts[t].empty() && recv_posts[t].empty() && !has_due) continue;
    StepCode sc;
    sc.t = t;

    // (1) payloads of step t into staging, bank t mod λ.
    sc.eval_b = static_cast<uint32_t>(instrs.size());
    uint64_t off = send_bank_base[t % lambda];
    // Payload elements with the same dot-worthy source list share one dot call.
    std::vector<std::pair<const std::vector<ir::Term>*, std::vector<std::pair<uint32_t, std::vector<Elem>>>>> groups;
    for (size_t i : send_posts[t]) {
      const ir::Send& s = *raw_sends[i].s;
      SendPlan& sp = sends[i];
      sp.port = s.port;
      sp.to = s.to;
      sp.step = t;
      sp.count = static_cast<uint32_t>(s.payload.size());
      sp.zero_copy = zc[i];
      if (zc[i]) {
        sp.unit = static_cast<uint32_t>(msg_units.size());
        for (const ir::Combo& c : s.payload) msg_units.push_back(c.terms[0].slot);
        if (send_fb[i]) {
          sp.fallback = static_cast<uint32_t>(off);
          off += s.payload.size();
        }
        ++stats.zero_copy_sends;
        continue;
      }
      ++stats.staged_sends;
      sp.unit = static_cast<uint32_t>(off);
      for (const ir::Combo& c : s.payload) {
        const uint32_t target = static_cast<uint32_t>(off++);
        const auto nz = nonzero(c.terms);
        if (opt.use_dot && dot_worthy(nz)) {
          auto g = std::find_if(groups.begin(), groups.end(),
                                [&](const auto& gr) { return same_sources(*gr.first, c.terms); });
          if (g == groups.end()) {
            groups.push_back({&c.terms, {}});
            g = groups.end() - 1;
          }
          std::vector<Elem> co;
          for (const ir::Term& term : c.terms) co.push_back(term.coeff);
          g->second.emplace_back(target, std::move(co));
        } else {
          emit_direct(nz, target);
        }
      }
    }
    for (const auto& [terms, rows] : groups) {
      std::vector<uint32_t> src;
      for (const ir::Term& term : *terms) src.push_back(term.slot);
      emit_dot(src, rows);
    }
    sc.eval_e = static_cast<uint32_t>(instrs.size());

    // (2) post sends of t and receives of the messages sent in t.
    // send_posts[t] are the sends of step t: one contiguous range of `sends`.
    for (size_t i : send_posts[t]) sends[i].id = take();
    sc.send_b = send_posts[t].empty() ? 0 : static_cast<uint32_t>(send_posts[t].front());
    sc.send_e = send_posts[t].empty() ? 0 : static_cast<uint32_t>(send_posts[t].back() + 1);
    uint64_t roff = recv_bank_base[t % lambda];
    for (size_t i : recv_posts[t]) {
      const ir::Recv& r = *raw_recvs[i].r;
      RecvPlan& rp = recvs[i];
      rp.port = r.port;
      rp.from = r.from;
      rp.sent_at = t;
      rp.due = raw_recvs[i].t;
      rp.count = static_cast<uint32_t>(r.into.size());
      rp.direct = direct[i];
      if (direct[i]) {
        rp.unit = static_cast<uint32_t>(msg_units.size());
        msg_units.insert(msg_units.end(), r.into.begin(), r.into.end());
        if (recv_fb[i]) {
          rp.fallback = static_cast<uint32_t>(roff);
          roff += r.into.size();
        }
        ++stats.direct_recvs;
      } else {
        rp.unit = static_cast<uint32_t>(roff);
        roff += r.into.size();
        ++stats.staged_recvs;
      }
      rp.id = take();
    }
    // recv_posts[t] lists receives in program order of their due step, which
    // is increasing, so they form one contiguous range of `recvs` too.
    sc.rpost_b = recv_posts[t].empty() ? 0 : static_cast<uint32_t>(recv_posts[t].front());
    sc.rpost_e = recv_posts[t].empty() ? 0 : static_cast<uint32_t>(recv_posts[t].back() + 1);

    // (3) wait for what is due: receives first (their data is needed), then
    // this rank's sends of the same step (their staging is reused later).
    sc.wait_b = static_cast<uint32_t>(wait_ids.size());
    if (due_from >= 1) {
      for (size_t i : recv_posts[due_from]) {
        wait_ids.push_back(recvs[i].id);
        wait_refs.push_back({false, static_cast<uint32_t>(i)});
      }
      for (size_t i : send_posts[due_from]) {
        wait_ids.push_back(sends[i].id);
        wait_refs.push_back({true, static_cast<uint32_t>(i)});
      }
    }
    sc.wait_e = static_cast<uint32_t>(wait_ids.size());
    for (uint32_t w = sc.wait_b; w < sc.wait_e; ++w) free_ids.push_back(wait_ids[w]);

    // (4) staged receives into their slots (program order), then the ops.
    sc.after_b = static_cast<uint32_t>(instrs.size());
    if (due_from >= 1)
      for (size_t i : recv_posts[due_from]) {
        if (recvs[i].direct) continue;
        const ir::Recv& r = *raw_recvs[i].r;
        for (size_t e = 0; e < r.into.size(); ++e) emit(Code::copy, recvs[i].unit + static_cast<uint32_t>(e), r.into[e]);
      }
    if (st) {
      std::vector<const ir::Op*> group;
      for (const ir::Op& o : st->ops) emit_op(o, group);
      flush_op_group(group);
    }
    sc.after_e = static_cast<uint32_t>(instrs.size());
    steps.push_back(sc);
  }
  // After the last step: outputs whose slot does not live in their buffer.
  epi_b = static_cast<uint32_t>(instrs.size());
  for (uint32_t j = 0; j < n_out; ++j)
    if (home[outputs[j]] != n_in + j) emit(Code::copy, outputs[j], units + n_in + j);
  epi_e = static_cast<uint32_t>(instrs.size());
  for (uint32_t sl = 0; sl < num_slots; ++sl)
    if (home[sl] != kNone) ++(home[sl] < n_in ? stats.inputs_in_place : stats.outputs_in_place);
  stats.max_requests = id_count;
  stats.units = arena_rows;
  stats.instructions = instrs.size();
}

static const ir::Program& program_of(const ir::Plan& plan, ir::Rank rank) {
  if (rank >= plan.ranks.size()) user_error("rank {} is not in a plan of {} ranks", rank, plan.ranks.size());
  if (plan.ranks[rank].rank != rank)
    user_error("plan.ranks[{}] holds the program of rank {}", rank, plan.ranks[rank].rank);
  if (plan.ranks.size() != num_ranks(plan.spec))
    user_error("the plan has {} programs, its spec needs {}", plan.ranks.size(), num_ranks(plan.spec));
  return plan.ranks[rank];
}

Engine::Engine(const ir::Plan& plan, ir::Rank rank, EngineOptions opt)
    : Engine(plan.spec, plan.num_steps, program_of(plan, rank), opt) {}

Engine::Engine(const Spec& spec, uint32_t num_steps, const ir::Program& prog, EngineOptions opt)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.field = spec.field;
  m.eb = spec.field.elem_bytes();
  m.rank = prog.rank;
  m.K = num_ranks(spec);
  m.p = spec.p;
  m.lambda = spec.lambda;
  m.num_steps = num_steps;
  m.opt = opt;
  if (m.p < 1) user_error("p = {} is invalid: p >= 1 ports", m.p);
  if (m.lambda < 1) user_error("lambda = {} is invalid: lambda >= 1", m.lambda);
  if (m.rank >= m.K) user_error("rank {} is not in a plan of {} ranks", m.rank, m.K);
  m.validate(prog);
  if (opt.zero_copy)
    m.compile(ir::relabel(prog, ir::slot_layout(prog)));
  else
    m.compile(prog);
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

ir::Rank Engine::rank() const { return impl_->rank; }
const Field& Engine::field() const { return impl_->field; }
size_t Engine::num_inputs() const { return impl_->inputs.size(); }
size_t Engine::num_outputs() const { return impl_->outputs.size(); }
size_t Engine::elem_bytes() const { return impl_->eb; }
const Engine::Stats& Engine::stats() const { return impl_->stats; }

size_t Engine::arena_bytes(size_t len) const {
  size_t row = 0, total = 0;
  if (__builtin_mul_overflow(len, impl_->eb, &row) ||
      __builtin_mul_overflow(row, size_t{impl_->arena_rows}, &total))
    user_error("rank {}: vectors of {} elements need an arena larger than the address space", impl_->rank, len);
  return total;
}

void Engine::prepare(size_t len) {
  Impl& m = *impl_;
  if (len == 0) user_error("vector length len = 0 is invalid: len >= 1 elements");
  if (len == m.len && m.arena) return;
  const size_t bytes = arena_bytes(len);
  // 64-byte aligned base: rows themselves are packed (see engine.h), but the
  // first row and every large row start well aligned for the SIMD kernels.
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

// Resolves every unit's address for the caller's buffers `in`, `out` and a
// transport taking up to `max_pieces` pieces per message.
void Engine::Impl::bind(const void* const* in, void* const* out, uint32_t max_pieces) {
  const uint32_t n_in = static_cast<uint32_t>(inputs.size()), n_out = static_cast<uint32_t>(outputs.size());
  bound_in.assign(in, in + n_in);
  bound_out.assign(out, out + n_out);
  bound_pieces = max_pieces;

  // Overlap (see "The caller's buffers" in engine.h): outputs that overlap
  // each other are produced privately and copied out in order after the last
  // step; otherwise inputs that overlap an output are copied privately
  // before step 1. Both reproduce "read every input before step 1, write the
  // outputs in order after the last step".
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
  const size_t need = (priv_outputs ? n_out : priv_inputs ? n_in : 0) * row;
  if (need > priv_size) {
    void* a = std::aligned_alloc(64, (need + 63) / 64 * 64);
    if (!a) throw std::bad_alloc();
    std::free(priv);
    priv = static_cast<std::byte*>(a);
    priv_size = need;
  }

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

  // Messages: one buffer, a list of pieces the transport takes, or (more
  // pieces than it takes) the fallback staging rows.
  send_pieces.clear();
  recv_pieces.clear();
  send_pieces.reserve(msg_units.size());  // no reallocation below: descriptors point into it
  recv_pieces.reserve(msg_units.size());
  send_desc.resize(sends.size());
  gather.assign(sends.size(), 0);
  stats.split_messages = stats.gathered_messages = 0;
  for (size_t i = 0; i < sends.size(); ++i) {
    const SendPlan& s = sends[i];
    SendDesc& d = send_desc[i];
    d = SendDesc{s.port, s.to, s.step, nullptr, static_cast<size_t>(s.count) * row};
    if (!s.zero_copy) {
      // An empty staged message may sit past the last row: no row to name.
      d.data = s.count ? at(s.unit) : arena;
      continue;
    }
    const size_t first = send_pieces.size();
    const uint32_t n = pieces_of(s.unit, s.count, send_pieces);
    d.data = send_pieces[first].data;
    if (n == 1) {
      send_pieces.resize(first);
    } else if (n <= max_pieces) {
      d.pieces = send_pieces.data() + first;
      d.num_pieces = n;
      ++stats.split_messages;
    } else {
      COLLPLAN_ASSERT(s.fallback != kNone, "a split send without fallback staging");
      send_pieces.resize(first);
      d.data = at(s.fallback);
      gather[i] = 1;
      ++stats.gathered_messages;
    }
  }
  recv_desc.resize(recvs.size());
  scatter.assign(recvs.size(), 0);
  for (size_t i = 0; i < recvs.size(); ++i) {
    const RecvPlan& r = recvs[i];
    RecvDesc& d = recv_desc[i];
    d = RecvDesc{r.port, r.from, r.sent_at, nullptr, static_cast<size_t>(r.count) * row};
    if (!r.direct) {
      d.data = r.count ? at(r.unit) : arena;
      continue;
    }
    const size_t first = recv_pieces.size();
    const uint32_t n = pieces_of(r.unit, r.count, recv_pieces);
    d.data = recv_pieces[first].data;
    if (n == 1) {
      recv_pieces.resize(first);
    } else if (n <= max_pieces) {
      d.pieces = recv_pieces.data() + first;
      d.num_pieces = n;
      ++stats.split_messages;
    } else {
      COLLPLAN_ASSERT(r.fallback != kNone, "a split receive without fallback staging");
      recv_pieces.resize(first);
      d.data = at(r.fallback);
      scatter[i] = 1;
      ++stats.gathered_messages;
    }
  }
  bound = true;
}

// ─── the round loop ──────────────────────────────────────────────────────────

void Engine::Impl::exec(uint32_t b, uint32_t e) const {
  const Instr* in = instrs.data() + b;
  const Instr* end = instrs.data() + e;
  for (; in != end; ++in) {
    switch (in->code) {
      case Code::zero:
        std::memset(at(in->dst), 0, row);
        break;
      case Code::copy:
        if (at(in->src) != at(in->dst)) std::memcpy(at(in->dst), at(in->src), row);
        break;
      case Code::mul:
        gf::mul_prepared(field, mads[in->tab], at(in->src), at(in->dst), len);
        break;
      case Code::add:
        gf::add(field, at(in->src), at(in->dst), len);
        break;
      case Code::mad:
        gf::mad_prepared(field, mads[in->tab], at(in->src), at(in->dst), len);
        break;
      case Code::dot: {
        const DotCall& dc = dots[in->tab];
        void* const* p = ptrs.data() + in->src;
        gf::dot_prepared(field, dc.tables, p, p + dc.src_units.size(), len);
        break;
      }
    }
  }
}

void Engine::Impl::fail(Transport& tr, Status st, ir::StepNo t, const WaitRef* ref, const char* what) const {
  const std::string detail = tr.error_detail();
  tr.abandon();
  std::string msg;
  if (ref && ref->is_send) {
    const SendPlan& s = sends[ref->index];
    msg = fmt::format("rank {}, step {}: {} the send to rank {} on port {} (sent in step {}, {} bytes) failed: {}", rank,
                      t, what, s.to, s.port, s.step, static_cast<size_t>(s.count) * row, status_name(st));
  } else if (ref) {
    const RecvPlan& r = recvs[ref->index];
    msg = fmt::format(
        "rank {}, step {}: {} the receive from rank {} on port {} (message sent in step {}, due in step {}, {} bytes) "
        "failed: {}",
        rank, t, what, r.from, r.port, r.sent_at, r.due, static_cast<size_t>(r.count) * row, status_name(st));
  } else {
    msg = fmt::format("rank {}, step {}: {} failed: {}", rank, t, what, status_name(st));
  }
  if (!detail.empty()) msg += fmt::format(" ({})", detail);
  if (st == Status::aborted) throw RunAborted(msg);
  throw UserError(msg);
}

void Engine::run(Transport& tr, const void* const* inputs, void* const* outputs, size_t len) {
  Impl& m = *impl_;
  prepare(len);
  if (tr.rank() != m.rank || tr.size() != m.K)
    user_error("rank {}'s program was given the transport endpoint of rank {} in a world of {} (plan: {} ranks)",
               m.rank, tr.rank(), tr.size(), m.K);
  const size_t n_in = m.inputs.size(), n_out = m.outputs.size();
  for (size_t i = 0; i < n_in; ++i)
    if (!inputs[i]) user_error("rank {}: input {} is a null pointer", m.rank, i);
  for (size_t j = 0; j < n_out; ++j)
    if (!outputs[j]) user_error("rank {}: output {} is a null pointer", m.rank, j);
  const uint32_t max_pieces = std::max<uint32_t>(tr.max_pieces(), 1);
  // Rebinding costs O(messages); the common case, a persistent collective
  // called on the same buffers, compares pointers only.
  if (!m.bound || max_pieces != m.bound_pieces || !std::equal(inputs, inputs + n_in, m.bound_in.begin()) ||
      !std::equal(outputs, outputs + n_out, m.bound_out.begin()))
    m.bind(inputs, outputs, max_pieces);
  if (m.priv_inputs)
    for (size_t i = 0; i < n_in; ++i) std::memcpy(m.at(m.units + static_cast<uint32_t>(i)), inputs[i], m.row);

  Status st = tr.begin(m.stats.max_requests);
  if (st != Status::ok) m.fail(tr, st, 0, nullptr, "starting the transport:");
  m.exec(m.pro_b, m.pro_e);

  for (const StepCode& sc : m.steps) {
    m.exec(sc.eval_b, sc.eval_e);
    for (uint32_t i = sc.send_b; i < sc.send_e; ++i) {
      if (m.gather[i]) {
        const SendPlan& s = m.sends[i];
        for (uint32_t e = 0; e < s.count; ++e)
          std::memcpy(m.at(s.fallback + e), m.at(m.msg_units[s.unit + e]), m.row);
      }
      st = tr.post_send(m.sends[i].id, m.send_desc[i]);
      if (st != Status::ok) {
        const WaitRef ref{true, i};
        m.fail(tr, st, sc.t, &ref, "posting");
      }
    }
    for (uint32_t i = sc.rpost_b; i < sc.rpost_e; ++i) {
      st = tr.post_recv(m.recvs[i].id, m.recv_desc[i]);
      if (st != Status::ok) {
        const WaitRef ref{false, i};
        m.fail(tr, st, sc.t, &ref, "posting");
      }
    }
    if (sc.wait_e > sc.wait_b) {
      size_t failed = 0;
      st = tr.wait(m.wait_ids.data() + sc.wait_b, sc.wait_e - sc.wait_b, &failed);
      if (st != Status::ok) m.fail(tr, st, sc.t, &m.wait_refs[sc.wait_b + failed], "completing");
      for (uint32_t w = sc.wait_b; w < sc.wait_e; ++w) {
        const WaitRef& ref = m.wait_refs[w];
        if (ref.is_send || !m.scatter[ref.index]) continue;
        const RecvPlan& r = m.recvs[ref.index];
        for (uint32_t e = 0; e < r.count; ++e)
          std::memcpy(m.at(m.msg_units[r.unit + e]), m.at(r.fallback + e), m.row);
      }
    }
    m.exec(sc.after_b, sc.after_e);
  }

  st = tr.end();
  if (st != Status::ok) m.fail(tr, st, m.num_steps, nullptr, "finishing the transport:");
  m.exec(m.epi_b, m.epi_e);
  if (m.priv_outputs)
    for (size_t j = 0; j < n_out; ++j) std::memcpy(outputs[j], m.at(m.units + static_cast<uint32_t>(n_in + j)), m.row);
}

}  // namespace collplan::rt
