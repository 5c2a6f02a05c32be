// The shared shape of the rank-local compiles (gen/rank_local.h).
#include "gen/rank_local.h"

#include "support/error.h"

namespace collplan::gen {

ir::Plan whole_plan_by_rank(const Spec& spec, uint32_t num_steps, const RankBuilder& build) {
  ir::Plan plan = ir::make_plan(spec, num_steps);
  const ir::Plan ctx = ir::plan_context(spec, num_steps);
  for (uint32_t r = 0; r < spec.K; ++r) {
    plan.ranks[r] = build(ctx, r);
    // Steps are appended one by one, so up to half the vector's capacity is
    // slack: 128 bytes per unused Step, for the plan's whole lifetime.
    plan.ranks[r].steps.shrink_to_fit();
  }
  return plan;
}

ir::RankPlan one_rank_plan(const Spec& spec, uint32_t num_steps, uint32_t rank, const RankBuilder& build) {
  if (rank >= spec.K)
    user_error("rank {} is not a processor of this spec (K = {}, valid ranks 0..{})", rank, spec.K, spec.K - 1);
  ir::RankPlan rp;
  rp.spec = spec;
  rp.num_steps = num_steps;
  rp.program = build(ir::plan_context(spec, num_steps), rank);
  return rp;
}

uint32_t checked_steps(uint64_t steps, const char* generator) {
  if (steps > kMaxGeneratedSteps)
    user_error("{}: the plan would take {} steps, more than the {} a plan may take (p > 1 ports make the tree "
               "shallower; fewer ranks or a shorter latency shorten it)",
               generator, steps, kMaxGeneratedSteps);
  return static_cast<uint32_t>(steps);
}

}  // namespace collplan::gen
