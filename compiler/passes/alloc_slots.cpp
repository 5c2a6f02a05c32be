#include "passes/alloc_slots.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <queue>

#include "support/error.h"

namespace collplan::passes {

namespace {

using namespace ir;

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

}  // namespace

void alloc_slots_rank(Program& prog) {
  const uint32_t S = prog.num_slots;
  std::vector<uint64_t> first_def(S, kNever), last_use(S, 0);
  // Position 0 is "before step 1" (inputs); each step uses positions for its
  // sends, its receives and each op.
  uint64_t pos = 0;
  for (SlotId s : prog.inputs) first_def[s] = 0;
  // A write after the last read still occupies the slot, so a write also
  // extends the variable's interval, past its own position: a slot written
  // again by a receive that is never read (a dead message, e.g. to a rank
  // whose result is not needed) must not share with another receive of the
  // same step.
  auto def = [&](SlotId s) {
    first_def[s] = std::min(first_def[s], pos);
    last_use[s] = std::max(last_use[s], pos + 1);
  };
  auto use = [&](SlotId s) { last_use[s] = std::max(last_use[s], pos); };
  for (const Step& st : prog.steps) {
    ++pos;
    for (const Send& s : st.sends)
      for (const Combo& c : s.payload)
        for (const Term& t : c.terms) use(t.slot);
    ++pos;
    for (const Recv& r : st.recvs)
      for (SlotId s : r.into) def(s);
    for (const Op& op : st.ops) {
      ++pos;
      for (const Term& t : op.terms) use(t.slot);
      def(op.dst);
    }
  }
  const uint64_t end = pos + 1;
  for (SlotId s : prog.outputs) last_use[s] = end;

  // Variables: slots that are ever written. A variable occupies its slot on
  // [first write, end), end = last read or write; a write that is never read
  // still occupies its own position (end = write + 1), so two writes in the
  // same receive phase never share. Both ends are positions in [0, end], so
  // the variables are bucketed by position (counting sorts, O(S + positions))
  // rather than sorted and kept in a heap of active intervals: at K = 2^20
  // one rank has 2^21 variables and the heap's cache misses were a third of
  // its compile.
  const size_t P = static_cast<size_t>(end) + 1;
  std::vector<uint64_t> busy_until(S, 0);
  std::vector<uint32_t> def_at(P + 1, 0), free_at(P + 1, 0);
  size_t nvars = 0;
  for (SlotId s = 0; s < S; ++s)
    if (first_def[s] != kNever) {
      busy_until[s] = std::max(last_use[s], first_def[s] + 1);
      ++def_at[first_def[s] + 1];
      ++free_at[busy_until[s] + 1];
      ++nvars;
    }
  for (size_t i = 1; i <= P; ++i) def_at[i] += def_at[i - 1], free_at[i] += free_at[i - 1];
  // vars: by first write, then slot (the order of a stable counting sort over
  // slots); ending: by end of interval.
  std::vector<SlotId> vars(nvars), ending(nvars);
  {
    std::vector<uint32_t> d(def_at.begin(), def_at.end() - 1), f(free_at.begin(), free_at.end() - 1);
    for (SlotId s = 0; s < S; ++s)
      if (first_def[s] != kNever) {
        vars[d[first_def[s]]++] = s;
        ending[f[busy_until[s]]++] = s;
      }
  }
  // Left-edge colouring: in order of first write, take the lowest slot whose
  // variable has ended. Optimal for interval graphs (uses as many slots as
  // the largest number of simultaneously live values).
  std::priority_queue<SlotId, std::vector<SlotId>, std::greater<>> free_slots;
  SlotId colors = 0;
  std::vector<SlotId> color(S, 0);
  size_t released = 0;  // ending[0, released) have given their slot back
  for (SlotId v : vars) {
    // Every variable that ends by v's first write was written before it
    // (its interval is non-empty), so it has its colour already.
    const size_t upto = free_at[first_def[v] + 1];
    for (; released < upto; ++released) free_slots.push(color[ending[released]]);
    SlotId c;
    if (!free_slots.empty()) {
      c = free_slots.top();
      free_slots.pop();
    } else {
      c = colors++;
    }
    color[v] = c;
  }
  std::vector<SlotId> renum(S, std::numeric_limits<SlotId>::max());
  for (SlotId v : vars) renum[v] = color[v];
  auto map = [&](SlotId& s) {
    COLLPLAN_ASSERT(renum[s] != std::numeric_limits<SlotId>::max(), "alloc-slots: slot read but never written");
    s = renum[s];
  };
  for (SlotId& s : prog.inputs) map(s);
  for (SlotId& s : prog.outputs) map(s);
  for (Step& st : prog.steps) {
    for (Send& s : st.sends)
      for (Combo& c : s.payload)
        for (Term& t : c.terms) map(t.slot);
    for (Recv& r : st.recvs)
      for (SlotId& s : r.into) map(s);
    for (Op& op : st.ops) {
      for (Term& t : op.terms) map(t.slot);
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
  prog.num_slots = static_cast<uint32_t>(colors);
}

void alloc_slots(Plan& plan) {
  for (Program& prog : plan.ranks) alloc_slots_rank(prog);
}

}  // namespace collplan::passes
