// `collplan compile`: a spec (flags or --spec file) compiled into a verified
// plan, written as .cplan and/or JSON, with its cost report; --explain
// compares the generators, --write-generator writes the code's generator
// matrix. With --rank it hands over to cmd_compile_rank.cpp (one rank alone).
#include <fstream>
#include <iostream>
#include <optional>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "driver/cost_flags.h"
#include "ir/binary.h"
#include "json/json.h"
#include "matrix/matrix.h"
#include "matrix/structured.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "support/error.h"
#include "support/progress.h"
#include "support/safe_file.h"

namespace collplan::cli {

namespace {

// `compile --write-generator`: the generator matrix of the code the spec
// encodes, as CSV: [I | A] (K x 2K) of the GRS [2K, K] code of an
// rs-systematic spec; for decentralized-encode, [I | A] (K x N) of a
// systematic code or G (K x N) — the same rows the sinks' symbols come from.
std::string write_generator(const Spec& spec, const std::string& path) {
  const MatrixSpec& ms = spec.matrix;
  Matrix g;
  std::string what;
  if (is_code_op(spec.op)) {
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
  std::string text = "# " + what + "\n";
  for (uint32_t i = 0; i < g.rows; ++i)
    for (uint32_t j = 0; j < g.cols; ++j) text += fmt::format("{}{}", g.at(i, j), j + 1 == g.cols ? '\n' : ',');
  files::write_file(path, "generator matrix file", text);
  return fmt::format("wrote {} (the {} x {} generator matrix)", path, g.rows, g.cols);
}

// The plan a compile made, as JSON (`compile --format json`, docs/cli.md).
nlohmann::json plan_summary_json(const Spec& spec, const ir::Plan& plan) {
  nlohmann::json j{{"op", op_name(spec.op)}, {"K", spec.K}, {"p", spec.p}, {"lambda", spec.lambda},
                   {"field", spec.field.name()}, {"blocks", plan.spec.blocks}, {"algorithm", plan.spec.algorithm}};
  j["N"] = is_code_op(spec.op) ? nlohmann::json(spec.N) : nlohmann::json(nullptr);
  if (spec.op == OpKind::Repair || spec.op == OpKind::Decode) {
    j["lost"] = spec.lost;
    j["helpers"] = spec.helpers;
    if (spec.op == OpKind::Decode) j["to"] = spec.to;
  }
  j["matrix"] = spec.op == OpKind::Encode ? nlohmann::json(plan.spec.matrix.family) : nlohmann::json(nullptr);
  return j;
}

int cmd_compile(const SpecFlags& sf, const std::string& algorithm, const std::string& passes_csv, const std::string& out,
                const std::string& json_out, bool with_matrix, bool quiet, bool explain, const std::string& gen_out,
                const CostFlags& cost, bool as_json) {
  Spec spec = build_spec(sf);
  passes::CostModel m = cost.model_for(spec.field);
  const std::string cost_source = cost.describe(spec.field);
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
  // A long compile shows its stage on a terminal (support/progress.h).
  progress::set_enabled(!quiet && isatty(STDERR_FILENO));
  auto res = pipeline::compile(spec, opt);
  res.plan.spec.algorithm += blocks_note;  // how n was chosen travels with the plan
  if (!quiet)
    for (const auto& line : res.log) std::cerr << "  " << line << "\n";
  // The digest comes with the write (the plan is not encoded twice); without
  // a file it is computed only where it is printed.
  std::optional<Digest> digest;
  if (!out.empty()) {
    try {
      digest = ir::write_binary(res.plan, out);
    } catch (const std::bad_alloc&) {
      // The plan is built and checked; its encoding needs a few MiB more.
      resource_error(ResourceError::Kind::Memory,
                     "out of memory writing the checked {} plan of {} = {} ranks to {}; raise `ulimit -v` or free "
                     "memory, or use fewer ranks or blocks",
                     res.plan.spec.algorithm, is_code_op(spec.op) ? "N" : "K", num_ranks(spec), out);
    }
  }
  auto digest_hex = [&] {
    if (!digest) digest = ir::plan_digest(res.plan);
    return digest->hex();
  };
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
    j["cost_model"] = {{"beta", m.beta}, {"tau", m.tau}, {"len", m.len},
                       {"cost_file", cost.file.empty() ? nlohmann::json(nullptr) : nlohmann::json(cost.file)}};
    j["notes"] = notes;
    j["files"] = {{"binary", out.empty() ? nlohmann::json(nullptr) : nlohmann::json(out)},
                  {"json", json_out.empty() ? nlohmann::json(nullptr) : nlohmann::json(json_out)},
                  {"generator", gen_out.empty() ? nlohmann::json(nullptr) : nlohmann::json(gen_out)}};
    j["digest"] = digest_hex();
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("plan: {} K={}{} p={} lambda={} field={}{} algorithm={}\n", op_name(spec.op), spec.K,
                           is_code_op(spec.op) ? fmt::format(" N={}", spec.N) : std::string(), spec.p,
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
  if (spec.op == OpKind::Repair || spec.op == OpKind::Decode) {
    std::cout << fmt::format("code: [N, K] = [{}, {}], {}\n", spec.N, spec.K, spec.matrix.source);
    std::cout << fmt::format("lost: {}; helpers: {} ({} of the {} survivors)\n",
                             spec.lost.empty() ? std::string("none") : fmt::format("{}", fmt::join(spec.lost, ",")),
                             fmt::join(spec.helpers, ","), spec.helpers.size(), spec.N - spec.lost.size());
    if (spec.op == OpKind::Repair)
      std::cout << "outputs: each lost rank receives its own symbol, sum_h c_h F[h][l] (G_H F = G_L)\n";
    else
      std::cout << fmt::format("outputs: rank to[j] receives x_j; to = {}\n", fmt::join(spec.to, ","));
  }
  std::cout << fmt::format("verified: {}\n", res.verify.describe());
  for (const auto& n : notes) std::cout << "note: " << n << "\n";
  std::cout << cost_source;
  print_cost(res.cost, m, &res.generator_cost);
  if (!out.empty()) std::cout << fmt::format("wrote {} (digest {})\n", out, digest_hex());
  if (!json_out.empty()) std::cout << fmt::format("wrote {}\n", json_out);
  if (!gen_line.empty()) std::cout << gen_line << "\n";
  return 0;
}

struct CompileFlags {
  SpecFlags sf;
  std::string algorithm = "auto", passes_csv = "drop-zeros,alloc-slots", out, json_out, gen_out;
  bool with_matrix = false, quiet = false, explain = false;
  std::optional<uint32_t> rank;
  CostFlags costing;
  std::string format = "text";
};

int run_compile(CompileFlags& f, const CLI::App& c) {
  apply_spec_file(f.sf, c);  // records the flags given; fills the others from --spec
  apply_compile_options(f.sf, f.algorithm, f.passes_csv, f.costing.model);
  f.costing.load();  // a bad cost file fails before anything is compiled
  if (f.rank) {
    if (!f.gen_out.empty()) user_error("--write-generator is for encode specs, which --rank does not compile");
    if (f.format == "json")
      user_error("compile --rank prints text only (--format json is for whole-plan compiles; `collplan check "
                 "FILE --format json` reports on the rank-local file)");
    return cmd_compile_rank({f.sf, *f.rank, f.algorithm, f.passes_csv, f.out, f.json_out,
                             c.count("--passes") > 0 || f.sf.passes.has_value(), f.quiet, f.explain,
                             f.costing.loaded ? f.costing.model_for(Field::parse(f.sf.field)) : f.costing.model});
  }
  g_json_errors = f.format == "json";
  return cmd_compile(f.sf, f.algorithm, f.passes_csv, f.out, f.json_out, f.with_matrix, f.quiet, f.explain, f.gen_out,
                     f.costing, g_json_errors);
}

}  // namespace

void add_compile_command(CLI::App& app, CommandList& cmds) {
  auto f = std::make_shared<CompileFlags>();
  auto* compile = app.add_subcommand("compile", "compile a spec into a verified plan (.cplan and/or JSON)");
  add_spec_flags(compile, f->sf);
  compile->add_option("--algorithm", f->algorithm, "generator, or auto (see `collplan list`)")->capture_default_str();
  compile->add_option("--passes", f->passes_csv, "optimisation passes, comma-separated, or none")->capture_default_str();
  compile->add_option("-o,--output", f->out, "write the binary plan here (with --rank: the rank-local file)");
  compile->add_option("--json", f->json_out, "write the JSON plan here");
  compile->add_flag("--with-matrix", f->with_matrix, "include the matrix entries in the JSON");
  compile->add_flag("-q,--quiet", f->quiet, "no per-stage progress on stderr");
  compile->add_option("--write-generator", f->gen_out,
                      "rs-systematic: write the code's systematic generator matrix [I | A] (K x 2K) here as CSV; "
                      "decentralized-encode: the code's generator, [I | A] or G (K x N)");
  compile->add_flag("--explain", f->explain,
                    "print every candidate generator with C1, C2, modeled time and applicability, and why the winner "
                    "won");
  compile->add_option("--rank", f->rank,
                      "compile only this rank's program, without the other ranks' (the generators `collplan list` "
                      "marks; K up to 2^31 for broadcast, reduce, allreduce and prefix without counts), into a "
                      "rank-local file (-o); its structure is checked, the whole-plan postcondition is not");
  add_cost_model_options(compile, f->costing);
  add_format_option(compile, f->format);
  compile->footer("Examples:\n"
                  "  collplan compile --op encode --K 64 --p 2 --field gf256 --matrix random --seed 3 -o a.cplan\n"
                  "  collplan compile --op allgatherv --K 6 --counts 3,0,5,1,2,4 --blocks 2 -o agv.cplan\n"
                  "  collplan compile --K 64 --p 1 --field prime:65537 --matrix dft --explain --format json\n"
                  "  collplan compile --op broadcast --K 2147483648 --blocks 8 --rank 12345 -o r.cplan\n"
                  "--format json prints the summary (and --explain's comparison) as one JSON object; --json FILE\n"
                  "writes the plan itself as JSON. Exit status: 0 ok, 2 bad input, 3 internal error, 4 out of memory or descriptors.");
  cmds.push_back({compile, [f, compile] { return run_compile(*f, *compile); }});
}

}  // namespace collplan::cli
