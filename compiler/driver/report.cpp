// The outcome of a command as the user sees it (driver/report.h).
#include "driver/report.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "driver/cli.h"

namespace collplan::cli {

bool g_json_errors = false;

void add_format_option(CLI::App* c, std::string& format) {
  c->add_option("--format", format, "output: text, or json (one JSON object on stdout, docs/cli.md)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

int report(int code, const std::string& kind, const std::string& message) {
  std::cerr << "collplan: error: " << message << "\n";
  if (g_json_errors) {
    nlohmann::json j{{"ok", false}, {"kind", kind}, {"error", message}, {"exit_code", code}};
    std::cout << j.dump(2) << "\n";
  }
  return code;
}

std::string operators_line(const passes::ReductionProperties& rp) {
  // Not exact means a field plan only: what ordering or identical bits
  // would add is moot for an operator the plan does not compute.
  std::string s = rp.exact ? "operators: any commutative (exact); non-commutative: "
                           : "operators: field sums only, not for an operator (" + rp.why_not_exact + "); ";
  if (rp.exact) s += rp.ordered ? "yes (ordered); " : "no (" + rp.why_not_ordered + "); ";
  s += "identical bits on every rank: ";
  s += rp.consistent ? "yes" : "no (" + rp.why_not_consistent + ")";
  return s;
}

nlohmann::json operators_json(const passes::ReductionProperties& rp) {
  nlohmann::json j{{"exact", rp.exact}, {"ordered", rp.ordered}, {"consistent", rp.consistent}};
  if (!rp.exact) j["why_not_exact"] = rp.why_not_exact;
  if (!rp.ordered) j["why_not_ordered"] = rp.why_not_ordered;
  if (!rp.consistent) j["why_not_consistent"] = rp.why_not_consistent;
  return j;
}

const char* const kExitCodes =
    "Exit status:\n"
    "  0  success\n"
    "  1  the plan is wrong: structure, algebra or operand order (any command that reads a plan), or a\n"
    "     replay differs from the direct computation; the message starts \"collplan: error: plan rejected\"\n"
    "  2  bad input: flags, spec, a size over a limit, an unreadable, truncated or damaged file\n"
    "  3  internal error: a bug in collplan (never caused by bad input; please report it)\n"
    "  4  the environment ran out of memory or file descriptors (ulimit -v, ulimit -n)\n"
    "Errors go to stderr, one line starting \"collplan: error:\". With --format json a JSON object\n"
    "{\"ok\": false, \"kind\": ..., \"error\": ..., \"exit_code\": ...} goes to stdout as well (docs/cli.md).";

}  // namespace collplan::cli
