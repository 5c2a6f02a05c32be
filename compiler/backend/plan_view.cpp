// The renderers' view of a plan (plan_view.h): messages, critical path, port
// use, per-step summary.
#include "backend/plan_view.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::backend {

namespace {

// A value's place in the dependency order (plan_view.h, "Critical path"):
// ready step, chain length, and the chain's last node (message, element).
struct Val {
  uint32_t ready = 0;
  uint32_t len = 0;
  int64_t msg = -1;
  uint32_t elem = 0;
};

bool later(const Val& a, const Val& b) { return a.ready != b.ready ? a.ready > b.ready : a.len > b.len; }

Val latest(const std::vector<Val>& slots, std::span<const ir::Term> terms) {
  Val best;
  for (const ir::Term& t : terms)
    if (later(slots[t.slot], best)) best = slots[t.slot];
  return best;
}

}  // namespace

PlanView::PlanView(const ir::Plan& plan) : plan_(&plan) {
  const uint32_t C1 = steps(), p = ports(), lam = lambda();
  const size_t cells = static_cast<size_t>(K()) * C1;
  send_busy_.assign(cells * p, false);
  recv_busy_.assign(cells * p, false);
  ops_.assign(cells, 0);
  for (const ir::Program& prog : plan.ranks)
    for (const ir::Step& st : prog.steps) {
      COLLPLAN_ASSERT(st.t >= 1 && st.t <= C1, "plan view: step out of range (verify first)");
      const size_t cell = static_cast<size_t>(prog.rank) * C1 + (st.t - 1);
      ops_[cell] = static_cast<uint32_t>(st.ops.size());
      for (const ir::Send& s : st.sends) {
        msgs_.push_back(Message{prog.rank, s.to, s.port, st.t, st.t + lam - 1, static_cast<uint32_t>(s.payload.size()),
                                &s, false, 0});
        send_busy_[cell * p + s.port] = true;
      }
      for (const ir::Recv& r : st.recvs) recv_busy_[cell * p + r.port] = true;
    }
  find_critical_path();
}

void PlanView::find_critical_path() {
  const ir::Plan& plan = *plan_;
  const uint32_t C1 = steps(), p = ports();
  auto key = [&](ir::Rank from, ir::Port port, ir::StepNo sent) {
    return (static_cast<uint64_t>(from) * (C1 + 1) + sent) * p + port;
  };
  std::unordered_map<uint64_t, size_t> by_key;
  by_key.reserve(msgs_.size());
  for (size_t i = 0; i < msgs_.size(); ++i) by_key.emplace(key(msgs_[i].from, msgs_[i].port, msgs_[i].sent), i);

  // Every message element's predecessor node (message, element), or msg −1.
  std::vector<std::vector<Val>> elem_val(msgs_.size());
  std::vector<std::vector<Val>> slots(K());
  for (ir::Rank r = 0; r < K(); ++r) slots[r].assign(plan.ranks[r].num_slots, Val{});
  std::vector<size_t> cursor(K(), 0);
  // messages() by sent step (stably: rank order within a step), so that step
  // t's sends are one run of `order`.
  size_t next_msg = 0;
  std::vector<size_t> order(msgs_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return msgs_[a].sent < msgs_[b].sent; });

  for (ir::StepNo t = 1; t <= C1; ++t) {
    // (1) every send of step t reads the slots as they were after step t−1.
    for (; next_msg < order.size() && msgs_[order[next_msg]].sent == t; ++next_msg) {
      Message& m = msgs_[order[next_msg]];
      const std::vector<Val>& s = slots[m.from];
      std::vector<Val>& ev = elem_val[order[next_msg]];
      ev.reserve(m.send->payload.size());
      uint32_t ready = 0;
      for (const ir::Combo& c : m.send->payload) {
        const Val best = latest(s, c.terms);
        ready = std::max(ready, best.ready);
        ev.push_back(best);  // the element's predecessor
      }
      m.slack = t - 1 >= ready ? t - 1 - ready : 0;
    }
    // (2) receives, then (3) ops, rank by rank.
    for (ir::Rank r = 0; r < K(); ++r) {
      const ir::Program& prog = plan.ranks[r];
      if (cursor[r] >= prog.steps.size() || prog.steps[cursor[r]].t != t) continue;
      const ir::Step& st = prog.steps[cursor[r]++];
      for (const ir::Recv& rv : st.recvs) {
        const auto it = by_key.find(key(rv.from, rv.port, rv.sent_at));
        COLLPLAN_ASSERT(it != by_key.end(), "plan view: receive without its send (verify first)");
        const std::vector<Val>& ev = elem_val[it->second];
        for (size_t e = 0; e < rv.into.size() && e < ev.size(); ++e)
          slots[r][rv.into[e]] = Val{t, ev[e].len + 1, static_cast<int64_t>(it->second), static_cast<uint32_t>(e)};
      }
      for (const ir::Op& op : st.ops) slots[r][op.dst] = latest(slots[r], op.terms);
    }
  }
  // The output ready last (ties: lower rank, lower output index).
  Val end;
  for (ir::Rank r = 0; r < K(); ++r)
    for (ir::SlotId o : plan.ranks[r].outputs)
      if (later(slots[r][o], end)) end = slots[r][o];
  path_end_ = end.ready;
  for (Val v = end; v.msg >= 0; v = elem_val[static_cast<size_t>(v.msg)][v.elem]) {
    const size_t m = static_cast<size_t>(v.msg);
    if (path_.empty() || path_.back() != m) path_.push_back(m);
    msgs_[m].critical = true;
  }
  std::reverse(path_.begin(), path_.end());
}

