// Shared pieces of the driver's subcommands: the spec flags and spec files,
// matrix construction from flags, plan loading, cost printing, the
// generator comparison of `compile --explain`.
#include "driver/cli.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <regex>
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

const char* const kStructuredFamilies =
    "dft, inverse-dft, draw-loose, inverse-draw-loose, lagrange, cauchy, rs-systematic";

bool is_structured(const std::string& family) {
  return family == "dft" || family == "inverse-dft" || family == "draw-loose" || family == "inverse-draw-loose" ||
         family == "lagrange" || family == "cauchy" || family == "rs-systematic";
}

// Was `flag` given on the command line the flags were added to?
bool on_command_line(const SpecFlags& sf, const char* flag) { return sf.on_command_line.count(flag) > 0; }

// Every flag whose presence on the command line matters (add_spec_flags's
// and compile's options that a spec file can also give).
const char* const kRecordedFlags[] = {
    "--spec",   "--op",       "--K",         "--p",         "--lambda",    "--field", "--matrix", "--seed",
    "--points", "--perm",     "--matrix-file", "--radix",   "--phi",       "--root",  "--blocks", "--counts",
    "--exclusive", "--N",     "--code",      "--generator", "--systematic", "--algorithm", "--passes", "--beta",
    "--tau",    "--cost-len"};

// One spec option: its flag, its spec-file key, and whether it holds its
// default value.
struct SpecOption {
  const char* flag;
  const char* key;
  bool (*is_default)(const SpecFlags&);
};

const SpecFlags& defaults() {
  static const SpecFlags d;
  return d;
}

const SpecOption kRoot{"--root", "root", [](const SpecFlags& s) { return s.root == defaults().root; }};
const SpecOption kCounts{"--counts", "counts", [](const SpecFlags& s) { return s.counts.empty(); }};
const SpecOption kExclusive{"--exclusive", "exclusive", [](const SpecFlags& s) { return !s.exclusive; }};
const SpecOption kN{"--N", "N", [](const SpecFlags& s) { return s.N == 0; }};
const SpecOption kCode{"--code", "code", [](const SpecFlags& s) { return s.code == defaults().code; }};
const SpecOption kGenerator{"--generator", "generator", [](const SpecFlags& s) { return s.generator_file.empty(); }};
const SpecOption kSystematic{"--systematic", "systematic", [](const SpecFlags& s) { return s.systematic; }};
const SpecOption kMatrix{"--matrix", "matrix", [](const SpecFlags& s) { return s.matrix == defaults().matrix; }};
const SpecOption kMatrixObject{"", "matrix", [](const SpecFlags& s) { return !s.matrix_object.has_value(); }};
const SpecOption kMatrixFile{"--matrix-file", "matrix_file", [](const SpecFlags& s) { return s.matrix_file.empty(); }};
const SpecOption kSeed{"--seed", "seed", [](const SpecFlags& s) { return s.seed == defaults().seed; }};
const SpecOption kPoints{"--points", "points", [](const SpecFlags& s) { return s.points.empty(); }};
const SpecOption kPerm{"--perm", "perm", [](const SpecFlags& s) { return s.perm.empty(); }};
const SpecOption kRadix{"--radix", "radix", [](const SpecFlags& s) { return s.radix == 0; }};
const SpecOption kPhi{"--phi", "phi", [](const SpecFlags& s) { return s.phi.empty(); }};

// Given on the command line, or holding a value other than its default (from
// a spec file or set by a caller). A default value in a spec file is not an
// option given: a plan's own spec object may carry them.
bool is_set(const SpecFlags& sf, const SpecOption& o) {
  return (*o.flag && on_command_line(sf, o.flag)) || !o.is_default(sf);
}

// How to name the option in a message: the flag, and the spec-file key when
// the value came from there.
std::string name_of(const SpecFlags& sf, const SpecOption& o) {
  if (&o == &kMatrixObject) return fmt::format("the matrix object of spec file '{}'", sf.spec_file);
  if (!on_command_line(sf, o.flag) && sf.from_file.count(o.key))
    return fmt::format("{} (key \"{}\" of spec file '{}')", o.flag, o.key, sf.spec_file);
  return o.flag;
}

