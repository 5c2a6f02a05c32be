// `collplan import PLAN.json -o PLAN.cplan`: a JSON plan (docs/plan-format.md,
// section 2) checked against its postcondition, then written as a binary
// plan; an unchecked plan is never written as .cplan.
#include <iostream>

#include <fmt/format.h>

#include "driver/cli.h"
#include "ir/binary.h"
#include "json/json.h"
#include "passes/verify.h"

namespace collplan::cli {

namespace {

int cmd_import(const std::string& in, const std::string& out) {
  const ir::Plan plan = ir::read_json_file(in);
  const auto rep = passes::verify(plan);
  ir::write_binary(plan, out);
  std::cout << fmt::format("{}: checked ({}), wrote {} (digest {})\n", in, rep.describe(), out, ir::plan_digest(plan).hex());
  return 0;
}

}  // namespace

void add_import_command(CLI::App& app, CommandList& cmds) {
  struct ImportFlags {
    std::string path, out;
  };
  auto f = std::make_shared<ImportFlags>();
  auto* import = app.add_subcommand("import", "check a JSON plan and write it as a binary plan");
  import->add_option("plan", f->path, "JSON plan")->required();
  import->add_option("-o,--output", f->out, "binary plan to write")->required();
  cmds.push_back({import, [f] { return cmd_import(f->path, f->out); }});
}

}  // namespace collplan::cli
