// `collplan compile ... --rank R -o FILE`: rank R's program compiled alone
// (GeneratorInfo::build_rank), never building the other ranks', written as a
// rank-local file (ir/binary.h). What a device or an MPI process of a huge
// job runs to get its own part: O(program size + log K) for the
// broadcasts, reduces, the latency-optimal allreduces and prefix (K up to
// 2^31), O(K) for the gathers and reduce-scatters, whose one rank holds K
// ranks' elements.
//
// Checked here: the rank's structure (passes::verify_rank_structure) after
// the generator and after every pass, as the whole-plan pipeline verifies
// after each stage. Not proven: the whole-plan postcondition, which needs
// every rank (compile without --rank for that).
#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "driver/cli.h"
#include "gen/registry.h"
#include "ir/binary.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "support/error.h"

namespace collplan::cli {

namespace {

// The generator --algorithm names, or `auto` picks, when it can build one
// rank alone; UserError naming the generators that can otherwise.
const gen::GeneratorInfo& rank_generator(const Spec& spec, const std::string& algorithm, const passes::CostModel& m) {
  const std::string can = gen::rank_local_generator_names();
  if (algorithm != "auto") {
    const gen::GeneratorInfo& g = gen::find_generator(algorithm);
    if (!g.computes(spec.op)) user_error("algorithm '{}' does not compute '{}'", g.name, op_name(spec.op));
    if (!g.build_rank)
      user_error("--rank: algorithm '{}' cannot compile one rank alone (generators that can: {})", g.name, can);
    return g;
  }
  bool any = false;
  for (const auto& g : gen::generators()) any |= g.build_rank && g.computes(spec.op);
  if (!any)
    user_error("--rank: no generator that compiles one rank alone computes '{}' (generators that can: {})",
               op_name(spec.op), can);
  // Above the whole-plan limit only rank-local generators can build anything
  // (the others' estimates are not even meaningful there).
  if (spec.K > kMaxPlanRanks) return gen::choose_generator(spec, m, [](const auto& g) { return bool(g.build_rank); });
  const gen::GeneratorInfo& g = gen::choose_generator(spec, m);
  if (!g.build_rank)
    user_error("--rank: --algorithm auto chose '{}' for this spec, which cannot compile one rank alone; name one that "
               "can with --algorithm (generators that can: {})",
               g.name, can);
  return g;
}

// Milliseconds: one rank takes microseconds, below the whole-plan log's
// second resolution.
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int cmd_compile_rank(const RankCompileArgs& a) {
  if (a.out.empty()) user_error("compile --rank writes a rank-local plan file: give -o FILE");
  if (!a.json_out.empty())
    user_error("compile --rank: --json writes a whole plan; one rank compiled alone is written with -o only");
  Spec spec = build_spec(a.sf, kMaxRankLocalRanks);
  if (a.rank >= spec.K)
    user_error("--rank {} is not a processor of this spec (K = {}, valid ranks 0..{})", a.rank, spec.K, spec.K - 1);
  passes::CostModel m = a.cost;
  const std::string blocks_note = a.sf.blocks_auto ? resolve_auto_blocks(spec, m) : std::string();
  if (a.explain && spec.K > kMaxPlanRanks)
    user_error("--explain compares generators that build whole plans, which K = {} exceeds (at most {})", spec.K,
               kMaxPlanRanks);
  const gen::GeneratorInfo& g = rank_generator(spec, a.algorithm, m);
  if (a.explain) explain_choice(spec, a.algorithm, m);
  gen::require_applicable(g, spec, m);
  spec.algorithm = g.name;

  // Passes: the per-rank ones of the default pipeline, or exactly those asked
  // for (each must be per-rank: checked before building anything).
  std::vector<std::string> passes = pass_list(a.passes_csv);
  std::vector<std::string> log;
  if (!a.passes_given) {
    const std::vector<std::string> kept = pipeline::per_rank_passes(passes);
    for (const auto& p : passes)
      if (std::find(kept.begin(), kept.end(), p) == kept.end())
        log.push_back(fmt::format("pass {:<18} skipped: it needs every rank", p));
    passes = kept;
  } else {
    for (const auto& p : passes) pipeline::check_rank_pass_name(p);
  }

  auto t0 = std::chrono::steady_clock::now();
  ir::RankPlan rp = g.build_rank(spec, a.rank);
  log.push_back(fmt::format("generate {:<14} {:9.3f} ms  (rank {} alone)", g.name, ms_since(t0), a.rank));
  auto checked = [&](const std::string& stage) {
    auto t1 = std::chrono::steady_clock::now();
    try {
      passes::verify_rank_structure(rp.spec, rp.num_steps, rp.program, kMaxRankLocalRanks);
    } catch (const VerifyError& e) {
      throw InternalError(
          fmt::format("internal error: rank {} is wrong after {}: {} (this is a bug in collplan)", a.rank, stage,
                      e.what()));
    }
    log.push_back(fmt::format("verify after {:<8} {:9.3f} ms  (structure of rank {})", stage, ms_since(t1), a.rank));
  };
  checked(g.name);
  for (const auto& name : passes) {
    auto t1 = std::chrono::steady_clock::now();
    pipeline::run_rank_pass(name, rp.program);
    log.push_back(fmt::format("pass {:<18} {:9.3f} ms", name, ms_since(t1)));
    checked(name);
  }
  rp.spec.algorithm += blocks_note;
  if (!a.quiet)
    for (const auto& line : log) std::cerr << "  " << line << "\n";
  ir::write_rank_local(rp, a.out);
  const ir::PlanHeader hdr = ir::read_header(a.out);
  std::cout << fmt::format("plan: {} K={} p={} lambda={} field={} algorithm={}, rank {} compiled alone\n",
                           op_name(spec.op), spec.K, spec.p, spec.lambda, spec.field.name(), rp.spec.algorithm,
                           a.rank);
  std::cout << fmt::format("verified: structure of rank {} only; one rank does not prove the whole-plan "
                           "postcondition{}\n",
                           a.rank,
                           spec.K <= kMaxPlanRanks ? " (compile without --rank to prove it)"
                                                   : " (K is above the whole-plan limit; `collplan verify-circulant` "
                                                     "checks the schedules)");
  std::cout << passes::rank_cost_text(passes::rank_cost(rp.num_steps, rp.program));
  std::cout << fmt::format("wrote {} (rank-local file, file digest {})\n", a.out, hdr.content_hash.hex());
  return 0;
}

}  // namespace collplan::cli
