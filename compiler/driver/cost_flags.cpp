// The cost model flags and the cost file (driver/cost_flags.h).
#include "driver/cost_flags.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "json/json.h"
#include "support/error.h"
#include "support/safe_file.h"

namespace collplan::cli {

namespace {

// Reads the fields of one cost file; every error names the file and the key.
struct CostFileReader {
  const std::string& path;

  template <typename... Args>
  [[noreturn]] void bad(const std::string& key, fmt::format_string<Args...> f, Args&&... args) const {
    user_error("cost file '{}': \"{}\": {} (docs/cost-model.md)", path, key, fmt::format(f, std::forward<Args>(args)...));
  }

  static const char* type_name(const nlohmann::json& v) {
    if (v.is_number_integer()) return "integer";
    if (v.is_number_float()) return "number";
    return v.type_name();
  }

  // A time: finite and >= 0 (a negative or infinite time would turn every
  // auto choice upside down).
  double seconds(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_number()) bad(key, "expected a number of seconds (finite, >= 0), got {}", type_name(v));
    const double x = v.get<double>();
    if (!(x >= 0) || !std::isfinite(x)) bad(key, "{} is invalid (valid: a finite number >= 0)", v.dump());
    return x;
  }

  uint64_t uint(const nlohmann::json& v, const std::string& key, uint64_t max, const char* valid) const {
    if (v.is_number_unsigned() && v.get<uint64_t>() <= max) return v.get<uint64_t>();
    bad(key, "{} is invalid (valid: {})", v.dump(), valid);
  }

  std::string string(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_string()) bad(key, "expected a string, got {}", type_name(v));
    return v.get<std::string>();
  }

  CostSample sample(const nlohmann::json& v, size_t i) const {
    const std::string key = fmt::format("samples[{}]", i);
    if (!v.is_object()) bad(key, "expected an object {{\"bytes\", \"seconds\", \"round_trips\"}}, got {}", type_name(v));
    CostSample s;
    bool bytes = false, seconds_given = false;
    for (const auto& [k, x] : v.items()) {
      const std::string sub = key + "." + k;
      if (k == "bytes") s.bytes = uint(x, sub, UINT64_MAX, "a message size in bytes, >= 1"), bytes = true;
      else if (k == "seconds") s.seconds = seconds(x, sub), seconds_given = true;
      else if (k == "round_trips") s.round_trips = uint(x, sub, UINT64_MAX, "an integer >= 0");
      else bad(sub, "unknown key (valid: bytes, seconds, round_trips)");
    }
    if (!bytes || s.bytes == 0) bad(key + ".bytes", "missing or 0 (valid: a message size in bytes, >= 1)");
    if (!seconds_given) bad(key + ".seconds", "missing (valid: the one-way time in seconds)");
    return s;
  }
};

}  // namespace

CostFile parse_cost_file(const std::string& text, const std::string& path) {
  const nlohmann::json j = ir::parse_json_strict(text.data(), text.size(), fmt::format("cost file '{}'", path));
  const CostFileReader rd{path};
  if (!j.is_object())
    user_error("cost file '{}' must hold a JSON object, as `collplan calibrate` writes (docs/cost-model.md)", path);
  // Format and version first: a file of another kind or version is named as
  // such rather than by its first unexpected key.
  const auto format = j.find("format");
  if (format == j.end()) rd.bad("format", "missing (valid: \"{}\")", kCostFileFormat);
  if (!format->is_string() || format->get<std::string>() != kCostFileFormat)
    rd.bad("format", "{} is not a cost file's (valid: \"{}\")", format->dump(), kCostFileFormat);
  const auto version = j.find("version");
  if (version == j.end()) rd.bad("version", "missing (valid: {})", kCostFileVersion);
  if (!version->is_number_integer() || version->get<int64_t>() != kCostFileVersion)
    rd.bad("version", "{} is not supported (valid: {}; a newer collplan wrote this file?)", version->dump(),
           kCostFileVersion);

  CostFile f;
  bool transport = false, alpha = false, beta = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "format" || key == "version") continue;
    if (key == "transport") {
      f.transport = rd.string(v, key);
      if (f.transport != "threads" && f.transport != "mpi" && f.transport != "tcp")
        rd.bad(key, "\"{}\" is not a transport (valid: {})", f.transport, kCostTransports);
      transport = true;
    } else if (key == "ranks") {
      f.ranks = static_cast<uint32_t>(rd.uint(v, key, UINT32_MAX, "the number of ranks measured, >= 2"));
      if (f.ranks < 2) rd.bad(key, "{} is invalid (valid: the number of ranks measured, >= 2)", f.ranks);
    } else if (key == "alpha_s") {
      f.alpha_s = rd.seconds(v, key), alpha = true;
    } else if (key == "beta_s_per_byte") {
      f.beta_s_per_byte = rd.seconds(v, key), beta = true;
    } else if (key == "residual") {
      f.residual = rd.seconds(v, key);  // a relative error: the same rules as a time
    } else if (key == "samples") {
      if (!v.is_array()) rd.bad(key, "expected an array of samples, got {}", CostFileReader::type_name(v));
      for (size_t i = 0; i < v.size(); ++i) f.samples.push_back(rd.sample(v[i], i));
    } else if (key == "measured_at") {
      f.measured_at = rd.string(v, key);
    } else if (key == "host") {
      f.host = rd.string(v, key);
    } else {
      rd.bad(key, "unknown key (valid: format, version, transport, ranks, alpha_s, beta_s_per_byte, residual, "
                  "samples, measured_at, host)");
    }
  }
  if (!transport) rd.bad("transport", "missing (valid: {})", kCostTransports);
  if (!alpha) rd.bad("alpha_s", "missing (valid: the start-up time per message in seconds, finite, >= 0)");
  if (!beta) rd.bad("beta_s_per_byte", "missing (valid: the time per byte in seconds, finite, >= 0)");
  return f;
}

