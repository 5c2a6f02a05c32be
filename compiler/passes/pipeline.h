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
  // Looks at one rank's program only, so it also runs on a rank compiled
  // alone (`collplan compile --rank`) and gives that rank's result in the
  // whole plan.
  bool per_rank = false;
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
// The pipeline after the generator, for a plan built elsewhere (`collplan
// search`'s schedules) or by compile(): verify, each pass of opt.passes,
// verify, cost. A plan wrong at any stage is an InternalError naming the
// stage (`made_by` for the plan as given).
CompileResult finish_plan(ir::Plan plan, const std::string& made_by, const CompileOptions& opt);

// Runs a named Plan → Plan pass (UserError listing names if unknown).
void run_pass(const std::string& name, ir::Plan& plan);
// Runs a named per-rank pass on one program; UserError naming the per-rank
// passes when `name` is unknown or needs every rank (drop-zeros: it changes
// both ends of a message).
void run_rank_pass(const std::string& name, ir::Program& prog);
// The same check without running anything.
void check_rank_pass_name(const std::string& name);
// The per-rank optimisation passes among `names`, in order (for the default
// pipeline of a rank-local compile).
std::vector<std::string> per_rank_passes(const std::vector<std::string>& names);

}  // namespace collplan::passes
