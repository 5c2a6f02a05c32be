// Repair and decode by decentralized encoding (docs/decentralized.md): the
// helpers are the sources of a systematic [h + m, h] code whose matrix is F
// (h × m), the m receivers its sinks. The best decentralized-encode
// generator for that spec by the cost model (grid, padded, naive) builds the
// plan on h + m ranks, which is placed on the helpers and receivers (the
// other survivors stay idle). Its C1 and C2 are the chosen generator's for
// N = h + m, K = h (e.g. the grid: ⌈log_b m⌉ + ⌈log_b(⌈h/m⌉+1)⌉ for h >= m).
// Applies when every receiver gets one symbol and is not a helper (repair
// always; decode to replacements).
#include <algorithm>

#include <fmt/format.h>

#include "gen/registry.h"
#include "gen/repair.h"
#include "gen/repair_build.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

Spec inner_spec(const Spec& spec, const RepairMap& m) {
  const uint32_t h = static_cast<uint32_t>(spec.helpers.size()), r = static_cast<uint32_t>(m.out_rank.size());
  Spec s = make_decentralized_spec(h + r, h, spec.p, spec.lambda, spec.field,
                                   matrix_explicit(m.F, spec.field, "repair matrix F"));
  s.blocks = spec.blocks;
  return s;
}

bool admit_decentralized(const GeneratorInfo& g) { return g.computes(OpKind::DecentralizedEncode); }

}  // namespace

std::string repair_decentralized_why_not(const Spec& spec) {
  std::vector<uint32_t> seen;
  const std::vector<uint32_t>& recv = spec.op == OpKind::Repair ? spec.lost : spec.to;
  for (uint32_t r : recv) {
    if (std::find(seen.begin(), seen.end(), r) != seen.end())
      return fmt::format("rank {} receives more than one symbol (the decentralized encode gives each sink one)", r);
    if (std::binary_search(spec.helpers.begin(), spec.helpers.end(), r))
      return fmt::format("rank {} is a helper and a receiver (the decentralized encode's sinks hold no data)", r);
    seen.push_back(r);
  }
  return "";
}

ir::Plan repair_decentralized(const Spec& spec, const passes::CostModel& cm) {
  if (const std::string why = repair_decentralized_why_not(spec); !why.empty())
    user_error("repair-decentralized does not apply: {}", why);
  detail::RepairAssembly a = detail::repair_start(spec, "repair-decentralized");
  const uint32_t h = static_cast<uint32_t>(spec.helpers.size());
  Spec inner = inner_spec(spec, a.map);
  const GeneratorInfo& g = choose_generator(inner, cm, admit_decentralized);
  inner.algorithm = g.name;
  const ir::Plan part = g.build(inner, cm);
  std::vector<ir::Rank> ranks(spec.helpers.begin(), spec.helpers.end());
  ranks.insert(ranks.end(), a.map.out_rank.begin(), a.map.out_rank.end());
  std::vector<std::vector<passes::Held>> in(ranks.size());
  for (uint32_t i = 0; i < h; ++i) in[i] = a.held[spec.helpers[i]];
  const auto out = passes::place(a.plan, part, ranks, 0, in);
  a.plan.num_steps = part.num_steps;
  for (size_t o = 0; o < a.out.size(); ++o) a.out[o] = out[h + o];
  a.phases.push_back(fmt::format("steps 1-{}: {} of the [{}, {}] code F, helpers as sources, receivers as sinks",
                                 part.num_steps, part.spec.algorithm, inner.N, inner.K));
  return detail::repair_finish(a);
}

PostalSplitCost repair_decentralized_estimate(const Spec& spec, const passes::CostModel& cm) {
  if (!repair_decentralized_why_not(spec).empty()) return {0, 0, UINT32_MAX, UINT64_MAX};
  const RepairMap m = repair_map(spec);
  const Spec inner = inner_spec(spec, m);
  return choose_generator(inner, cm, admit_decentralized).estimate(inner, cm);
}

}  // namespace collplan::gen
