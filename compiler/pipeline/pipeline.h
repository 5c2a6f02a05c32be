// The compile pipeline: spec → generator → verify → each pass → verify →
// cost, the table of passes, and the cost report with the search's bounds.
//
// The checker runs after the generator and after every pass; a failure there
// is a compiler bug and is reported as an InternalError naming the generator
// or pass that broke the plan. Verification cannot be disabled.
#pragma once

#include <string>
#include <vector>

#include "ir/plan.h"
#include "passes/cost.h"
#include "passes/verify.h"

namespace collplan::pipeline {

using passes::CostReport;
using passes::VerifyOptions;
using passes::VerifyReport;

// One entry of the pass table (pass_registry): what `collplan list` prints
// and what --passes names. `run` is set for the optimisation passes --passes
// may name; verify, recode and cost run on their own terms.
struct PassInfo {
  std::string name;
  std::string description;
  bool in_default_pipeline;
  void (*run)(ir::Plan&) = nullptr;
  // Set when the pass looks at one rank's program only, so it also runs on
  // a rank compiled alone (`collplan compile --rank`) and gives that rank's
  // result in the whole plan.
  void (*run_rank)(ir::Program&) = nullptr;
};
const std::vector<PassInfo>& pass_registry();
// The optimisation pass `name`; UserError listing the valid names.
const PassInfo& find_pass(const std::string& name);

struct CompileOptions {
  std::string algorithm = "auto";
  std::vector<std::string> passes = {"drop-zeros", "alloc-slots"};  // optimisation passes, in order
  VerifyOptions verify;
  passes::CostModel cost_model;  // for `auto` and cost-driven generator parameters
};

struct CompileResult {
  ir::Plan plan;
  CostReport cost;            // of the final plan
  CostReport generator_cost;  // of the generator's plan, before the passes
  VerifyReport verify;        // final verification
  std::vector<std::string> log;  // one line per stage, with timings
};

CompileResult compile(const Spec& spec, const CompileOptions& opt);
// passes::cost with the bound of the shipped plan search (docs/search.md)
// for an encode of one block with λ = 1, when the table has (K, p).
CostReport plan_cost(const ir::Plan& plan);
// The same from figures gathered without the plan (passes::complete_cost).
CostReport plan_cost(const Spec& spec, CostReport figures);
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

}  // namespace collplan::pipeline