CostFile read_cost_file(const std::string& path) {
  return parse_cost_file(files::read_regular_file(path, "cost file", kMaxCostFileBytes), path);
}

std::string cost_file_json(const CostFile& f) {
  nlohmann::json j{{"format", kCostFileFormat},
                   {"version", kCostFileVersion},
                   {"transport", f.transport},
                   {"alpha_s", f.alpha_s},
                   {"beta_s_per_byte", f.beta_s_per_byte}};
  if (f.ranks) j["ranks"] = f.ranks;
  j["residual"] = f.residual;
  nlohmann::json samples = nlohmann::json::array();
  for (const CostSample& s : f.samples)
    samples.push_back({{"bytes", s.bytes}, {"seconds", s.seconds}, {"round_trips", s.round_trips}});
  j["samples"] = samples;
  if (!f.measured_at.empty()) j["measured_at"] = f.measured_at;
  if (!f.host.empty()) j["host"] = f.host;
  return j.dump(2) + "\n";
}

void CostFlags::load() {
  if (!file.empty()) loaded = read_cost_file(file);
}

passes::CostModel CostFlags::model_for(const Field& f) const {
  passes::CostModel m = model;
  if (!loaded) return m;
  if (!(beta_opt && beta_opt->count() > 0)) m.beta = loaded->alpha_s;
  if (!(tau_opt && tau_opt->count() > 0)) m.tau = loaded->beta_s_per_byte * f.elem_bytes();
  return m;
}

std::string CostFlags::describe(const Field& f) const {
  if (!loaded) return {};
  const bool beta_cli = beta_opt && beta_opt->count() > 0, tau_cli = tau_opt && tau_opt->count() > 0;
  const passes::CostModel m = model_for(f);
  std::string what = fmt::format("{} ({}{}{})", file, loaded->transport,
                                 loaded->ranks ? fmt::format(", {} ranks", loaded->ranks) : std::string(),
                                 loaded->measured_at.empty() ? std::string() : ", measured " + loaded->measured_at);
  return fmt::format("cost model: beta = {} s ({}), tau = {} s per element ({})\n", m.beta,
                     beta_cli ? "--beta" : "alpha_s of " + what, m.tau,
                     tau_cli ? std::string("--tau")
                             : fmt::format("beta_s_per_byte x {} bytes per {} element", f.elem_bytes(), f.name()));
}

void add_cost_model_options(CLI::App* c, CostFlags& o) {
  o.beta_opt = c->add_option("--beta", o.model.beta,
                             "cost model: start-up time per step (modeled time C1*beta + C2*len*tau; auto choices use "
                             "it); wins over --cost-file")
                   ->capture_default_str();
  o.tau_opt = c->add_option("--tau", o.model.tau, "cost model: time per element; wins over --cost-file")
                  ->capture_default_str();
  add_uint_option(c, "--cost-len", o.model.len, "cost model: elements per vector (len)", "len >= 1 elements");
  c->add_option("--cost-file", o.file,
                "cost model measured by `collplan calibrate`: beta = its alpha_s, tau = its beta_s_per_byte x the "
                "field's element bytes (modeled times in seconds); --beta / --tau on the command line win over it, "
                "it wins over a spec file's beta / tau (docs/cost-model.md)");
}

}  // namespace collplan::cli
