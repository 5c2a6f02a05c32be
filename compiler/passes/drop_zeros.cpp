#include "passes/drop_zeros.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "ir/simulate.h"

namespace collplan::passes {

namespace {

using namespace ir;

struct ZeroDomain {
  using Value = uint8_t;  // 1 = structurally zero
  const Plan& plan;
  std::map<std::tuple<Rank, size_t, size_t>, std::vector<uint8_t>> send_zero;  // per payload element
  std::map<std::tuple<Rank, size_t, size_t>, std::vector<uint8_t>> op_zero;    // per term
  // Per payload element, per term: a combination with both zero and non-zero
  // terms (a partial sum plus a partial that turned out zero) loses the zero
  // ones, whose receives are removed.
  std::map<std::tuple<Rank, size_t, size_t>, std::vector<std::vector<uint8_t>>> send_term_zero;
  std::vector<std::vector<uint8_t>> end_zero;

  Value undefined() { return 0; }
  Value input(Rank, uint32_t) { return 0; }
  Value eval(Rank, const std::vector<Term>& terms, const std::vector<Value>& slots) {
    for (const Term& t : terms)
      if (!slots[t.slot]) return 0;
    return 1;
  }
  size_t step_index(Rank k, const Step& st) const { return static_cast<size_t>(&st - plan.ranks[k].steps.data()); }
  void on_send(Rank k, const Step& st, size_t si, const std::vector<Value>& payload) {
    send_zero[{k, step_index(k, st), si}] = payload;
  }
  void on_send_slots(Rank k, const Step& st, size_t si, const std::vector<Value>& slots) {
    std::vector<std::vector<uint8_t>> z;
    for (const Combo& c : st.sends[si].payload) {
      z.emplace_back();
      for (const Term& t : c.terms) z.back().push_back(slots[t.slot]);
    }
    send_term_zero[{k, step_index(k, st), si}] = std::move(z);
  }
  void on_op(Rank k, const Step& st, size_t oi, const std::vector<Value>& slots) {
    std::vector<uint8_t> z;
    for (const Term& t : st.ops[oi].terms) z.push_back(slots[t.slot]);
    op_zero[{k, step_index(k, st), oi}] = std::move(z);
  }
  void on_end(Rank k, const std::vector<Value>& slots) {
    if (end_zero.empty()) end_zero.resize(plan.ranks.size());
    end_zero[k] = slots;
  }
};

void eliminate_dead_ops(Program& prog) {
  std::vector<uint8_t> live(prog.num_slots, 0);
  for (SlotId s : prog.outputs) live[s] = 1;
  for (auto st = prog.steps.rbegin(); st != prog.steps.rend(); ++st) {
    std::vector<Op> kept;
    for (auto op = st->ops.rbegin(); op != st->ops.rend(); ++op) {
      if (!live[op->dst]) continue;
      live[op->dst] = 0;
      for (const Term& t : op->terms) live[t.slot] = 1;
      kept.push_back(std::move(*op));
    }
    std::reverse(kept.begin(), kept.end());
    st->ops = std::move(kept);
    for (const Recv& r : st->recvs)
      for (SlotId s : r.into) live[s] = 0;
    for (const Send& s : st->sends)
      for (const Combo& c : s.payload)
        for (const Term& t : c.terms) live[t.slot] = 1;
  }
}

}  // namespace

void drop_zeros(Plan& plan) {
  ZeroDomain dom{plan, {}, {}, {}, {}};
  simulate(plan, dom);
  const uint32_t R = static_cast<uint32_t>(plan.ranks.size());
  const uint64_t P = plan.spec.p;
  auto key = [&](Rank from, Port port, StepNo t) { return (static_cast<uint64_t>(t) * R + from) * P + port; };
  std::unordered_map<uint64_t, std::vector<uint8_t>> kept_mask;  // per message: element kept?

  for (Program& prog : plan.ranks) {
    const Rank k = prog.rank;
    for (size_t si = 0; si < prog.steps.size(); ++si) {
      Step& st = prog.steps[si];
      std::vector<Send> sends;
      for (size_t i = 0; i < st.sends.size(); ++i) {
        Send& s = st.sends[i];
        const auto& zero = dom.send_zero.at({k, si, i});
        const auto& term_zero = dom.send_term_zero.at({k, si, i});
        std::vector<uint8_t> keep(zero.size());
        std::vector<Combo> payload;
        for (size_t e = 0; e < s.payload.size(); ++e) {
          keep[e] = !zero[e];
          if (!keep[e]) continue;
          Combo c;
          for (size_t ti = 0; ti < s.payload[e].terms.size(); ++ti)
            if (!term_zero[e][ti]) c.terms.push_back(s.payload[e].terms[ti]);
          payload.push_back(std::move(c));
        }
        kept_mask[key(k, s.port, st.t)] = std::move(keep);
        s.payload = std::move(payload);
        if (!s.payload.empty()) sends.push_back(std::move(s));
      }
      st.sends = std::move(sends);
      for (size_t oi = 0; oi < st.ops.size(); ++oi) {
        Op& op = st.ops[oi];
        const auto& zero = dom.op_zero.at({k, si, oi});
        std::vector<Term> terms;
        for (size_t i = 0; i < op.terms.size(); ++i)
          if (!zero[i]) terms.push_back(op.terms[i]);
        op.terms = std::move(terms);
      }
      // Zero-ness ignores coefficients on purpose: a coefficient that happens
      // to be 0 belongs to the matrix, not the schedule, and a re-coded
      // matrix may need the term.
      std::erase_if(st.ops, [](const Op& op) {
        return op.terms.size() == 1 && op.terms[0].slot == op.dst && op.terms[0].coeff == 1;
      });
    }
  }
  for (Program& prog : plan.ranks) {
    for (Step& st : prog.steps) {
      std::vector<Recv> recvs;
      for (Recv& r : st.recvs) {
        const auto& keep = kept_mask.at(key(r.from, r.port, r.sent_at));
        std::vector<SlotId> into;
        for (size_t e = 0; e < r.into.size(); ++e)
          if (keep[e]) into.push_back(r.into[e]);
        r.into = std::move(into);
        if (!r.into.empty()) recvs.push_back(std::move(r));
      }
      st.recvs = std::move(recvs);
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
