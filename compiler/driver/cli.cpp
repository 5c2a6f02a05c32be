// Shared pieces of the driver's subcommands: the spec flags and spec files,
// matrix construction from flags, plan loading, cost printing, the
// generator comparison of `compile --explain`.
#include "driver/cli.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gen/circulant_plans.h"
#include "gen/decentralized.h"
#include "gen/dissemination.h"
#include "gen/registry.h"
#include "ir/binary.h"
#include "gen/vandermonde_plans.h"
#include "ir/json.h"
#include "matrix/codes.h"
#include "matrix/structured.h"
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

namespace {

// The structured families (SPEC §4.2). collplan chooses the points unless
// --points gives them (layout in ir/spec.h); --radix and --phi choose among
// the structured point sets.
MatrixSpec build_structured_matrix(const SpecFlags& sf, uint32_t K, const Field& f) {
  const bool dft = sf.matrix == "dft" || sf.matrix == "inverse-dft";
  const bool inverse = sf.matrix.rfind("inverse-", 0) == 0;
  if (!sf.phi.empty() && sf.matrix != "draw-loose" && sf.matrix != "inverse-draw-loose")
    user_error("--phi applies to --matrix draw-loose or inverse-draw-loose, not {}", sf.matrix);
  const uint32_t lists = sf.matrix == "lagrange" ? 2 : (sf.matrix == "cauchy" || sf.matrix == "rs-systematic") ? 4 : 1;
  if (!sf.points.empty()) {
    if (sf.radix != 0) user_error("--radix chooses points; it cannot be combined with --points");
    std::vector<Elem> pts;
    for (uint64_t x : parse_list(sf.points, "points")) {
      f.check(x, "--points entry");
      pts.push_back(static_cast<Elem>(x));
    }
    if (pts.size() != static_cast<size_t>(lists) * K)
      user_error("--points has {} entries, --matrix {} with K = {} needs {}", pts.size(), sf.matrix, K, lists * K);
    return matrix_with_points(sf.matrix, K, std::move(pts), f);
  }
  const uint32_t P = sf.radix != 0 ? sf.radix : gen::default_radix(f, K, sf.p, dft);
  if (dft) return matrix_dft(K, P, f, inverse);
  if (lists == 1) {
    std::vector<uint64_t> phi;
    if (!sf.phi.empty()) phi = parse_list(sf.phi, "phi");
    return matrix_draw_loose(K, P, phi, f, inverse);
  }
  // Lagrange: omega, alpha; Cauchy: x, y (c = d = 1); GRS: x, y (v = v' = 1).
  const std::vector<Elem> sets = disjoint_point_sets(f, K, P, 2);
  const std::vector<Elem> a(sets.begin(), sets.begin() + K), b(sets.begin() + K, sets.end());
  if (lists == 2) return matrix_lagrange(a, b, f);
  return matrix_four_lists(sf.matrix, {a, b, std::vector<Elem>(K, 1), std::vector<Elem>(K, 1)}, f);
}

// Every number in a spec file is a count, an index, a seed or a field
// element: a non-negative integer, and one the flag's type holds for the u32
// flags. nlohmann's get<uint32_t>() would convert 1e34 with undefined
// behaviour and wrap -1 or 2^32 silently, so numbers are checked first,
// nested ones (arrays, objects; at most 16 deep) too.
void check_spec_numbers(const std::string& file, const std::string& where, const nlohmann::json& v, uint64_t max,
                        int depth = 0) {
  if (v.is_structured()) {
    if (depth == 16) user_error("spec file '{}': {} is nested too deeply", file, where);
    for (auto& [key, item] : v.items())
      check_spec_numbers(file, where + (v.is_array() ? "[" + key + "]" : "." + key), item, UINT64_MAX, depth + 1);
    return;
  }
  if (!v.is_number()) return;
  if (!v.is_number_unsigned())
    user_error("spec file '{}': {} = {} is not a non-negative integer", file, where, v.dump());
  if (v.get<uint64_t>() > max)
    user_error("spec file '{}': {} = {} is too large (at most {})", file, where, v.dump(), max);
}

}  // namespace

