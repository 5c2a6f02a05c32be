// Reduce-scatter with p ports: the dissemination allgather
// (gen/dissemination_allgather.cpp) run backwards, each message reversed.
//
// Rank r keeps a partial sum per position j (rank (r + j) mod K's block),
// starting from its own input blocks for that rank. The allgather's rounds
// are taken last to first; for a piece (s, len) rank r sends its partial
// sums of positions [s, s+len) to r + s, and adds what r − s sends (that
// rank's positions [s, s+len), r's [0, len)) into its positions [0, len).
// Position 0 ends with the sum over all ranks of their blocks for r: every
// input reaches r exactly once, along the reversed allgather tree.
//
// C1 = λ·⌈log_{p+1} K⌉ and C2 = n·⌈(K−1)/p⌉, the allgather's. The
// transpose of a linear reduce-scatter plan (every message reversed, steps
// in reverse order) is an allgather plan with the same message sizes, so
// the allgather's bound C2 >= ⌈n(K−1)/p⌉ holds for reduce-scatter too.
#include "gen/dissemination_build.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// A rank holds K·n inputs (K·n <= 2^24, validate_spec_ranges): the
// whole-plan limit on K stays.
const DisseminationAlgorithm kReduceScatter{
    "dissemination-reduce-scatter", {OpKind::ReduceScatter}, false, 1, kMaxPlanRanks, reduce_scatter_rank};

}  // namespace

ir::Plan dissemination_reduce_scatter(const Spec& spec) { return dissemination_whole_plan(spec, kReduceScatter); }

ir::RankPlan dissemination_reduce_scatter_local(const Spec& spec, uint32_t rank) {
  return dissemination_rank_plan(spec, kReduceScatter, rank);
}

PostalSplitCost dissemination_reduce_scatter_cost(const Spec& spec) {
  Spec as_allgather = spec;
  as_allgather.op = OpKind::Allgather;
  return dissemination_allgather_cost(as_allgather);
}

}  // namespace collplan::gen
