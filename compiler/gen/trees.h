// One-to-all broadcast and all-to-one reduce on trees (building blocks of
// decentralized encoding, docs/decentralized.md), for any root and any
// number of processors; the decentralized encode places them on rank subsets
// (gen/decentralized.h).
//
// Two shapes, each as a broadcast and as its reverse, the reduce:
//   tree-*       the (p+1)-nomial tree: ⌈log_{p+1} K⌉ rounds, every message
//                the whole buffer of n blocks. Best when n is small.
//   pipelined-*  a p-ary tree (a chain for p = 1) carrying one block per
//                message, so blocks stream down (or up) the tree:
//                n − 1 + D·λ steps for depth D. Best when n is large.
// Ranks are relabelled relative to the root, x = (rank − root) mod K. With
// λ > 1 the (p+1)-nomial rounds are stretched to λ steps each (sent in the
// first step, received in the last): correct, not the postal optimum (that
// is postal-broadcast). The pipelined trees overlap λ naturally.
#pragma once

#include <cstdint>

#include "ir/plan.h"

namespace collplan::gen {

// Rounds of the (p+1)-nomial tree on K processors: ⌈log_{p+1} K⌉.
uint32_t nomial_rounds(uint64_t K, uint32_t p);
// Depth of the heap-ordered p-ary tree on K nodes (children of x are
// p·x+1 .. p·x+p): the depth of node K−1.
uint32_t pary_depth(uint64_t K, uint32_t p);
// Depth of node x of that tree: x for p = 1 (a chain), O(log_p x) else.
uint32_t heap_depth(uint64_t x, uint32_t p);

// spec.op == Broadcast: root's spec.blocks inputs reach every rank.
// C1 = λ·⌈log_{p+1} K⌉, C2 = n·⌈log_{p+1} K⌉.
ir::Plan tree_broadcast(const Spec& spec);
// spec.op == Reduce: the block-wise sum of every rank's blocks at the root.
// The broadcast's rounds in reverse order, sums instead of copies.
// Same C1 and C2.
ir::Plan tree_reduce(const Spec& spec);
// Pipelined broadcast: C1 = n − 1 + D·λ, C2 = n + (D−1)·min(n, λ) (one
// element in every step something is sent), D = pary_depth(K, p).
ir::Plan pipelined_broadcast(const Spec& spec);
// Pipelined reduce: the pipelined broadcast reversed. Same C1 and C2.
ir::Plan pipelined_reduce(const Spec& spec);

// ─── Per-rank builders ──────────────────────────────────────────────────────
//
// A rank's place relative to the root: x = (rank − root) mod K, and back.
struct TreePosition {
  uint64_t K = 0, root = 0, x = 0;
  TreePosition(const Spec& spec, uint32_t rank)
      : K(spec.K), root(spec.root), x((uint64_t{rank} + spec.K - spec.root) % spec.K) {}
  ir::Rank rank_of(uint64_t y) const { return static_cast<ir::Rank>((y + root) % K); }
};

// A rooted generator as a per-rank builder (gen/rank_local.h): the whole
// plan and a rank compiled alone both come from `rank`.
struct TreeAlgorithm {
  OpKind op;
  const char* name;       // for messages: "the <name> generator computes ..."
  bool whole_dense_limit;  // a whole plan's spec also meets the dense map's limit (validate_spec_basics)
  uint64_t (*steps)(const Spec& spec);  // of a checked spec; at most kMaxGeneratedSteps
  ir::Program (*rank)(const ir::Plan& ctx, uint32_t rank);
};
ir::Plan tree_whole_plan(const Spec& spec, const TreeAlgorithm& alg);
// n − 1 + D·λ, the pipelined trees' step count (D = pary_depth(K, p)).
uint64_t pipelined_steps(const Spec& spec);
// K up to kMaxRankLocalRanks.
ir::RankPlan tree_rank_plan(const Spec& spec, const TreeAlgorithm& alg, uint32_t rank);

// Rank `rank`'s program alone (the registry's build_rank hook, `collplan
// compile --rank`), equal to ranks[rank] of the whole plan: each generator
// is one per-rank builder (gen/rank_local.h) that both call. A rank needs
// only its relative position, its parent and children: O(p·n·log K) for the
// (p+1)-nomial trees, O(p·n + log K) for the pipelined ones, K up to
// kMaxRankLocalRanks. UserError for rank >= K, a bad spec, or a pipelined
// plan of more than 2^24 steps (kMaxGeneratedSteps: a chain, p = 1, of more
// than 2^24 ranks).
ir::RankPlan tree_broadcast_local(const Spec& spec, uint32_t rank);
ir::RankPlan tree_reduce_local(const Spec& spec, uint32_t rank);
ir::RankPlan pipelined_broadcast_local(const Spec& spec, uint32_t rank);
ir::RankPlan pipelined_reduce_local(const Spec& spec, uint32_t rank);

}  // namespace collplan::gen
