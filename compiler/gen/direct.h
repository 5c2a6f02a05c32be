// Direct schedules: every rank exchanges with every other rank itself, p of
// them per step, as MPI's linear (pairwise) algorithms do.
//
// In step t = 1..T, T = ⌈(K−1)/p⌉, rank r sends through port q to rank
// r + d and receives through port q from rank r − d (mod K), for
// d = (t−1)·p + q + 1 <= K − 1; the message arrives λ − 1 steps later.
// Every rank meets every other once, and every message is one rank's own
// data: one contiguous run of a caller's buffer, never a relayed piece.
//
// C1 = T + λ − 1 and C2 = T·n (allgatherv: T·max counts). C2 is the
// dissemination schedules' n⌈(K−1)/p⌉ (the receive-volume bound ⌈n(K−1)/p⌉
// when p divides K − 1 or n = 1), in more steps than their λ·⌈log_{p+1} K⌉
// for small λ but fewer for large λ (λ = 3, K = 4: 5 against 6): where a
// message's latency is long against the time to post one, the machine is
// best described by a large λ, and then every message is in flight at once.
#pragma once

#include <cstdint>
#include <vector>

#include "gen/postal_encode.h"
#include "ir/plan.h"

namespace collplan::gen {

// Allgather and allgatherv (spec.counts): rank r's n (counts[r]) elements
// go to every rank; outputs in rank order. A rank with no elements sends
// nothing.
ir::Plan direct_allgather(const Spec& spec);
ir::RankPlan direct_allgather_local(const Spec& spec, uint32_t rank);
PostalSplitCost direct_allgather_cost(const Spec& spec);

// Reduce-scatter: rank r sends its blocks for rank r + d straight to it,
// and adds what each step brings to its own blocks as it arrives.
ir::Plan direct_reduce_scatter(const Spec& spec);
ir::RankPlan direct_reduce_scatter_local(const Spec& spec, uint32_t rank);
PostalSplitCost direct_reduce_scatter_cost(const Spec& spec);

// ─── Shared by the two ──────────────────────────────────────────────────────
//
// T = ⌈(K−1)/p⌉, the steps that send.
uint32_t direct_send_steps(const Spec& spec);
// A direct generator as a per-rank builder (gen/rank_local.h): the spec
// checked (one of `ops`; K up to kMaxPlanRanks for one rank: it holds K·n
// elements), then the whole plan or one rank, in T + λ − 1 steps.
struct DirectAlgorithm {
  const char* name;
  std::vector<OpKind> ops;
  ir::Program (*rank)(const ir::Plan& ctx, uint32_t rank);
};
ir::Plan direct_whole_plan(const Spec& spec, const DirectAlgorithm& alg);
ir::RankPlan direct_rank_plan(const Spec& spec, const DirectAlgorithm& alg, uint32_t rank);
// C1 = T + λ − 1 and C2 = T·largest message.
PostalSplitCost direct_cost(const Spec& spec, uint64_t largest_message);

}  // namespace collplan::gen
