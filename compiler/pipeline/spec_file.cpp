// Spec files (docs/spec-files.md): a JSON spec object, a plan's own "spec"
// object or a whole JSON plan, read into the SpecFlags the command line did
// not give.
#include "pipeline/spec_flags.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "json/json.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/safe_file.h"

namespace collplan::pipeline {

namespace {

// ---- spec files (docs/spec-files.md) ----

// The keys of a spec file, in the order they are documented.
const char* const kSpecKeys =
    "op, K, N, p, lambda, field, matrix, seed, points, perm, matrix_file, radix, phi, root, blocks, counts, "
    "exclusive, code, generator, systematic, lost, helpers, to, algorithm, passes, beta, tau, cost_len";

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

void apply_spec_file(SpecFlags& sf) {
  if (sf.spec_file.empty()) return;
  const std::string text = files::read_regular_file(sf.spec_file, "spec file", kMaxSpecFileBytes);
  const nlohmann::json j = ir::parse_json_strict(text.data(), text.size(), fmt::format("spec file '{}'", sf.spec_file));
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
          rd.uint(val, key, UINT32_MAX, "K >= 2 processors; decentralized-encode, repair, decode: 1 <= K < N"));
      take("K", "--K", [&] { sf.K = x; });
    } else if (key == "N") {
      const uint32_t x = static_cast<uint32_t>(rd.uint(val, key, UINT32_MAX, "decentralized-encode, repair, decode: N > K"));
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
    } else if (key == "lost") {
      const std::string x = rd.list(val, key);
      take("lost", "--lost", [&] { sf.lost = x; });
    } else if (key == "helpers") {
      const std::string x = rd.list(val, key);
      take("helpers", "--helpers", [&] { sf.helpers = x; });
    } else if (key == "to") {
      const std::string x = rd.list(val, key);
      take("to", "--to", [&] { sf.to = x; });
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
      if (sf.op == "decentralized-encode" || sf.op == "repair" || sf.op == "decode") {
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

}  // namespace collplan::pipeline
