// Spec building: the options of a spec — from the command line or a spec
// file (docs/spec-files.md) — into a validated Spec whose matrix is built
// from its family and parameters. Used by the driver and the spec fuzzer;
// no command-line library is involved (the driver records which flags the
// user gave in SpecFlags::on_command_line).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/plan.h"
#include "passes/cost.h"

namespace collplan::pipeline {

// ---- spec from flags or a spec file ----------------------------------------

struct SpecFlags {
  std::string spec_file;
  std::string op = "encode";
  uint32_t K = 0, p = 1, lambda = 1;
  std::string field = "gf256";
  std::string matrix = "random";
  uint64_t seed = 1;
  std::string points, perm, matrix_file;
  uint32_t radix = 0;  // structured families: 0 = collplan chooses
  std::string phi;     // draw-loose: coset exponents
  uint32_t root = 0, blocks = 1;
  bool blocks_auto = false;  // --blocks auto: compile picks n (broadcast; gen/circulant_plans.h)
  std::string counts;
  bool exclusive = false;
  // decentralized-encode
  uint32_t N = 0;
  std::string code = "random";   // rs | lagrange | lrc:L | random (or generator_file)
  std::string generator_file;    // A (K x (N-K)) or G (K x N) from a file
  bool systematic = true;
  // repair and decode (matrix/repair.h): comma-separated ranks
  std::string lost, helpers, to;

  // A matrix given by its entries in a spec file (a plan's own spec object,
  // docs/spec-files.md): encode's "explicit" family, or decentralized-encode's
  // code matrix (A or G, its shape says which).
  std::optional<MatrixSpec> matrix_object;
  // The compile options a spec file may set (apply_spec_file fills them only
  // when the command line does not give them; apply_compile_options hands
  // them to `compile`).
  std::optional<std::string> algorithm, passes;
  std::optional<double> beta, tau;
  std::optional<uint64_t> cost_len;
  // Where the values came from, for "is this option used?" (docs/spec-files.md,
  // "Options an operation does not use"): the flags given on the command line
  // and the spec-file keys taken (both recorded by apply_spec_file).
  std::set<std::string> on_command_line;
  std::set<std::string> from_file;
};

// The --matrix names build_matrix accepts (also the flag's help text).
inline constexpr const char* kMatrixChoices =
    "random | vandermonde | identity | permutation | file | dft | inverse-dft | draw-loose | inverse-draw-loose | "
    "lagrange | cauchy | rs-systematic";

// A comma-separated list of non-negative integers; UserError naming --`what`.
std::vector<uint64_t> parse_list(const std::string& text, const char* what);
// The K×K matrix the flags describe (--matrix and its parameters).
MatrixSpec build_matrix(const SpecFlags& sf, uint32_t K, const Field& f);
// Fills the flags the user did not give on the command line `app` from the
// JSON spec file sf.spec_file (docs/spec-files.md): a flat spec object, a
// plan's own "spec" object, or a JSON plan file (its "spec" is taken). With
// no spec file it does nothing. sf.on_command_line must already hold the
// flags given on the command line (the driver records them). UserError
// naming the file and key on a bad value or an unknown key.
void apply_spec_file(SpecFlags& sf);
// The compile options a spec file set (algorithm, passes, beta, tau,
// cost_len) into the variables of `compile`; the command line's own
// values were kept by apply_spec_file.
void apply_compile_options(const SpecFlags& sf, std::string& algorithm, std::string& passes_csv, passes::CostModel& cm);
// The validated spec the flags describe. With --blocks auto, blocks = 1
// until resolve_auto_blocks() picks n. An option the operation or matrix
// family does not use is refused (UserError naming it and who uses it) when
// it was given on the command line or holds a value other than its default.
// `max_ranks`: kMaxPlanRanks, or kMaxRankLocalRanks for `compile --rank`.
Spec build_spec(const SpecFlags& sf, uint32_t max_ranks = kMaxPlanRanks);
// --blocks auto (broadcast and reduce; decentralized-encode through
// gen::decentralized_auto_blocks): n minimising the circulant broadcast's
// modeled time for a message of cm.len elements; cm.len becomes the block
// length ⌈len/n⌉, the unit every generator's cost is then compared in.
// Returns the note for the plan's algorithm name. UserError for other ops.
std::string resolve_auto_blocks(Spec& spec, passes::CostModel& cm);

// Was `flag` given on the command line?
inline bool on_command_line(const SpecFlags& sf, const char* flag) { return sf.on_command_line.count(flag) > 0; }

}  // namespace collplan::pipeline
