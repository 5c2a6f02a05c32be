// `collplan bound --K K --p p --lambda L`: the lower bounds for K processors
// with p ports and postal latency L (passes/cost.h), what prepare-and-shoot
// achieves, and what the shipped search table proved (docs/search.md).
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "gen/prepare_shoot.h"
#include "gen/searched.h"
#include "passes/cost.h"
#include "support/error.h"
#include "support/limits.h"

namespace collplan::cli {

namespace {

int cmd_bound(uint32_t K, uint32_t p, uint32_t lambda, bool as_json) {
  // The bounds are formulas in K, p, lambda: nothing of size K is built, so
  // K may be any whole-plan rank count (validate_spec_basics' other limits
  // are about plans).
  if (K < 2) user_error("K = {} is too small: a collective needs K >= 2 processors", K);
  if (K > kMaxPlanRanks) user_error("K = {} is too large: collplan supports K <= {}", K, kMaxPlanRanks);
  if (p < 1 || p > 1024) user_error("p = {} is out of range: collplan supports 1 <= p <= 1024 ports", p);
  if (lambda < 1 || lambda > 1024)
    user_error("lambda = {} is out of range: collplan supports 1 <= lambda <= 1024 (1 = synchronous rounds)", lambda);
  const auto steps = passes::postal_steps_bound(K, p, lambda);
  const auto l1 = passes::lemma1_bound(K, p);
  const auto l2 = passes::lemma2_bound(K, p);
  const auto sh = gen::prepare_shoot_shape(K, p);
  const gen::SearchedEntry* se = gen::find_searched(K, p);
  if (as_json) {
    nlohmann::json j{{"K", K}, {"p", p}, {"lambda", lambda}, {"postal_steps", steps}, {"encode_C1", l1},
                     {"encode_C2", l2}, {"prepare_shoot", {{"C1", sh.C1()}, {"C2", sh.C2()}}}};
    j["search"] = se ? nlohmann::json{{"proven_bound", se->proven_bound}, {"searched_C2", se->searched},
                                      {"optimal", se->optimal()}, {"solver", se->solver}, {"calls", se->calls},
                                      {"learned", se->learned}, {"seconds", se->seconds}}
                     : nlohmann::json(nullptr);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("K = {}, p = {}, lambda = {}\n", K, p, lambda);
  std::cout << fmt::format("steps for any input to reach every processor: min{{t : G(t) >= K}} = {}\n", steps);
  std::cout << fmt::format("universal encode, C1 >= ceil(log_(p+1) K) = {} (Lemma 1, lambda = 1)\n", l1);
  std::cout << fmt::format("universal encode, C2 >= {} (Lemma 2)\n", l2);
  std::cout << fmt::format("prepare-and-shoot achieves C1 = {}, C2 = {} (paper schedule, lambda = 1)\n", sh.C1(), sh.C2());
  if (se)
    std::cout << fmt::format("search (docs/search.md): no relay-and-combine plan with C1 = {} has C2 < {}; searched "
                             "reaches C2 = {}{} ({}, {} calls, {} learned clauses, {:.2f} s)\n",
                             se->C1, se->proven_bound, se->searched, se->optimal() ? " (optimal)" : "", se->solver,
                             se->calls, se->learned, se->seconds);
  return 0;
}

struct BoundFlags {
  uint32_t K = 0, p = 1, lambda = 1;
  std::string format = "text";
};

}  // namespace

void add_bound_command(CLI::App& app, CommandList& cmds) {
  auto f = std::make_shared<BoundFlags>();
  auto* bound = app.add_subcommand("bound", "lower bounds for K processors, p ports, latency lambda");
  bound->add_option("--K", f->K, "processors")->required();
  bound->add_option("--p", f->p, "ports")->capture_default_str();
  bound->add_option("--lambda", f->lambda, "postal latency")->capture_default_str();
  add_format_option(bound, f->format);
  bound->footer("Example:\n  collplan bound --K 4096 --p 2 --format json");
  cmds.push_back({bound, [f] {
                    g_json_errors = f->format == "json";
                    return cmd_bound(f->K, f->p, f->lambda, g_json_errors);
                  }});
}

}  // namespace collplan::cli