// Refuses an option `op` does not use (docs/spec-files.md).
void refuse_unused_for_op(const SpecFlags& sf, const SpecOption& o, OpKind op, const char* users) {
  if (is_set(sf, o))
    user_error("{} is not used by --op {} (it is used by: {})", name_of(sf, o), op_name(op), users);
}

// Refuses an option matrix family `family` does not use.
void refuse_unused_for_matrix(const SpecFlags& sf, const SpecOption& o, const std::string& family, const char* users,
                              const char* hint = "") {
  if (is_set(sf, o))
    user_error("{} is not used by --matrix {} (it is used by --matrix {}){}", name_of(sf, o), family, users, hint);
}

// The structured families (matrix/structured.h). collplan chooses the points unless
// --points gives them (layout in ir/spec.h); --radix and --phi choose among
// the structured point sets.
MatrixSpec build_structured_matrix(const SpecFlags& sf, const std::string& family, uint32_t K, const Field& f) {
  const bool dft = family == "dft" || family == "inverse-dft";
  const bool inverse = family.rfind("inverse-", 0) == 0;
  if (is_set(sf, kPhi) && family != "draw-loose" && family != "inverse-draw-loose")
    user_error("{} applies to --matrix draw-loose or inverse-draw-loose, not {}", name_of(sf, kPhi), family);
  const uint32_t lists = family == "lagrange" ? 2 : (family == "cauchy" || family == "rs-systematic") ? 4 : 1;
  if (!sf.points.empty()) {
    if (is_set(sf, kRadix)) user_error("--radix chooses points; it cannot be combined with --points");
    if (is_set(sf, kPhi)) user_error("--phi chooses points; it cannot be combined with --points");
    std::vector<Elem> pts;
    for (uint64_t x : parse_list(sf.points, "points")) {
      f.check(x, "--points entry");
      pts.push_back(static_cast<Elem>(x));
    }
    if (pts.size() != static_cast<size_t>(lists) * K)
      user_error("--points has {} entries, --matrix {} with K = {} needs {}", pts.size(), family, K, lists * K);
    return matrix_with_points(family, K, std::move(pts), f);
  }
  if (sf.radix == 1) user_error("--radix 1 is invalid (valid: a radix P >= 2, or 0 for collplan's choice)");
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
  return matrix_four_lists(family, {a, b, std::vector<Elem>(K, 1), std::vector<Elem>(K, 1)}, f);
}

// The family the flags name: --matrix, or "file" when only --matrix-file
// was given (no --matrix on the command line or in the spec file).
std::string matrix_family(const SpecFlags& sf) {
  if (!sf.matrix_file.empty() && !on_command_line(sf, "--matrix") && !sf.from_file.count("matrix") &&
      sf.matrix == defaults().matrix)
    return "file";
  return sf.matrix;
}

