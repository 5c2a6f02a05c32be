#include "ir/validate.h"

#include <algorithm>
#include <functional>
#include <tuple>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::ir {

namespace {

// `where` names the combination in a message; it is formatted only for one
// (a plan has a combination per message element and op).
template <class Where>
void check_combo(const Field& f, const Program& prog, StepNo t, std::span<const Term> terms, const Where& where) {
  for (const Term& term : terms) {
    if (term.slot >= prog.num_slots)
      verify_error("rank {} step {}: {} reads slot {}, but the rank has {} slots (valid: 0..{})", prog.rank, t, where(),
                   term.slot, prog.num_slots, prog.num_slots - 1);
    if (!f.valid(term.coeff))
      verify_error("rank {} step {}: {} has coefficient {} on slot {}, not an element of {} (valid: 0..{})", prog.rank, t,
                   where(), term.coeff, term.slot, f.name(), f.size() - 1);
  }
}

void check_io(const Spec& spec, const Program& prog, uint32_t k, uint32_t n_in, uint32_t n_out) {
  if (prog.inputs.size() != n_in)
    verify_error("rank {}: has {} input slots, {} needs {}", k, prog.inputs.size(), op_name(spec.op), n_in);
  if (prog.outputs.size() != n_out)
    verify_error("rank {}: has {} output slots, {} needs {}", k, prog.outputs.size(), op_name(spec.op), n_out);
}

// The rules of plan.h that rank k's program must keep on its own: bounds,
// ports, postal timing of its receives, nothing in flight after the last
// step, no read before write, outputs written, n_in inputs and n_out outputs.
// Every send it makes is passed to on_send (when given) for matching.
void check_program(const Spec& spec, uint32_t num_steps, const Program& prog, uint32_t k, uint32_t n_in, uint32_t n_out,
                   const std::function<void(const Send&, StepNo)>& on_send) {
  const uint32_t R = num_ranks(spec);
  const uint64_t P = spec.p, lam = spec.lambda;
  if (prog.rank != k) verify_error("program {} is labelled rank {}", k, prog.rank);
  check_io(spec, prog, k, n_in, n_out);
  std::vector<uint8_t> defined(prog.num_slots, 0);
  for (SlotId s : prog.inputs) {
    if (s >= prog.num_slots) verify_error("rank {}: input slot {} is out of range (the rank has {} slots)", k, s, prog.num_slots);
    if (defined[s]) verify_error("rank {}: slot {} is used for two inputs", k, s);
    defined[s] = 1;
  }
  for (SlotId s : prog.outputs)
    if (s >= prog.num_slots) verify_error("rank {}: output slot {} is out of range (the rank has {} slots)", k, s, prog.num_slots);

  StepNo prev = 0;
  std::vector<StepNo> port_send(P, 0), port_recv(P, 0);
  std::vector<StepNo> written_at(prog.num_slots, 0);
  for (const Step& st : prog.steps) {
    const StepNo t = st.t;
    if (t <= prev) verify_error("rank {}: step {} comes after step {} (steps must increase)", k, t, prev);
    if (t < 1 || t > num_steps) verify_error("rank {}: step {} is outside 1..{}", k, t, num_steps);
    prev = t;
    // (1) sends read the state at the end of step t−1.
    for (size_t si = 0; si < st.sends.size(); ++si) {
      const Send& s = st.sends[si];
      if (s.port >= P) verify_error("rank {} step {}: send on port {}, but p = {} (valid ports: 0..{})", k, t, s.port, P, P - 1);
      if (port_send[s.port] == t) verify_error("rank {} step {}: port {} sends twice in one step", k, t, s.port);
      port_send[s.port] = t;
      if (s.to >= R) verify_error("rank {} step {} port {}: destination rank {} does not exist (valid: 0..{})", k, t, s.port, s.to, R - 1);
      if (s.to == k) verify_error("rank {} step {} port {}: sends to itself (a local copy must be an op)", k, t, s.port);
      if (s.payload.empty()) verify_error("rank {} step {} port {}: empty message to rank {}", k, t, s.port, s.to);
      for (size_t e = 0; e < s.payload.size(); ++e) {
        const auto where = [&] { return fmt::format("send on port {} (element {})", s.port, e); };
        check_combo(spec.field, prog, t, s.payload[e].terms, where);
        for (const Term& term : s.payload[e].terms)
          if (!defined[term.slot])
            verify_error("rank {} step {}: {} reads slot {} before it holds a value", k, t, where(), term.slot);
      }
      if (t + lam - 1 > num_steps)
        verify_error("rank {} step {} port {}: message to rank {} would arrive in step {}, after the last step {} (still in flight)",
                     k, t, s.port, s.to, t + lam - 1, num_steps);
      if (on_send) on_send(s, t);
    }
    // (2) receives.
    for (const Recv& r : st.recvs) {
      if (r.port >= P) verify_error("rank {} step {}: receive on port {}, but p = {} (valid ports: 0..{})", k, t, r.port, P, P - 1);
      if (port_recv[r.port] == t) verify_error("rank {} step {}: port {} receives twice in one step", k, t, r.port);
      port_recv[r.port] = t;
      if (r.from >= R) verify_error("rank {} step {} port {}: source rank {} does not exist (valid: 0..{})", k, t, r.port, r.from, R - 1);
      if (r.from == k) verify_error("rank {} step {} port {}: receives from itself", k, t, r.port);
      if (static_cast<uint64_t>(r.sent_at) + lam - 1 != t)
        verify_error("rank {} step {} port {}: receives a message sent in step {}, but with lambda = {} a message received in step {} was sent in step {} (latency violated)",
                     k, t, r.port, r.sent_at, lam, t, static_cast<int64_t>(t) - static_cast<int64_t>(lam) + 1);
      if (r.into.empty()) verify_error("rank {} step {} port {}: empty receive from rank {}", k, t, r.port, r.from);
      for (SlotId s : r.into) {
        if (s >= prog.num_slots)
          verify_error("rank {} step {} port {}: receives into slot {}, but the rank has {} slots", k, t, r.port, s, prog.num_slots);
        if (written_at[s] == t) verify_error("rank {} step {} port {}: slot {} is written twice by this step's receives", k, t, r.port, s);
        written_at[s] = t;
      }
    }
    for (const Recv& r : st.recvs)
      for (SlotId s : r.into) defined[s] = 1;
    // (3) ops in order.
    for (size_t oi = 0; oi < st.ops.size(); ++oi) {
      const Op& op = st.ops[oi];
      const auto where = [&] { return fmt::format("op {} (slot {} := ...)", oi, op.dst); };
      if (op.dst >= prog.num_slots)
        verify_error("rank {} step {}: op {} writes slot {}, but the rank has {} slots", k, t, oi, op.dst, prog.num_slots);
      check_combo(spec.field, prog, t, op.terms, where);
      for (const Term& term : op.terms)
        if (!defined[term.slot]) verify_error("rank {} step {}: {} reads slot {} before it holds a value", k, t, where(), term.slot);
      defined[op.dst] = 1;
    }
  }
  for (size_t j = 0; j < prog.outputs.size(); ++j)
    if (!defined[prog.outputs[j]])
      verify_error("rank {}: output {} (slot {}) never receives a value", k, j, prog.outputs[j]);
}

}  // namespace

