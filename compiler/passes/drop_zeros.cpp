#include "passes/drop_zeros.h"

#include <algorithm>
#include <span>
#include <unordered_map>

#include "ir/simulate.h"

namespace collplan::passes {

namespace {

using namespace ir;

// Which slots are structurally zero, step by step, with the plan trimmed
// while it is simulated (an encode's ops hold K^2 terms; recording a flag
// per term first would hold a second plan-sized table). A combination is
// zero iff all its terms are, so dropping its zero terms just before it is
// evaluated leaves every value the analysis computes as it was. A message's
// zero elements leave its Send once evaluated (the simulation keeps its own
// copy, which still matches the receive); the receives lose the same
// elements afterwards, by kept_mask.
struct ZeroDomain {
  using Value = uint8_t;  // 1 = structurally zero
  Plan& plan;
  // Per message (key) that lost elements: element kept? A message that
  // keeps every element has no entry (a plain collective has no zeros: an
  // entry per message was a map node per message, up to a fifth of the
  // compile's peak for a latency-optimal plan).
  std::unordered_map<uint64_t, std::vector<uint8_t>> kept_mask;

  uint64_t key(Rank from, Port port, StepNo t) const {
    return (static_cast<uint64_t>(t) * plan.ranks.size() + from) * plan.spec.p + port;
  }
  Value undefined() { return 0; }
  Value input(Rank, uint32_t) { return 0; }
  Value eval(Rank, std::span<const Term> terms, std::span<const Value> slots) {
    for (const Term& t : terms)
      if (!slots[t.slot]) return 0;
    return 1;
  }
  // The plan's own (mutable) record of a step the simulation hands over.
  Step& step(Rank k, const Step& st) { return plan.ranks[k].steps[static_cast<size_t>(&st - plan.ranks[k].steps.data())]; }
  void on_send_slots(Rank k, const Step& st, size_t si, std::span<const Value> slots) {
    for (Combo& c : step(k, st).sends[si].payload) erase_if(c.terms, [&](const Term& t) { return slots[t.slot]; });
  }
  void on_send(Rank k, const Step& st, size_t si, const std::vector<Value>& payload) {
    Send& s = step(k, st).sends[si];
    std::vector<uint8_t> keep;
    if (std::find(payload.begin(), payload.end(), Value{1}) != payload.end()) {
      keep.resize(payload.size());
      size_t w = 0;
      for (size_t e = 0; e < payload.size(); ++e)
        if ((keep[e] = !payload[e])) {
          if (w != e) s.payload[w] = std::move(s.payload[e]);  // a vector moved onto itself would empty
          ++w;
        }
      s.payload.resize(w);
      s.payload.shrink_to_fit();  // what is dropped is not held to the end
    }
    if (!keep.empty()) kept_mask[key(k, s.port, st.t)] = std::move(keep);
  }
  // Zero-ness ignores coefficients on purpose: a coefficient that happens
  // to be 0 belongs to the matrix, not the schedule, and a re-coded matrix
  // may need the term.
  void on_op(Rank k, const Step& st, size_t oi, std::span<const Value> slots) {
    erase_if(step(k, st).ops[oi].terms, [&](const Term& t) { return slots[t.slot]; });
  }
};

// Ops are removed in place, and only from a step that has a dead one.
void eliminate_dead_ops(Program& prog) {
  std::vector<uint8_t> live(prog.num_slots, 0), keep;
  for (SlotId s : prog.outputs) live[s] = 1;
  for (auto st = prog.steps.rbegin(); st != prog.steps.rend(); ++st) {
    keep.assign(st->ops.size(), 1);
    bool all = true;
    for (size_t oi = st->ops.size(); oi-- > 0;) {
      const Op& op = st->ops[oi];
      if (!live[op.dst]) {
        keep[oi] = 0, all = false;
        continue;
      }
      live[op.dst] = 0;
      for (const Term& t : op.terms) live[t.slot] = 1;
    }
    if (!all) {
      size_t w = 0;
      for (size_t oi = 0; oi < st->ops.size(); ++oi)
        if (keep[oi]) {
          if (w != oi) st->ops[w] = std::move(st->ops[oi]);
          ++w;
        }
      st->ops.resize(w);
      st->ops.shrink_to_fit();
    }
    for (const Recv& r : st->recvs)
      for (SlotId s : r.into) live[s] = 0;
    for (const Send& s : st->sends)
      for (const Combo& c : s.payload)
        for (const Term& t : c.terms) live[t.slot] = 1;
  }
}

}  // namespace

void drop_zeros(Plan& plan) {
  ZeroDomain dom{plan, {}};
  simulate(plan, dom);
  // One walk per program (its records still in cache) for what the
  // simulation left: empty sends, ops reduced to dst := dst, the receive
  // slots of dropped elements, then dead ops.
  for (Program& prog : plan.ranks) {
    for (Step& st : prog.steps) {
      erase_if(st.sends, [](const Send& s) { return s.payload.empty(); });
      erase_if(st.ops, [](const Op& op) {
        return op.terms.size() == 1 && op.terms[0].slot == op.dst && op.terms[0].coeff == 1;
      });
      for (Recv& r : st.recvs) {
        const auto found = dom.kept_mask.find(dom.key(r.from, r.port, r.sent_at));
        if (found == dom.kept_mask.end()) continue;  // every element kept
        const std::vector<uint8_t>& keep = found->second;
        size_t w = 0;
        for (size_t e = 0; e < r.into.size(); ++e)
          if (keep[e]) r.into[w++] = r.into[e];
        r.into.resize(w);
        r.into.shrink_to_fit();
      }
      erase_if(st.recvs, [](const Recv& r) { return r.into.empty(); });
    }
    eliminate_dead_ops(prog);
    // An output whose writes were all removed (it is zero) gets dst := 0.
    std::vector<uint8_t> defined(prog.num_slots, 0);
    for (SlotId s : prog.inputs) defined[s] = 1;
    for (const Step& st : prog.steps) {
      for (const Recv& r : st.recvs)
        for (SlotId s : r.into) defined[s] = 1;
      for (const Op& op : st.ops) defined[op.dst] = 1;
    }
    for (SlotId s : prog.outputs)
      if (!defined[s] && plan.num_steps > 0) prog.at(plan.num_steps).ops.push_back(Op{s, {}, kNoCol});
    std::erase_if(prog.steps, [](const Step& st) { return st.sends.empty() && st.recvs.empty() && st.ops.empty(); });
  }
}

}  // namespace collplan::passes
