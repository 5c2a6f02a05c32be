// The compile pipeline: generator → verify → each pass → verify → cost.
//
// The checker runs after the generator and after every pass; a failure there
// is a compiler bug and is reported as an InternalError naming the generator
// or pass that broke the plan. Verification cannot be disabled.
#pragma once

#include <string>
#include <vector>

#include "gen/postal_encode.h"
#include "ir/plan.h"
#include "passes/cost.h"
#include "passes/verify.h"

namespace collplan::passes {

struct PassInfo {
  std::string name;
  std::string description;
  bool in_default_pipeline;
};
const std::vector<PassInfo>& pass_registry();

struct CompileOptions {
  std::string algorithm = "auto";
  std::vector<std::string> passes = {"drop-zeros", "alloc-slots"};  // optimisation passes, in order
  VerifyOptions verify;
  gen::CostModel cost_model;  // for `auto` and cost-driven generator parameters
};

struct CompileResult {
  ir::Plan plan;
  CostReport cost;            // of the final plan
  CostReport generator_cost;  // of the generator's plan, before the passes
  VerifyReport verify;        // final verification
  std::vector<std::string> log;  // one line per stage, with timings
};

CompileResult compile(const Spec& spec, const CompileOptions& opt);

// Runs a named Plan → Plan pass (UserError listing names if unknown).
void run_pass(const std::string& name, ir::Plan& plan);

}  // namespace collplan::passes
