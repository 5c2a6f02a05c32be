// The cost model's flags, shared by the subcommands that cost a plan
// (compile, check).
#pragma once

#include <CLI/CLI.hpp>

#include "gen/postal_encode.h"

namespace collplan::cli {

// Adds --beta, --tau and --cost-len to `c`, writing into `m` (its values are
// the defaults shown in --help).
void add_cost_model_options(CLI::App* c, passes::CostModel& m);

}  // namespace collplan::cli