std::vector<StepSummary> PlanView::summary() const {
  const uint32_t C1 = steps(), p = ports();
  std::vector<StepSummary> out(C1);
  std::vector<uint64_t> per_port(static_cast<size_t>(C1) * p, 0);
  for (uint32_t t = 1; t <= C1; ++t) out[t - 1].t = t;
  for (const Message& m : msgs_) {
    StepSummary& s = out[m.sent - 1];
    ++s.messages;
    s.elements += m.elems;
    s.largest = std::max(s.largest, m.elems);
    per_port[static_cast<size_t>(m.sent - 1) * p + m.port] += m.elems;
    if (m.critical) ++s.critical;
  }
  for (uint32_t t = 1; t <= C1; ++t) {
    StepSummary& s = out[t - 1];
    for (ir::Port q = 0; q < p; ++q)
      if (per_port[static_cast<size_t>(t - 1) * p + q] > s.busiest_port_elements) {
        s.busiest_port_elements = per_port[static_cast<size_t>(t - 1) * p + q];
        s.busiest_port = q;
      }
    for (ir::Rank r = 0; r < K(); ++r) {
      bool active = false;
      for (ir::Port q = 0; q < p; ++q) {
        s.busy_send_ports += send_busy(r, t, q);
        active = active || send_busy(r, t, q) || recv_busy(r, t, q);
      }
      s.active_ranks += active;
    }
  }
  return out;
}

std::vector<uint64_t> PlanView::traffic() const {
  std::vector<uint64_t> v(static_cast<size_t>(K()) * steps(), 0);
  for (const Message& m : msgs_) v[static_cast<size_t>(m.from) * steps() + (m.sent - 1)] += m.elems;
  return v;
}

Range parse_range(const std::string& text, const char* flag, const char* what, uint32_t lo, uint32_t hi) {
  auto bad = [&](const char* why) {
    user_error("{} {}: {}; valid: A-B or A with {} <= A <= B <= {} ({} {}..{})", flag, text, why, lo, hi, what, lo, hi);
  };
  auto number = [&](std::string_view s, uint32_t& out) {
    const auto* b = s.data();
    const auto* e = s.data() + s.size();
    const auto r = std::from_chars(b, e, out);
    if (s.empty() || r.ec != std::errc() || r.ptr != e) bad("not a number or range");
  };
  Range r;
  const auto dash = text.find('-');
  if (dash == std::string::npos) {
    number(text, r.lo);
    r.hi = r.lo;
  } else {
    number(std::string_view(text).substr(0, dash), r.lo);
    number(std::string_view(text).substr(dash + 1), r.hi);
  }
  if (r.lo > r.hi) bad("the range is reversed");
  if (r.lo < lo || r.hi > hi) bad("out of range");
  return r;
}

std::string critical_path_text(const PlanView& v) {
  if (v.critical_path().empty()) return "(empty)";
  std::string s = fmt::format("r{}", v.messages()[v.critical_path().front()].from);
  for (size_t i : v.critical_path()) {
    const Message& m = v.messages()[i];
    s += m.sent == m.lands ? fmt::format(" →(port {}, step {}) r{}", m.port, m.sent, m.to)
                           : fmt::format(" →(port {}, steps {}..{}) r{}", m.port, m.sent, m.lands, m.to);
  }
  return s;
}

std::string combo_text(const ir::Combo& c) {
  if (c.terms.empty()) return "0";
  std::string s;
  for (const ir::Term& t : c.terms) {
    if (!s.empty()) s += " + ";
    s += t.coeff == 1 ? fmt::format("s{}", t.slot) : fmt::format("{}*s{}", t.coeff, t.slot);
  }
  return s;
}

}  // namespace collplan::backend
