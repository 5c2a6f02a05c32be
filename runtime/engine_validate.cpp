// Rejects, at construction, a program the engine cannot replay: every error
// names the rank, the step and the offending value.
#include "runtime/engine_internal.h"

namespace collplan::rt {

void Engine::Impl::validate(const ir::Program& prog) const {
  auto check_terms = [&](std::span<const ir::Term> terms, ir::StepNo t, const char* where) {
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

}  // namespace collplan::rt
