// The driver's shared pieces, used by every subcommand file (driver/*.cpp).
//
// A subcommand lives in its own file when it is more than a few lines: the
// file defines `void add_<name>_command(CLI::App& app, CommandList& cmds)`,
// which adds its CLI11 subcommand and pushes what to run when it was chosen;
// main.cpp calls each adder once. Exit codes are main's: a subcommand returns
// 0 on success and throws UserError / VerifyError / InternalError otherwise.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/plan.h"
#include "matrix/matrix.h"
#include "passes/cost.h"
#include "pipeline/spec_flags.h"

namespace collplan::cli {

namespace detail {
template <typename T>
struct UintOf {
  using type = T;
};
template <typename U>
struct UintOf<std::optional<U>> {
  using type = U;
};
}  // namespace detail

// ---- subcommand registration -------------------------------------------------

struct Subcommand {
  CLI::App* app;             // the parsed subcommand (truthy when chosen)
  std::function<int()> run;  // its action; returns the exit status
};
using CommandList = std::vector<Subcommand>;

void add_emit_cpp_command(CLI::App& app, CommandList& cmds);
void add_extract_command(CLI::App& app, CommandList& cmds);
// Subcommands in their own files (driver/cmd_<name>.cpp).
void add_run_command(CLI::App& app, CommandList& cmds);  // `run`
void add_verify_circulant_command(CLI::App& app, CommandList& cmds);  // cmd_verify_circulant.cpp
void add_search_command(CLI::App& app, CommandList& cmds);             // cmd_search.cpp
void add_compile_command(CLI::App& app, CommandList& cmds);            // cmd_compile.cpp
void add_check_command(CLI::App& app, CommandList& cmds);              // cmd_check.cpp
void add_show_command(CLI::App& app, CommandList& cmds);               // cmd_show.cpp
void add_list_command(CLI::App& app, CommandList& cmds);               // cmd_list.cpp
void add_keygen_command(CLI::App& app, CommandList& cmds);             // cmd_keygen.cpp
void add_bound_command(CLI::App& app, CommandList& cmds);              // cmd_bound.cpp
void add_import_command(CLI::App& app, CommandList& cmds);             // cmd_import.cpp
void add_export_command(CLI::App& app, CommandList& cmds);             // cmd_export.cpp
void add_recode_command(CLI::App& app, CommandList& cmds);             // cmd_recode.cpp
void add_calibrate_command(CLI::App& app, CommandList& cmds);          // cmd_calibrate.cpp
void add_plan_set_command(CLI::App& app, CommandList& cmds);           // cmd_plan_set.cpp
void add_tune_command(CLI::App& app, CommandList& cmds);               // cmd_tune.cpp
// `collplan tune ARGS...` replaces this process with collplan-tune ARGS...
// (the MPI program beside the collplan executable); returns only on error.
int exec_tune(int argc, char** argv);

// `show`'s pictures (driver/cmd_show.cpp): --svg, --dot, --html, --trace,
// --coefficients, --summary, --diagram, --ranks, --steps.
struct ShowPictureOptions {
  std::string svg, dot, html, trace, ranks, steps;
  bool coefficients = false, summary = false, diagram = false;
  bool any() const;  // some picture flag was given
};
void add_show_picture_options(CLI::App* show, ShowPictureOptions& o);
// Loads the plan (structure checked), draws what `o` asks; `rank` (show's
// --rank) is refused with a pointer to --ranks.
int cmd_show_pictures(const std::string& path, std::optional<uint32_t> rank, const ShowPictureOptions& o);

// ---- spec from flags or a spec file (pipeline/spec_flags.h) ------------------

using pipeline::apply_compile_options;
using pipeline::build_matrix;
using pipeline::build_spec;
using pipeline::kMatrixChoices;
using pipeline::parse_list;
using pipeline::resolve_auto_blocks;
using pipeline::SpecFlags;
// Records which spec flags `app` was given (SpecFlags::on_command_line), then
// reads the spec file, if any (pipeline::apply_spec_file).
void apply_spec_file(SpecFlags& sf, const CLI::App& app);
// `--passes`: the comma-separated names in order; "none" or "" is no pass.
std::vector<std::string> pass_list(const std::string& csv);

// `compile --explain`: every generator of the operation with its
// applicability, estimated C1, C2 and modeled time, and why the winner won.
void explain_choice(const Spec& spec, const std::string& algorithm, const passes::CostModel& m);
// The same as JSON (docs/cli.md, "compile --format json"): figures that do
// not apply are null.
nlohmann::json explain_json(const Spec& spec, const std::string& algorithm, const passes::CostModel& m);

// ---- output format and errors (docs/cli.md) -----------------------------------

// `--format text|json` on compile, check, list, bound, run, verify-circulant.
void add_format_option(CLI::App* c, std::string& format);
// Set by a subcommand that prints JSON: an error then also prints the
// verdict object {"ok": false, "kind": ..., "error": ..., "exit_code": ...}
// on stdout (main.cpp).
extern bool g_json_errors;

// `compile --rank R`: rank R's program compiled alone, written as a
// rank-local file (driver/cmd_compile_rank.cpp).
struct RankCompileArgs {
  SpecFlags sf;
  uint32_t rank = 0;
  std::string algorithm = "auto", passes_csv, out, json_out;
  bool passes_given = false;  // --passes on the command line (else: the per-rank part of the default)
  bool quiet = false, explain = false;
  passes::CostModel cost;
};
int cmd_compile_rank(const RankCompileArgs& a);

// A non-negative integer flag parsed from its text, so that "-1" is refused
// instead of wrapping around (CLI11 converts "-1" to 2^64-1 for a uint64_t)
// and a value over T's range is refused too; `valid` names the range in the
// message. Every unsigned flag of the driver is added with it. Thrown while
// parsing: a usage error, exit status 2. T may be std::optional<U>.
template <typename T>
CLI::Option* add_uint_option(CLI::App* c, const char* flag, T& target, const std::string& help, const char* valid) {
  using U = typename detail::UintOf<T>::type;
  const std::string name = std::string(flag).substr(0, std::string(flag).find(','));  // "--Kmax,--pmax": --Kmax
  CLI::Option* o = c->add_option_function<std::string>(
      flag,
      [&target, name, valid](const std::string& v) {
        const bool digits = !v.empty() && std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        if (!digits)
          throw CLI::ValidationError(name, fmt::format("'{}' is {} (valid: {})", v,
                                                       !v.empty() && v[0] == '-' ? "negative"
                                                                                 : "not a non-negative decimal integer",
                                                       valid));
        unsigned long long x = 0;
        const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec != std::errc() || ptr != v.data() + v.size() || x > std::numeric_limits<U>::max())
          throw CLI::ValidationError(name, fmt::format("'{}' is too large (valid: {})", v, valid));
        target = static_cast<U>(x);
      },
      help);
  if constexpr (std::is_same_v<T, U>) o->default_str(std::to_string(target));
  return o->type_name("UINT");
}

// Adds --spec, --op, --K, ... to a subcommand.
void add_spec_flags(CLI::App* c, SpecFlags& sf);

// ---- plan files --------------------------------------------------------------

bool is_binary_file(const std::string& path);
// A .cplan or JSON plan (by content, not by name).
ir::Plan load_plan(const std::string& path);
// The rank a single-rank file (`collplan extract`) holds; nullopt for a whole
// plan (binary or JSON).
std::optional<ir::Rank> single_rank_of(const std::string& path);
// `collplan check` of a single-rank file: that rank's structure and its part
// of the cost, saying what cannot be checked without the other ranks.
int check_single_rank(const std::string& path, bool json);

// The cost report as text; `before` (optional) is the generator's own cost,
// printed when the passes changed C2.
void print_cost(const passes::CostReport& c, const passes::CostModel& m, const passes::CostReport* before);

}  // namespace collplan::cli
