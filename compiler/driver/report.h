// How the driver reports an outcome (docs/cli.md): the exit status, the one
// error line on stderr and, with --format json, the verdict object on stdout.
// add_format_option and g_json_errors (driver/cli.h) are defined with them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "passes/verify_reduction.h"

namespace collplan::cli {

// Prints "collplan: error: <message>" on stderr and, when g_json_errors is
// set, {"ok": false, "kind": <kind>, "error": <message>, "exit_code": <code>}
// on stdout. Returns `code`, the exit status.
int report(int code, const std::string& kind, const std::string& message);

// `check`'s verdict on replaying a reduction plan with operators
// (passes/verify_reduction.h), as one text line, e.g.
//   "operators: any commutative (exact); non-commutative: no (rank 1 step 1 op 0 ...); identical bits on every rank: yes"
// and as the JSON object {"exact": bool, "ordered": bool, "consistent":
// bool, "why_not_exact": ..., ...} (a why_not_* only when its property fails).
std::string operators_line(const passes::ReductionProperties& rp);
nlohmann::json operators_json(const passes::ReductionProperties& rp);

// The exit statuses and the error format, as `collplan --help` lists them.
extern const char* const kExitCodes;

}  // namespace collplan::cli
