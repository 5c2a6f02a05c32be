#include "gen/registry.h"

#include "gen/prepare_shoot.h"
#include "support/error.h"

namespace collplan::gen {

const std::vector<GeneratorInfo>& generators() {
  static const std::vector<GeneratorInfo> g = {
      {"prepare-shoot",
       "universal all-to-all encode of any KxK matrix; C1 = ceil(log_{p+1} K), C2 = (m-1)/p + (n-1)/p (encode paper §IV)",
       {OpKind::Encode},
       prepare_shoot},
  };
  return g;
}

const GeneratorInfo& find_generator(const std::string& name) {
  std::string names;
  for (const auto& g : generators()) {
    if (g.name == name) return g;
    names += names.empty() ? "" : ", ";
    names += g.name;
  }
  user_error("unknown algorithm '{}' (valid: auto, {})", name, names);
}

const GeneratorInfo& choose_generator(const Spec& spec) {
  for (const auto& g : generators())
    for (OpKind op : g.ops)
      if (op == spec.op) return g;
  user_error("no generator computes '{}' yet (available operations: encode)", op_name(spec.op));
}

}  // namespace collplan::gen
