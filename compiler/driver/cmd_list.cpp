// `collplan list`: what collplan knows by name (generators, passes, fields,
// operations), as text or JSON; the names --algorithm, --passes, --field and
// --op accept.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "gen/registry.h"
#include "pipeline/pipeline.h"

namespace collplan::cli {

namespace {

int cmd_list(bool as_json) {
  struct FieldInfo {
    const char *name, *description;
  };
  static constexpr FieldInfo kFields[] = {{"gf256", "GF(2^8), polynomial 0x11D (ISA-L's)"},
                                          {"gf65536", "GF(2^16), polynomial 0x1100B"},
                                          {"prime:Q", "GF(Q) for a prime 2 <= Q < 2^31, e.g. prime:65537"}};
  if (as_json) {
    nlohmann::json j;
    j["generators"] = nlohmann::json::array();
    for (const auto& g : gen::generators()) {
      std::vector<std::string> ops;
      for (OpKind op : g.ops) ops.push_back(op_name(op));
      j["generators"].push_back({{"name", g.name}, {"ops", ops}, {"description", g.description},
                                 {"rank_local", static_cast<bool>(g.build_rank)}});
    }
    j["passes"] = nlohmann::json::array();
    for (const auto& p : pipeline::pass_registry())
      j["passes"].push_back({{"name", p.name}, {"description", p.description}, {"default", p.in_default_pipeline}});
    j["fields"] = nlohmann::json::array();
    for (const auto& f : kFields) j["fields"].push_back({{"name", f.name}, {"description", f.description}});
    j["operations"] = nlohmann::json::array();
    for (OpKind op : all_ops()) j["operations"].push_back(op_name(op));
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "generators:\n";
  for (const auto& g : gen::generators()) {
    std::string ops;
    for (OpKind op : g.ops) ops += std::string(ops.empty() ? "" : ",") + op_name(op);
    std::cout << fmt::format("  {:<20} [{}] {}{}\n", g.name, ops, g.description,
                             g.build_rank ? " (compile --rank: one rank alone)" : "");
  }
  std::cout << "passes:\n";
  for (const auto& p : pipeline::pass_registry())
    std::cout << fmt::format("  {:<20} {}{}\n", p.name, p.description, p.in_default_pipeline ? "" : " (on request)");
  std::cout << "fields:\n";
  for (const auto& f : kFields) std::cout << fmt::format("  {:<20} {}\n", f.name, f.description);
  std::cout << "operations:\n ";
  for (OpKind op : all_ops()) std::cout << " " << op_name(op);
  std::cout << "\n";
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, CommandList& cmds) {
  auto format = std::make_shared<std::string>("text");
  auto* list = app.add_subcommand("list", "list generators, passes, fields and operations");
  add_format_option(list, *format);
  cmds.push_back({list, [format] { return cmd_list(*format == "json"); }});
}

}  // namespace collplan::cli
