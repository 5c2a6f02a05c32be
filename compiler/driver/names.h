// Did-you-mean for the names on a command line (docs/cli.md, "Errors"):
// CLI11 alone says "A subcommand is required" or "arguments were not
// expected" for a typo; collplan names the closest subcommand or option.
#pragma once

#include <CLI/CLI.hpp>

namespace collplan::cli {

// Before CLI11 parses argv: an unknown subcommand of `app`, or an unknown
// --option of the chosen one, is a UserError (exit status 2) suggesting the
// closest name when one is close enough to be a typo, else pointing to --help.
void check_names(const CLI::App& app, int argc, char** argv);

}  // namespace collplan::cli
