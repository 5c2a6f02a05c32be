// Shared pieces of the driver's subcommands: the spec flags and spec files,
// matrix construction from flags, plan loading, cost printing.
#include "driver/cli.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gen/circulant_plans.h"
#include "ir/binary.h"
#include "ir/json.h"
#include "support/error.h"

namespace collplan::cli {

// ---- spec from flags or a spec file ----------------------------------------

std::vector<uint64_t> parse_list(const std::string& text, const char* what) {
  std::vector<uint64_t> v;
  std::stringstream ss(text);
  for (std::string tok; std::getline(ss, tok, ',');) {
    size_t pos = 0;
    uint64_t x = 0;
    try {
      x = std::stoull(tok, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos == 0 || pos != tok.size() || tok.find('-') != std::string::npos)
      user_error("--{}: '{}' is not a non-negative integer (expected a comma-separated list)", what, tok);
    v.push_back(x);
  }
  return v;
}

MatrixSpec build_matrix(const SpecFlags& sf, uint32_t K, const Field& f) {
  if (sf.matrix == "random") return matrix_random(K, sf.seed, f);
  if (sf.matrix == "identity") return matrix_identity(K, f);
  if (sf.matrix == "permutation") {
    std::vector<uint32_t> perm;
    if (sf.perm.empty()) {  // a seeded random permutation
      perm.resize(K);
      for (uint32_t i = 0; i < K; ++i) perm[i] = i;
      SplitMix64 rng(sf.seed);
      for (uint32_t i = K; i > 1; --i) std::swap(perm[i - 1], perm[rng.next() % i]);
    } else {
      for (uint64_t x : parse_list(sf.perm, "perm")) perm.push_back(static_cast<uint32_t>(std::min<uint64_t>(x, UINT32_MAX)));
      if (perm.size() != K) user_error("--perm has {} entries, K = {} needs {}", perm.size(), K, K);
    }
    return matrix_permutation(std::move(perm), f);
  }
  if (sf.matrix == "vandermonde") {
    std::vector<Elem> pts;
    if (sf.points.empty()) {  // 1, g, g^2, ...: distinct while K <= q-1
      if (K > f.size() - 1)
        user_error("a Vandermonde matrix with default points needs K <= q-1 = {}, got K = {} (give --points)", f.size() - 1, K);
      Elem x = 1;
      for (uint32_t i = 0; i < K; ++i, x = f.mul(x, f.generator())) pts.push_back(x);
    } else {
      for (uint64_t x : parse_list(sf.points, "points")) {
        f.check(x, "--points entry");
        pts.push_back(static_cast<Elem>(x));
      }
      if (pts.size() != K) user_error("--points has {} entries, K = {} needs {}", pts.size(), K, K);
    }
    return matrix_vandermonde(std::move(pts), f);
  }
  if (sf.matrix == "file") {
    if (sf.matrix_file.empty()) user_error("--matrix file needs --matrix-file PATH (Matrix Market or CSV)");
    return matrix_from_file(sf.matrix_file, K, K, f);
  }
  user_error("unknown matrix '{}' (valid: random, vandermonde, identity, permutation, file)", sf.matrix);
}

// A spec file is a small JSON object with the same names as the flags:
// {"op": "encode", "K": 16, "p": 2, "lambda": 1, "field": "gf256",
//  "matrix": "random", "seed": 7, "points": "1,2,3", "matrix_file": "A.mtx"}.
// Flags given on the command line override it.
void apply_spec_file(SpecFlags& sf, const CLI::App& app) {
  std::ifstream in(sf.spec_file);
  if (!in) user_error("cannot open spec file '{}'", sf.spec_file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    user_error("spec file '{}' is not valid JSON: {}", sf.spec_file, e.what());
  }
  if (!j.is_object()) user_error("spec file '{}' must hold a JSON object", sf.spec_file);
  auto given = [&](const char* flag) { return app.count(flag) > 0; };
  try {
    for (auto& [key, val] : j.items()) {
      if (key == "op" && !given("--op")) sf.op = val.get<std::string>();
      else if (key == "K" && !given("--K")) sf.K = val.get<uint32_t>();
      else if (key == "p" && !given("--p")) sf.p = val.get<uint32_t>();
      else if (key == "lambda" && !given("--lambda")) sf.lambda = val.get<uint32_t>();
      else if (key == "field" && !given("--field")) sf.field = val.get<std::string>();
      else if (key == "matrix" && !given("--matrix")) sf.matrix = val.get<std::string>();
      else if (key == "seed" && !given("--seed")) sf.seed = val.get<uint64_t>();
      else if (key == "points" && !given("--points")) sf.points = val.get<std::string>();
      else if (key == "perm" && !given("--perm")) sf.perm = val.get<std::string>();
      else if (key == "matrix_file" && !given("--matrix-file")) sf.matrix_file = val.get<std::string>();
      else if (key == "root" && !given("--root")) sf.root = val.get<uint32_t>();
      else if (key == "blocks" && !given("--blocks") && val.is_string() && val.get<std::string>() == "auto")
        sf.blocks_auto = true;
      else if (key == "blocks" && !given("--blocks")) sf.blocks = val.get<uint32_t>();
      else if (key == "counts" && !given("--counts")) sf.counts = val.get<std::string>();
      else if (key == "exclusive" && !given("--exclusive")) sf.exclusive = val.get<bool>();
      else if (key != "op" && key != "K" && key != "p" && key != "lambda" && key != "field" && key != "matrix" &&
               key != "seed" && key != "points" && key != "perm" && key != "matrix_file" && key != "root" &&
               key != "blocks" && key != "counts" && key != "exclusive")
        user_error("spec file '{}': unknown key '{}' (valid: op, K, p, lambda, field, matrix, seed, points, perm, "
                   "matrix_file, root, blocks, counts, exclusive)",
                   sf.spec_file, key);
    }
  } catch (const nlohmann::json::exception& e) {
    user_error("spec file '{}': a value has the wrong type: {}", sf.spec_file, e.what());
  }
}

Spec build_spec(const SpecFlags& sf) {
  Spec s;
  s.op = parse_op(sf.op);
  s.K = sf.K;
  s.p = sf.p;
  s.lambda = sf.lambda;
  s.field = Field::parse(sf.field);
  if (sf.K == 0) user_error("--K is required (the number of processors, K >= 2)");
  s.root = sf.root;
  s.blocks = sf.blocks;
  s.exclusive = sf.exclusive;
  if (!sf.counts.empty())
    for (uint64_t c : parse_list(sf.counts, "counts")) {
      if (c > (1u << 24)) user_error("--counts entry {} is too large (at most 16777216)", c);
      s.counts.push_back(static_cast<uint32_t>(c));
    }
  validate_spec_basics(s);
  if (s.op == OpKind::Encode) s.matrix = build_matrix(sf, s.K, s.field);
  return s;
}

std::string resolve_auto_blocks(Spec& spec, gen::CostModel& cm) {
  if (spec.op != OpKind::Broadcast)
    user_error("--blocks auto is supported for broadcast only, not for '{}' (give --blocks N)", op_name(spec.op));
  const uint64_t m = cm.len;
  spec.blocks = gen::circulant_auto_blocks(spec.K, m, cm.beta, cm.tau);
  cm.len = (m + spec.blocks - 1) / spec.blocks;
  return gen::circulant_auto_blocks_note(spec.K, m, cm.beta, cm.tau, spec.blocks);
}

void add_spec_flags(CLI::App* c, SpecFlags& sf) {
  c->add_option("--spec", sf.spec_file, "spec file (JSON with the keys below; flags override it)");
  c->add_option("--op", sf.op, "operation: encode | decentralized-encode | broadcast | reduce | allgather | allgatherv | allreduce | prefix")
      ->capture_default_str();
  c->add_option("--K", sf.K, "number of processors (K >= 2)");
  c->add_option("--p", sf.p, "ports per processor (p >= 1)")->capture_default_str();
  c->add_option("--lambda", sf.lambda, "postal latency (lambda >= 1; 1 = synchronous rounds)")->capture_default_str();
  c->add_option("--field", sf.field, "gf256 | gf65536 | prime:Q (prime Q < 2^31)")->capture_default_str();
  c->add_option("--matrix", sf.matrix, "random | vandermonde | identity | permutation | file")->capture_default_str();
  c->add_option("--seed", sf.seed, "seed of a random matrix or permutation")->capture_default_str();
  c->add_option("--points", sf.points, "Vandermonde points, comma-separated (default 1, g, g^2, ...)");
  c->add_option("--perm", sf.perm, "permutation: rank k gets x_{perm[k]}, comma-separated (default: random from --seed)");
  c->add_option("--matrix-file", sf.matrix_file, "matrix file for --matrix file (Matrix Market array/coordinate, or CSV)");
  c->add_option("--root", sf.root, "broadcast/reduce: the root rank")->capture_default_str();
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
       "block operations: blocks per buffer (n >= 1), or auto (broadcast: n from --beta/--tau/--cost-len, the "
       "whole message's length; see docs/circulant.md)")
      ->default_str("1");
  c->add_option("--counts", sf.counts, "prefix: items per rank (Algorithm B); allgatherv: blocks per rank; comma-separated");
  c->add_flag("--exclusive", sf.exclusive, "prefix: exclusive scan");
}

// ---- plan files --------------------------------------------------------------

bool is_binary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot open plan file '{}'", path);
  uint8_t buf[16] = {};
  in.read(reinterpret_cast<char*>(buf), sizeof buf);
  return ir::looks_like_binary_plan(buf, static_cast<size_t>(in.gcount()));
}

ir::Plan load_plan(const std::string& path) {
  return is_binary_file(path) ? ir::read_binary(path) : ir::read_json_file(path);
}

void print_cost(const passes::CostReport& c, const gen::CostModel& m, const passes::CostReport* before) {
  std::cout << passes::cost_text(c, m.beta, m.tau, m.len);
  if (before && before->C2 != c.C2)
    std::cout << fmt::format("(generator's schedule before optimisation: C1 = {}, C2 = {})\n", before->C1, before->C2);
}

}  // namespace collplan::cli
