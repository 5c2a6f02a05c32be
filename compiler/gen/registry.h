// The generator registry: every generator with a one-line description, so
// `collplan list`, the tests and the docs enumerate the same set.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/plan.h"

namespace collplan::gen {

struct GeneratorInfo {
  std::string name;
  std::string description;
  std::vector<OpKind> ops;                       // operations it computes
  std::function<ir::Plan(const Spec&)> build;    // pure function of the spec
};

const std::vector<GeneratorInfo>& generators();
// UserError listing the registered names when `name` is unknown.
const GeneratorInfo& find_generator(const std::string& name);
// The generator `--algorithm auto` picks for a spec; UserError when no
// registered generator computes the spec's operation yet.
const GeneratorInfo& choose_generator(const Spec& spec);

}  // namespace collplan::gen