MatrixSpec build_matrix_of(const SpecFlags& sf, const std::string& family, uint32_t K, const Field& f) {
  // Every parameter the family does not use is refused, not ignored.
  if (family != "file")
    refuse_unused_for_matrix(sf, kMatrixFile, family, "file", " (give --matrix file, or leave --matrix out)");
  if (family != "explicit" && sf.matrix_object)
    user_error("{} gives a matrix by its entries (family explicit), but --matrix is {}", name_of(sf, kMatrixObject),
               family);
  const bool seeded = family == "random" || (family == "permutation" && sf.perm.empty());
  if (!seeded)
    refuse_unused_for_matrix(sf, kSeed, family,
                             family == "permutation" ? "random, or permutation without --perm" : "random, permutation",
                             family == "permutation" ? " (--perm gives the permutation)" : "");
  if (family != "permutation") refuse_unused_for_matrix(sf, kPerm, family, "permutation");
  if (family != "vandermonde" && !is_structured(family))
    refuse_unused_for_matrix(sf, kPoints, family, "vandermonde, dft, inverse-dft, draw-loose, inverse-draw-loose, "
                                                  "lagrange, cauchy, rs-systematic");
  if (is_structured(family)) return build_structured_matrix(sf, family, K, f);
  if (is_set(sf, kRadix) || is_set(sf, kPhi))
    user_error("--radix and --phi choose structured points; --matrix {} has none (use {}){}", family,
               kStructuredFamilies,
               is_set(sf, kRadix) ? fmt::format(" [{}]", name_of(sf, kRadix)) : fmt::format(" [{}]", name_of(sf, kPhi)));
  if (family == "random") return matrix_random(K, sf.seed, f);
  if (family == "identity") return matrix_identity(K, f);
  if (family == "permutation") {
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
  if (family == "vandermonde") {
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
  if (family == "file") {
    if (sf.matrix_file.empty()) user_error("--matrix file needs --matrix-file PATH (Matrix Market or CSV)");
    return matrix_from_file(sf.matrix_file, K, K, f);
  }
  if (family == "explicit") {
    if (!sf.matrix_object)
      user_error("--matrix explicit is a matrix given by its entries: in a spec file, as a matrix object with "
                 "\"entries\" (docs/spec-files.md); on the command line, use --matrix file --matrix-file PATH");
    const MatrixSpec& ms = *sf.matrix_object;
    if (ms.rows != K || ms.cols != K)
      user_error("{} is {} x {}, but K = {} needs a {} x {} matrix", name_of(sf, kMatrixObject), ms.rows, ms.cols, K, K,
                 K);
    MatrixSpec out = ms;
    out.digest = matrix_digest(materialize(out, f), f);  // in the spec's field (--field may override the file's)
    return out;
  }
  user_error("unknown matrix '{}' (valid: {})", family, kMatrixChoices);
}

}  // namespace

MatrixSpec build_matrix(const SpecFlags& sf, uint32_t K, const Field& f) {
  return build_matrix_of(sf, matrix_family(sf), K, f);
}

namespace {

// ---- spec files (docs/spec-files.md) ----

// The keys of a spec file, in the order they are documented.
const char* const kSpecKeys =
    "op, K, N, p, lambda, field, matrix, seed, points, perm, matrix_file, radix, phi, root, blocks, counts, "
    "exclusive, code, generator, systematic, algorithm, passes, beta, tau, cost_len";

struct SpecFileReader {
  const std::string& file;

  template <typename... Args>
  [[noreturn]] void bad(const std::string& key, fmt::format_string<Args...> f, Args&&... args) const {
    user_error("spec file '{}': key \"{}\": {}", file, key, fmt::format(f, std::forward<Args>(args)...));
  }

  [[noreturn]] void wrong_type(const std::string& key, const std::string& expected, const nlohmann::json& v) const {
    user_error("spec file '{}': key \"{}\" has the wrong type: expected {}, got {}", file, key, expected,
               type_name(v));
  }

  static const char* type_name(const nlohmann::json& v) {
    if (v.is_number_integer()) return "integer";
    if (v.is_number_float()) return "number with a fraction";
    return v.type_name();
  }

  uint64_t uint(const nlohmann::json& v, const std::string& key, uint64_t max, const char* valid) const {
    if (v.is_number_unsigned()) {
      const uint64_t x = v.get<uint64_t>();
      if (x > max) bad(key, "{} is too large (valid: {})", x, valid);
      return x;
    }
    if (v.is_number_integer()) bad(key, "{} is negative (valid: {})", v.get<int64_t>(), valid);
    wrong_type(key, fmt::format("an integer ({})", valid), v);
  }

  double number(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_number()) wrong_type(key, "a number (>= 0)", v);
    const double x = v.get<double>();
    if (!(x >= 0) || !std::isfinite(x)) bad(key, "{} is invalid (valid: a finite number >= 0)", v.dump());
    return x;
  }

  std::string string(const nlohmann::json& v, const std::string& key, const char* valid) const {
    if (!v.is_string()) wrong_type(key, fmt::format("a string ({})", valid), v);
    return v.get<std::string>();
  }

  bool boolean(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_boolean()) wrong_type(key, "true or false", v);
    return v.get<bool>();
  }

  // A list of non-negative integers: a JSON array, or a comma-separated
  // string as on the command line. Returned as the flag's string form.
  std::string list(const nlohmann::json& v, const std::string& key) const {
    std::string out;
    if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) {
        const nlohmann::json& x = v[i];
        if (!x.is_number_unsigned()) {
          if (x.is_number_integer())
            bad(key, "entry {} is {}: negative (expected an array of non-negative integers)", i, x.get<int64_t>());
          bad(key, "entry {}: expected a non-negative integer, got {} (an array of non-negative integers)", i, type_name(x));
        }
        out += fmt::format("{}{}", i ? "," : "", x.get<uint64_t>());
      }
      return out;
    }
    if (!v.is_string())
      wrong_type(key, "an array of non-negative integers or a comma-separated string", v);
    out = v.get<std::string>();
    std::stringstream ss(out);
    for (std::string tok; std::getline(ss, tok, ',');)
      if (tok.empty() || !std::all_of(tok.begin(), tok.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          tok.size() > 19)
        bad(key, "'{}' is not a non-negative integer (expected an array of integers or a comma-separated string)",
            tok);
    return out;
  }

  // A path in the spec file: relative ones are relative to the spec file's
  // folder, not to the working directory.
  std::string path(const nlohmann::json& v, const std::string& key) const {
    const std::string p = string(v, key, "a file path");
    if (p.empty()) bad(key, "empty path");
    const std::filesystem::path fp(p);
    if (fp.is_absolute()) return p;
    return (std::filesystem::path(file).parent_path() / fp).lexically_normal().string();
  }
};

