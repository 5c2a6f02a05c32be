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

namespace {

// A rank holds K·n inputs: the whole-plan limit on K stays.
const DisseminationAlgorithm kCirculantReduceScatter{
    "circulant-reduce-scatter", {OpKind::ReduceScatter}, true, 1, kMaxPlanRanks, reduce_scatter_rank};

}  // namespace

ir::Plan circulant_reduce_scatter(const Spec& spec) { return dissemination_whole_plan(spec, kCirculantReduceScatter); }

ir::RankPlan circulant_reduce_scatter_local(const Spec& spec, uint32_t rank) {
  return dissemination_rank_plan(spec, kCirculantReduceScatter, rank);
}

PostalSplitCost circulant_reduce_scatter_cost(const Spec& spec) {
  return {0, 0, Circulant(spec.K).q(), uint64_t{spec.blocks} * (spec.K - 1)};
}

}  // namespace collplan::gen
