// Plans from circulant-graph schedules (gen/circulant.h; Träff, SPEC §4.5):
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
// λ > 1 are rejected (UserError); postal-broadcast covers them.
#pragma once

#include <cstdint>
#include <string>

#include "gen/circulant.h"
#include "gen/postal_encode.h"
#include "ir/plan.h"

namespace collplan::gen {

// UserError unless spec.op == op, p == 1 and λ == 1.
void validate_circulant_spec(const Spec& spec, OpKind op, const char* generator);

// Broadcast: rank `rank`'s program alone, from its own schedule (O(q³)
// time, independent of the other ranks) — what a device or an MPI process
// would build for itself. `ctx` is any plan with ctx.spec == spec (its ranks
// are not used).
ir::Program circulant_broadcast_rank(const ir::Plan& ctx, const Circulant& c, uint32_t rank);
ir::Plan circulant_broadcast(const Spec& spec);
ir::Plan circulant_allgather(const Spec& spec);
ir::Plan circulant_allreduce(const Spec& spec);
ir::Plan circulant_allgatherv(const Spec& spec);
// Reduce: the broadcast run backwards, partial sums towards the root.
ir::Plan circulant_reduce(const Spec& spec);

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
// C2 of allgatherv is bounded by (n−1+q)·Σ_j ⌈counts[j]/n⌉ (every message
// packs at most one block per root); the estimate uses that bound.
PostalSplitCost circulant_allgatherv_cost(const Spec& spec);

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
