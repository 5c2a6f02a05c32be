// `collplan export PLAN -o PLAN.json`: a plan (binary or JSON) written as
// JSON (docs/plan-format.md, section 2) with its cost report; the matrix
// entries only with --with-matrix.
#include <iostream>

#include <fmt/format.h>

#include "driver/cli.h"
#include "json/json.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"

namespace collplan::cli {

namespace {

int cmd_export(const std::string& in, const std::string& out, bool with_matrix) {
  const ir::Plan plan = load_plan(in);
  ir::write_json_file(plan, out, with_matrix, passes::cost_json(pipeline::plan_cost(plan)));
  std::cout << fmt::format("wrote {}\n", out);
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, CommandList& cmds) {
  struct ExportFlags {
    std::string path, out;
    bool with_matrix = false;
  };
  auto f = std::make_shared<ExportFlags>();
  auto* exportc = app.add_subcommand("export", "write a plan as JSON (schema: docs/plan-format.md, section 2)");
  exportc->add_option("plan", f->path, "plan file")->required();
  exportc->add_option("-o,--output", f->out, "JSON file to write")->required();
  exportc->add_flag("--with-matrix", f->with_matrix, "include the matrix entries");
  cmds.push_back({exportc, [f] { return cmd_export(f->path, f->out, f->with_matrix); }});
}

}  // namespace collplan::cli
