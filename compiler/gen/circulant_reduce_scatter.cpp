// Reduce-scatter on the circulant graph: Träff's circulant allgather
// (Algorithm 7, gen/circulant_allgather.cpp) run backwards.
//
// The allgather's round k receives positions [skips[k], skips[k+1]) from
// r + skips[k]; reversed (rounds q−1 down to 0), rank r sends its partial
// sums of positions [skips[k], skips[k+1]) to r + skips[k] and adds what
// r − skips[k] sends into its positions [0, skips[k+1] − skips[k])
// (gen/dissemination.h). Position 0 ends with the sum of every rank's block
// for r.
//
// C1 = q = ⌈log₂K⌉ (optimal); C2 = n·Σ_k (skips[k+1] − skips[k]) = n(K−1)
// (optimal: the transpose is an allgather, which must receive n(K−1)).
#include "gen/circulant.h"
#include "gen/dissemination_build.h"
#include "support/error.h"

namespace collplan::gen {

ir::Plan circulant_reduce_scatter(const Spec& spec) {
  using namespace ir;
  validate_dissemination_spec(spec, {OpKind::ReduceScatter}, "circulant-reduce-scatter", true);
  const uint32_t K = spec.K, n = spec.blocks;
  const auto rounds = circulant_rounds(K);
  Plan plan = make_plan(spec, static_cast<uint32_t>(rounds.size()));
  for (uint32_t r = 0; r < K; ++r) {
    Program& prog = plan.ranks[r];
    prog.num_slots = K * n;
    for (SlotId s = 0; s < K * n; ++s) prog.inputs.push_back(s);
    PositionSlots partial(K);
    for (uint32_t j = 0; j < K; ++j)
      for (uint32_t b = 0; b < n; ++b) partial[j].push_back(((r + j) % K) * n + b);
    reduce_scatter_phase(plan, prog, rounds, 1, partial);
    prog.outputs = partial[0];
  }
  return plan;
}

PostalSplitCost circulant_reduce_scatter_cost(const Spec& spec) {
  return {0, 0, Circulant(spec.K).q(), uint64_t{spec.blocks} * (spec.K - 1)};
}

}  // namespace collplan::gen
