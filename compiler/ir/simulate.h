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
//              std::span<const Value> slots);     // Σ terms over rank k's slots
//   Value undefined();                          // value of a never-written slot
// and may provide hooks (detected with requires-expressions; a hook of that
// name with other parameters does not compile):
//   void on_send(ir::Rank k, const ir::Step&, size_t send_index, const std::vector<Value>& payload);
//   void on_send_slots(ir::Rank k, const ir::Step&, size_t send_index, std::span<const Value> slots);
//                                               // the slots the payload is evaluated from
//   void on_op(ir::Rank k, const ir::Step&, size_t op_index, std::span<const Value> slots);  // before the op runs
//   void on_end(ir::Rank k, std::span<const Value> slots);
//                                               // reads the output slots only: once a rank
//                                               // has run its last step, its other slots
//                                               // are reset to undefined() (below)
//
// Memory. A value the rest of the simulation cannot read is let go: after a
// rank's last step record only its outputs can still be read (by on_end),
// so its other slots are reset then — the exact check's partial sums of a
// reduce are held while a rank still works, not to the end. The slots of
// all ranks are one array (a vector per rank was 24 bytes and a heap block
// more per rank, as much as a broadcast's one value). Messages in
// flight are kept per sending step in one array sorted by (sender, port),
// a one-element payload in place, not one hash node and one vector each.
#pragma once

#include <algorithm>
#include <deque>
#include <span>
#include <type_traits>
#include <vector>

#include "ir/plan.h"
#include "support/error.h"
#include "support/progress.h"

