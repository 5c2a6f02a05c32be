// Shared pieces of the driver's subcommands: the spec flags on the command
// line, plan loading, cost printing, the generator comparison of
// `compile --explain`. Spec building itself is pipeline/spec_flags.h.
#include "driver/cli.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gen/registry.h"
#include "ir/binary.h"
#include "json/json.h"
#include "pipeline/pipeline.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/safe_file.h"

namespace collplan::cli {

namespace {

// Every flag whose presence on the command line matters (add_spec_flags's
// and compile's options that a spec file can also give).
const char* const kRecordedFlags[] = {
    "--spec",   "--op",       "--K",         "--p",         "--lambda",    "--field", "--matrix", "--seed",
    "--points", "--perm",     "--matrix-file", "--radix",   "--phi",       "--root",  "--blocks", "--counts",
    "--exclusive", "--N",     "--code",      "--generator", "--systematic", "--algorithm", "--passes", "--beta",
    "--tau",    "--cost-len", "--lost",    "--helpers",   "--to"};

}  // namespace

void apply_spec_file(SpecFlags& sf, const CLI::App& app) {
  for (const char* flag : kRecordedFlags)
    if (const CLI::Option* o = app.get_option_no_throw(flag); o && o->count() > 0) sf.on_command_line.insert(flag);
  pipeline::apply_spec_file(sf);
}

std::vector<std::string> pass_list(const std::string& csv) {
  std::vector<std::string> out;
  if (csv == "none" || csv.empty()) return out;
  std::stringstream ss(csv);
  for (std::string p; std::getline(ss, p, ',');) out.push_back(p);
  return out;
}

void add_spec_flags(CLI::App* c, SpecFlags& sf) {
  c->add_option("--spec", sf.spec_file,
                "spec file: JSON with the keys below, a plan's own \"spec\" object, or a JSON plan (its spec); flags "
                "override it (docs/spec-files.md)");
  c->add_option("--op", sf.op, "operation: encode | decentralized-encode | broadcast | reduce | allgather | allgatherv | allreduce | reduce-scatter | prefix | repair | decode")
      ->capture_default_str();
  add_uint_option(c, "--K", sf.K, "number of processors (K >= 2); decentralized-encode: the sources (1 <= K < N)",
                  "K >= 2 processors; decentralized-encode: 1 <= K < N sources")
      ->default_str("");
  add_uint_option(c, "--p", sf.p, "ports per processor (1 <= p <= 1024)", "1 <= p <= 1024 ports");
  add_uint_option(c, "--lambda", sf.lambda, "postal latency (1 <= lambda <= 1024; 1 = synchronous rounds)",
                  "1 <= lambda <= 1024");
  c->add_option("--field", sf.field, "gf256 | gf65536 | prime:Q (prime Q < 2^31)")->capture_default_str();
  c->add_option("--matrix", sf.matrix,
                std::string(kMatrixChoices) + " (encode; default random, or file when only --matrix-file is given)")
      ->default_str("random");
  add_uint_option(c, "--seed", sf.seed,
                  "seed of a random matrix or permutation (encode), of --code random (decentralized-encode)",
                  "0..18446744073709551615");
  c->add_option("--points", sf.points,
                "Vandermonde points, comma-separated (default 1, g, g^2, ...); structured families: their points "
                "(dft, draw-loose: K; lagrange: omega then alpha; cauchy: x, y, c, d; rs-systematic: x, y, v, v'; "
                "default: collplan chooses)");
  add_uint_option(c, "--radix", sf.radix,
                  "dft, draw-loose, lagrange, cauchy, rs-systematic: radix P of the chosen points "
                  "(default p+1 when it applies, else the cheapest)",
                  "a radix P >= 2, or 0 for collplan's choice")
      ->default_str("");
  c->add_option("--phi", sf.phi, "draw-loose: coset exponents phi(i), alpha_i = g^phi(i), comma-separated, M of them "
                                 "(default 0, 1, ..., M-1)");
  c->add_option("--perm", sf.perm, "permutation: rank k gets x_{perm[k]}, comma-separated (default: random from --seed)");
  c->add_option("--matrix-file", sf.matrix_file,
                "matrix file for --matrix file (Matrix Market array/coordinate, or CSV); alone, it implies --matrix "
                "file. The plan holds the entries, not the path");
  add_uint_option(c, "--root", sf.root, "broadcast/reduce: the root rank", "0..K-1");
  c->add_option_function<std::string>(
       "--blocks",
       [&sf](const std::string& v) {
         sf.blocks_auto = v == "auto";
         if (sf.blocks_auto) return;
         size_t pos = 0;
         unsigned long long n = 0;
         try {
           n = std::stoull(v, &pos);
         } catch (const std::exception&) {
           pos = 0;
         }
         // Thrown during parsing, so a CLI11 error (exit status 2).
         if (pos == 0 || pos != v.size() || v.find('-') != std::string::npos || n > UINT32_MAX)
           throw CLI::ValidationError("--blocks", "'" + v + "' is not a block count (n >= 1) or 'auto'");
         sf.blocks = static_cast<uint32_t>(n);
       },
       "blocks per buffer (n >= 1) of the block collectives and of encode / decentralized-encode (each x_k in n "
       "blocks; the decentralized grid streams its rows, docs/decentralized.md), or auto (broadcast, reduce: n from "
       "--beta/--tau or --cost-file, and --cost-len, the whole message's length; see docs/circulant.md; "
       "decentralized-encode: n for the streamed rows, docs/decentralized.md; repair, decode: n and the generator of least modeled time, "
       "docs/repair.md; allreduce: n = 1 or K, whichever allreduce is modeled faster; allgatherv: the n of least modeled time of "
       "circulant-allgatherv, --cost-len being one element's length, docs/circulant.md)")
      ->default_str("1");
  c->add_option("--counts", sf.counts, "prefix: items per rank (Algorithm B); allgatherv: elements per rank (circulant-allgatherv cuts each into --blocks pieces); comma-separated");
  c->add_flag("--exclusive", sf.exclusive, "prefix: exclusive scan");
  add_uint_option(c, "--N", sf.N,
                  "decentralized-encode, repair, decode: processors, N > K (decentralized-encode: ranks 0..K-1 are the "
                  "sources)",
                  "N > K processors")
      ->default_str("");
  c->add_option("--code", sf.code,
                "decentralized-encode, repair, decode: rs | lagrange | lrc:L (L local groups) | random (seeded by "
                "--seed)")
      ->capture_default_str();
  c->add_option("--generator", sf.generator_file,
                "decentralized-encode: the code's matrix from a file (Matrix Market or CSV): A, K x (N-K), when "
                "systematic; G, K x N, otherwise");
  c->add_option("--systematic", sf.systematic,
                "decentralized-encode: true = G = [I | A], sinks K..N-1 get their symbols; false = every rank j gets "
                "(x.G)_j")
      ->capture_default_str();
  c->add_option("--lost", sf.lost,
                "repair, decode: the lost ranks, comma-separated (repair: 1 to N-K of them; they start empty and, for "
                "repair, end with their symbols)");
  c->add_option("--helpers", sf.helpers,
                "repair, decode: the survivors whose symbols are combined, comma-separated (default: a basis of the "
                "survivors in rank order, unused ones dropped; an LRC's local group for a single loss)");
  c->add_option("--to", sf.to,
                "decode: the rank that receives each data symbol x_0..x_{K-1}, K comma-separated ranks or one rank "
                "for all (default: rank j receives x_j)");
}


// ---- plan files --------------------------------------------------------------

bool is_binary_file(const std::string& path) {
  // A regular file of at most kMaxPlanFileBytes (the readers check it again).
  const files::InputFile in(path, "plan file", kMaxPlanFileBytes);
  uint8_t buf[16] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(in.size(), sizeof buf));
  in.read_at(0, buf, n);
  return ir::looks_like_binary_plan(buf, n);
}

