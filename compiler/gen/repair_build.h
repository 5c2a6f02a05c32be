// Assembly of repair and decode plans (internal to gen/repair_*.cpp).
//
// Every survivor gets its n input slots (its symbol in n blocks) whether or
// not it is a helper; output symbol o (matrix/repair.h's numbering, rank-major)
// ends as n values at rank out_rank[o], given by the generator in `out`;
// finish() writes them into the output slots in that order.
#pragma once

#include <string>
#include <vector>

#include "matrix/repair.h"
#include "passes/compose.h"

namespace collplan::gen::detail {

struct RepairAssembly {
  ir::Plan plan;
  RepairMap map;
  uint32_t n = 1;
  std::vector<std::vector<passes::Held>> held;  // per rank, n values: a survivor's input blocks
  std::vector<int32_t> helper_index;            // per rank: its row of F, or -1
  std::vector<std::vector<passes::Held>> out;   // per output symbol, n values at its rank
  std::vector<std::string> phases;
};

// Validates the spec (repair or decode; the map solved), gives every
// survivor its input slots.
RepairAssembly repair_start(const Spec& spec, const char* generator);
// Output symbol o's values written into its rank's output slots; the
// algorithm string gets the phases.
ir::Plan repair_finish(RepairAssembly& a);
// The distinct receiving ranks (out_rank without repeats, in order).
std::vector<uint32_t> receivers(const RepairMap& m);

}  // namespace collplan::gen::detail
