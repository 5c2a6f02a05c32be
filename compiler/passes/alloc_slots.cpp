#include "passes/alloc_slots.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>


#include "support/error.h"

namespace collplan::passes {

namespace {

using namespace ir;

constexpr uint32_t kNoVar = std::numeric_limits<uint32_t>::max();

// The λ of a program compiled alone: the largest receive latency it shows (a
// program without receives reads its sends' slots only at their step).
uint32_t program_lambda(const Program& prog) {
  uint32_t lam = 1;
  for (const Step& st : prog.steps)
    for (const Recv& r : st.recvs)
      if (st.t >= r.sent_at) lam = std::max<uint32_t>(lam, st.t - r.sent_at + 1);
  return lam;
}

// The free slots of the left-edge colouring: a bitmap, one bit per slot,
// under summary levels (a bit per non-zero word of the level below) up to a
// single word, so the lowest free slot is found in one word per level. A
// heap with lazy deletion had a push and a pop per variable (every value an
// op accumulates in place frees one slot and retakes it), a fifth of the
// pass at K = 4096.
class FreeSlots {
 public:
  FreeSlots() : level_(1, std::vector<uint64_t>(1, 0)) {}
  // One slot more (the next number), not free.
  void add() {
    ++n_;
    for (size_t i = 0, need = words(n_);; ++i, need = words(need)) {
      if (i == level_.size()) {
        // A new top level: its one bit says whether the old top has any.
        level_.push_back(std::vector<uint64_t>(1, level_[i - 1][0] != 0 ? 1 : 0));
      }
      if (level_[i].size() < need) level_[i].resize(need, 0);
      if (need == 1) break;
    }
  }
  bool empty() const { return level_.back()[0] == 0; }
  bool is_free(SlotId c) const { return (level_[0][c >> 6] >> (c & 63)) & 1; }
  void free(SlotId c) {
    for (uint64_t i = 0, x = c; i < level_.size(); ++i, x >>= 6) {
      uint64_t& w = level_[i][x >> 6];
      const bool had = w != 0;
      w |= uint64_t{1} << (x & 63);
      if (had) break;  // the levels above already show this word
    }
  }
  void take(SlotId c) {
    for (uint64_t i = 0, x = c; i < level_.size(); ++i, x >>= 6) {
      uint64_t& w = level_[i][x >> 6];
      w &= ~(uint64_t{1} << (x & 63));
      if (w != 0) break;  // the word still has free slots
    }
  }
  SlotId lowest() const {  // !empty()
    uint64_t x = 0;
    for (size_t i = level_.size(); i-- > 0;) x = x * 64 + static_cast<uint64_t>(std::countr_zero(level_[i][x]));
    return static_cast<SlotId>(x);
  }