// A plan's algorithm text: the generator's name, then what it chose
// ("dft P=2", "postal-prepare-shoot m=3"), and a --blocks auto note with the
// cost model it used ("circulant-broadcast n=80 (blocks auto: ..., m=100000,
// beta=100, tau=1; ...)").
struct AlgorithmText {
  std::string generator;
  bool blocks_auto = false;
  uint64_t len = 0;
  double beta = 0, tau = 0;
};

AlgorithmText parse_algorithm_text(const std::string& text) {
  AlgorithmText a;
  a.generator = text.substr(0, text.find(' '));
  static const std::regex note(R"(\(blocks auto: .*\bm=([0-9]+), beta=([^,;) ]+), tau=([^,;) ]+))");
  std::smatch m;
  if (std::regex_search(text, m, note)) {
    try {
      a.len = std::stoull(m[1].str());
      a.beta = std::stod(m[2].str());
      a.tau = std::stod(m[3].str());
      a.blocks_auto = true;
    } catch (const std::exception&) {
      a.blocks_auto = false;  // not a note collplan wrote: the generator name alone
    }
  }
  return a;
}

}  // namespace

// A spec file: a JSON object whose keys are the flags' names
// (docs/spec-files.md), or a plan's own "spec" object, or a whole JSON plan.
// Values the command line gives win.
void apply_spec_file(SpecFlags& sf, const CLI::App& app) {
  for (const char* flag : kRecordedFlags)
    if (const CLI::Option* o = app.get_option_no_throw(flag); o && o->count() > 0) sf.on_command_line.insert(flag);
  if (sf.spec_file.empty()) return;
  std::ifstream in(sf.spec_file);
  if (!in) user_error("cannot open spec file '{}'", sf.spec_file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    user_error("spec file '{}' is not valid JSON: {}", sf.spec_file, e.what());
  }
  if (!j.is_object()) user_error("spec file '{}' must hold a JSON object (docs/spec-files.md)", sf.spec_file);
  const nlohmann::json* spec = &j;
  if (j.contains("format")) {  // a whole JSON plan: its spec
    if (!j["format"].is_string() || j["format"].get<std::string>() != "collplan-plan")
      user_error("spec file '{}': \"format\" is {}, not \"collplan-plan\" (a spec file is a spec object or a JSON "
                 "plan)",
                 sf.spec_file, j["format"].dump());
    const auto it = j.find("spec");
    if (it == j.end() || !it->is_object())
      user_error("spec file '{}': a JSON plan without a \"spec\" object", sf.spec_file);
    spec = &*it;
  }
  const SpecFileReader rd{sf.spec_file};
  auto given = [&](const char* flag) { return on_command_line(sf, flag); };
  // Takes `key` unless the command line gave `flag`.
  auto take = [&](const char* key, const char* flag, auto&& assign) {
    if (given(flag)) return;
    assign();
    sf.from_file.insert(key);
  };
  const nlohmann::json* matrix = nullptr;
  const nlohmann::json* algorithm = nullptr;
  for (const auto& [key, val] : spec->items()) {
    if (key == "op") {
      const std::string op = rd.string(val, key, "an operation name");
      try {
        parse_op(op);
      } catch (const UserError& e) {
        rd.bad(key, "{}", e.what());
      }
      take("op", "--op", [&] { sf.op = op; });
    } else if (key == "K") {
      const uint32_t x = static_cast<uint32_t>(
          rd.uint(val, key, UINT32_MAX, "K >= 2 processors; decentralized-encode: 1 <= K < N sources"));
      take("K", "--K", [&] { sf.K = x; });
    } else if (key == "N") {
      const uint32_t x = static_cast<uint32_t>(rd.uint(val, key, UINT32_MAX, "decentralized-encode: N > K"));
      take("N", "--N", [&] { sf.N = x; });
    } else if (key == "p") {
      const uint32_t x = static_cast<uint32_t>(rd.uint(val, key, UINT32_MAX, "1..1024 ports"));
      take("p", "--p", [&] { sf.p = x; });
    } else if (key == "lambda") {
      const uint32_t x = static_cast<uint32_t>(rd.uint(val, key, UINT32_MAX, "1..1024"));
      take("lambda", "--lambda", [&] { sf.lambda = x; });
    } else if (key == "field") {
      std::string name;
      if (val.is_object()) {
        try {
          name = ir::field_from_json(val, "field").name();
        } catch (const UserError& e) {
          user_error("spec file '{}': {}", sf.spec_file, std::string_view(e.what()).substr(
                                                              std::string_view(e.what()).starts_with("plan JSON: ") ? 11 : 0));
        }
      } else {
        name = rd.string(val, key, "gf256, gf65536, prime:Q, or a plan's field object");
        try {
          Field::parse(name);
        } catch (const UserError& e) {
          rd.bad(key, "{}", e.what());
        }
      }
      take("field", "--field", [&] { sf.field = name; });
    } else if (key == "matrix") {
      if (!val.is_object()) rd.string(val, key, "a matrix family, or a plan's matrix object");
      matrix = &val;  // after the field and the op: a matrix object needs both
    } else if (key == "seed") {
      const uint64_t x = rd.uint(val, key, UINT64_MAX, "0..18446744073709551615");
      take("seed", "--seed", [&] { sf.seed = x; });
    } else if (key == "points") {
      const std::string x = rd.list(val, key);
      take("points", "--points", [&] { sf.points = x; });
    } else if (key == "perm") {
      const std::string x = rd.list(val, key);
      take("perm", "--perm", [&] { sf.perm = x; });
    } else if (key == "phi") {
      const std::string x = rd.list(val, key);
      take("phi", "--phi", [&] { sf.phi = x; });
    } else if (key == "counts") {
      const std::string x = rd.list(val, key);
      take("counts", "--counts", [&] { sf.counts = x; });
    } else if (key == "matrix_file") {
      const std::string x = rd.path(val, key);
      take("matrix_file", "--matrix-file", [&] { sf.matrix_file = x; });
    } else if (key == "generator") {
      const std::string x = rd.path(val, key);
      take("generator", "--generator", [&] { sf.generator_file = x; });
    } else if (key == "radix") {
      const uint32_t x = static_cast<uint32_t>(rd.uint(val, key, UINT32_MAX, "a radix P >= 2, or 0 for collplan's choice"));
      take("radix", "--radix", [&] { sf.radix = x; });
    } else if (key == "root") {
      const uint32_t x = static_cast<uint32_t>(rd.uint(val, key, UINT32_MAX, "0..K-1"));
      take("root", "--root", [&] { sf.root = x; });
    } else if (key == "blocks") {
      if (val.is_string()) {
        if (val.get<std::string>() != "auto")
          rd.bad(key, "'{}' is not a block count (expected an integer n >= 1 or \"auto\")", val.get<std::string>());
        take("blocks", "--blocks", [&] { sf.blocks_auto = true; });
      } else {
        const uint32_t x = static_cast<uint32_t>(rd.uint(val, key, UINT32_MAX, "n >= 1, or \"auto\""));
        take("blocks", "--blocks", [&] {
          sf.blocks = x;
          sf.blocks_auto = false;
        });
      }
    } else if (key == "exclusive") {
      const bool x = rd.boolean(val, key);
      take("exclusive", "--exclusive", [&] { sf.exclusive = x; });
    } else if (key == "systematic") {
      const bool x = rd.boolean(val, key);
      take("systematic", "--systematic", [&] { sf.systematic = x; });
    } else if (key == "code") {
      const std::string x = rd.string(val, key, "rs, lagrange or random");
      take("code", "--code", [&] { sf.code = x; });
    } else if (key == "algorithm") {
      rd.string(val, key, "a generator name or auto");
      algorithm = &val;
    } else if (key == "passes") {
      std::string csv;
      if (val.is_array()) {
        for (size_t i = 0; i < val.size(); ++i) {
          if (!val[i].is_string()) rd.bad(key, "entry {}: expected a pass name, got {}", i, SpecFileReader::type_name(val[i]));
          csv += (i ? "," : "") + val[i].get<std::string>();
        }
        if (csv.empty()) csv = "none";
      } else {
        csv = rd.string(val, key, "pass names, comma-separated, or an array of them; none for no pass");
      }
      take("passes", "--passes", [&] { sf.passes = csv; });
    } else if (key == "beta") {
      const double x = rd.number(val, key);
      take("beta", "--beta", [&] { sf.beta = x; });
    } else if (key == "tau") {
      const double x = rd.number(val, key);
      take("tau", "--tau", [&] { sf.tau = x; });
    } else if (key == "cost_len") {
      const uint64_t x = rd.uint(val, key, UINT64_MAX, "elements per vector, >= 1");
      if (x == 0) rd.bad(key, "0 is invalid (valid: elements per vector, >= 1)");
      take("cost_len", "--cost-len", [&] { sf.cost_len = x; });
    } else {
      user_error("spec file '{}': unknown key \"{}\" (valid: {}; docs/spec-files.md)", sf.spec_file, key, kSpecKeys);
    }
  }

  if (algorithm) {
    // A plan's algorithm text names the generator first; a --blocks auto
    // note also gives the cost model that chose n, so the same plan comes
    // out. Explicit beta/tau/cost_len/blocks keys and the command line win.
    const AlgorithmText a = parse_algorithm_text(algorithm->get<std::string>());
    if (a.generator.empty()) rd.bad("algorithm", "empty (expected a generator name or auto)");
    take("algorithm", "--algorithm", [&] { sf.algorithm = a.generator; });
    if (a.blocks_auto) {
      // The plan's "blocks" is the n chosen then; it is chosen again.
      take("blocks", "--blocks", [&] { sf.blocks_auto = true; });
      if (!spec->contains("beta") && !given("--beta")) sf.beta = a.beta;
      if (!spec->contains("tau") && !given("--tau")) sf.tau = a.tau;
      if (!spec->contains("cost_len") && !given("--cost-len")) sf.cost_len = a.len;
    }
  }

  if (matrix) {
    if (matrix->is_string()) {
      take("matrix", "--matrix", [&] { sf.matrix = matrix->get<std::string>(); });
    } else {
      // A plan's matrix object: rebuilt and checked (digest, entries) in the
      // spec's field.
      MatrixSpec ms;
      try {
        ms = ir::matrix_from_json(*matrix, "matrix", Field::parse(sf.field));
      } catch (const UserError& e) {
        const std::string_view w = e.what();
        user_error("spec file '{}': {}", sf.spec_file, w.substr(w.starts_with("plan JSON: ") ? 11 : 0));
      }
      if (sf.op == "decentralized-encode") {
        // The code's matrix; --code or --generator on the command line
        // replace it.
        if (!given("--code") && !given("--generator")) {
          if (sf.from_file.count("code") || sf.from_file.count("generator"))
            user_error("spec file '{}': a matrix object and \"{}\" both give the code's matrix; keep one",
                       sf.spec_file, sf.from_file.count("code") ? "code" : "generator");
          sf.matrix_object = std::move(ms);
          sf.from_file.insert("matrix");
        }
      } else if (sf.op != "encode") {
        sf.matrix_object = std::move(ms);  // refused by build_spec: the operation has no matrix
        sf.from_file.insert("matrix");
      } else if (!given("--matrix")) {
        // The family and its parameters, as if given as keys (the command
        // line's --seed, --points, --perm still win one by one); --matrix on
        // the command line replaces the object whole.
        sf.matrix = ms.family;
        sf.from_file.insert("matrix");
        auto join = [](const auto& v) {
          std::string s;
          for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? "," : "", v[i]);
          return s;
        };
        // A key next to the object saying something else is a contradiction.
        auto agree = [&](const char* key, bool same) {
          if (sf.from_file.count(key) && !same)
            user_error("spec file '{}': key \"{}\" and the matrix object's \"{}\" differ; keep one", sf.spec_file,
                       key, key);
        };
        if (ms.family == "random") {
          agree("seed", sf.seed == ms.seed);
          take("seed", "--seed", [&] { sf.seed = ms.seed; });
        }
        if (!ms.points.empty()) {
          agree("points", sf.points == join(ms.points));
          take("points", "--points", [&] { sf.points = join(ms.points); });
        }
        if (!ms.perm.empty()) {
          agree("perm", sf.perm == join(ms.perm));
          take("perm", "--perm", [&] { sf.perm = join(ms.perm); });
        }
        if (ms.family == "explicit") sf.matrix_object = std::move(ms);
      }
    }
  }
}

