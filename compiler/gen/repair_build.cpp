// Assembly helpers of the repair and decode generators (gen/repair_build.h).
#include "gen/repair_build.h"

#include <algorithm>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::gen::detail {

RepairAssembly repair_start(const Spec& spec, const char* generator) {
  if (spec.op != OpKind::Repair && spec.op != OpKind::Decode)
    user_error("{} computes 'repair' and 'decode', not '{}'", generator, op_name(spec.op));
  RepairAssembly a;
  a.map = repair_map(spec);  // validates the spec and the helpers
  a.n = spec.blocks;
  a.plan = ir::make_plan(spec, 0);
  a.held.assign(spec.N, {});
  a.helper_index.assign(spec.N, -1);
  for (size_t i = 0; i < spec.helpers.size(); ++i) a.helper_index[spec.helpers[i]] = static_cast<int32_t>(i);
  for (uint32_t r = 0; r < spec.N; ++r) {
    if (std::binary_search(spec.lost.begin(), spec.lost.end(), r)) continue;
    ir::Program& prog = a.plan.ranks[r];
    for (uint32_t b = 0; b < a.n; ++b) {
      const ir::SlotId s = prog.new_slot();
      prog.inputs.push_back(s);
      a.held[r].push_back(passes::Held{s, 1});
    }
  }
  a.out.assign(a.map.out_rank.size(), {});
  return a;
}

std::vector<uint32_t> receivers(const RepairMap& m) {
  std::vector<uint32_t> r;
  for (uint32_t x : m.out_rank)
    if (r.empty() || r.back() != x) r.push_back(x);
  return r;
}

ir::Plan repair_finish(RepairAssembly& a) {
  if (a.plan.num_steps == 0) a.plan.num_steps = 1;  // an output may need a local op
  for (size_t o = 0; o < a.out.size(); ++o) {
    COLLPLAN_ASSERT(a.out[o].size() == a.n, "repair: output symbol without its values");
    const uint32_t r = a.map.out_rank[o];
    for (const passes::Held& v : a.out[o])
      a.plan.ranks[r].outputs.push_back(passes::materialize_held(a.plan, r, v, a.plan.num_steps));
  }
  std::string& alg = a.plan.spec.algorithm;
  for (size_t i = 0; i < a.phases.size(); ++i) alg += fmt::format("; phase {} ({})", i + 1, a.phases[i]);
  return std::move(a.plan);
}

}  // namespace collplan::gen::detail
