// `collplan recode PLAN --matrix ... -o OUT`: a universal plan's schedule
// kept, its coefficients recomputed for a new matrix (passes/recode.h); the
// structure is checked before and the whole plan verified after.
#include <iostream>

#include <fmt/format.h>

#include "driver/cli.h"
#include "ir/binary.h"
#include "passes/recode.h"
#include "passes/verify.h"

namespace collplan::cli {

namespace {

int cmd_recode(const std::string& in, const SpecFlags& sf, const std::string& out) {
  ir::Plan plan = load_plan(in);
  ir::verify_structure(plan);
  const MatrixSpec ms = build_matrix(sf, plan.spec.matrix.rows, plan.spec.field);
  passes::recode(plan, ms);
  const auto rep = passes::verify(plan);
  ir::write_binary(plan, out);
  std::cout << fmt::format("re-coded {} for matrix {} ({}), wrote {}\n", in, ms.family, rep.describe(), out);
  return 0;
}

struct RecodeFlags {
  std::string path, out;
  SpecFlags rf;  // only the matrix flags below are read
};

}  // namespace

void add_recode_command(CLI::App& app, CommandList& cmds) {
  auto f = std::make_shared<RecodeFlags>();
  SpecFlags& rf = f->rf;
  auto* recode = app.add_subcommand("recode", "put a new matrix into a universal plan, keeping its schedule");
  recode->add_option("plan", f->path, "plan file")->required();
  recode->add_option("--matrix", rf.matrix, kMatrixChoices)->capture_default_str();
  add_uint_option(recode, "--seed", rf.seed, "seed of a random matrix", "0..18446744073709551615");
  recode->add_option("--points", rf.points, "Vandermonde points");
  recode->add_option("--perm", rf.perm, "permutation");
  recode->add_option("--matrix-file", rf.matrix_file, "matrix file (Matrix Market or CSV)");
  recode->add_option("-o,--output", f->out, "binary plan to write")->required();
  cmds.push_back({recode, [f] { return cmd_recode(f->path, f->rf, f->out); }});
}

}  // namespace collplan::cli
