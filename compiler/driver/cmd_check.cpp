// `collplan check PLAN`: a plan file (binary or JSON) checked against its
// postcondition (structure, algebra, exactly or randomized; a prefix plan's
// operand order too; for reduction plans, which operators it is right for)
// and costed against the lower bounds. A single-rank file
// is checked as far as one rank can be (cmd_extract.cpp).
#include <iostream>
#include <optional>
#include <random>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "driver/cost_flags.h"
#include "driver/report.h"
#include "ir/binary.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "passes/verify_order.h"
#include "passes/verify_reduction.h"
#include "passes/verify_stream.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/progress.h"

namespace collplan::cli {

namespace {

passes::VerifyOptions verify_options(const std::string& mode, uint32_t trials, std::optional<uint64_t> seed) {
  passes::VerifyOptions vo;
  if (mode == "exact") vo.mode = passes::VerifyMode::Exact;
  else if (mode == "randomized") vo.mode = passes::VerifyMode::Randomized;
  else vo.mode = passes::VerifyMode::Auto;
  vo.trials = trials;
  // A fresh seed per run unless given: a fixed seed would let a crafted
  // plan pass the randomized check on purpose.
  vo.seed = seed ? *seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  return vo;
}

// `check --streaming`: the plan file mapped and checked rank by rank and
// step by step (passes/verify_stream.h), never decoded whole.
int cmd_check_streaming(const std::string& path, const passes::VerifyOptions& vo, bool json,
                        const CostFlags& cost) {
  if (!is_binary_file(path))
    user_error("{}: --streaming reads binary plan files (.cplan); convert a JSON plan with `collplan import`, or "
               "check it without --streaming",
               path);
  if (single_rank_of(path)) return check_single_rank(path, json);
  const ir::MappedPlan mp(path);
  const Spec& spec = mp.header().spec;
  const passes::CostModel m = cost.model_for(spec.field);
  progress::set_enabled(!json && isatty(STDERR_FILENO));
  const passes::StreamReport rep = passes::verify_streaming(mp, vo);
  const auto c = pipeline::plan_cost(spec, rep.figures);
  const char* order =
      spec.op == OpKind::Prefix ? "not checked by --streaming (check without it to prove operand order)" : nullptr;
  const char* operators = passes::is_reduction_op(spec.op)
                              ? "not checked by --streaming (check without it for the operators the plan is right for)"
                              : nullptr;
  if (json) {
    nlohmann::json j;
    j["ok"] = true;
    j["verification"] = rep.verify.describe();
    j["streaming"] = {{"passes", rep.passes}, {"slots", rep.slots}};
    if (order) j["operand_order"] = order;
    if (operators) j["operators"] = operators;
    j["cost"] = passes::cost_json(c);
    j["digest"] = mp.header().content_hash.hex();
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{}: OK — {} K={} p={} lambda={} field={} algorithm={}\n", path, op_name(spec.op), spec.K,
                           spec.p, spec.lambda, spec.field.name(), spec.algorithm);
  std::cout << "structure: OK, rank by rank (ports, matching, postal timing, read-before-write, bounds)\n";
  std::cout << fmt::format("algebra:   OK, {}; step by step, {} pass{} over the file, {} slot values held\n",
                           rep.verify.describe(), rep.passes, rep.passes == 1 ? "" : "es", rep.slots);
  if (order) std::cout << fmt::format("order:     {}\n", order);
  if (operators) std::cout << fmt::format("operators: {}\n", operators);
  std::cout << cost.describe(spec.field);
  print_cost(c, m, nullptr);
  return 0;
}

int cmd_check(const std::string& path, const std::string& mode, uint32_t trials, std::optional<uint64_t> seed, bool json,
              bool field_only, bool streaming, const CostFlags& cost) {
  if (streaming) return cmd_check_streaming(path, verify_options(mode, trials, seed), json, cost);
  if (single_rank_of(path)) return check_single_rank(path, json);
  const ir::Plan plan = load_plan(path);
  passes::VerifyOptions vo = verify_options(mode, trials, seed);
  // The randomized check draws `trials` values per input (it holds 8 per
  // slot, and simulates the plan again for each 8 more): refuse, before
  // allocating, more than 2^28 of them (1 GiB; the default already reaches
  // a 2^-40 false-accept bound with at most 40 trials).
  if (trials > 0) {
    uint64_t inputs = 0;
    for (const auto& prog : plan.ranks) inputs += prog.inputs.size();
    if (mul_sat(trials, inputs) > kMaxCheckValues)
      user_error("--trials {}: the randomized check would draw trials x inputs = {} x {} values, over the 2^28 = {} "
                 "collplan holds (1 GiB); use fewer trials (each multiplies the false-accept bound by 1/q)",
                 trials, trials, inputs, kMaxCheckValues);
  }
  // A long check shows its progress on a terminal (support/progress.h).
  progress::set_enabled(!json && isatty(STDERR_FILENO));
  const auto rep = [&] {
    const progress::Stage stage("check");
    return passes::verify(plan, vo);
  }();
  // A prefix plan must also keep operand order (valid for any associative
  // operator) unless the user only needs it over the field.
  const bool order_checked = plan.spec.op == OpKind::Prefix && !field_only;
  if (order_checked) passes::verify_order(plan);
  // Which MPI-style operators the plan may be replayed with: informative,
  // a field plan that is not exact is still a right plan.
  std::optional<passes::ReductionProperties> operators;
  if (passes::is_reduction_op(plan.spec.op)) operators = passes::reduction_properties(plan);
  const auto c = pipeline::plan_cost(plan);
  const passes::CostModel m = cost.model_for(plan.spec.field);
  if (json) {
    nlohmann::json j;
    j["ok"] = true;
    j["verification"] = rep.describe();
    if (order_checked) j["operand_order"] = "kept";
    if (operators) j["operators"] = operators_json(*operators);
    j["cost"] = passes::cost_json(c);
    j["digest"] = ir::plan_digest(plan).hex();
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{}: OK — {} K={} p={} lambda={} field={} algorithm={}\n", path, op_name(plan.spec.op),
                           plan.spec.K, plan.spec.p, plan.spec.lambda, plan.spec.field.name(), plan.spec.algorithm);
  std::cout << fmt::format("structure: OK (ports, matching, postal timing, read-before-write, bounds)\n");
  std::cout << fmt::format("algebra:   OK, {}\n", rep.describe());
  if (order_checked)
    std::cout << "order:     OK, operands combined as adjacent intervals left to right (any associative operator)\n";
  if (operators) std::cout << operators_line(*operators) << "\n";
  std::cout << cost.describe(plan.spec.field);
  print_cost(c, m, nullptr);
  return 0;
}

struct CheckFlags {
  std::string path, mode = "auto";
  uint32_t trials = 0;
  std::optional<uint64_t> seed;
  bool json = false, field_only = false, streaming = false;
  std::string format = "text";
  CostFlags costing;
};

}  // namespace

void add_check_command(CLI::App& app, CommandList& cmds) {
  auto f = std::make_shared<CheckFlags>();
  auto* check = app.add_subcommand("check", "check a plan file (binary or JSON): structure, algebra, cost vs lower bounds, "
                                               "for reduction plans the operators it is right for; "
                                               "a single-rank file: that rank's structure and its part of the cost");
  check->add_option("plan", f->path, "plan file (.cplan or .json)")->required();
  check->add_option("--mode", f->mode, "auto | exact | randomized")->check(CLI::IsMember({"auto", "exact", "randomized"}))->capture_default_str();
  add_uint_option(check, "--trials", f->trials, "randomized trials (default: enough for a 2^-40 false-accept bound)", "0..4294967295; 0 = the default");
  add_uint_option(check, "--seed", f->seed, "seed of the randomized check (default: fresh each run)", "0..18446744073709551615");
  check->add_flag("--json", f->json, "print the report as JSON (the same as --format json)");
  add_format_option(check, f->format);
  check->footer("Examples:\n"
                "  collplan check a.cplan\n"
                "  collplan check a.json --mode randomized --seed 5\n"
                "  collplan check big.cplan --streaming   # rank by rank, without holding the plan\n"
                "  collplan check a.cplan --format json   # {\"ok\": true, ...} or {\"ok\": false, \"kind\": ...}\n"
                "Exit status: 0 the plan is right; 1 it is wrong (kind structure, algebra or order);\n"
                "2 the file is not a readable plan (kind input); 3 internal error; 4 out of memory\n"
                "or file descriptors.");
  check->add_flag("--streaming", f->streaming,
                  "check a binary plan without holding it: rank by rank, then step by step (randomized algebra; "
                  "no operand-order proof for prefix)");
  check->add_flag("--field-only", f->field_only, "prefix plans: skip the operand-order check (plan used over the field only)");
  add_cost_model_options(check, f->costing);
  cmds.push_back({check, [f] {
                    g_json_errors = f->json || f->format == "json";
                    f->costing.load();  // a bad cost file fails before the check
                    return cmd_check(f->path, f->mode, f->trials, f->seed, g_json_errors, f->field_only, f->streaming,
                                     f->costing);
                  }});
}

}  // namespace collplan::cli
