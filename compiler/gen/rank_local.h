// Rank-local compiles (`collplan compile --rank`, GeneratorInfo::build_rank):
// the shared shape of every generator that can build one rank's program
// without the others'.
//
// Such a generator states its algorithm once, as a per-rank builder: rank
// r's program from the spec, the plan's step count and r alone. The whole
// plan is that builder called for r = 0..K−1 (whole_plan_by_rank); a
// rank-local compile calls it for one r (one_rank_plan). So the rank
// compiled alone equals ranks[r] of the whole plan by construction, and
// the two cannot diverge.
#pragma once

#include <cstdint>
#include <functional>

#include "ir/plan.h"

namespace collplan::gen {

// `build(ctx, r)` is rank r's program; ctx has the plan's spec and step
// count and no programs (ir::plan_context), which is all the checking
// constructors of ir/plan.h read.
using RankBuilder = std::function<ir::Program(const ir::Plan& ctx, uint32_t rank)>;

// The whole plan: build(ctx, r) for every rank.
ir::Plan whole_plan_by_rank(const Spec& spec, uint32_t num_steps, const RankBuilder& build);
// Rank `rank` alone (UserError naming the valid ranks when rank >= K).
ir::RankPlan one_rank_plan(const Spec& spec, uint32_t num_steps, uint32_t rank, const RankBuilder& build);

// The most steps a plan may take: the checker's limit (ir/validate.cpp),
// which a rank compiled alone is verified against too.
inline constexpr uint64_t kMaxGeneratedSteps = uint64_t{1} << 24;
// A step count computed in 64 bits, as a step number, or a UserError naming
// `generator` when it exceeds kMaxGeneratedSteps (a chain of more than 2^24
// ranks: the pipelined trees with p = 1).
uint32_t checked_steps(uint64_t steps, const char* generator);

}  // namespace collplan::gen
