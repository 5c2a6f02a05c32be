#include "pipeline/pipeline.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "gen/registry.h"
#include "gen/searched.h"
#include "passes/alloc_slots.h"
#include "passes/drop_zeros.h"
#include "passes/verify_order.h"
#include "passes/verify_random.h"
#include "support/error.h"
#include "support/progress.h"
#include "support/limits.h"

namespace collplan::pipeline {

using namespace passes;

namespace {

void run_drop_zeros(ir::Plan& plan) { passes::drop_zeros(plan); }
void run_alloc_slots(ir::Plan& plan) { passes::alloc_slots(plan); }
void run_alloc_slots_rank(ir::Program& prog) { passes::alloc_slots_rank(prog); }

// "a, b, c": the names of the registry's entries that `keep` selects.
template <typename Keep>
std::string names_where(Keep keep) {
  std::string out;
  for (const PassInfo& p : pass_registry())
    if (keep(p)) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace

// The one table of passes: `collplan list` prints it, --passes is parsed
// against it, and the pipeline runs its functions.
const std::vector<PassInfo>& pass_registry() {
  static const std::vector<PassInfo> p = {
      {"verify", "the checker: structure, exact or randomized algebra against the postcondition (always runs)", true},
      {"drop-zeros", "remove structurally zero message elements and dead ops (lowers C2 of prepare-and-shoot)", true,
       run_drop_zeros},
      {"alloc-slots",
       "share slots between values with disjoint lifetimes (left-edge colouring of the lifetime intervals); per rank",
       true, run_alloc_slots, run_alloc_slots_rank},
      {"recode", "replace a universal plan's coefficients for a new matrix, keeping its schedule (collplan recode)", false},
      {"cost", "C1, C2, per-step sizes, lower bounds (Lemma 1, postal G; C2: Lemma 2, block broadcast/reduce, receive volume)", true},
  };
  return p;
}

const PassInfo& find_pass(const std::string& name) {
  for (const PassInfo& p : pass_registry())
    if (p.name == name && p.run) return p;
  user_error("unknown optimisation pass '{}' (valid: {})", name, names_where([](const PassInfo& p) { return p.run; }));
}

void run_pass(const std::string& name, ir::Plan& plan) { find_pass(name).run(plan); }

std::vector<std::string> per_rank_passes(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& name : names)
    if (find_pass(name).run_rank) out.push_back(name);
  return out;
}

void check_rank_pass_name(const std::string& name) {
  if (find_pass(name).run_rank) return;
  user_error("pass '{}' cannot run on one rank compiled alone: it removes message elements at both the sender and "
             "the receiver, so it needs every rank (per-rank passes: {})",
             name, names_where([](const PassInfo& p) { return p.run_rank; }));
}

void run_rank_pass(const std::string& name, ir::Program& prog) {
  check_rank_pass_name(name);
  find_pass(name).run_rank(prog);
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

namespace {

// The elements a whole plan's rank programs receive, estimated before it is
// built: K·C2 (C2 bounds what one rank receives), but at most the
// operation's own volume V (each rank's share received once: (K-1)·n for a
// broadcast) times ⌈log2 K⌉, the most any of the redundant schedules
// (circulant, dissemination) re-sends it; a chain's C2 counts its K steps,
// not what one rank holds. The coded operations are bounded by their
// postcondition (encode: K·n <= 16384) and counted as K·C2.
uint64_t plan_elements(const Spec& s, const gen::PostalSplitCost& e) {
  const uint64_t R = num_ranks(s), n = s.blocks, by_c2 = mul_sat(R, e.C2);
  uint64_t total = 0;
  for (uint32_t c : s.counts) total += c;
  uint64_t V = UINT64_MAX;
  switch (s.op) {
    case OpKind::Broadcast:
    case OpKind::Reduce: V = mul_sat(R, n); break;
    case OpKind::Allreduce: V = mul_sat(2 * R, n); break;
    case OpKind::Allgather:
    case OpKind::ReduceScatter: V = mul_sat(R, mul_sat(R, n)); break;
    case OpKind::Allgatherv: V = mul_sat(R, total); break;
    case OpKind::Prefix: V = std::max<uint64_t>(R, total); break;
    default: break;
  }
  uint32_t lg = 1;
  while (lg < 32 && (uint64_t{1} << lg) < R) ++lg;
  return std::min(by_c2, mul_sat(V, lg));
}

void check_plan_size(const Spec& spec, const gen::GeneratorInfo& g, const gen::PostalSplitCost& e) {
  if (e.C1 == UINT32_MAX || e.C2 == UINT64_MAX) return;  // no estimate
  const uint64_t elements = plan_elements(spec, e);
  if (elements <= kMaxPlanElements) return;
  user_error("{} with {} = {}, blocks = {}: the {} plan would hold about {} received elements in its rank programs "
             "(C2 = {} per rank), over the 2^26 = {} collplan builds in one plan (support/limits.h); use fewer ranks "
             "or blocks{}",
             op_name(spec.op), is_code_op(spec.op) ? "N" : "K", num_ranks(spec), spec.blocks,
             g.name, elements, e.C2, kMaxPlanElements,
             g.build_rank ? fmt::format(", or compile one rank alone with --rank R ({} can)", g.name) : std::string());
}

}  // namespace

CostReport plan_cost(const ir::Plan& plan) {
  const Spec& s = plan.spec;
  if (s.op == OpKind::Encode && s.lambda == 1 && s.blocks == 1)
    if (const gen::SearchedEntry* e = gen::find_searched(s.K, s.p)) {
      const SearchBound bound{e->C1, e->proven_bound};
      return cost(plan, &bound);
    }
  return cost(plan);
}

CostReport plan_cost(const Spec& s, CostReport figures) {
  if (s.op == OpKind::Encode && s.lambda == 1 && s.blocks == 1)
    if (const gen::SearchedEntry* e = gen::find_searched(s.K, s.p)) {
      const SearchBound bound{e->C1, e->proven_bound};
      return complete_cost(s, std::move(figures), &bound);
    }
  return complete_cost(s, std::move(figures));
}

CompileResult compile(const Spec& spec_in, const CompileOptions& opt) {
  Spec spec = spec_in;
  validate_spec_basics(spec);
  const gen::GeneratorInfo& g =
      opt.algorithm == "auto" ? gen::choose_generator(spec, opt.cost_model) : gen::find_generator(opt.algorithm);
  if (!g.computes(spec.op)) user_error("algorithm '{}' does not compute '{}'", g.name, op_name(spec.op));
  gen::require_applicable(g, spec, opt.cost_model);
  spec.algorithm = g.name;
  for (const auto& name : opt.passes) (void)find_pass(name);  // before generating anything
  // The whole plan is held in memory: refuse, before generating, one whose
  // estimated size is over kMaxPlanElements (support/limits.h).
  uint64_t elements = 0;  // estimated; 0 when the generator has no estimate
  if (g.estimate) {
    const gen::PostalSplitCost e = g.estimate(spec, opt.cost_model);
    check_plan_size(spec, g, e);
    if (e.C1 != UINT32_MAX && e.C2 != UINT64_MAX) elements = plan_elements(spec, e);
  }

  try {
    auto t0 = std::chrono::steady_clock::now();
    ir::Plan plan = [&] {
      const progress::Stage stage("generate " + g.name);
      return g.build(spec, opt.cost_model);
    }();
    const std::string line = fmt::format("generate {:<14} {:8.3f} s", plan.spec.algorithm, seconds_since(t0));
    CompileResult res = finish_plan(std::move(plan), g.name, opt);
    res.log.insert(res.log.begin(), line);
    return res;
  } catch (const std::bad_alloc&) {
    // Within the limits, so the environment's memory ran out (ulimit -v, a
    // full machine): say what was being built and how large it is. No byte
    // figure: ~40 bytes per received element (support/limits.h) holds for
    // the plan, but the exact check of a coded plan keeps a coefficient
    // vector of K·n entries per slot, far more.
    resource_error(ResourceError::Kind::Memory,
                   "out of memory building and checking the {} plan of {} = {} ranks, blocks = {}{}; raise `ulimit -v` "
                   "or free memory, or use fewer ranks or blocks",
                   g.name, is_code_op(spec.op) ? "N" : "K", num_ranks(spec), spec.blocks,
                   elements ? fmt::format(" (about {} received elements)", elements) : std::string());
  }
}

CompileResult finish_plan(ir::Plan plan, const std::string& made_by, const CompileOptions& opt) {
  CompileResult res;
  res.plan = std::move(plan);
  const Spec& spec = res.plan.spec;
  Postcondition pc = postcondition(spec);
  // The randomized check's vectors and their images, drawn at its first
  // run and shared by every stage's verification. After that the map is
  // needed only for an exact check; when none can follow it is released
  // (an encode's is its K×K matrix, 1 GiB at K = 16384, beside the plan).
  passes::RandomizedInputs drawn;
  auto checked = [&](const std::string& stage) {
    auto t1 = std::chrono::steady_clock::now();
    const progress::Stage progress_stage("verify after " + stage);
    try {
      res.verify = verify(res.plan, pc, opt.verify, &drawn);
      if (drawn.trials != 0 && !pc.map.a.empty() && !may_verify_exactly(pc, res.plan.ranks.size(), opt.verify))
        pc.map = Matrix{};
      // Prefix plans promise to work for any associative operator, so every
      // stage must also keep operand order.
      if (spec.op == OpKind::Prefix) verify_order(res.plan);
    } catch (const VerifyError& e) {
      throw InternalError(fmt::format("internal error: the plan is wrong after {}: {} (this is a bug in collplan)", stage, e.what()));
    }
    res.log.push_back(fmt::format("verify after {:<8} {:8.3f} s  ({})", stage, seconds_since(t1), res.verify.describe()));
  };
  checked(made_by);
  res.generator_cost = plan_cost(res.plan);
  for (const auto& name : opt.passes) {
    auto t1 = std::chrono::steady_clock::now();
    {
      const progress::Stage stage("pass " + name);
      run_pass(name, res.plan);
    }
    res.log.push_back(fmt::format("pass {:<18} {:8.3f} s", name, seconds_since(t1)));
    checked(name);
  }
  res.cost = plan_cost(res.plan);
  return res;
}

}  // namespace collplan::pipeline
