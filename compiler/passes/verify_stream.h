// The checker on a plan it does not hold: `collplan check --streaming`.
//
// verify() decodes the whole plan and keeps every rank's program while it
// simulates them in step order. verify_streaming() reads the mapped file
// (ir::MappedPlan) twice instead:
//   1. structure, rank by rank: each rank's program is decoded alone, put
//      through the same per-program rules as verify_structure
//      (ir::check_rank_messages) and dropped; its sends and receives are
//      kept as 32-byte records and matched once every rank is through
//      (ir::match_messages). The cost figures are gathered on the way.
//   2. algebra, step by step: every rank keeps its slot values and a cursor
//      into its blob; each step decodes one step record at a time and
//      evaluates it at once (for λ = 1 the record is decoded twice: sends
//      first for every rank, then receives and ops). Memory: the slot
//      values and the messages in flight, never the plan's terms.
// The algebra is the randomized check (the exact one needs every slot's
// coefficient vector, which is what a plan too large to hold cannot
// afford), with the same vectors, seed and false-accept bound as verify():
// up to 8 trials per pass over the file, so more trials (small fields)
// read the file again rather than holding more per slot. A prefix plan's
// operand order is not checked here (passes/verify_order.h needs the plan).
#pragma once

#include <cstdint>

#include "ir/binary.h"
#include "passes/cost.h"
#include "passes/verify.h"

namespace collplan::passes {

struct StreamReport {
  VerifyReport verify;  // always randomized
  CostReport figures;   // C1, step_sizes, messages, elements (no bounds: pipeline::plan_cost adds them)
  uint32_t passes = 0;  // passes over the file for the algebra
  uint64_t slots = 0;   // slot values held, over all ranks
};

// UserError when opt.mode is Exact; VerifyError (structure or algebra) when
// the plan is wrong, naming rank, step, port, slot as verify() does.
StreamReport verify_streaming(const ir::MappedPlan& plan, const VerifyOptions& opt = {});

}  // namespace collplan::passes
