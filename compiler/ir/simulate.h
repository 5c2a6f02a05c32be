// Step-ordered evaluation of a whole plan over an abstract value domain.
//
// simulate() runs every rank's program exactly as plan.h defines it: for each
// step t = 1..num_steps, first all ranks evaluate their sends from the slot
// values at the end of step t−1 (so a message can never see a value from its
// own step), then all ranks complete the receives of step t (messages sent
// in step t−λ+1), then all ranks run their ops. The checker (exact and
// randomized algebra), the recode pass and the drop-zeros pass are all
// instances of it with different domains.
//
// Precondition: the plan is structurally valid (passes/verify.h,
// verify_structure): sends and receives match one to one, slots are in
// range, nothing is read before it is written.
//
// A Domain provides
//   using Value = ...;                          // one slot's abstract value
//   Value input(ir::Rank k, uint32_t i);        // rank k's i-th input
//   Value eval(ir::Rank k, std::span<const ir::Term> terms,
//              const std::vector<Value>& slots);  // Σ terms over slots
//   Value undefined();                          // value of a never-written slot
// and may provide hooks (detected with requires-expressions):
//   void on_send(ir::Rank k, const ir::Step&, size_t send_index, const std::vector<Value>& payload);
//   void on_send_slots(ir::Rank k, const ir::Step&, size_t send_index, const std::vector<Value>& slots);
//                                               // the slots the payload is evaluated from
//   void on_op(ir::Rank k, const ir::Step&, size_t op_index, const std::vector<Value>& slots);  // before the op runs
//   void on_end(ir::Rank k, const std::vector<Value>& slots);
#pragma once

#include <unordered_map>
#include <vector>

#include "ir/plan.h"
#include "support/error.h"
#include "support/progress.h"

namespace collplan::ir {

template <class Domain>
void simulate(const ir::Plan& plan, Domain& dom) {
  using Value = typename Domain::Value;
  const uint32_t R = static_cast<uint32_t>(plan.ranks.size());
  const uint32_t P = plan.spec.p;
  std::vector<std::vector<Value>> slots(R);
  std::vector<size_t> cursor(R, 0);  // index of the next Step record per rank
  for (uint32_t k = 0; k < R; ++k) {
    const ir::Program& prog = plan.ranks[k];
    slots[k].assign(prog.num_slots, dom.undefined());
    for (uint32_t i = 0; i < prog.inputs.size(); ++i) slots[k][prog.inputs[i]] = dom.input(k, i);
  }
  // Messages in flight, keyed by (sender, port, sent_at): a port sends at most
  // one message per step, so the key is unique.
  auto key = [&](ir::Rank from, ir::Port port, ir::StepNo t) {
    return (static_cast<uint64_t>(t) * R + from) * P + port;
  };
  std::unordered_map<uint64_t, std::vector<Value>> mail;
  auto step_at = [&](uint32_t k, ir::StepNo t) -> const ir::Step* {
    const auto& steps = plan.ranks[k].steps;
    return cursor[k] < steps.size() && steps[cursor[k]].t == t ? &steps[cursor[k]] : nullptr;
  };
  // Steps in which no rank acts change nothing: go from one step some rank
  // acts in to the next (the earliest step record at a rank's cursor, found
  // in the pass that advances the cursors), so the time does not grow with
  // num_steps (which a plan file states in 4 bytes) but with the records.
  auto earliest = [&](ir::StepNo next, uint32_t k) {
    const auto& steps = plan.ranks[k].steps;
    return cursor[k] < steps.size() && (next == 0 || steps[cursor[k]].t < next) ? steps[cursor[k]].t : next;
  };
  ir::StepNo first = 0;
  for (uint32_t k = 0; k < R; ++k) first = earliest(first, k);
  for (ir::StepNo t = first, next = 0; t != 0 && t <= plan.num_steps; t = next, next = 0) {
    for (uint32_t k = 0; k < R; ++k) {
      const ir::Step* st = step_at(k, t);
      if (!st) continue;
      for (size_t si = 0; si < st->sends.size(); ++si) {
        const ir::Send& s = st->sends[si];
        std::vector<Value> payload;
        payload.reserve(s.payload.size());
        if constexpr (requires { dom.on_send_slots(k, *st, si, slots[k]); }) dom.on_send_slots(k, *st, si, slots[k]);
        for (const ir::Combo& c : s.payload) payload.push_back(dom.eval(k, c.terms, slots[k]));
        if constexpr (requires { dom.on_send(k, *st, si, payload); }) dom.on_send(k, *st, si, payload);
        mail[key(k, s.port, t)] = std::move(payload);
      }
    }
    for (uint32_t k = 0; k < R; ++k) {
      const ir::Step* st = step_at(k, t);
      if (!st) continue;
      for (const ir::Recv& r : st->recvs) {
        auto it = mail.find(key(r.from, r.port, r.sent_at));
        COLLPLAN_ASSERT(it != mail.end() && it->second.size() == r.into.size(),
                        "simulate: unmatched receive (run verify_structure first)");
        for (size_t i = 0; i < r.into.size(); ++i) slots[k][r.into[i]] = std::move(it->second[i]);
        mail.erase(it);
      }
    }
    for (uint32_t k = 0; k < R; ++k) {
      progress::report(uint64_t{t - 1} * R + k, uint64_t{plan.num_steps} * R);
      if (const ir::Step* st = step_at(k, t)) {
        for (size_t oi = 0; oi < st->ops.size(); ++oi) {
          const ir::Op& op = st->ops[oi];
          if constexpr (requires { dom.on_op(k, *st, oi, slots[k]); }) dom.on_op(k, *st, oi, slots[k]);
          Value v = dom.eval(k, op.terms, slots[k]);
          slots[k][op.dst] = std::move(v);
        }
        ++cursor[k];
      }
      next = earliest(next, k);
    }
  }
  if constexpr (requires { dom.on_end(0u, slots[0]); })
    for (uint32_t k = 0; k < R; ++k) dom.on_end(k, slots[k]);
}

}  // namespace collplan::ir