namespace collplan::ir {

template <class Domain>
void simulate(const ir::Plan& plan, Domain& dom) {
  using Value = typename Domain::Value;
  // A hook is found by a requires-expression, so one declared with other
  // parameters would be skipped without a word: refuse it instead.
  constexpr bool send_slots_ok = requires(Domain& d, const ir::Step& st, std::span<const Value> s) {
    d.on_send_slots(0u, st, size_t{0}, s);
  };
  constexpr bool op_ok = requires(Domain& d, const ir::Step& st, std::span<const Value> s) {
    d.on_op(0u, st, size_t{0}, s);
  };
  constexpr bool end_ok = requires(Domain& d, std::span<const Value> s) { d.on_end(0u, s); };
  constexpr bool send_ok = requires(Domain& d, const ir::Step& st, const std::vector<Value>& p) {
    d.on_send(0u, st, size_t{0}, p);
  };
  static_assert(send_slots_ok || !requires { &Domain::on_send_slots; }, "on_send_slots has the wrong parameters");
  static_assert(op_ok || !requires { &Domain::on_op; }, "on_op has the wrong parameters");
  static_assert(end_ok || !requires { &Domain::on_end; }, "on_end has the wrong parameters");
  static_assert(send_ok || !requires { &Domain::on_send; }, "on_send has the wrong parameters");
  const uint32_t R = static_cast<uint32_t>(plan.ranks.size());
  const uint64_t P = plan.spec.p;
  // Rank k's slots are cells[at[k] .. at[k+1]).
  std::vector<uint64_t> at(R + 1, 0);
  for (uint32_t k = 0; k < R; ++k) at[k + 1] = at[k] + plan.ranks[k].num_slots;
  std::vector<Value> cells(at[R], dom.undefined());
  auto slots = [&](uint32_t k) { return std::span<Value>(cells.data() + at[k], at[k + 1] - at[k]); };
  auto view = [&](uint32_t k) { return std::span<const Value>(cells.data() + at[k], at[k + 1] - at[k]); };
  std::vector<uint32_t> cursor(R, 0);  // index of the next Step record per rank
  // A rank past its last step: every slot but its outputs reset (values
  // that own nothing have nothing to let go).
  std::vector<uint8_t> is_output;
  auto release = [&](uint32_t k) {
    if constexpr (!std::is_trivially_destructible_v<Value>) {
      const ir::Program& prog = plan.ranks[k];
      is_output.assign(prog.num_slots, 0);
      for (SlotId s : prog.outputs) is_output[s] = 1;
      for (SlotId s = 0; s < prog.num_slots; ++s)
        if (!is_output[s]) slots(k)[s] = dom.undefined();
    }
  };
  for (uint32_t k = 0; k < R; ++k) {
    const ir::Program& prog = plan.ranks[k];
    for (uint32_t i = 0; i < prog.inputs.size(); ++i) slots(k)[prog.inputs[i]] = dom.input(k, i);
    if (prog.steps.empty()) release(k);
  }
  // Messages in flight, one batch per sending step: per message its key
  // (sender, port) — unique, a port sends at most one message per step —
  // and its values, one of them in place, sorted by key. A message's values
  // are let go as it is received (one array of the step's values, freed
  // when its last message was received, held an allgather's whole step of
  // values to its end and left malloc holes the size of a step's messages).
  struct Message {
    uint64_t key;
    SmallVec<Value, 1> values;
  };
  struct Batch {
    ir::StepNo sent_at;
    std::vector<Message> messages;
  };
  std::deque<Batch> mail;  // in increasing sent_at
  std::vector<Value> payload;
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
    // The batch's size first, so that its messages are one exact allocation.
    size_t messages = 0;
    for (uint32_t k = 0; k < R; ++k)
      if (const ir::Step* st = step_at(k, t)) messages += st->sends.size();
    if (messages != 0) {
      Batch& b = mail.emplace_back();
      b.sent_at = t;
      b.messages.reserve(messages);
      for (uint32_t k = 0; k < R; ++k) {
        const ir::Step* st = step_at(k, t);
        if (!st) continue;
        for (size_t si = 0; si < st->sends.size(); ++si) {
          const ir::Send& s = st->sends[si];
          payload.clear();
          if constexpr (send_slots_ok) dom.on_send_slots(k, *st, si, view(k));
          for (const ir::Combo& c : s.payload) payload.push_back(dom.eval(k, c.terms, view(k)));
          if constexpr (send_ok) dom.on_send(k, *st, si, payload);
          b.messages.push_back({uint64_t{k} * P + s.port, SmallVec<Value, 1>(std::move(payload))});
        }
      }
      const auto by_key = [](const Message& x, const Message& y) { return x.key < y.key; };
      if (!std::is_sorted(b.messages.begin(), b.messages.end(), by_key))
        std::sort(b.messages.begin(), b.messages.end(), by_key);
    }
    for (uint32_t k = 0; k < R; ++k) {
      const ir::Step* st = step_at(k, t);
      if (!st) continue;
      for (const ir::Recv& r : st->recvs) {
        const auto b = std::lower_bound(mail.begin(), mail.end(), r.sent_at,
                                        [](const Batch& x, ir::StepNo at) { return x.sent_at < at; });
        Message* m = nullptr;
        if (b != mail.end() && b->sent_at == r.sent_at) {
          const uint64_t key = uint64_t{r.from} * P + r.port;
          const auto it = std::lower_bound(b->messages.begin(), b->messages.end(), key,
                                           [](const Message& x, uint64_t want) { return x.key < want; });
          if (it != b->messages.end() && it->key == key) m = &*it;
        }
        COLLPLAN_ASSERT(m != nullptr && m->values.size() == r.into.size(),
                        "simulate: unmatched receive (run verify_structure first)");
        for (size_t i = 0; i < r.into.size(); ++i) slots(k)[r.into[i]] = std::move(m->values[i]);
        m->values.clear();
        m->values.shrink_to_fit();  // its heap block, if any, goes now
      }
    }
    // Every message sent in t−λ+1 or before has been received by now.
    while (!mail.empty() && uint64_t{mail.front().sent_at} + plan.spec.lambda <= uint64_t{t} + 1) mail.pop_front();
    for (uint32_t k = 0; k < R; ++k) {
      progress::report(uint64_t{t - 1} * R + k, uint64_t{plan.num_steps} * R);
      if (const ir::Step* st = step_at(k, t)) {
        for (size_t oi = 0; oi < st->ops.size(); ++oi) {
          const ir::Op& op = st->ops[oi];
          if constexpr (op_ok) dom.on_op(k, *st, oi, view(k));
          Value v = dom.eval(k, op.terms, view(k));
          slots(k)[op.dst] = std::move(v);
        }
        if (++cursor[k] == plan.ranks[k].steps.size()) release(k);
      }
      next = earliest(next, k);
    }
  }
  if constexpr (end_ok)
    for (uint32_t k = 0; k < R; ++k) dom.on_end(k, view(k));
}

}  // namespace collplan::ir