void apply_compile_options(const SpecFlags& sf, std::string& algorithm, std::string& passes_csv, gen::CostModel& cm) {
  if (sf.algorithm) algorithm = *sf.algorithm;
  if (sf.passes) passes_csv = *sf.passes;
  if (sf.beta) cm.beta = *sf.beta;
  if (sf.tau) cm.tau = *sf.tau;
  if (sf.cost_len) cm.len = *sf.cost_len;
  // The command line's values are checked here too (a spec file's were when
  // read): a negative or infinite cost would make every auto choice wrong.
  if (!(cm.beta >= 0) || !std::isfinite(cm.beta))
    user_error("--beta {} is invalid (valid: a finite number >= 0, the time per step)", cm.beta);
  if (!(cm.tau >= 0) || !std::isfinite(cm.tau))
    user_error("--tau {} is invalid (valid: a finite number >= 0, the time per element)", cm.tau);
  if (cm.len == 0) user_error("--cost-len 0 is invalid (valid: elements per vector, >= 1)");
}

Spec build_spec(const SpecFlags& sf, uint32_t max_ranks) {
  Spec s;
  s.op = parse_op(sf.op);
  s.K = sf.K;
  s.p = sf.p;
  s.lambda = sf.lambda;
  s.field = Field::parse(sf.field);
  const bool decentralized = s.op == OpKind::DecentralizedEncode;

  // Options the operation does not use are refused, never ignored.
  if (s.op != OpKind::Broadcast && s.op != OpKind::Reduce) refuse_unused_for_op(sf, kRoot, s.op, "broadcast, reduce");
  if (s.op != OpKind::Allgatherv && s.op != OpKind::Prefix)
    refuse_unused_for_op(sf, kCounts, s.op, "allgatherv (blocks per rank), prefix (items per rank)");
  if (s.op != OpKind::Prefix) refuse_unused_for_op(sf, kExclusive, s.op, "prefix");
  if (!decentralized)
    for (const SpecOption* o : {&kN, &kCode, &kGenerator, &kSystematic})
      refuse_unused_for_op(sf, *o, s.op, "decentralized-encode");
  if (s.op != OpKind::Encode) {
    const char* users = decentralized ? "encode (decentralized-encode takes --code or --generator)" : "encode";
    for (const SpecOption* o : {&kMatrix, &kMatrixFile, &kPoints, &kPerm, &kRadix, &kPhi})
      refuse_unused_for_op(sf, *o, s.op, users);
    if (!decentralized) {
      refuse_unused_for_op(sf, kMatrixObject, s.op, "encode, decentralized-encode");
      refuse_unused_for_op(sf, kSeed, s.op, "encode (random, permutation), decentralized-encode (--code random)");
    }
  }
  if (decentralized) {
    if (is_set(sf, kGenerator) && is_set(sf, kCode))
      user_error("{} and {} both give the code's matrix; give one", name_of(sf, kCode), name_of(sf, kGenerator));
    const bool object = sf.matrix_object.has_value() && !is_set(sf, kGenerator);
    if ((is_set(sf, kGenerator) || object || sf.code != "random") && is_set(sf, kSeed))
      user_error("{} is not used: it seeds --code random, and the code's matrix here is {}", name_of(sf, kSeed),
                 is_set(sf, kGenerator) ? "read from --generator" : object ? "the spec file's matrix object (--code random on the command line replaces it)"
                                                                         : "--code " + sf.code);
  }

  const bool K_given = on_command_line(sf, "--K") || sf.from_file.count("K");
  if (sf.K == 0 && !K_given)
    user_error("--K is required ({})", decentralized ? "the number of sources, 1 <= K < N"
                                                     : "the number of processors, K >= 2");
  // Where a value came from, for the range messages below.
  auto from = [&](const char* flag, const char* key) {
    return !on_command_line(sf, flag) && sf.from_file.count(key)
               ? fmt::format(" (key \"{}\" of spec file '{}')", key, sf.spec_file)
               : std::string();
  };
  if (sf.K == 0)
    user_error("--K 0{} is out of range (valid: {})", from("--K", "K"),
               decentralized ? "1 <= K < N sources for decentralized-encode" : "K >= 2 processors");
  s.root = sf.root;
  s.blocks = sf.blocks;
  s.exclusive = sf.exclusive;
  if (!sf.counts.empty())
    for (uint64_t c : parse_list(sf.counts, "counts")) {
      if (c > (1u << 24)) user_error("--counts entry {} is too large (at most 16777216)", c);
      s.counts.push_back(static_cast<uint32_t>(c));
    }
  if (decentralized) {
    const bool N_given = on_command_line(sf, "--N") || sf.from_file.count("N");
    if (sf.N == 0 && !N_given)
      user_error("--N is required for decentralized-encode (the number of processors, N > K)");
    if (sf.N == 0) user_error("--N 0{} is out of range (valid: N > K = {} processors)", from("--N", "N"), sf.K);
    s.N = sf.N;
  }
  validate_spec_basics(s, max_ranks);
  if (s.op == OpKind::Encode) s.matrix = build_matrix(sf, s.K, s.field);
  if (decentralized) {
    // A (K x (N-K)) for a systematic code, G (K x N) otherwise.
    if (!sf.generator_file.empty()) {
      s.matrix = matrix_from_file(sf.generator_file, s.K, sf.systematic ? s.N - s.K : s.N, s.field);
      // What it is, not where it was (the plan does not depend on the path).
      s.matrix.source = sf.systematic ? "systematic, A from a generator file" : "non-systematic, G from a generator file";
    } else if (sf.matrix_object) {
      const MatrixSpec& ms = *sf.matrix_object;
      const bool systematic = ms.cols != s.N;
      if (ms.rows != s.K || (ms.cols != s.N && ms.cols != s.N - s.K))
        user_error("{} is {} x {}; decentralized-encode with N = {}, K = {} needs A, {} x {} (systematic), or G, {} x {}",
                   name_of(sf, kMatrixObject), ms.rows, ms.cols, s.N, s.K, s.K, s.N - s.K, s.K, s.N);
      if (is_set(sf, kSystematic) && sf.systematic != systematic)
        user_error("{} says systematic = {}, but {} is {} x {}, the shape of a {} code's {}", name_of(sf, kSystematic),
                   sf.systematic, name_of(sf, kMatrixObject), ms.rows, ms.cols,
                   systematic ? "systematic" : "non-systematic", systematic ? "A" : "G");
      s.matrix = ms;
      s.matrix.digest = matrix_digest(materialize(s.matrix, s.field), s.field);
    } else {
      s.matrix = code_matrix(sf.code, s.N, s.K, sf.systematic, sf.seed, s.field);
    }
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
  c->add_option("--spec", sf.spec_file,
                "spec file: JSON with the keys below, a plan's own \"spec\" object, or a JSON plan (its spec); flags "
                "override it (docs/spec-files.md)");
  c->add_option("--op", sf.op, "operation: encode | decentralized-encode | broadcast | reduce | allgather | allgatherv | allreduce | reduce-scatter | prefix")
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
       "--beta/--tau/--cost-len, the whole message's length; see docs/circulant.md; decentralized-encode: n "
       "for the streamed rows, docs/decentralized.md)")
      ->default_str("1");
  c->add_option("--counts", sf.counts, "prefix: items per rank (Algorithm B); allgatherv: blocks per rank; comma-separated");
  c->add_flag("--exclusive", sf.exclusive, "prefix: exclusive scan");
  add_uint_option(c, "--N", sf.N, "decentralized-encode: processors, N > K (ranks 0..K-1 are the sources)",
                  "N > K processors")
      ->default_str("");
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
// A generator that is applicable but has no estimate for this spec (its
// estimate saturates: C1 = 2^32-1) shows "-" (JSON: null) for its figures.
nlohmann::json explain_json(const Spec& spec, const std::string& algorithm, const gen::CostModel& m) {
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

void explain_choice(const Spec& spec, const std::string& algorithm, const gen::CostModel& m) {
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
