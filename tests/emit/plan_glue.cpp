// Describes the plan of the dispatch header collplan_plan.h (namespace
// collplan_plan) to the test harness (harness.h).
#include "collplan_plan.h"
#include "harness.h"

namespace collplan_test {

namespace {
size_t workspace(uint32_t rank, size_t len) { return collplan_plan::workspace_bytes(rank, len); }
uint32_t inputs(uint32_t rank) { return collplan_plan::num_inputs(rank); }
uint32_t outputs(uint32_t rank) { return collplan_plan::num_outputs(rank); }
}  // namespace

PlanInfo plan_info() {
  return {collplan_plan::kNumRanks, collplan_plan::kElemBytes, &inputs, &outputs,
          &workspace, &collplan_plan::run_rank};
}

}  // namespace collplan_test
