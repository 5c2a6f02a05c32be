// The cost model's flags, shared by the subcommands that cost a plan
// (compile, check), and the cost file `collplan calibrate` writes
// (docs/cost-model.md).
//
// Where β and τ come from, highest first:
//   1. --beta / --tau on the command line;
//   2. --cost-file FILE: β = the file's alpha_s (seconds per message),
//      τ = its beta_s_per_byte × the field's element bytes (seconds per
//      element), so a modeled time C1·β + C2·len·τ is in seconds;
//   3. a spec file's "beta" / "tau" (compile --spec);
//   4. the defaults, β = τ = 1.
// --cost-len is never taken from a cost file: the vector length belongs to
// the application, not to the machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "field/field.h"
#include "gen/postal_encode.h"
#include "passes/cost.h"

namespace collplan::cli {

// ---- the cost file ------------------------------------------------------------

inline constexpr const char* kCostFileFormat = "collplan-cost";  // its "format" value
inline constexpr int kCostFileVersion = 1;                        // the one version this collplan reads and writes
inline constexpr uint64_t kMaxCostFileBytes = uint64_t{1} << 20;  // a calibration's samples take a few KiB
// The transports a cost file may name: `collplan run --transport`'s.
inline constexpr const char* kCostTransports = "threads | mpi | tcp";

// One message size of a calibration: the one-way time (half the median round
// trip over the pairs measured) and how many round trips it is the median of.
struct CostSample {
  uint64_t bytes = 0;
  double seconds = 0;
  uint64_t round_trips = 0;
};

// A cost file's contents (version 1). Required: format, version, transport,
// alpha_s, beta_s_per_byte; the rest describe the measurement and may be
// absent in a hand-written file (ranks 0, empty strings and samples).
struct CostFile {
  std::string transport;      // threads | mpi | tcp
  uint32_t ranks = 0;         // ranks the measurement ran on (0: not given)
  double alpha_s = 0;         // start-up time per message, seconds (finite, >= 0)
  double beta_s_per_byte = 0; // time per byte, seconds (finite, >= 0)
  double residual = 0;        // the fit's RMS relative residual (informative)
  std::vector<CostSample> samples;
  std::string measured_at;    // ISO 8601, UTC
  std::string host;
};

// Parses the text of a cost file. UserError naming `path` and the bad or
// missing field and what is valid; never anything else for any input.
CostFile parse_cost_file(const std::string& text, const std::string& path);
// Reads and parses `path` (a regular file of at most kMaxCostFileBytes).
CostFile read_cost_file(const std::string& path);
// The file's JSON text (parse_cost_file reads it back to the same values).
std::string cost_file_json(const CostFile& f);

// ---- the flags -------------------------------------------------------------------

// The cost model as the command line gives it: --beta, --tau, --cost-len and
// --cost-file.
struct CostFlags {
  passes::CostModel model;  // --beta, --tau, --cost-len (or a spec file's, or the defaults)
  std::string file;         // --cost-file ("" = none)
  std::optional<CostFile> loaded;  // the file, once load() read it
  const CLI::Option* beta_opt = nullptr;
  const CLI::Option* tau_opt = nullptr;

  // Reads --cost-file, if given (UserError on a bad file). Call before the
  // command's long work, so a bad file fails at once.
  void load();
  // The model for plans over `f`: `model`, with β and τ from the loaded cost
  // file where --beta / --tau were not given on the command line.
  passes::CostModel model_for(const Field& f) const;
  // Where β and τ came from, for the reports: a line "cost model: ...\n",
  // or "" without a cost file.
  std::string describe(const Field& f) const;
};

// Adds --beta, --tau, --cost-len and --cost-file to `c`, writing into `o`
// (the model's values are the defaults shown in --help).
void add_cost_model_options(CLI::App* c, CostFlags& o);

}  // namespace collplan::cli
