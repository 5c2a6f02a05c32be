// Dissemination schedules with p ports: allgather, reduce-scatter, and the
// two allreduces built from them (one generator per file):
//
//   dissemination-allgather       allgather / allgatherv, any p, λ:
//                                 C1 = λ·⌈log_{p+1} K⌉, C2 = n·⌈(K−1)/p⌉
//   dissemination-reduce-scatter  the allgather reversed: same C1, C2
//   circulant-reduce-scatter      Träff's circulant allgather reversed
//                                 (p = 1, λ = 1): C1 = ⌈log₂K⌉, C2 = n(K−1)
//   dissemination-allreduce       latency-optimal: C1 = λ·⌈log_{p+1} K⌉,
//                                 C2 = n·⌈log_{p+1} K⌉
//   reduce-scatter-allgather      bandwidth-optimal allreduce: the n blocks
//                                 cut into K chunks, reduce-scattered, then
//                                 allgathered: C1 = 2λ⌈log_{p+1} K⌉,
//                                 C2 ≈ 2⌈n/K⌉⌈(K−1)/p⌉
//
// ─── Positions ───────────────────────────────────────────────────────────────
//
// Rank r sees the ranks relative to itself: position j is rank (r + j) mod K.
// An allgather round moves, on each port, a run of positions: the piece
// (offset s, len) means that rank r receives positions [s, s+len) from rank
// r + s, which holds them as its own positions [0, len), and symmetrically r
// sends its positions [0, len) to r − s. A round is valid when every piece
// has len <= D, the positions every rank holds before it (positions [0, D)),
// and its pieces tile [D, D + Σ len) in port order; afterwards every rank
// holds [0, D + Σ len). Rounds are listed in allgather order; a
// reduce-scatter runs the same list backwards, each piece reversed (r sends
// its partial sums for positions [s, s+len) to r + s and adds what r − s
// sends it into its positions [0, len)). A linear plan and its transpose
// have the same message sizes, which is why the reversal keeps C1 and C2.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gen/postal_encode.h"
#include "ir/plan.h"

namespace collplan::gen {

struct DisseminationPiece {
  uint32_t offset = 0;  // s: the peer is r + s (receive) and r − s (send)
  uint32_t len = 0;     // positions moved
};
// One round: its pieces, piece i on port i (ports without a piece idle).
using DisseminationRound = std::vector<DisseminationPiece>;

// The (p+1)-ary dissemination (Bruck et al.'s k-port allgather without the
// final rotation): while (p+1)·D <= K every port moves D positions; the last
// round splits the K − D remaining positions over the p ports as evenly as
// possible (pieces of ⌈(K−D)/p⌉ or ⌊(K−D)/p⌋, each <= D). ⌈log_{p+1} K⌉
// rounds; Σ_rounds max len = ⌈(K−1)/p⌉, the least a rank can receive per
// port.
std::vector<DisseminationRound> dissemination_rounds(uint32_t K, uint32_t p);
// Träff's circulant allgather as rounds of one piece: round k moves
// positions [skips[k], skips[k+1]) (gen/circulant.h); ⌈log₂K⌉ rounds.
std::vector<DisseminationRound> circulant_rounds(uint32_t K);

// Allreduce coverage per round for dissemination-allreduce: L[0] = 1,
// L[q] = K, L[k] = ⌈L[k+1]/(p+1)⌉ (so (p+1)L[k] − p <= L[k+1] <= (p+1)L[k]).
std::vector<uint32_t> dissemination_allreduce_coverage(uint32_t K, uint32_t p);

// The allreduce chunking of reduce-scatter-allgather: chunk c of the n
// blocks is blocks [chunk_offset(c), chunk_offset(c) + chunk_size(c)), the
// first n mod K chunks one block larger.
inline uint32_t chunk_size(uint32_t n, uint32_t K, uint32_t c) { return n / K + (c < n % K ? 1 : 0); }
inline uint32_t chunk_offset(uint32_t n, uint32_t K, uint32_t c) { return c * (n / K) + std::min(c, n % K); }

// The generators (registry entries in gen/registry.cpp). Each checks its
// spec (UserError naming the bad value).
ir::Plan dissemination_allgather(const Spec& spec);      // allgather, allgatherv
ir::Plan dissemination_reduce_scatter(const Spec& spec);
ir::Plan circulant_reduce_scatter(const Spec& spec);
ir::Plan dissemination_allreduce(const Spec& spec);
ir::Plan reduce_scatter_allgather(const Spec& spec);

// Rank `rank`'s program alone (the registry's build_rank hook, `collplan
// compile --rank`), equal to ranks[rank] of the whole plan: every generator
// here is a per-rank builder (gen/dissemination_build.h). Cost of one rank
// and the most ranks K of a rank-local compile:
//   allgather, allgatherv     O(K + Σ elements gathered)  K <= kMaxPlanRanks
//                             (all K ranks' elements are its outputs)
//   the two reduce-scatters   O(K·n), its inputs           K <= kMaxPlanRanks
//   dissemination-allreduce   O(p·n·log K)                 K <= kMaxRankLocalRanks
//   reduce-scatter-allgather  O(K + n + p·log K)           K <= kMaxPlanRanks
//                             (positions are walked, even empty chunks)
// UserError for rank >= K, K over the limit or a spec the generator refuses.
ir::RankPlan dissemination_allgather_local(const Spec& spec, uint32_t rank);
ir::RankPlan dissemination_reduce_scatter_local(const Spec& spec, uint32_t rank);
ir::RankPlan circulant_reduce_scatter_local(const Spec& spec, uint32_t rank);
ir::RankPlan dissemination_allreduce_local(const Spec& spec, uint32_t rank);
ir::RankPlan reduce_scatter_allgather_local(const Spec& spec, uint32_t rank);

// Their costs without building the plans (exact: C1 and C2 of the plan).
PostalSplitCost dissemination_allgather_cost(const Spec& spec);
PostalSplitCost dissemination_reduce_scatter_cost(const Spec& spec);
PostalSplitCost circulant_reduce_scatter_cost(const Spec& spec);
PostalSplitCost dissemination_allreduce_cost(const Spec& spec);
PostalSplitCost reduce_scatter_allgather_cost(const Spec& spec);

// `--blocks auto` for allreduce: K (each rank's chunk one block) when
// reduce-scatter-allgather with n = K is modeled faster than the
// latency-optimal allreduce with n = 1 for a message of m elements, else 1.
uint32_t allreduce_auto_blocks(const Spec& spec, uint64_t m, double beta, double tau);

}  // namespace collplan::gen