 private:
  static size_t words(size_t bits) { return (bits + 63) / 64; }
  std::vector<std::vector<uint64_t>> level_;  // level_[0]: one bit per slot; the last: one word
  size_t n_ = 0;
};

}  // namespace

void alloc_slots_rank(Program& prog) { alloc_slots_rank(prog, program_lambda(prog)); }

void alloc_slots_rank(Program& prog, uint32_t lambda) {
  const uint32_t S = prog.num_slots;
  const uint32_t lam = std::max<uint32_t>(lambda, 1);
  // Positions: 0 is "before step 1" (inputs); each listed step has one for
  // its sends, one for its receives and one per op. recv_pos[u]: step u's
  // receive position, or, for a step the program does not list, the send
  // position of the next listed step (nothing happens in between).
  uint64_t pos = 0;
  StepNo last_t = 0;
  for (const Step& st : prog.steps) {
    COLLPLAN_ASSERT(st.t > last_t, "alloc-slots: steps out of order");
    last_t = st.t;
    pos += 2 + st.ops.size();
  }
  const uint64_t end = pos + 1;
  std::vector<uint64_t> recv_pos(uint64_t{last_t} + lam + 1, end);
  {
    uint64_t p = 0;
    size_t i = 0;
    for (StepNo u = 1; u <= last_t; ++u) {
      if (prog.steps[i].t == u) {
        recv_pos[u] = p + 2;
        p += 2 + prog.steps[i].ops.size();
        ++i;
      } else {
        recv_pos[u] = p + 1;  // the next listed step's send position
      }
    }
  }
  auto receive_position = [&](uint64_t u) { return u < recv_pos.size() ? recv_pos[u] : end; };

  // Variables: every write of a slot starts one (the value it holds until
  // the next write), so a value computed from an input never takes the
  // input's slot. A variable occupies its slot on [first_def, busy_until):
  //   - from its write, or for a receive from the step its message is
  //     posted in (sent_at: the transport may land it any time until it is
  //     due, and a receive into the slots themselves needs them free);
  //   - to its last read, or for a value a send reads in step t to the
  //     receives of step t + λ − 1 inclusive (the transport may read it
  //     until then; a send from the slots themselves needs it unchanged);
  //   - at least one position past its write (a write never read still
  //     occupies its position, so two writes in one receive phase never
  //     share);
  //   - inputs for the whole run: an input slot never written is read in
  //     the caller's input buffer with no copy.
  // These are the engine's zero-copy conditions (runtime/engine_place.cpp):
  // lifetimes that respect them let it send and receive in place.
  std::vector<uint64_t> first_def, busy;
  // hint[v]: for an op's value, the variable of its first term read there
  // for the last time; taking that slot makes the op an in-place
  // accumulation (no copy of the first term).
  std::vector<uint32_t> hint;
  {
    size_t writes = prog.inputs.size();
    for (const Step& st : prog.steps) {
      for (const Recv& r : st.recvs) writes += r.into.size();
      writes += st.ops.size();
    }
    first_def.reserve(writes);
    busy.reserve(writes);
    hint.reserve(writes);
  }
  std::vector<uint32_t> cur(S, kNoVar);
  auto new_var = [&](uint64_t from, uint64_t at) {
    first_def.push_back(from);
    busy.push_back(at + 1);
    hint.push_back(kNoVar);
    return static_cast<uint32_t>(first_def.size() - 1);
  };
  auto read = [&](SlotId s, uint64_t until) {
    COLLPLAN_ASSERT(s < S && cur[s] != kNoVar, "alloc-slots: slot read but never written");
    busy[cur[s]] = std::max(busy[cur[s]], until);
  };
  for (SlotId s : prog.inputs)
    if (cur[s] == kNoVar) cur[s] = new_var(0, 0);
  const size_t num_inputs = first_def.size();
  pos = 0;
  for (const Step& st : prog.steps) {
    ++pos;
    const uint64_t send_until = receive_position(uint64_t{st.t} + lam - 1) + 1;
    for (const Send& s : st.sends)
      for (const Combo& c : s.payload)
        for (const Term& t : c.terms) read(t.slot, std::max(send_until, pos));
    ++pos;
    for (const Recv& r : st.recvs) {
      const uint64_t from = std::min(receive_position(r.sent_at), pos);
      for (SlotId s : r.into) {
        COLLPLAN_ASSERT(s < S, "alloc-slots: receive into a slot out of range");
        cur[s] = new_var(from, pos);
      }
    }
    for (const Op& op : st.ops) {
      ++pos;
      for (const Term& t : op.terms) read(t.slot, pos);
      COLLPLAN_ASSERT(op.dst < S, "alloc-slots: op into a slot out of range");
      uint32_t h = kNoVar;
      for (const Term& t : op.terms)
        if (cur[t.slot] >= num_inputs && busy[cur[t.slot]] == pos) {
          h = cur[t.slot];
          break;
        }
      cur[op.dst] = new_var(pos, pos);
      hint.back() = h;
    }
  }
  for (SlotId s : prog.outputs) read(s, end);
  const size_t nvars = first_def.size();
  const uint64_t pinned = end + 1;
  for (size_t v = 0; v < num_inputs; ++v) busy[v] = pinned;

  // Both ends are positions in [0, end + 1], so the variables are bucketed
  // by position (counting sorts, O(V + positions)) rather than sorted and
  // kept in a heap of active intervals: at K = 2^20 one rank has 2^21
  // variables and the heap's cache misses were a third of its compile.
  const size_t P = static_cast<size_t>(pinned) + 1;
  std::vector<uint32_t> def_at(P + 1, 0), free_at(P + 1, 0);
  for (size_t v = 0; v < nvars; ++v) {
    ++def_at[first_def[v] + 1];
    ++free_at[busy[v] + 1];
  }
  for (size_t i = 1; i <= P; ++i) def_at[i] += def_at[i - 1], free_at[i] += free_at[i - 1];
  // vars: by first write, then creation order (a stable counting sort);
  // ending: by end of interval.
  std::vector<uint32_t> vars(nvars), ending(nvars);
  {
    std::vector<uint32_t> d(def_at.begin(), def_at.end() - 1), f(free_at.begin(), free_at.end() - 1);
    for (uint32_t v = 0; v < nvars; ++v) {
      vars[d[first_def[v]]++] = v;
      ending[f[busy[v]]++] = v;
    }
  }
  // Left-edge colouring: in order of first write, take the lowest slot whose
  // variable has ended. Optimal for interval graphs (uses as many slots as
  // the largest number of simultaneously live values).
  // An op's value takes its hint's slot when that is free (still optimal:
  // any free slot keeps the colouring minimal).
  FreeSlots free_slots;
  SlotId colors = 0;
  std::vector<SlotId> color(nvars, 0);
  size_t released = 0;  // ending[0, released) have given their slot back
  for (uint32_t v : vars) {
    // Every variable that ends by v's first write started before it (its
    // interval is non-empty), so it has its colour already.
    const size_t upto = free_at[first_def[v] + 1];
    for (; released < upto; ++released) free_slots.free(color[ending[released]]);
    SlotId c;
    if (hint[v] != kNoVar && free_slots.is_free(color[hint[v]])) {
      c = color[hint[v]];
      free_slots.take(c);
    } else if (!free_slots.empty()) {
      c = free_slots.lowest();
      free_slots.take(c);
    } else {
      c = colors++;
      free_slots.add();
    }
    color[v] = c;
  }
  // The same walk again, renaming every read to its variable's colour and
  // every write to the new variable's (created in the same order).
  std::fill(cur.begin(), cur.end(), kNoVar);
  uint32_t next = 0;
  for (SlotId& s : prog.inputs) {
    if (cur[s] == kNoVar) cur[s] = next++;
    s = color[cur[s]];
  }
  COLLPLAN_ASSERT(next == num_inputs, "alloc-slots: inputs renamed differently");
  auto map = [&](SlotId& s) { s = color[cur[s]]; };
  for (Step& st : prog.steps) {
    for (Send& s : st.sends)
      for (Combo& c : s.payload)
        for (Term& t : c.terms) map(t.slot);
    for (Recv& r : st.recvs)
      for (SlotId& s : r.into) {
        cur[s] = next++;
        map(s);
      }
    for (Op& op : st.ops) {
      for (Term& t : op.terms) map(t.slot);
      cur[op.dst] = next++;
      map(op.dst);
      // A matrix-bound op is a field linear combination (commutative), so its
      // terms may be put back in slot order: the shoot initialisation then
      // reads consecutive slots again, which the binary format stores as a
      // run (3x smaller .cplan at K = 4096) and the runtime can treat as one
      // dot product. Other ops keep their order (user operators may not
      // commute).
      // Renumbering often keeps them in order already (the check is cheaper
      // than the sort's buffer and merges over an encode's K^2 terms).
      const auto by_slot = [](const Term& a, const Term& b) { return a.slot < b.slot; };
      if (op.matrix_col != kNoCol && !std::is_sorted(op.terms.begin(), op.terms.end(), by_slot))
        std::stable_sort(op.terms.begin(), op.terms.end(), by_slot);
    }
  }
  COLLPLAN_ASSERT(next == nvars, "alloc-slots: variables renamed differently");
  for (SlotId& s : prog.outputs) map(s);
  prog.num_slots = static_cast<uint32_t>(colors);
}

void alloc_slots(Plan& plan) {
  for (Program& prog : plan.ranks) alloc_slots_rank(prog, plan.spec.lambda);
}

}  // namespace collplan::passes
