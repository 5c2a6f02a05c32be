// collplan — the command-line driver. Each subcommand is a straight list of
// steps over the library: parse the spec, compile, verify, write; or load,
// check, print; or load, replay, compare.
//
// Exit status: 0 success; 1 the plan is wrong (checker or replay mismatch);
// 2 bad input (spec, file, flags); 3 internal error (a collplan bug).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "driver/cost_flags.h"
#include "driver/names.h"
#include "driver/report.h"
#include "gen/postal_encode.h"
#include "gen/prepare_shoot.h"
#include "gen/searched.h"
#include "gen/registry.h"
#include "ir/binary.h"
#include "json/json.h"
#include "ir/text.h"
#include "matrix/matrix.h"
#include "matrix/structured.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/recode.h"
#include "passes/verify.h"
#include "passes/verify_order.h"
#include "support/error.h"
#include "support/limits.h"

using namespace collplan;

namespace {

using namespace collplan::cli;
using Costing = passes::CostModel;

// ---- subcommands -------------------------------------------------------------

// `compile --write-generator`: the generator matrix of the code the spec
// encodes, as CSV: [I | A] (K x 2K) of the GRS [2K, K] code of an
// rs-systematic spec; for decentralized-encode, [I | A] (K x N) of a
// systematic code or G (K x N) — the same rows the sinks' symbols come from.
std::string write_generator(const Spec& spec, const std::string& path) {
  const MatrixSpec& ms = spec.matrix;
  Matrix g;
  std::string what;
  if (spec.op == OpKind::DecentralizedEncode) {
    const Matrix m = materialize(ms, spec.field);
    const bool systematic = m.cols != spec.N;
    g = Matrix::zeros(spec.K, spec.N);
    for (uint32_t i = 0; i < spec.K; ++i)
      for (uint32_t j = 0; j < spec.N; ++j)
        g.at(i, j) = systematic ? (j < spec.K ? (i == j ? 1 : 0) : m.at(i, j - spec.K)) : m.at(i, j);
    what = fmt::format("{} generator of the [{}, {}] code over {}{}{}", systematic ? "systematic" : "non-systematic",
                       spec.N, spec.K, spec.field.name(), ms.source.empty() ? "" : ": ", ms.source);
  } else {
    if (ms.family != "rs-systematic")
      user_error("--write-generator needs --matrix rs-systematic or --op decentralized-encode (the matrix is {})",
                 ms.family);
    const uint32_t K = spec.K;
    auto list = [&](uint32_t i) {
      return std::vector<Elem>(ms.points.begin() + i * K, ms.points.begin() + (i + 1) * K);
    };
    g = rs_systematic(2 * K, K, spec.field, list(0), list(1), list(2), list(3)).generator();
    what = fmt::format("systematic generator [I | A] of the GRS [{}, {}] code over {}: G = [V(x)diag(v) | V(y)diag(v')] "
                       "reduced; x, y, v, v' are in the plan header",
                       2 * K, K, spec.field.name());
  }
  std::ofstream f(path);
  if (!f) user_error("cannot write generator matrix file '{}'", path);
  f << "# " << what << "\n";
  for (uint32_t i = 0; i < g.rows; ++i)
    for (uint32_t j = 0; j < g.cols; ++j) f << g.at(i, j) << (j + 1 == g.cols ? "\n" : ",");
  if (!f) user_error("cannot write generator matrix file '{}'", path);
  return fmt::format("wrote {} (the {} x {} generator matrix)", path, g.rows, g.cols);
}

// The plan a compile made, as JSON (`compile --format json`, docs/cli.md).
nlohmann::json plan_summary_json(const Spec& spec, const ir::Plan& plan) {
  nlohmann::json j{{"op", op_name(spec.op)}, {"K", spec.K}, {"p", spec.p}, {"lambda", spec.lambda},
                   {"field", spec.field.name()}, {"blocks", plan.spec.blocks}, {"algorithm", plan.spec.algorithm}};
  j["N"] = spec.op == OpKind::DecentralizedEncode ? nlohmann::json(spec.N) : nlohmann::json(nullptr);
  j["matrix"] = spec.op == OpKind::Encode ? nlohmann::json(plan.spec.matrix.family) : nlohmann::json(nullptr);
  return j;
}

int cmd_compile(const SpecFlags& sf, const std::string& algorithm, const std::string& passes_csv, const std::string& out,
                const std::string& json_out, bool with_matrix, bool quiet, bool explain, const std::string& gen_out,
                const Costing& given, bool as_json) {
  Spec spec = build_spec(sf);
  Costing m = given;
  const std::string blocks_note = sf.blocks_auto ? resolve_auto_blocks(spec, m) : std::string();
  nlohmann::json j;
  if (explain) {
    if (as_json) j["explain"] = explain_json(spec, algorithm, m);
    else explain_choice(spec, algorithm, m);
  }
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  opt.cost_model = m;
  opt.passes = pass_list(passes_csv);
  auto res = pipeline::compile(spec, opt);
  res.plan.spec.algorithm += blocks_note;  // how n was chosen travels with the plan
  if (!quiet)
    for (const auto& line : res.log) std::cerr << "  " << line << "\n";
  if (!out.empty()) ir::write_binary(res.plan, out);
  if (!json_out.empty()) ir::write_json_file(res.plan, json_out, with_matrix, passes::cost_json(res.cost));
  std::vector<std::string> notes;
  if (spec.op == OpKind::Encode && spec.p + 1 > spec.K && res.plan.spec.algorithm == "prepare-shoot")
    notes.push_back(fmt::format("K <= p: one round on K-1 = {} ports; the other {} ports stay idle (nothing they could "
                                "carry shortens the round or its 1-element messages)",
                                spec.K - 1, spec.p - (spec.K - 1)));
  const std::string gen_line = gen_out.empty() ? std::string() : write_generator(res.plan.spec, gen_out);
  if (as_json) {
    j["ok"] = true;
    j["plan"] = plan_summary_json(spec, res.plan);
    j["verified"] = res.verify.describe();
    j["cost"] = passes::cost_json(res.cost);
    j["generator_cost"] = {{"C1", res.generator_cost.C1}, {"C2", res.generator_cost.C2}};
    j["cost_model"] = {{"beta", m.beta}, {"tau", m.tau}, {"len", m.len}};
    j["notes"] = notes;
    j["files"] = {{"binary", out.empty() ? nlohmann::json(nullptr) : nlohmann::json(out)},
                  {"json", json_out.empty() ? nlohmann::json(nullptr) : nlohmann::json(json_out)},
                  {"generator", gen_out.empty() ? nlohmann::json(nullptr) : nlohmann::json(gen_out)}};
    j["digest"] = ir::plan_digest(res.plan).hex();
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("plan: {} K={}{} p={} lambda={} field={}{} algorithm={}\n", op_name(spec.op), spec.K,
                           spec.op == OpKind::DecentralizedEncode ? fmt::format(" N={}", spec.N) : std::string(), spec.p,
                           spec.lambda, spec.field.name(),
                           spec.op == OpKind::Encode ? " matrix=" + res.plan.spec.matrix.family : std::string(),
                           res.plan.spec.algorithm);
  if (spec.op == OpKind::DecentralizedEncode) {
    std::cout << fmt::format("code: [N, K] = [{}, {}], {}\n", spec.N, spec.K, spec.matrix.source);
    std::cout << fmt::format("sources: ranks 0..{} hold x_0..x_{}{}\n", spec.K - 1, spec.K - 1,
                             spec.blocks > 1
                                 ? fmt::format(", each in {} blocks; output block b sums blocks b", spec.blocks)
                                 : std::string());
    if (spec.matrix.cols == spec.N)
      std::cout << fmt::format("outputs: non-systematic, every rank j in 0..{} receives sum_k x_k G[k][j]\n", spec.N - 1);
    else
      std::cout << fmt::format("sinks: ranks {}..{}; sink {}+j receives sum_k x_k A[k][j] (G = [I | A])\n", spec.K,
                               spec.N - 1, spec.K);
  }
  std::cout << fmt::format("verified: {}\n", res.verify.describe());
  for (const auto& n : notes) std::cout << "note: " << n << "\n";
  print_cost(res.cost, m, &res.generator_cost);
  if (!out.empty()) std::cout << fmt::format("wrote {} (digest {})\n", out, ir::plan_digest(res.plan).hex());
  if (!json_out.empty()) std::cout << fmt::format("wrote {}\n", json_out);
  if (!gen_line.empty()) std::cout << gen_line << "\n";
  return 0;
}

int cmd_check(const std::string& path, const std::string& mode, uint32_t trials, std::optional<uint64_t> seed, bool json,
              bool field_only, const Costing& m) {
  if (single_rank_of(path)) return check_single_rank(path, json);
  const ir::Plan plan = load_plan(path);
  passes::VerifyOptions vo;
  if (mode == "exact") vo.mode = passes::VerifyMode::Exact;
  else if (mode == "randomized") vo.mode = passes::VerifyMode::Randomized;
  else vo.mode = passes::VerifyMode::Auto;
  // The randomized check holds `trials` values per slot of every rank:
  // refuse, before allocating, more than 2^28 of them (1 GiB; the default
  // already reaches a 2^-40 false-accept bound with at most 40 trials).
  if (trials > 0) {
    uint64_t slots = 0;
    for (const auto& prog : plan.ranks) slots += prog.num_slots;
    if (mul_sat(trials, slots) > kMaxCheckValues)
      user_error("--trials {}: the randomized check would hold trials x slots = {} x {} values, over the 2^28 = {} "
                 "collplan holds (1 GiB); use fewer trials (each multiplies the false-accept bound by 1/q)",
                 trials, trials, slots, kMaxCheckValues);
  }
  vo.trials = trials;
  // A fresh seed per run unless given: a fixed seed would let a crafted
  // plan pass the randomized check on purpose.
  vo.seed = seed ? *seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  const auto rep = passes::verify(plan, vo);
  // A prefix plan must also keep operand order (valid for any associative
  // operator) unless the user only needs it over the field.
  const bool order_checked = plan.spec.op == OpKind::Prefix && !field_only;
  if (order_checked) passes::verify_order(plan);
  const auto c = passes::cost(plan);
  if (json) {
    nlohmann::json j;
    j["ok"] = true;
    j["verification"] = rep.describe();
    if (order_checked) j["operand_order"] = "kept";
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
  print_cost(c, m, nullptr);
  return 0;
}

int cmd_show(const std::string& path, std::optional<uint32_t> rank) {
  if (!rank) rank = single_rank_of(path);  // a single-rank file shows its rank
  if (rank && is_binary_file(path)) {
    // One rank alone, as a device would load it (no K-program plan: a
    // rank-local file's K may be 2^31).
    ir::PlanHeader hdr;
    const ir::Program prog = ir::read_rank(path, *rank, &hdr);
    std::cout << ir::to_text(hdr.spec, hdr.num_steps, prog);
    return 0;
  }
  const ir::Plan plan = load_plan(path);
  if (rank && *rank >= plan.ranks.size())
    user_error("--rank {} does not exist (valid: 0..{})", *rank, plan.ranks.size() - 1);
  std::cout << ir::to_text(plan, rank);
  return 0;
}

int cmd_list(bool as_json) {
  struct FieldInfo {
    const char *name, *description;
  };
  static constexpr FieldInfo kFields[] = {{"gf256", "GF(2^8), polynomial 0x11D (ISA-L's)"},
                                          {"gf65536", "GF(2^16), polynomial 0x1100B"},
                                          {"prime:Q", "GF(Q) for a prime 2 <= Q < 2^31, e.g. prime:65537"}};
  if (as_json) {
    nlohmann::json j;
    j["generators"] = nlohmann::json::array();
    for (const auto& g : gen::generators()) {
      std::vector<std::string> ops;
      for (OpKind op : g.ops) ops.push_back(op_name(op));
      j["generators"].push_back({{"name", g.name}, {"ops", ops}, {"description", g.description},
                                 {"rank_local", static_cast<bool>(g.build_rank)}});
    }
    j["passes"] = nlohmann::json::array();
    for (const auto& p : pipeline::pass_registry())
      j["passes"].push_back({{"name", p.name}, {"description", p.description}, {"default", p.in_default_pipeline}});
    j["fields"] = nlohmann::json::array();
    for (const auto& f : kFields) j["fields"].push_back({{"name", f.name}, {"description", f.description}});
    j["operations"] = nlohmann::json::array();
    for (OpKind op : all_ops()) j["operations"].push_back(op_name(op));
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "generators:\n";
  for (const auto& g : gen::generators()) {
    std::string ops;
    for (OpKind op : g.ops) ops += std::string(ops.empty() ? "" : ",") + op_name(op);
    std::cout << fmt::format("  {:<20} [{}] {}{}\n", g.name, ops, g.description,
                             g.build_rank ? " (compile --rank: one rank alone)" : "");
  }
  std::cout << "passes:\n";
  for (const auto& p : pipeline::pass_registry())
    std::cout << fmt::format("  {:<20} {}{}\n", p.name, p.description, p.in_default_pipeline ? "" : " (on request)");
  std::cout << "fields:\n";
  for (const auto& f : kFields) std::cout << fmt::format("  {:<20} {}\n", f.name, f.description);
  std::cout << "operations:\n ";
  for (OpKind op : all_ops()) std::cout << " " << op_name(op);
  std::cout << "\n";
  return 0;
}

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

int cmd_import(const std::string& in, const std::string& out) {
  const ir::Plan plan = ir::read_json_file(in);
  const auto rep = passes::verify(plan);
  ir::write_binary(plan, out);
  std::cout << fmt::format("{}: checked ({}), wrote {} (digest {})\n", in, rep.describe(), out, ir::plan_digest(plan).hex());
  return 0;
}

int cmd_export(const std::string& in, const std::string& out, bool with_matrix) {
  const ir::Plan plan = load_plan(in);
  ir::write_json_file(plan, out, with_matrix, passes::cost_json(passes::cost(plan)));
  std::cout << fmt::format("wrote {}\n", out);
  return 0;
}

int cmd_recode(const std::string& in, const SpecFlags& sf, const std::string& out) {
  ir::Plan plan = load_plan(in);
  ir::verify_structure(plan);
  const MatrixSpec ms = build_matrix(sf, plan.spec.matrix.rows, plan.spec.field);
  passes::recode(plan, ms);
  const auto rep = passes::verify(plan);
  ir::write_binary(plan, out);
  std::cout << fmt::format("re-coded {} for matrix {} ({}), wrote {}\n", in, ms.family, rep.describe(), out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"collplan — offline schedule compiler for (coded) collective communication.\n"
               "Compiles a spec (operation, K, p, lambda, field, matrix) into a verified per-processor plan,\n"
               "checks plans against their postcondition and lower bounds, and replays them (in-process, over MPI or over TCP)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "collplan 0.1.0");
  app.footer(std::string("Examples:\n"
                         "  collplan compile --op encode --K 16 --p 2 --field gf256 -o a.cplan\n"
                         "  collplan compile --op broadcast --K 64 --blocks auto --cost-len 100000 --explain\n"
                         "  collplan check a.cplan --format json\n"
                         "  collplan run a.cplan --len 65536\n"
                         "  collplan list --format json\n"
                         "  collplan <command> --help     (options and examples of one command)\n\n") +
             kExitCodes + "\nDocumentation: docs/cli.md (conventions, JSON outputs, limits).");

  // Subcommands defined in their own files (driver/cmd_*.cpp, see
  // driver/cli.h) add themselves here.
  CommandList commands;
  add_emit_cpp_command(app, commands);
  add_extract_command(app, commands);
  add_run_command(app, commands);
  add_verify_circulant_command(app, commands);
  add_search_command(app, commands);

  SpecFlags sf;
  std::string algorithm = "auto", passes_csv = "drop-zeros,alloc-slots", out, json_out;
  bool with_matrix = false, quiet = false, json = false;
  Costing costing;

  auto* compile = app.add_subcommand("compile", "compile a spec into a verified plan (.cplan and/or JSON)");
  add_spec_flags(compile, sf);
  compile->add_option("--algorithm", algorithm, "generator, or auto (see `collplan list`)")->capture_default_str();
  compile->add_option("--passes", passes_csv, "optimisation passes, comma-separated, or none")->capture_default_str();
  compile->add_option("-o,--output", out, "write the binary plan here (with --rank: the rank-local file)");
  compile->add_option("--json", json_out, "write the JSON plan here");
  compile->add_flag("--with-matrix", with_matrix, "include the matrix entries in the JSON");
  compile->add_flag("-q,--quiet", quiet, "no per-stage progress on stderr");
  std::string gen_out;
  compile->add_option("--write-generator", gen_out,
                      "rs-systematic: write the code's systematic generator matrix [I | A] (K x 2K) here as CSV; "
                      "decentralized-encode: the code's generator, [I | A] or G (K x N)");
  bool explain = false;
  compile->add_flag("--explain", explain,
                    "print every candidate generator with C1, C2, modeled time and applicability, and why the winner "
                    "won");
  std::optional<uint32_t> compile_rank;
  compile->add_option("--rank", compile_rank,
                      "compile only this rank's program, without the other ranks' (circulant generators; K up to "
                      "2^31 for broadcast, reduce, allreduce), into a rank-local file (-o); its structure is checked, "
                      "the whole-plan postcondition is not");
  add_cost_model_options(compile, costing);
  std::string compile_format = "text";
  add_format_option(compile, compile_format);
  compile->footer("Examples:\n"
                  "  collplan compile --op encode --K 64 --p 2 --field gf256 --matrix random --seed 3 -o a.cplan\n"
                  "  collplan compile --op allgatherv --K 6 --counts 3,0,5,1,2,4 --blocks 2 -o agv.cplan\n"
                  "  collplan compile --K 64 --p 1 --field prime:65537 --matrix dft --explain --format json\n"
                  "  collplan compile --op broadcast --K 2147483648 --blocks 8 --rank 12345 -o r.cplan\n"
                  "--format json prints the summary (and --explain's comparison) as one JSON object; --json FILE\n"
                  "writes the plan itself as JSON. Exit status: 0 ok, 2 bad input, 3 internal error.");

  std::string path, mode = "auto";
  uint32_t trials = 0;
  std::optional<uint64_t> check_seed;
  auto* check = app.add_subcommand("check", "check a plan file (binary or JSON): structure, algebra, cost vs lower bounds; "
                                               "a single-rank file: that rank's structure and its part of the cost");
  check->add_option("plan", path, "plan file (.cplan or .json)")->required();
  check->add_option("--mode", mode, "auto | exact | randomized")->check(CLI::IsMember({"auto", "exact", "randomized"}))->capture_default_str();
  add_uint_option(check, "--trials", trials, "randomized trials (default: enough for a 2^-40 false-accept bound)", "0..4294967295; 0 = the default");
  add_uint_option(check, "--seed", check_seed, "seed of the randomized check (default: fresh each run)", "0..18446744073709551615");
  check->add_flag("--json", json, "print the report as JSON (the same as --format json)");
  std::string check_format = "text";
  add_format_option(check, check_format);
  check->footer("Examples:\n"
                "  collplan check a.cplan\n"
                "  collplan check a.json --mode randomized --seed 5\n"
                "  collplan check a.cplan --format json   # {\"ok\": true, ...} or {\"ok\": false, \"kind\": ...}\n"
                "Exit status: 0 the plan is right; 1 it is wrong (kind structure, algebra or order);\n"
                "2 the file is not a readable plan (kind input); 3 internal error.");
  bool field_only = false;
  check->add_flag("--field-only", field_only, "prefix plans: skip the operand-order check (plan used over the field only)");
  add_cost_model_options(check, costing);

  std::optional<uint32_t> rank;
  auto* show = app.add_subcommand("show", "print a plan as text (all ranks, or one), or draw it (SVG, DOT, HTML "
                                          "explorer, summary)");
  show->add_option("plan", path, "plan file (.cplan or .json)")->required();
  show->add_option("--rank", rank, "only this rank (read alone from a .cplan)");
  ShowPictureOptions pictures;
  add_show_picture_options(show, pictures);

  auto* list = app.add_subcommand("list", "list generators, passes, fields and operations");
  std::string list_format = "text";
  add_format_option(list, list_format);

  uint32_t bK = 0, bp = 1, blam = 1;
  auto* bound = app.add_subcommand("bound", "lower bounds for K processors, p ports, latency lambda");
  bound->add_option("--K", bK, "processors")->required();
  bound->add_option("--p", bp, "ports")->capture_default_str();
  bound->add_option("--lambda", blam, "postal latency")->capture_default_str();
  std::string bound_format = "text";
  add_format_option(bound, bound_format);
  bound->footer("Example:\n  collplan bound --K 4096 --p 2 --format json");

  auto* import = app.add_subcommand("import", "check a JSON plan and write it as a binary plan");
  import->add_option("plan", path, "JSON plan")->required();
  import->add_option("-o,--output", out, "binary plan to write")->required();

  auto* exportc = app.add_subcommand("export", "write a plan as JSON (schema: docs/plan-format.md, section 2)");
  exportc->add_option("plan", path, "plan file")->required();
  exportc->add_option("-o,--output", out, "JSON file to write")->required();
  exportc->add_flag("--with-matrix", with_matrix, "include the matrix entries");

  SpecFlags rf;
  auto* recode = app.add_subcommand("recode", "put a new matrix into a universal plan, keeping its schedule");
  recode->add_option("plan", path, "plan file")->required();
  recode->add_option("--matrix", rf.matrix, kMatrixChoices)->capture_default_str();
  add_uint_option(recode, "--seed", rf.seed, "seed of a random matrix", "0..18446744073709551615");
  recode->add_option("--points", rf.points, "Vandermonde points");
  recode->add_option("--perm", rf.perm, "permutation");
  recode->add_option("--matrix-file", rf.matrix_file, "matrix file (Matrix Market or CSV)");
  recode->add_option("-o,--output", out, "binary plan to write")->required();

  try {
    check_names(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's own errors, in collplan's one format; usage errors are bad input.
    std::string msg = e.what();
    std::string cmd;
    for (const CLI::App* c : app.get_subcommands()) cmd = c->get_name();
    return report(2, "input", fmt::format("{}{} (see collplan {}--help)", cmd.empty() ? "" : cmd + ": ", msg,
                                          cmd.empty() ? "" : cmd + " "));
  } catch (const UserError& e) {
    return report(2, "input", e.what());
  }

  try {
    if (*compile) {
      apply_spec_file(sf, *compile);  // records the flags given; fills the others from --spec
      apply_compile_options(sf, algorithm, passes_csv, costing);
      if (compile_rank) {
        if (!gen_out.empty()) user_error("--write-generator is for encode specs, which --rank does not compile");
        if (compile_format == "json")
          user_error("compile --rank prints text only (--format json is for whole-plan compiles; `collplan check "
                     "FILE --format json` reports on the rank-local file)");
        return cmd_compile_rank({sf, *compile_rank, algorithm, passes_csv, out, json_out,
                                 compile->count("--passes") > 0 || sf.passes.has_value(), quiet, explain, costing});
      }
      g_json_errors = compile_format == "json";
      return cmd_compile(sf, algorithm, passes_csv, out, json_out, with_matrix, quiet, explain, gen_out, costing,
                         g_json_errors);
    }
    if (*check) {
      g_json_errors = json || check_format == "json";
      return cmd_check(path, mode, trials, check_seed, g_json_errors, field_only, costing);
    }
    if (*show) return pictures.any() ? cmd_show_pictures(path, rank, pictures) : cmd_show(path, rank);
    if (*list) return cmd_list(list_format == "json");
    if (*bound) {
      g_json_errors = bound_format == "json";
      return cmd_bound(bK, bp, blam, g_json_errors);
    }
    if (*import) return cmd_import(path, out);
    if (*exportc) return cmd_export(path, out, with_matrix);
    if (*recode) return cmd_recode(path, rf, out);
    for (const auto& c : commands)
      if (*c.app) return c.run();
  } catch (const VerifyError& e) {
    return report(1, fault_name(e.kind()), fmt::format("plan rejected ({}): {}", fault_name(e.kind()), e.what()));
  } catch (const UserError& e) {
    return report(2, "input", e.what());
  } catch (const InternalError& e) {
    return report(3, "internal", e.what());
  } catch (const std::bad_alloc&) {
    return report(3, "internal",
                  "internal error: out of memory (sizes are checked against collplan's limits before allocating, so "
                  "this is a bug in collplan; please report the command line)");
  } catch (const std::exception& e) {
    return report(3, "internal", fmt::format("internal error: {} (this is a bug in collplan)", e.what()));
  }
  return 0;
}
