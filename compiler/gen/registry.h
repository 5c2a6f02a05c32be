// The generator registry: every generator with a one-line description, so
// `collplan list`, the tests and the docs enumerate the same set.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gen/postal_encode.h"
#include "ir/plan.h"

namespace collplan::gen {

struct GeneratorInfo {
  std::string name;
  std::string description;
  std::vector<OpKind> ops;  // operations it computes
  // A pure function of the spec and the cost model (which some generators
  // use to pick a parameter, e.g. the postal prepare spread).
  std::function<ir::Plan(const Spec&, const CostModel&)> build;
  // Its cost (C1, C2 before optimisation passes) without building the plan,
  // for `--algorithm auto`.
  std::function<PostalSplitCost(const Spec&, const CostModel&)> estimate;
};

const std::vector<GeneratorInfo>& generators();
// UserError listing the registered names when `name` is unknown.
const GeneratorInfo& find_generator(const std::string& name);
// `--algorithm auto`: among the generators that compute the spec's
// operation, the one with the least modeled time C1·beta + C2·len·tau
// (ties: the first registered). UserError when none computes it yet.
const GeneratorInfo& choose_generator(const Spec& spec, const CostModel& cm);

}  // namespace collplan::gen