void check_io_counts(const Plan& plan) {
  const Spec& spec = plan.spec;
  validate_spec_basics(spec);
  if (plan.ranks.size() != num_ranks(spec))
    verify_error("plan has {} rank programs, the spec needs {}", plan.ranks.size(), num_ranks(spec));
  const std::vector<RankIO> io = rank_ios(spec);
  for (uint32_t k = 0; k < io.size(); ++k) check_io(spec, plan.ranks[k], k, io[k].inputs, io[k].outputs);
}

void verify_structure(const Plan& plan) {
  check_io_counts(plan);
  const std::vector<RankIO> io = rank_ios(plan.spec);
  std::vector<uint32_t> in(io.size()), out(io.size());
  for (size_t k = 0; k < io.size(); ++k) {
    in[k] = io[k].inputs;
    out[k] = io[k].outputs;
  }
  verify_structure(plan, in, out);
}

void verify_rank_structure(const Spec& spec, uint32_t num_steps, const Program& prog, uint32_t max_ranks) {
  validate_spec_basics(spec, max_ranks);
  const uint32_t R = num_ranks(spec);
  if (prog.rank >= R) verify_error("program of rank {}, but the plan has ranks 0..{}", prog.rank, R - 1);
  if (num_steps > kMaxSteps) verify_error("plan has {} steps (at most {} supported)", num_steps, kMaxSteps);
  const RankIO io = rank_io(spec, prog.rank);
  check_program(spec, num_steps, prog, prog.rank, io.inputs, io.outputs, {});
}