MatrixSpec build_matrix(const SpecFlags& sf, uint32_t K, const Field& f) {
  if (sf.matrix == "dft" || sf.matrix == "inverse-dft" || sf.matrix == "draw-loose" ||
      sf.matrix == "inverse-draw-loose" || sf.matrix == "lagrange" || sf.matrix == "cauchy" ||
      sf.matrix == "rs-systematic")
    return build_structured_matrix(sf, K, f);
  if (sf.radix != 0 || !sf.phi.empty())
    user_error("--radix and --phi choose structured points; --matrix {} has none (use dft, draw-loose, lagrange, "
               "cauchy, rs-systematic or their inverses)",
               sf.matrix);
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
  user_error("unknown matrix '{}' (valid: {})", sf.matrix, kMatrixChoices);
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
  for (auto& [key, val] : j.items()) {
    const bool u32 = key == "K" || key == "p" || key == "lambda" || key == "radix" || key == "root" ||
                     key == "blocks" || key == "N";
    check_spec_numbers(sf.spec_file, key, val, u32 ? UINT32_MAX : UINT64_MAX);
  }
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
      else if (key == "radix" && !given("--radix")) sf.radix = val.get<uint32_t>();
      else if (key == "phi" && !given("--phi")) sf.phi = val.get<std::string>();
      else if (key == "root" && !given("--root")) sf.root = val.get<uint32_t>();
      else if (key == "blocks" && !given("--blocks") && val.is_string() && val.get<std::string>() == "auto")
        sf.blocks_auto = true;
      else if (key == "blocks" && !given("--blocks")) sf.blocks = val.get<uint32_t>();
      else if (key == "counts" && !given("--counts")) sf.counts = val.get<std::string>();
      else if (key == "exclusive" && !given("--exclusive")) sf.exclusive = val.get<bool>();
      else if (key == "N" && !given("--N")) sf.N = val.get<uint32_t>();
      else if (key == "code" && !given("--code")) sf.code = val.get<std::string>();
      else if (key == "generator" && !given("--generator")) sf.generator_file = val.get<std::string>();
      else if (key == "systematic" && !given("--systematic")) sf.systematic = val.get<bool>();
      else if (key != "op" && key != "K" && key != "p" && key != "lambda" && key != "field" && key != "matrix" &&
               key != "seed" && key != "points" && key != "perm" && key != "matrix_file" && key != "radix" &&
               key != "phi" && key != "root" && key != "blocks" && key != "counts" && key != "exclusive" && key != "N" &&
               key != "code" && key != "generator" && key != "systematic")
        user_error("spec file '{}': unknown key '{}' (valid: op, K, p, lambda, field, matrix, seed, points, perm, "
                   "matrix_file, radix, phi, root, blocks, counts, exclusive, N, code, generator, systematic)",
                   sf.spec_file, key);
    }
  } catch (const nlohmann::json::exception& e) {
    user_error("spec file '{}': a value has the wrong type: {}", sf.spec_file, e.what());
  }
}

Spec build_spec(const SpecFlags& sf, uint32_t max_ranks) {
  Spec s;
  s.op = parse_op(sf.op);
  s.K = sf.K;
  s.p = sf.p;
  s.lambda = sf.lambda;
  s.field = Field::parse(sf.field);
  if (sf.K == 0)
    user_error("--K is required ({})", s.op == OpKind::DecentralizedEncode ? "the number of sources, 1 <= K < N"
                                                                           : "the number of processors, K >= 2");
  s.root = sf.root;
  s.blocks = sf.blocks;
  s.exclusive = sf.exclusive;
  if (!sf.counts.empty())
    for (uint64_t c : parse_list(sf.counts, "counts")) {
      if (c > (1u << 24)) user_error("--counts entry {} is too large (at most 16777216)", c);
      s.counts.push_back(static_cast<uint32_t>(c));
    }
  if (s.op == OpKind::DecentralizedEncode) {
    if (sf.N == 0) user_error("--N is required for decentralized-encode (the number of processors, N > K)");
    s.N = sf.N;
  }
  validate_spec_basics(s, max_ranks);
  if (s.op == OpKind::Encode) s.matrix = build_matrix(sf, s.K, s.field);
  if (s.op == OpKind::DecentralizedEncode) {
    // A (K x (N-K)) for a systematic code, G (K x N) otherwise.
    if (!sf.generator_file.empty())
      s.matrix = matrix_from_file(sf.generator_file, s.K, sf.systematic ? s.N - s.K : s.N, s.field);
    else
      s.matrix = code_matrix(sf.code, s.N, s.K, sf.systematic, sf.seed, s.field);
  }
  return s;
}

std::vector<std::string> pass_list(const std::string& csv) {
  std::vector<std::string> out;
  if (csv == "none" || csv.empty()) return out;
  std::stringstream ss(csv);
  for (std::string p; std::getline(ss, p, ',');) out.push_back(p);
  return out;
}

std::string resolve_auto_blocks(Spec& spec, gen::CostModel& cm) {
  const uint64_t m = cm.len;
  if (spec.op == OpKind::DecentralizedEncode) {
    spec.blocks = gen::decentralized_auto_blocks(spec, m, cm.beta, cm.tau);
    cm.len = (m + spec.blocks - 1) / spec.blocks;
    return gen::decentralized_auto_blocks_note(spec, m, cm.beta, cm.tau, spec.blocks);
  }
  if (spec.op == OpKind::Allreduce) {
    spec.blocks = gen::allreduce_auto_blocks(spec, m, cm.beta, cm.tau);
    cm.len = (m + spec.blocks - 1) / spec.blocks;
    return fmt::format(" n={} (blocks auto: {}; m={}, beta={}, tau={})", spec.blocks,
                       spec.blocks == 1 ? "the latency-optimal allreduce, whole vector per message, is modeled faster"
                                        : "one chunk per rank, reduce-scatter then allgather is modeled faster",
                       m, cm.beta, cm.tau);
  }
  // A reduce is the broadcast reversed in time: the same steps and sizes.
  if (spec.op != OpKind::Broadcast && spec.op != OpKind::Reduce)
    user_error("--blocks auto is supported for broadcast, reduce, allreduce and decentralized-encode, not for '{}' "
               "(give --blocks N)",
               op_name(spec.op));
  spec.blocks = gen::circulant_auto_blocks(spec.K, m, cm.beta, cm.tau);
  cm.len = (m + spec.blocks - 1) / spec.blocks;
  return gen::circulant_auto_blocks_note(spec.K, m, cm.beta, cm.tau, spec.blocks);
}

