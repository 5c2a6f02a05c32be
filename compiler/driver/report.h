// How the driver reports an outcome (docs/cli.md): the exit status, the one
// error line on stderr and, with --format json, the verdict object on stdout.
// add_format_option and g_json_errors (driver/cli.h) are defined with them.
#pragma once

#include <string>

namespace collplan::cli {

// Prints "collplan: error: <message>" on stderr and, when g_json_errors is
// set, {"ok": false, "kind": <kind>, "error": <message>, "exit_code": <code>}
// on stdout. Returns `code`, the exit status.
int report(int code, const std::string& kind, const std::string& message);

// The exit statuses and the error format, as `collplan --help` lists them.
extern const char* const kExitCodes;

}  // namespace collplan::cli