ir::Plan load_plan(const std::string& path) {
  return is_binary_file(path) ? ir::read_binary(path) : ir::read_json_file(path);
}

void print_cost(const passes::CostReport& c, const passes::CostModel& m, const passes::CostReport* before) {
  std::cout << passes::cost_text(c, m.beta, m.tau, m.len);
  if (before && before->C2 != c.C2)
    std::cout << fmt::format("(generator's schedule before optimisation: C1 = {}, C2 = {})\n", before->C1, before->C2);
}

// `compile --explain`: every generator of the operation with its
// applicability, estimated C1, C2 and modeled time, and why the winner won.
// A generator that is applicable but has no estimate for this spec (its
// estimate saturates: C1 = 2^32-1) shows "-" (JSON: null) for its figures.
nlohmann::json explain_json(const Spec& spec, const std::string& algorithm, const passes::CostModel& m) {
  nlohmann::json j;
  j["cost_model"] = {{"beta", m.beta}, {"tau", m.tau}, {"len", m.len}};
  nlohmann::json list = nlohmann::json::array();
  const auto cands = gen::candidates(spec, m);
  const gen::Candidate* best = nullptr;
  const gen::Candidate* second = nullptr;
  for (const auto& c : cands) {
    nlohmann::json e;
    e["generator"] = c.generator->name;
    const bool estimated = c.why_not.empty() && c.C1 != UINT32_MAX && c.C2 != UINT64_MAX;
    e["applicable"] = c.why_not.empty();
    e["why_not"] = c.why_not.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.why_not);
    e["C1"] = estimated ? nlohmann::json(c.C1) : nlohmann::json(nullptr);
    e["C2"] = estimated ? nlohmann::json(c.C2) : nlohmann::json(nullptr);
    e["time"] = estimated ? nlohmann::json(c.time) : nlohmann::json(nullptr);
    if (c.why_not.empty() && !estimated) e["note"] = "no cost estimate for this spec";
    list.push_back(std::move(e));
    if (!estimated) continue;
    if (!best || c.time < best->time) {
      second = best;
      best = &c;
    } else if (!second || c.time < second->time) {
      second = &c;
    }
  }
  j["candidates"] = std::move(list);
  const passes::CostReport lb = passes::bounds(spec);
  j["bounds"] = {{"C1", lb.lb_C1},
                 {"C2", lb.lb_C2 ? nlohmann::json(lb.lb_C2) : nlohmann::json(nullptr)},
                 {"C2_name", lb.lb_C2 ? nlohmann::json(lb.lb_C2_name) : nlohmann::json(nullptr)}};
  j["next"] = nullptr;
  j["tie"] = false;
  if (algorithm != "auto") {
    j["chosen"] = algorithm;
    j["reason"] = "requested with --algorithm";
  } else if (best) {
    j["chosen"] = best->generator->name;
    j["reason"] = "least modeled time";
    j["chosen_time"] = best->time;
    if (second) {
      j["next"] = second->generator->name;
      j["next_time"] = second->time;
      j["tie"] = second->time == best->time;
    }
  } else {
    j["chosen"] = nullptr;
    j["reason"] = "no generator applies";
  }
  return j;
}