void add_spec_flags(CLI::App* c, SpecFlags& sf) {
  c->add_option("--spec", sf.spec_file, "spec file (JSON with the keys below; flags override it)");
  c->add_option("--op", sf.op, "operation: encode | decentralized-encode | broadcast | reduce | allgather | allgatherv | allreduce | reduce-scatter | prefix")
      ->capture_default_str();
  c->add_option("--K", sf.K, "number of processors (K >= 2); decentralized-encode: the sources (K >= 1)");
  c->add_option("--p", sf.p, "ports per processor (p >= 1)")->capture_default_str();
  c->add_option("--lambda", sf.lambda, "postal latency (lambda >= 1; 1 = synchronous rounds)")->capture_default_str();
  c->add_option("--field", sf.field, "gf256 | gf65536 | prime:Q (prime Q < 2^31)")->capture_default_str();
  c->add_option("--matrix", sf.matrix, kMatrixChoices)->capture_default_str();
  c->add_option("--seed", sf.seed, "seed of a random matrix or permutation")->capture_default_str();
  c->add_option("--points", sf.points,
                "Vandermonde points, comma-separated (default 1, g, g^2, ...); structured families: their points "
                "(dft, draw-loose: K; lagrange: omega then alpha; cauchy: x, y, c, d; rs-systematic: x, y, v, v'; "
                "default: collplan chooses)");
  c->add_option("--radix", sf.radix, "dft, draw-loose, lagrange, cauchy, rs-systematic: radix P of the chosen points "
                                     "(default p+1 when it applies, else the cheapest)");
  c->add_option("--phi", sf.phi, "draw-loose: coset exponents phi(i), alpha_i = g^phi(i), comma-separated, M of them "
                                 "(default 0, 1, ..., M-1)");
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
       "blocks per buffer (n >= 1) of the block collectives and of encode / decentralized-encode (each x_k in n "
       "blocks; the decentralized grid streams its rows, docs/decentralized.md), or auto (broadcast, reduce: n from "
       "--beta/--tau/--cost-len, the whole message's length; see docs/circulant.md; decentralized-encode: n "
       "for the streamed rows, docs/decentralized.md)")
      ->default_str("1");
  c->add_option("--counts", sf.counts, "prefix: items per rank (Algorithm B); allgatherv: blocks per rank; comma-separated");
  c->add_flag("--exclusive", sf.exclusive, "prefix: exclusive scan");
  c->add_option("--N", sf.N, "decentralized-encode: processors, N > K (ranks 0..K-1 are the sources)");
  c->add_option("--code", sf.code, "decentralized-encode: rs | lagrange | random (seeded by --seed)")
      ->capture_default_str();
  c->add_option("--generator", sf.generator_file,
                "decentralized-encode: the code's matrix from a file (Matrix Market or CSV): A, K x (N-K), when "
                "systematic; G, K x N, otherwise");
  c->add_option("--systematic", sf.systematic,
                "decentralized-encode: true = G = [I | A], sinks K..N-1 get their symbols; false = every rank j gets "
                "(x.G)_j")
      ->capture_default_str();
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

// `compile --explain`: every generator of the operation with its
// applicability, estimated C1, C2 and modeled time, and why the winner won.
void explain_choice(const Spec& spec, const std::string& algorithm, const gen::CostModel& m) {
  std::cout << fmt::format("candidates (modeled time = C1*beta + C2*len*tau; beta = {}, tau = {}, len = {}; C2 after "
                           "the default passes):\n",
                           m.beta, m.tau, m.len);
  const auto cands = gen::candidates(spec, m);
  const gen::Candidate* best = nullptr;
  const gen::Candidate* second = nullptr;
  for (const auto& c : cands) {
    if (c.why_not.empty()) {
      std::cout << fmt::format("  {:<28} C1 = {:<4} C2 = {:<7} time = {:<10g}\n", c.generator->name, c.C1, c.C2,
                               c.time);
      if (!best || c.time < best->time) {
        second = best;
        best = &c;
      } else if (!second || c.time < second->time) {
        second = &c;
      }
    } else {
      std::cout << fmt::format("  {:<28} not applicable: {}\n", c.generator->name, c.why_not);
    }
  }
  if (algorithm != "auto") {
    std::cout << fmt::format("chosen: {} (requested with --algorithm)\n", algorithm);
  } else if (best) {
    std::cout << fmt::format("chosen: {}, the least modeled time {:g}", best->generator->name, best->time);
    if (second)
      std::cout << fmt::format(" (next: {} at {:g}{})", second->generator->name, second->time,
                               second->time == best->time ? ", a tie: the earlier registered wins" : "");
    std::cout << "\n";
  }
}

}  // namespace collplan::cli
