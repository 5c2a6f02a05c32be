#include "ir/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::ir {

Step& Program::at(StepNo t) {
  COLLPLAN_ASSERT(t >= 1, "steps are numbered from 1");
  if (steps.empty() || steps.back().t < t) {
    steps.push_back(Step{t, {}, {}, {}});
    return steps.back();
  }
  if (steps.back().t == t) return steps.back();
  internal_error(__FILE__, __LINE__, fmt::format("rank {}: step {} requested after step {}", rank, t, steps.back().t));
}

Step& Program::at_any(StepNo t) {
  COLLPLAN_ASSERT(t >= 1, "steps are numbered from 1");
  auto it = std::lower_bound(steps.begin(), steps.end(), t, [](const Step& st, StepNo x) { return st.t < x; });
  if (it != steps.end() && it->t == t) return *it;
  return *steps.insert(it, Step{t, {}, {}, {}});
}

Plan plan_context(const Spec& spec, uint32_t num_steps) {
  Plan plan;
  plan.spec = spec;
  plan.num_steps = num_steps;
  return plan;
}

Plan make_plan(const Spec& spec, uint32_t num_steps) {
  Plan plan;
  plan.spec = spec;
  plan.num_steps = num_steps;
  plan.ranks.resize(num_ranks(spec));
  for (uint32_t k = 0; k < num_ranks(spec); ++k) plan.ranks[k].rank = k;
  return plan;
}

static void check_terms(const Program& prog, std::span<const Term> terms) {
  for (const Term& t : terms)
    COLLPLAN_ASSERT(t.slot < prog.num_slots,
                    fmt::format("rank {}: term reads slot {} of {}", prog.rank, t.slot, prog.num_slots));
}

Send make_send(const Plan& plan, const Program& from, Port port, Rank to, Payload payload) {
  COLLPLAN_ASSERT(port < plan.spec.p, fmt::format("rank {}: port {} >= p = {}", from.rank, port, plan.spec.p));
  COLLPLAN_ASSERT(to < num_ranks(plan.spec) && to != from.rank, fmt::format("rank {}: bad destination {}", from.rank, to));
  for (const Combo& c : payload) check_terms(from, c.terms);
  return Send{port, to, std::move(payload)};
}

Recv make_recv(const Plan& plan, const Program& at, StepNo t, Port port, Rank from, Slots into) {
  COLLPLAN_ASSERT(port < plan.spec.p, fmt::format("rank {}: port {} >= p = {}", at.rank, port, plan.spec.p));
  COLLPLAN_ASSERT(from < num_ranks(plan.spec) && from != at.rank, fmt::format("rank {}: bad source {}", at.rank, from));
  COLLPLAN_ASSERT(t >= plan.spec.lambda, fmt::format("rank {}: receive at step {} < lambda", at.rank, t));
  for (SlotId s : into)
    COLLPLAN_ASSERT(s < at.num_slots, fmt::format("rank {}: receive into slot {} of {}", at.rank, s, at.num_slots));
  return Recv{port, from, t - plan.spec.lambda + 1, std::move(into)};
}

Op make_op(const Program& at, SlotId dst, std::vector<Term> terms, uint32_t matrix_col) {
  COLLPLAN_ASSERT(dst < at.num_slots, fmt::format("rank {}: op writes slot {} of {}", at.rank, dst, at.num_slots));
  check_terms(at, terms);
  return Op{dst, std::move(terms), matrix_col};
}

Combo unit(SlotId s) { return Combo{{Term{s, 1}}}; }

uint64_t count_terms(const Program& prog) {
  uint64_t n = 0;
  for (const Step& st : prog.steps) {
    for (const Send& s : st.sends)
      for (const Combo& c : s.payload) n += c.terms.size();
    for (const Op& o : st.ops) n += o.terms.size();
  }
  return n;
}

uint64_t slot_limit(const Program& prog) {
  uint64_t writes = prog.inputs.size();
  for (const Step& st : prog.steps) {
    for (const Recv& r : st.recvs) writes += r.into.size();
    writes += st.ops.size();
  }
  return 4 * writes + 64;
}

uint64_t count_terms(const Plan& plan) {
  uint64_t n = 0;
  for (const Program& p : plan.ranks) n += count_terms(p);
  return n;
}

}  // namespace collplan::ir
