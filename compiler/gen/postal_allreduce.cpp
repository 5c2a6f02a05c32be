// Allreduce in the p-port postal model: postal reduce into rank 0
// (gen/postal_reduce.cpp) in steps 1..m, then postal broadcast from it
// (gen/postal_broadcast.cpp) in steps m+1..2m, m = min{t : G(t) >= K}.
// Rank 0's broadcast sends its reduce result; every other rank's outputs
// are the slots the broadcast delivers.
//
// C1 = 2m, C2 = 2n·(m−λ+1). For small λ the dissemination allreduce
// (λ·⌈log_{p+1} K⌉ steps, C2 = n·⌈log_{p+1} K⌉) is better on both counts;
// for large λ 2m can be the fewer steps (λ = 6, K = 33: 34 against 36).
// It is meant for machines where a message's latency is long against the
// time to post one: a large λ models them, and with p = 1, λ >= K − 1 both
// trees are stars: K − 1 messages into rank 0, summed as they arrive, and
// K − 1 out, with no rank waiting on a chain of others (the shape of Open
// MPI's linear allreduce).
#include "gen/postal.h"

#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

ir::Program postal_allreduce_rank(const ir::Plan& ctx, const std::vector<uint64_t>& G, uint32_t r) {
  // The reduce leaves the sums as rank 0's outputs (no outputs elsewhere);
  // the broadcast, from step m + 1, replaces them with what every rank gets.
  ir::Program prog = postal_reduce_program(ctx, G, r, 0);
  std::vector<ir::SlotId> sums(prog.outputs.begin(), prog.outputs.end());
  prog.outputs = postal_broadcast_part(ctx, G, prog, 0, std::move(sums), static_cast<uint32_t>(G.size() - 1));
  return prog;
}

constexpr PostalTreeAlgorithm kPostalAllreduce{OpKind::Allreduce, "postal allreduce", 2, postal_allreduce_rank};

}  // namespace

ir::Plan postal_allreduce(const Spec& spec) { return postal_tree_whole_plan(spec, kPostalAllreduce); }

ir::RankPlan postal_allreduce_local(const Spec& spec, uint32_t rank) {
  return postal_tree_rank_plan(spec, kPostalAllreduce, rank);
}

}  // namespace collplan::gen