void explain_choice(const Spec& spec, const std::string& algorithm, const passes::CostModel& m) {
  const nlohmann::json j = explain_json(spec, algorithm, m);
  std::cout << fmt::format("candidates (modeled time = C1*beta + C2*len*tau; beta = {}, tau = {}, len = {}; C2 after "
                           "the default passes):\n",
                           m.beta, m.tau, m.len);
  for (const auto& c : j["candidates"]) {
    const std::string name = c["generator"].get<std::string>();
    if (!c["applicable"].get<bool>()) {
      std::cout << fmt::format("  {:<28} not applicable: {}\n", name, c["why_not"].get<std::string>());
    } else if (c["C1"].is_null()) {
      std::cout << fmt::format("  {:<28} C1 = {:<4} C2 = {:<7} time = {:<10} ({})\n", name, "-", "-", "-",
                               c["note"].get<std::string>());
    } else {
      std::cout << fmt::format("  {:<28} C1 = {:<4} C2 = {:<7} time = {:<10g}\n", name, c["C1"].get<uint32_t>(),
                               c["C2"].get<uint64_t>(), c["time"].get<double>());
    }
  }
  const nlohmann::json& lb = j["bounds"];
  std::cout << fmt::format("lower bounds: C1 >= {}{}\n", lb["C1"].get<uint32_t>(),
                           lb["C2"].is_null() ? std::string(" (no C2 bound for this operation)")
                                              : fmt::format(", C2 >= {} ({})", lb["C2"].get<uint64_t>(),
                                                            lb["C2_name"].get<std::string>()));
  if (algorithm != "auto") {
    std::cout << fmt::format("chosen: {} (requested with --algorithm)\n", algorithm);
  } else if (!j["chosen"].is_null()) {
    std::cout << fmt::format("chosen: {}, the least modeled time {:g}", j["chosen"].get<std::string>(),
                             j["chosen_time"].get<double>());
    if (!j["next"].is_null())
      std::cout << fmt::format(" (next: {} at {:g}{})", j["next"].get<std::string>(), j["next_time"].get<double>(),
                               j["tie"].get<bool>() ? ", a tie: the earlier registered wins" : "");
    std::cout << "\n";
  }
}

}  // namespace collplan::cli
