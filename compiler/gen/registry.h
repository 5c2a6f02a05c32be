// The generator registry: every generator with a one-line description, so
// `collplan list`, the tests and the docs enumerate the same set.
#pragma once

#include <algorithm>
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
  std::function<ir::Plan(const Spec&, const passes::CostModel&)> build;
  // Its cost (C1, C2 before optimisation passes) without building the plan,
  // for `--algorithm auto`.
  std::function<PostalSplitCost(const Spec&, const passes::CostModel&)> estimate;
  // "" when the generator can compute this spec, else why not (naming the
  // condition, e.g. "dft needs K | q-1: K = 12, q-1 = 256"). Empty function:
  // it computes every spec of its operations.
  std::function<std::string(const Spec&, const passes::CostModel&)> why_not = {};
  // Rank `rank`'s program alone, built without the other ranks' and equal to
  // ranks[rank] of build()'s plan (`collplan compile --rank`; the circulant
  // generators, gen/circulant_plans.h). UserError for rank >= K or a K over
  // the generator's rank-local limit. Empty: the generator cannot.
  std::function<ir::RankPlan(const Spec&, uint32_t rank)> build_rank = {};

  bool computes(OpKind op) const { return std::find(ops.begin(), ops.end(), op) != ops.end(); }
};

// One line of `collplan compile --explain`.
struct Candidate {
  const GeneratorInfo* generator = nullptr;
  std::string why_not;  // "" = applicable
  uint32_t C1 = 0;
  uint64_t C2 = 0;
  double time = 0;      // modeled C1·beta + C2·len·tau
};

const std::vector<GeneratorInfo>& generators();
// The names of the generators with a build_rank hook, comma-separated (for
// messages about `compile --rank`).
std::string rank_local_generator_names();
// UserError listing the registered names when `name` is unknown.
const GeneratorInfo& find_generator(const std::string& name);
// `--algorithm auto`: among the generators that compute the spec's
// operation, the one with the least modeled time C1·beta + C2·len·tau
// (ties: the first registered). UserError when none computes it yet.
// `admit` (optional) narrows the field, e.g. to generators with build_rank.
const GeneratorInfo& choose_generator(const Spec& spec, const passes::CostModel& cm,
                                      const std::function<bool(const GeneratorInfo&)>& admit = {});
// Every generator that computes the spec's operation, in registry order,
// with its applicability and (when applicable) its estimated cost.
std::vector<Candidate> candidates(const Spec& spec, const passes::CostModel& cm,
                                  const std::function<bool(const GeneratorInfo&)>& admit = {});
// UserError naming the condition when `g` cannot compute `spec`.
void require_applicable(const GeneratorInfo& g, const Spec& spec, const passes::CostModel& cm);

}  // namespace collplan::gen
