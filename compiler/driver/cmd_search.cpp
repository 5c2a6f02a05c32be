// `collplan search`: the least C2 at the least C1, found and proven
// (docs/search.md).
//
//   encode              the relay-and-combine SAT search (search/search.h):
//                       the best plan, written like `compile` writes one, and
//                       what the solver proved.
//   broadcast, reduce, allgather, reduce-scatter, allreduce, prefix
//                       no solver: every generator that meets C1's bound is
//                       costed and the best compared with the closed-form C2
//                       bound; equal means proven optimal.
//   --Kmax/--pmax       the encode search over a grid, as a table (and a JSON
//                       file with --write-table, which scripts/search_table.py
//                       merges into the table collplan ships,
//                       gen/searched_table.inc).
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "gen/registry.h"
#include "gen/relay.h"
#include "ir/binary.h"
#include "json/json.h"
#include "pipeline/pipeline.h"
#include "search/search.h"
#include "support/error.h"
#include "support/safe_file.h"

namespace collplan::cli {

namespace {

struct SearchFlags {
  SpecFlags sf;
  double time_limit = 60;
  bool no_circulant = false, circulant_only = false;
  std::string sizes;  // one question: these round sizes
  std::string out, json_out, schedule_out, dimacs_dir, proof_dir, table_out, format = "text";
  uint32_t Kmin = 2, Kmax = 0, pmin = 1, pmax = 0;
};

std::string status_line(const search::SearchOutcome& o) {
  if (o.best == o.start && o.best < o.prepare_shoot)
    return fmt::format("improves prepare-and-shoot ({} → {}) and meets max(C1 bound, Lemma 2): optimal among all "
                       "universal plans", o.prepare_shoot, o.best);
  if (o.best < o.prepare_shoot && o.optimal())
    return fmt::format("improves prepare-and-shoot ({} → {}) and is optimal among relay-and-combine plans", o.prepare_shoot, o.best);
  if (o.best < o.prepare_shoot)
    return fmt::format("improves prepare-and-shoot ({} → {}); C2 < {} not refuted within the time limit", o.prepare_shoot,
                       o.best, o.best);
  if (o.optimal())
    return o.best == o.start ? "prepare-and-shoot meets the lower bound: optimal among all universal plans"
                             : "prepare-and-shoot is optimal among relay-and-combine plans";
  return fmt::format("not settled: C2 >= {} proven, {} reached", o.proven_bound, o.best);
}

// The plan of an outcome for `spec`, through the default passes and the
// checker; its algorithm name says where it came from.
pipeline::CompileResult outcome_plan(const std::optional<gen::RelaySchedule>& schedule, const Spec& spec) {
  pipeline::CompileOptions opt;
  if (!schedule) {
    opt.algorithm = "prepare-shoot";
    return pipeline::compile(spec, opt);
  }
  ir::Plan plan = gen::build_relay_plan(*schedule, spec);
  plan.spec.algorithm = "searched";
  return pipeline::finish_plan(std::move(plan), "searched", opt);
}

int run_grid(const SearchFlags& f) {
  search::SearchOptions opt;
  opt.time_limit_s = f.time_limit;
  opt.circulant_first = !f.no_circulant;
  nlohmann::json table = nlohmann::json::array();
  const bool text = f.format == "text";
  if (text)
    std::cout << fmt::format("{:>3} {:>2} {:>3} {:>7} {:>10} {:>9} {:>9} {:>8}  {}\n", "K", "p", "C1", "Lemma 2",
                             "prep-shoot", "searched", "proven >=", "seconds", "status");
  for (uint32_t p = f.pmin; p <= f.pmax; ++p)
    for (uint32_t K = f.Kmin; K <= f.Kmax; ++K) {
      const search::SearchOutcome o = search::search_encode(K, p, opt);
      nlohmann::json j = search::outcome_json(o);
      j["status"] = status_line(o);
      table.push_back(j);
      if (!f.table_out.empty()) {  // after every case: a long grid stopped early keeps what it found
        files::write_file(
            f.table_out, "--write-table file",
            nlohmann::json{{"solver", search::solver_name()}, {"time_limit_s", f.time_limit}, {"entries", table}}.dump(1) +
                "\n");
      }
      if (text)
        std::cout << fmt::format("{:>3} {:>2} {:>3} {:>7} {:>10} {:>9} {:>9} {:>8.2f}  {}\n", K, p, o.C1, o.lemma2,
                                 o.prepare_shoot, o.best, o.proven_bound, o.seconds, status_line(o))
                  << std::flush;
    }
  if (!text) std::cout << nlohmann::json{{"ok", true}, {"entries", table}}.dump(2) << "\n";
  return 0;
}

int run_plain(const SearchFlags& f, const Spec& spec) {
  switch (spec.op) {
    case OpKind::Broadcast: case OpKind::Reduce: case OpKind::Allgather: case OpKind::ReduceScatter:
    case OpKind::Allreduce: case OpKind::Prefix: break;
    default:
      user_error("search supports encode, broadcast, reduce, allgather, reduce-scatter, allreduce and prefix, not {}",
                 op_name(spec.op));
  }
  if (spec.lambda != 1 || spec.blocks != 1 || !spec.counts.empty())
    user_error("search: --op {} is searched for lambda = 1 and one block per rank (got lambda = {}, blocks = {}{})",
               op_name(spec.op), spec.lambda, spec.blocks, spec.counts.empty() ? "" : ", --counts");
  const passes::CostModel cm;
  const gen::GeneratorInfo* best = nullptr;
  uint64_t best_c2 = 0;
  const uint32_t lb1 = passes::postal_steps_bound(spec.K, spec.p, 1);
  for (const gen::Candidate& c : gen::candidates(spec, cm))
    if (c.why_not.empty() && c.C1 == lb1 && (!best || c.C2 < best_c2)) {
      best = c.generator;
      best_c2 = c.C2;
    }
  if (!best) user_error("search: no generator reaches C1 = {} for --op {}", lb1, op_name(spec.op));
  pipeline::CompileOptions opt;
  opt.algorithm = best->name;
  pipeline::CompileResult r = pipeline::compile(spec, opt);
  const bool optimal = r.cost.meets_bounds;
  if (!f.out.empty()) ir::write_binary(r.plan, f.out);
  if (!f.json_out.empty()) ir::write_json_file(r.plan, f.json_out, false, passes::cost_json(r.cost));
  if (f.format == "json") {
    std::cout << nlohmann::json{{"ok", true},
                                {"op", op_name(spec.op)},
                                {"K", spec.K},
                                {"p", spec.p},
                                {"algorithm", best->name},
                                {"C1", r.cost.C1},
                                {"C2", r.cost.C2},
                                {"lower_bound_C2", r.cost.lb_C2},
                                {"lower_bound_name", r.cost.lb_C2_name},
                                {"optimal", optimal},
                                {"solver", nullptr}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("search: {} K={} p={}: {} gives C1 = {} (bound {}), C2 = {} (bound {}, {})\n",
                           op_name(spec.op), spec.K, spec.p, best->name, r.cost.C1, r.cost.lb_C1, r.cost.C2,
                           r.cost.lb_C2, r.cost.lb_C2_name);
  std::cout << (optimal ? "optimal: C1 and C2 meet their lower bounds, which hold for every plan; no solver needed\n"
                        : "not settled: the closed-form bound is not met, and the SAT search models encode only\n");
  if (!f.out.empty()) std::cout << fmt::format("wrote {}\n", f.out);
  return 0;
}

// One question: is there a relay-and-combine schedule with these round
// sizes (among all, or with --circulant among circulant ones)?
int run_one(const SearchFlags& f, const Spec& spec) {
  search::RelayQuery q;
  q.K = spec.K;
  q.p = spec.p;
  for (uint64_t d : parse_list(f.sizes, "sizes")) {
    if (d < 1 || d > 2 * uint64_t{spec.K})
      user_error("search: --sizes {} has a round size {} out of range (valid: 1..{})", f.sizes, d, 2 * spec.K);
    q.sizes.push_back(static_cast<uint32_t>(d));
  }
  const uint32_t T = passes::lemma1_bound(spec.K, spec.p);
  if (q.sizes.size() != T)
    user_error("search: --sizes gives {} rounds; encode with K = {}, p = {} is searched at C1 = {} rounds", q.sizes.size(),
               spec.K, spec.p, T);
  q.circulant = f.circulant_only;
  q.time_limit_s = f.time_limit;
  if (!f.dimacs_dir.empty()) q.dimacs_path = f.dimacs_dir + "/relay.cnf";
  if (!f.proof_dir.empty()) q.proof_path = f.proof_dir + "/relay.drat";
  const search::RelayAnswer a = search::solve_relay(q);
  if (a.schedule && !f.schedule_out.empty()) {
    files::write_file(f.schedule_out, "--schedule file", gen::relay_schedule_json(*a.schedule).dump() + "\n");
  }
  if (a.schedule && (!f.out.empty() || !f.json_out.empty())) {
    const pipeline::CompileResult r = outcome_plan(a.schedule, spec);
    if (!f.out.empty()) ir::write_binary(r.plan, f.out);
    if (!f.json_out.empty()) ir::write_json_file(r.plan, f.json_out, false, passes::cost_json(r.cost));
  }
  if (f.format == "json") {
    std::cout << nlohmann::json{{"ok", true}, {"K", spec.K}, {"p", spec.p}, {"sizes", q.sizes},
                                {"circulant", q.circulant}, {"result", search::sat_result_name(a.result)},
                                {"variables", a.variables}, {"clauses", a.clauses}, {"learned", a.learned},
                                {"seconds", a.seconds}, {"solver", search::solver_name()},
                                {"schedule", a.schedule ? gen::relay_schedule_json(*a.schedule) : nlohmann::json(nullptr)}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("search: encode K={} p={} sizes {} ({}): {} — {} vars, {} clauses, {} learned, {:.2f} s, {}\n",
                           spec.K, spec.p, fmt::join(q.sizes, ","), q.circulant ? "circulant schedules" : "all schedules",
                           search::sat_result_name(a.result), a.variables, a.clauses, a.learned, a.seconds,
                           search::solver_name());
  return 0;
}

int run_search(SearchFlags& f) {
  if (f.format == "json") g_json_errors = true;
  if (f.Kmax || f.pmax) {
    if (!f.Kmax || !f.pmax) user_error("search: --Kmax and --pmax go together (the grid K = --Kmin..--Kmax, p = --pmin..--pmax)");
    if (f.Kmin < 2 || f.Kmin > f.Kmax || f.Kmax > search::kMaxSearchRanks)
      user_error("search: --Kmin {} .. --Kmax {} is out of range (valid: 2 <= Kmin <= Kmax <= {})", f.Kmin, f.Kmax,
                 search::kMaxSearchRanks);
    if (f.pmin < 1 || f.pmin > f.pmax || f.pmax > 8)
      user_error("search: --pmin {} .. --pmax {} is out of range (valid: 1 <= pmin <= pmax <= 8)", f.pmin, f.pmax);
    return run_grid(f);
  }
  if (!f.table_out.empty()) user_error("search: --write-table needs the grid (--Kmax and --pmax)");
  const Spec spec = build_spec(f.sf);
  if (spec.op != OpKind::Encode) return run_plain(f, spec);
  if (spec.lambda != 1)
    user_error("search: encode is searched in synchronous rounds, lambda = 1 (got --lambda {})", spec.lambda);
  if (!f.sizes.empty()) return run_one(f, spec);
  if (f.circulant_only) user_error("search: --circulant asks one question and needs --sizes");
  search::SearchOptions opt;
  opt.time_limit_s = f.time_limit;
  opt.circulant_first = !f.no_circulant;
  opt.dimacs_dir = f.dimacs_dir;
  opt.proof_dir = f.proof_dir;
  const search::SearchOutcome o = search::search_encode(spec.K, spec.p, opt);
  const pipeline::CompileResult r = outcome_plan(o.schedule, spec);
  if (!f.out.empty()) ir::write_binary(r.plan, f.out);
  if (!f.json_out.empty()) ir::write_json_file(r.plan, f.json_out, false, passes::cost_json(r.cost));
  if (!f.schedule_out.empty()) {
    if (!o.schedule) user_error("search: no schedule better than prepare-and-shoot was found; --schedule has nothing to write");
    files::write_file(f.schedule_out, "--schedule file", gen::relay_schedule_json(*o.schedule).dump() + "\n");
  }
  if (f.format == "json") {
    nlohmann::json j = search::outcome_json(o);
    j["ok"] = true;
    j["status"] = status_line(o);
    j["plan"] = {{"algorithm", r.plan.spec.algorithm}, {"C1", r.cost.C1}, {"C2", r.cost.C2},
                 {"verified", r.verify.describe()}, {"digest", ir::plan_digest(r.plan).hex()}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("search: encode K={} p={}, C1 = {} (the lower bound), relay-and-combine plans, {}\n", o.K,
                           o.p, o.C1, search::solver_name());
  std::cout << fmt::format("bounds: Lemma 2 gives C2 >= {}; the search starts at {}\n", o.lemma2, o.start);
  for (const auto& c : o.calls)
    std::cout << fmt::format("  sizes {:<12} {:<10} {:<7} {:>7} vars {:>8} clauses {:>8} learned {:>8.2f} s\n",
                             fmt::format("{}", fmt::join(c.sizes, ",")), c.circulant ? "circulant" : "all",
                             search::sat_result_name(c.answer.result), c.answer.variables, c.answer.clauses,
                             c.answer.learned, c.answer.seconds);
  std::cout << fmt::format("result: C2 = {} (prepare-and-shoot {}); proven C2 >= {} for relay-and-combine plans; {:.2f} s\n",
                           o.best, o.prepare_shoot, o.proven_bound, o.seconds);
  std::cout << "status: " << status_line(o) << "\n";
  std::cout << fmt::format("plan: {} C1 = {} C2 = {}, verified {}\n", r.plan.spec.algorithm, r.cost.C1, r.cost.C2,
                           r.verify.describe());
  if (!f.out.empty()) std::cout << fmt::format("wrote {} (digest {})\n", f.out, ir::plan_digest(r.plan).hex());
  if (!f.json_out.empty()) std::cout << fmt::format("wrote {}\n", f.json_out);
  if (!f.schedule_out.empty()) std::cout << fmt::format("wrote {}\n", f.schedule_out);
  return 0;
}

}  // namespace

void add_search_command(CLI::App& app, CommandList& cmds) {
  auto f = std::make_shared<SearchFlags>();
  auto* c = app.add_subcommand("search", "find the least C2 at the least C1 and prove it (encode: SAT search over "
                                         "relay-and-combine plans; docs/search.md)");
  add_spec_flags(c, f->sf);
  c->add_option("--time-limit", f->time_limit, "seconds per solver call (0 = none)")->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  c->add_flag("--no-circulant", f->no_circulant, "skip the circulant pre-search (every call is then a full one)");
  c->add_option("--sizes", f->sizes,
                "encode: ask one question, is there a schedule with these round sizes (comma-separated, one per "
                "round of C1)? sat / unsat / unknown");
  c->add_flag("--circulant", f->circulant_only, "with --sizes: among circulant schedules only");
  c->add_option("-o,--output", f->out, "write the plan here (binary)");
  c->add_option("--json", f->json_out, "write the plan here (JSON)");
  c->add_option("--schedule", f->schedule_out, "write the schedule found here (JSON, the shipped table's format)");
  c->add_option("--dimacs", f->dimacs_dir, "write every CNF into this existing folder, for another solver")
      ->check(CLI::ExistingDirectory);
  c->add_option("--proof", f->proof_dir,
                "write every solver call's DRAT proof into this existing folder (with --dimacs: for a proof checker)")
      ->check(CLI::ExistingDirectory);
  add_uint_option(c, "--Kmin", f->Kmin, "grid: smallest K (default 2)", "2 <= Kmin <= Kmax");
  add_uint_option(c, "--Kmax", f->Kmax, "grid: search encode for K = --Kmin..--Kmax", "Kmin <= Kmax <= 32");
  add_uint_option(c, "--pmin", f->pmin, "grid: smallest p (default 1)", "1 <= pmin <= pmax");
  add_uint_option(c, "--pmax", f->pmax, "grid: and p = --pmin..--pmax", "pmin <= pmax <= 8");
  c->add_option("--write-table", f->table_out, "grid: write the results as JSON (scripts/search_table.py merges such files into gen/searched_table.inc)");
  add_format_option(c, f->format);
  c->footer("Examples:\n"
            "  collplan search --op encode --K 10 --p 2 -o searched.cplan\n"
            "  collplan search --op encode --K 16 --p 2 --time-limit 300 --format json\n"
            "  collplan search --op encode --K 16 --p 2 --sizes 1,1,1 --time-limit 3600\n"
            "  collplan search --op allgather --K 12 --p 2\n"
            "  collplan search --Kmax 16 --pmax 3 --write-table table.json\n"
            "Exit status: 0 ok (also when the search is not settled: see status), 2 bad input, 3 internal error, 4 out of memory or descriptors.");
  cmds.push_back({c, [f] { return run_search(*f); }});
}

}  // namespace collplan::cli
