// Recursive doubling for K a power of p + 1: the allgather
// (gen/recursive_doubling_allgather.cpp), the reduce-scatter by recursive
// halving (gen/recursive_halving.cpp) and the allreduce by recursive
// halving then doubling (gen/recursive_halving_doubling.cpp). Every message
// is a run of consecutive ranks' (or chunks') elements in rank order, so a
// rank whose outputs are one buffer sends and receives every message as one
// contiguous piece.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gen/postal_encode.h"
#include "gen/dissemination_build.h"
#include "ir/plan.h"

namespace collplan::gen {

ir::Plan recursive_doubling_allgather(const Spec& spec);
ir::RankPlan recursive_doubling_allgather_local(const Spec& spec, uint32_t rank);
PostalSplitCost recursive_doubling_allgather_cost(const Spec& spec);
// "" when K is a power of p + 1 (both generators' condition), else why not.
std::string recursive_doubling_why_not(const Spec& spec);

ir::Plan recursive_halving_doubling(const Spec& spec);
ir::RankPlan recursive_halving_doubling_local(const Spec& spec, uint32_t rank);
PostalSplitCost recursive_halving_doubling_cost(const Spec& spec);

// Reduce-scatter by recursive halving (the allreduce's first phase alone).
ir::Plan recursive_halving(const Spec& spec);
ir::RankPlan recursive_halving_local(const Spec& spec, uint32_t rank);
PostalSplitCost recursive_halving_cost(const Spec& spec);

// m with (p+1)^m = K, or −1 when K is no power of p + 1.
int recursive_rounds(uint64_t K, uint64_t p);

// Rank r's partners in a round over runs of D ranks: the ranks at r's
// place in the p other runs of D of its group of (p+1)·D ranks (they differ
// from r in digit log_{p+1} D only). A rank with digit c sends to digit c′
// on port (c′ − c − 1) mod (p+1), distinct on both sides; `run` is the
// partner's run's first rank, `to_port` the port r sends it on, `from_port`
// the port it sends r on.
struct RecursivePartner {
  ir::Rank rank;
  uint64_t run;
  ir::Port to_port, from_port;
};
std::vector<RecursivePartner> recursive_partners(uint32_t r, uint64_t D, uint32_t p);

// A generator on these rounds as a per-rank builder (gen/rank_local.h),
// as DisseminationAlgorithm is for the dissemination ones.
struct RecursiveAlgorithm {
  const char* name;
  std::vector<OpKind> ops;  // the operations it computes
  const char* elsewhere;    // the generator that takes any K, for the refusal
  uint32_t phases;          // passes over the rounds: C1 = phases·λ·m
  ir::Program (*rank)(const ir::Plan& ctx, uint32_t r);
};
// The spec checked (K a power of p + 1) and the whole plan built.
ir::Plan recursive_whole_plan(const Spec& spec, const RecursiveAlgorithm& alg);
// The same, rank `rank` alone. Every rank walks all K runs, so the
// whole-plan limit on K stays.
ir::RankPlan recursive_rank_plan(const Spec& spec, const RecursiveAlgorithm& alg, uint32_t rank);
// Appends the allgather rounds to rank prog.rank's program from step
// first_step (round k sent in first_step + kλ, received λ − 1 steps later).
// On entry runs[prog.rank] holds the rank's own elements and every runs[a]
// its count; on exit every run is set (received into new consecutive slots;
// a run of no elements is neither sent nor received). Returns the last
// step used.
uint32_t recursive_doubling_phase(const ir::Plan& ctx, ir::Program& prog, ir::StepNo first_step,
                                  std::vector<SlotRun>& runs);
// Appends the recursive-halving rounds from step 1 (round j sent in step
// 1 + jλ, received λ − 1 steps later): sum[a] holds prog.rank's partial
// sums of chunk a (any counts, 0 allowed), updated in place; after the last
// round sum[prog.rank] is chunk prog.rank summed over all ranks.
void recursive_halving_phase(const ir::Plan& ctx, ir::Program& prog, const std::vector<SlotRun>& sum);

}  // namespace collplan::gen