void check_rank_messages(const Spec& spec, uint32_t num_steps, const Program& prog, uint32_t n_in, uint32_t n_out,
                         std::vector<MessageEnd>& sends, std::vector<MessageEnd>& recvs) {
  const Rank k = prog.rank;
  check_program(spec, num_steps, prog, k, n_in, n_out,
                [&](const Send& s, StepNo t) { sends.push_back({k, s.to, s.port, t, t, s.payload.size()}); });
  for (const Step& st : prog.steps)
    for (const Recv& r : st.recvs) recvs.push_back({k, r.from, r.port, r.sent_at, st.t, r.into.size()});
}

void match_messages(const Spec& spec, std::vector<MessageEnd>& sends, const std::vector<MessageEnd>& recvs) {
  const uint64_t lam = spec.lambda;
  // Sends by (sender, port, step): a port sends at most one message per step
  // (check_program), so the key is unique.
  auto before = [](const MessageEnd& a, const MessageEnd& b) {
    return std::tie(a.rank, a.port, a.sent_at) < std::tie(b.rank, b.port, b.sent_at);
  };
  std::sort(sends.begin(), sends.end(), before);
  std::vector<uint8_t> matched(sends.size(), 0);
  // Every receive, in the order given (rank, then step), with exactly one send.
  for (const MessageEnd& r : recvs) {
    const MessageEnd want{r.peer, 0, r.port, r.sent_at, 0, 0};
    auto it = std::lower_bound(sends.begin(), sends.end(), want, before);
    if (it == sends.end() || it->rank != r.peer || it->port != r.port || it->sent_at != r.sent_at)
      verify_error("rank {} step {} port {}: receives from rank {} a message sent in step {}, but rank {} sends nothing on port {} in step {}",
                   r.rank, r.t, r.port, r.peer, r.sent_at, r.peer, r.port, r.sent_at);
    const MessageEnd& s = *it;
    if (s.peer != r.rank)
      verify_error("rank {} step {} port {}: expects a message from rank {} (sent in step {}), but that message goes to rank {}",
                   r.rank, r.t, r.port, r.peer, r.sent_at, s.peer);
    uint8_t& m = matched[static_cast<size_t>(it - sends.begin())];
    if (m)
      verify_error("rank {} step {} port {}: the message from rank {} sent in step {} is received twice", r.rank, r.t,
                   r.port, r.peer, r.sent_at);
    if (s.size != r.size)
      verify_error("rank {} step {} port {}: receives {} elements from rank {}, but the message sent in step {} has {}",
                   r.rank, r.t, r.port, r.size, r.peer, r.sent_at, s.size);
    m = 1;
  }
  for (size_t i = 0; i < sends.size(); ++i)
    if (!matched[i]) {
      const MessageEnd& s = sends[i];
      verify_error("rank {} step {} port {}: the message to rank {} is never received (rank {} has no receive on port {} in step {})",
                   s.rank, s.sent_at, s.port, s.peer, s.peer, s.port, s.sent_at + lam - 1);
    }
}

