// Plans from circulant-graph schedules (gen/circulant.h; Träff;
// docs/circulant.md, "Generators"):
// one generator per file, each opening with its algorithm and C1/C2.
//
//   circulant-broadcast   Alg 6: n blocks from any root in exactly n−1+q
//                         rounds (q = ⌈log₂K⌉), one block per message.
//   circulant-allgather   Alg 7: q rounds, round k moves skips[k+1]−skips[k]
//                         ranks' blocks.
//   circulant-allreduce   Alg 8: q rounds, one partial sum per message.
//   circulant-reduce      the broadcast reversed in time: n−1+q rounds.
//   circulant-allgatherv  Alg 9: every rank the root of its own n-block
//                         broadcast, all K schedules shifted by Alg 6's x
//                         dummy rounds, blocks of a round packed in one
//                         message.
//
// The model is Träff's: one port, synchronous rounds. Specs with p > 1 or
// λ > 1 are rejected (UserError); postal-broadcast covers them. The one
// exception is allgatherv, whose step messages are striped over p ports.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "gen/circulant.h"
#include "gen/postal_encode.h"
#include "gen/rank_local.h"
#include "ir/plan.h"

namespace collplan::gen {

// UserError unless spec.op == op, p == 1 (any p for allgatherv) and λ == 1,
// and K <= max_ranks
// (kMaxPlanRanks for a whole plan, up to kMaxRankLocalRanks for one rank).
void validate_circulant_spec(const Spec& spec, OpKind op, const char* generator, uint32_t max_ranks = kMaxPlanRanks);

// ─── Rank-local compile ─────────────────────────────────────────────────────
//
// Every circulant generator states its algorithm once, as a per-rank
// builder (gen/rank_local.h): rank r's program from r's own schedule
// (Circulant::schedule, O(q³)) and the spec, never from another rank's
// program. The whole plan calls it for r = 0..K−1; `<generator>_local(spec,
// r)` calls it for r alone (the registry's build_rank hook, `collplan
// compile --rank`), so its program equals ranks[r] of the whole plan by
// construction. Costs of one rank:
//   broadcast, reduce   O(q³ + n + q) — K up to kMaxRankLocalRanks (2^31)
//   allreduce           O(q·n)        — K up to kMaxRankLocalRanks
//   allgather           O(K·n)        — its K·n outputs: K <= kMaxPlanRanks
//   allgatherv          O(K log K + (n + q)·K + Σcounts): every rank is the
//                       root of a broadcast, so all K schedules are needed
//                       (the whole-p table, gen/circulant_check.h); K <=
//                       kMaxPlanRanks (Σcounts outputs per rank)
// A `_local` call is a UserError for rank >= K, or K over its limit.

// A generator whose ranks need only their own schedule (all but
// allgatherv): its operation and name, its step count (n − 1 + q when the n
// blocks are pipelined, else q) and its per-rank builder.
struct CirculantAlgorithm {
  OpKind op;
  const char* name;
  bool pipelined;
  ir::Program (*rank)(const ir::Plan& ctx, const Circulant& c, uint32_t rank);
};
// The spec checked (validate_circulant_spec) and the whole plan built.
ir::Plan circulant_whole_plan(const Spec& spec, const CirculantAlgorithm& alg);
// The spec checked against max_ranks and rank `rank` built alone.
ir::RankPlan circulant_rank_plan(const Spec& spec, const CirculantAlgorithm& alg, uint32_t rank, uint32_t max_ranks);

// Broadcast: rank `rank`'s program alone, from its own schedule (O(q³)
// time, independent of the other ranks) — what a device or an MPI process
// would build for itself. `ctx` is any plan with ctx.spec == spec (its ranks
// are not used).
ir::Program circulant_broadcast_rank(const ir::Plan& ctx, const Circulant& c, uint32_t rank);
ir::Plan circulant_broadcast(const Spec& spec);
ir::RankPlan circulant_broadcast_local(const Spec& spec, uint32_t rank);
ir::Plan circulant_allgather(const Spec& spec);
ir::RankPlan circulant_allgather_local(const Spec& spec, uint32_t rank);
ir::Plan circulant_allreduce(const Spec& spec);
ir::RankPlan circulant_allreduce_local(const Spec& spec, uint32_t rank);
ir::Plan circulant_allgatherv(const Spec& spec);
ir::RankPlan circulant_allgatherv_local(const Spec& spec, uint32_t rank);
// Reduce: the broadcast run backwards, partial sums towards the root.
ir::Plan circulant_reduce(const Spec& spec);
ir::RankPlan circulant_reduce_local(const Spec& spec, uint32_t rank);

// Why the circulant generators cannot compute `spec` ("" when they can):
// they need one port and synchronous rounds. The registry's `why_not`, so
// `--algorithm auto` skips them and `--explain` says why.
std::string circulant_why_not(const Spec& spec);

// Costs without building (C1, C2 of the generator's plan), for specs
// circulant_why_not accepts.
inline PostalSplitCost circulant_cost(const Spec&, uint32_t C1, uint64_t C2) { return {0, 0, C1, C2}; }
PostalSplitCost circulant_broadcast_cost(const Spec& spec);
PostalSplitCost circulant_allgather_cost(const Spec& spec);
PostalSplitCost circulant_allreduce_cost(const Spec& spec);
PostalSplitCost circulant_reduce_cost(const Spec& spec);
// C2 of allgatherv is bounded by (n−1+q)·⌈Σ_j ⌈counts[j]/n⌉ / p⌉ (every
// message packs at most one block per root); the estimate is the exact C2
// when K²·(n−1+q) <= 2^24 (it walks every rank's schedule), else that bound.
PostalSplitCost circulant_allgatherv_cost(const Spec& spec);
// `--blocks auto` for allgatherv: the n of least modeled time
// (n−1+q)·β + C2(n)·len·τ (len = one element's length) among every n <= 64
// and a geometric ladder up to min(max counts, 4096): the candidates ranked
// by the bound on C2, the best 8 of them by C2 as estimated above.
uint32_t circulant_allgatherv_auto_blocks(const Spec& spec, uint64_t len, double beta, double tau);

// `--blocks auto` for broadcast: a message of m elements in n blocks of
// ⌈m/n⌉ elements takes T(n) = (n−1+q)·(β + ⌈m/n⌉·τ) (n−1+q rounds, one
// block each). Relaxing ⌈m/n⌉ to m/n, T is minimal at
// n* = √((q−1)·m·τ/β), T(n*) = (q−1)β + 2√((q−1)βmτ) + mτ (the paper's
// Thm 2); the chosen n is the exact integer argmin of T over
// n ∈ [1, min(m, kCirculantMaxAutoBlocks)] (smallest on ties).
inline constexpr uint32_t kCirculantMaxAutoBlocks = 4096;
uint32_t circulant_auto_blocks(uint64_t K, uint64_t m, double beta, double tau);
// The line the plan's algorithm name gets when n was chosen so.
std::string circulant_auto_blocks_note(uint64_t K, uint64_t m, double beta, double tau, uint32_t n);

}  // namespace collplan::gen
