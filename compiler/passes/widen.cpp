#include "passes/widen.h"

#include "support/error.h"

namespace collplan::passes {

using namespace ir;

Plan widen(const Plan& plan, uint32_t n) {
  const Spec& s = plan.spec;
  if (n < 1) user_error("widen: n = {} blocks; n >= 1", n);
  if (s.blocks != 1) user_error("widen: the plan already has blocks = {}; widen takes a one-block plan", s.blocks);
  if (s.op == OpKind::Allgatherv || s.op == OpKind::Prefix)
    user_error("widen: '{}' has per-rank counts, not n equal blocks (valid: encode, decentralized-encode, broadcast, "
               "reduce, allgather, allreduce)",
               op_name(s.op));
  if (uint64_t{n} * (uint64_t{plan.num_steps} + 1) > UINT32_MAX)
    user_error("widen: n = {} blocks is too many", n);
  Plan out;
  out.spec = s;
  out.spec.blocks = n;
  out.num_steps = plan.num_steps;
  out.ranks.reserve(plan.ranks.size());
  auto slots = [n](std::span<const SlotId> v) {
    std::vector<SlotId> w;
    w.reserve(v.size() * n);
    for (SlotId x : v)
      for (uint32_t b = 0; b < n; ++b) w.push_back(x * n + b);
    return w;
  };
  auto terms = [n](std::span<const Term> v, uint32_t b) {
    std::vector<Term> w;
    w.reserve(v.size());
    for (const Term& t : v) w.push_back(Term{t.slot * n + b, t.coeff});
    return w;
  };
  for (const Program& p : plan.ranks) {
    if (uint64_t{p.num_slots} * n > UINT32_MAX)
      user_error("widen: rank {} would need {} x {} slots, more than a program can index", p.rank, p.num_slots, n);
    Program q;
    q.rank = p.rank;
    q.num_slots = p.num_slots * n;
    q.inputs = slots(p.inputs);
    q.outputs = slots(p.outputs);
    q.steps.reserve(p.steps.size());
    for (const Step& st : p.steps) {
      Step w;
      w.t = st.t;
      for (const Send& snd : st.sends) {
        Send x{snd.port, snd.to, {}};
        x.payload.reserve(snd.payload.size() * n);
        for (const Combo& c : snd.payload)
          for (uint32_t b = 0; b < n; ++b) x.payload.push_back(Combo{terms(c.terms, b)});
        w.sends.push_back(std::move(x));
      }
      for (const Recv& r : st.recvs) w.recvs.push_back(Recv{r.port, r.from, r.sent_at, slots(r.into)});
      // Op i of block b reads only block-b slots, so the blocks' ops
      // interleave freely; keeping op order within a block keeps in-place
      // updates (dst among its terms) right.
      w.ops.reserve(st.ops.size() * n);
      for (const Op& o : st.ops)
        for (uint32_t b = 0; b < n; ++b) w.ops.push_back(Op{o.dst * n + b, terms(o.terms, b), kNoCol});
      q.steps.push_back(std::move(w));
    }
    out.ranks.push_back(std::move(q));
  }
  return out;
}

}  // namespace collplan::passes