namespace {

const Step* find_step(const Program& prog, StepNo t) {
  auto it = std::lower_bound(prog.steps.begin(), prog.steps.end(), t, [](const Step& st, StepNo x) { return st.t < x; });
  return it != prog.steps.end() && it->t == t ? &*it : nullptr;
}

// The send of `prog` on `port` in step t, or null.
const Send* find_send(const Program& prog, StepNo t, Port port) {
  if (const Step* st = find_step(prog, t))
    for (const Send& s : st->sends)
      if (s.port == port) return &s;
  return nullptr;
}

// The receive of `prog` on `port` in step t, or null.
const Recv* find_recv(const Program& prog, StepNo t, Port port) {
  if (const Step* st = find_step(prog, t))
    for (const Recv& r : st->recvs)
      if (r.port == port) return &r;
  return nullptr;
}

// match_messages for a plan held whole: each receive's send is looked up in
// the sender's program (its steps are in increasing order) instead of
// gathering every message end in a list — that list was 64 bytes per
// message, as much as the plan's own steps in a latency-optimal plan.
// Requires check_program to have passed on every rank (ranks and ports in
// range, at most one receive per port and step, postal timing).
void match_in_place(const Plan& plan) {
  const uint64_t lam = plan.spec.lambda;
  uint64_t received = 0, sent = 0;
  for (const Program& prog : plan.ranks)
    for (const Step& st : prog.steps) {
      sent += st.sends.size();
      for (const Recv& r : st.recvs) {
        const Send* s = find_send(plan.ranks[r.from], r.sent_at, r.port);
        if (!s)
          verify_error("rank {} step {} port {}: receives from rank {} a message sent in step {}, but rank {} sends nothing on port {} in step {}",
                       prog.rank, st.t, r.port, r.from, r.sent_at, r.from, r.port, r.sent_at);
        if (s->to != prog.rank)
          verify_error("rank {} step {} port {}: expects a message from rank {} (sent in step {}), but that message goes to rank {}",
                       prog.rank, st.t, r.port, r.from, r.sent_at, s->to);
        if (s->payload.size() != r.into.size())
          verify_error("rank {} step {} port {}: receives {} elements from rank {}, but the message sent in step {} has {}",
                       prog.rank, st.t, r.port, r.into.size(), r.from, r.sent_at, s->payload.size());
        ++received;
      }
    }
  // No two receives found the same send: they would both be at its
  // destination, in step t+λ−1, on its port, which check_program refuses.
  // So every send is received exactly when the counts agree.
  if (received == sent) return;
  for (const Program& prog : plan.ranks) {
    const Send* lost = nullptr;  // the first by (port, step), as match_messages reports it
    StepNo lost_at = 0;
    for (const Step& st : prog.steps)
      for (const Send& s : st.sends) {
        const Recv* r = find_recv(plan.ranks[s.to], static_cast<StepNo>(st.t + lam - 1), s.port);
        if (r && r->from == prog.rank) continue;
        if (!lost || std::tie(s.port, st.t) < std::tie(lost->port, lost_at)) lost = &s, lost_at = st.t;
      }
    if (lost)
      verify_error("rank {} step {} port {}: the message to rank {} is never received (rank {} has no receive on port {} in step {})",
                   prog.rank, lost_at, lost->port, lost->to, lost->to, lost->port, lost_at + lam - 1);
  }
  COLLPLAN_ASSERT(false, "more sends than receives, but every send is received");
}

}  // namespace

void verify_structure(const Plan& plan, const std::vector<uint32_t>& inputs_per_rank,
                      const std::vector<uint32_t>& outputs_per_rank) {
  const Spec& spec = plan.spec;
  validate_spec_basics(spec);
  const uint32_t R = num_ranks(spec);
  if (plan.ranks.size() != R) verify_error("plan has {} rank programs, the spec needs {}", plan.ranks.size(), R);
  if (plan.num_steps > kMaxSteps) verify_error("plan has {} steps (at most {} supported)", plan.num_steps, kMaxSteps);
  for (uint32_t k = 0; k < R; ++k) {
    if (plan.ranks[k].rank != k) verify_error("program {} is labelled rank {}", k, plan.ranks[k].rank);
    check_program(spec, plan.num_steps, plan.ranks[k], k, inputs_per_rank[k], outputs_per_rank[k], {});
  }
  match_in_place(plan);
}

}  // namespace collplan::ir
