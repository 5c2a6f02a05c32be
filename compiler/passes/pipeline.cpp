#include "passes/pipeline.h"

#include <chrono>

#include <fmt/format.h>

#include "gen/registry.h"
#include "passes/alloc_slots.h"
#include "passes/drop_zeros.h"
#include "passes/verify_order.h"
#include "support/error.h"

namespace collplan::passes {

const std::vector<PassInfo>& pass_registry() {
  static const std::vector<PassInfo> p = {
      {"verify", "the checker: structure, exact or randomized algebra against the postcondition (always runs)", true},
      {"drop-zeros", "remove structurally zero message elements and dead ops (lowers C2 of prepare-and-shoot)", true},
      {"alloc-slots",
       "share slots between values with disjoint lifetimes (left-edge colouring of the lifetime intervals); per rank",
       true, true},
      {"recode", "replace a universal plan's coefficients for a new matrix, keeping its schedule (collplan recode)", false},
      {"cost", "C1, C2, per-step sizes, lower bounds (Lemma 1, postal G; C2: Lemma 2, block broadcast/reduce, receive volume)", true},
  };
  return p;
}

namespace {
constexpr const char* kOptimisationPasses[] = {"drop-zeros", "alloc-slots"};

void check_pass_name(const std::string& name) {
  for (const char* p : kOptimisationPasses)
    if (name == p) return;
  user_error("unknown optimisation pass '{}' (valid: drop-zeros, alloc-slots)", name);
}
}  // namespace

void run_pass(const std::string& name, ir::Plan& plan) {
  check_pass_name(name);
  if (name == "drop-zeros") {
    drop_zeros(plan);
    return;
  }
  alloc_slots(plan);  // the only other name check_pass_name accepts
}

std::vector<std::string> per_rank_passes(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& name : names)
    for (const PassInfo& p : pass_registry())
      if (p.name == name && p.per_rank) out.push_back(name);
  return out;
}

void check_rank_pass_name(const std::string& name) {
  check_pass_name(name);
  std::string per_rank;
  for (const PassInfo& p : pass_registry()) {
    if (p.name == name && p.per_rank) return;
    if (p.per_rank) per_rank += (per_rank.empty() ? "" : ", ") + p.name;
  }
  user_error("pass '{}' cannot run on one rank compiled alone: it removes message elements at both the sender and "
             "the receiver, so it needs every rank (per-rank passes: {})",
             name, per_rank);
}

void run_rank_pass(const std::string& name, ir::Program& prog) {
  check_rank_pass_name(name);
  alloc_slots_rank(prog);  // the only per-rank pass check_rank_pass_name accepts
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

CompileResult compile(const Spec& spec_in, const CompileOptions& opt) {
  Spec spec = spec_in;
  validate_spec_basics(spec);
  const gen::GeneratorInfo& g =
      opt.algorithm == "auto" ? gen::choose_generator(spec, opt.cost_model) : gen::find_generator(opt.algorithm);
  if (!g.computes(spec.op)) user_error("algorithm '{}' does not compute '{}'", g.name, op_name(spec.op));
  gen::require_applicable(g, spec, opt.cost_model);
  spec.algorithm = g.name;
  for (const auto& name : opt.passes) check_pass_name(name);  // before generating anything

  CompileResult res;
  const Postcondition pc = postcondition(spec);
  auto t0 = std::chrono::steady_clock::now();
  res.plan = g.build(spec, opt.cost_model);
  res.log.push_back(fmt::format("generate {:<14} {:8.3f} s", res.plan.spec.algorithm, seconds_since(t0)));
  auto checked = [&](const std::string& stage) {
    auto t1 = std::chrono::steady_clock::now();
    try {
      res.verify = verify(res.plan, pc, opt.verify);
      // Prefix plans promise to work for any associative operator, so every
      // stage must also keep operand order.
      if (spec.op == OpKind::Prefix) verify_order(res.plan);
    } catch (const VerifyError& e) {
      throw InternalError(fmt::format("internal error: the plan is wrong after {}: {} (this is a bug in collplan)", stage, e.what()));
    }
    res.log.push_back(fmt::format("verify after {:<8} {:8.3f} s  ({})", stage, seconds_since(t1), res.verify.describe()));
  };
  checked(g.name);
  res.generator_cost = cost(res.plan);
  for (const auto& name : opt.passes) {
    auto t1 = std::chrono::steady_clock::now();
    run_pass(name, res.plan);
    res.log.push_back(fmt::format("pass {:<18} {:8.3f} s", name, seconds_since(t1)));
    checked(name);
  }
  res.cost = cost(res.plan);
  return res;
}

}  // namespace collplan::passes
