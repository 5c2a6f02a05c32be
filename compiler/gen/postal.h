// Postal-model generators: parallel prefix (Algorithms A and B)
// and broadcast in the p-port postal model with latency λ >= 1, after
// 林彥君, 葉青松, "在郵遞模式下通訊數最佳的平行前置計算" ("Communication-step-
// optimal parallel prefix computation in the postal model", in Chinese;
// NTUST, NSC 87-2213-E-011-005), §2–§4; its errata (the §3.2 example's
// W_{1,3} is {0}, not {10}; two misprints of Lemma 2 case 3) are in
// gen/postal_prefix.cpp and docs/paper-errata.md.
//
// All three take exactly min{t : G(t) >= R} steps, the lower bound of the
// paper's Thm 1 (passes::postal_steps_bound), with R the number of
// processors.
//
// The paper writes k for the ports and p for the processors of Algorithm B;
// here p is the ports (the spec's p, as everywhere in collplan) and K the
// processors.
//
// Index conventions (checked by the exact verifier over exhaustive grids):
//   G(j) = 1 for 0 <= j < λ, G(j) = G(j−1) + p·G(j−λ) for j >= λ.
//   U_{x,j}: in step j rank x sends through port t to
//            x + G(j+λ−2) + t·G(j−1), t = 0..p−1, while < R.
//   W_{y,j}: in step j >= λ rank y receives through port t the message that
//            y − G(j−1) − t·G(j−λ) (>= 0) sent in step j−λ+1.
// Both are returned indexed by t, which is the port. Valid t form a prefix
// 0..h−1 in both sets, and W lists senders in DEcreasing rank order (the
// smallest sender, the paper's e_1, is the last entry).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/plan.h"

namespace collplan::gen {

// G(0), G(1), …, G(m) with m = min{t : G(t) >= upto_n} (just {1} when
// upto_n <= 1). m = size() − 1 is the step count of every generator here.
std::vector<uint64_t> postal_G(uint32_t p, uint32_t lambda, uint64_t upto_n);

// U_{x,j} over ranks 0..n−1 (j >= 1); entry t is the receiver on port t.
// G must reach index j+λ−2 (postal_G up to n covers every j <= m−λ+1; for
// larger j the set is empty and G may be short, which is allowed).
std::vector<uint32_t> postal_U(const std::vector<uint64_t>& G, uint32_t p, uint32_t lambda, uint64_t n, uint64_t x,
                               uint32_t j);

// W_{y,j} (λ <= j <= m); entry t is the sender heard on port t.
std::vector<uint32_t> postal_W(const std::vector<uint64_t>& G, uint32_t p, uint32_t lambda, uint64_t y, uint32_t j);

// Parallel prefix, spec.op == Prefix, K = spec.K processors.
//   counts empty: Algorithm A, one item per rank.
//   counts given: Algorithm B, counts[k] items at rank k (any distribution,
//                 ranks with 0 items allowed; the total must be >= 1). The
//                 paper's ⌈n/P⌉ / ⌊n/P⌋ split is postal_block_counts().
// Inclusive or exclusive (spec.exclusive). Every combination has unit
// coefficients and operands in increasing input order, so the plan is valid
// for any associative, non-commutative operator; the exclusive scan is built
// without subtraction. Exactly min{t : G(t) >= K} steps.
ir::Plan postal_prefix(const Spec& spec);
// Rank `rank`'s program of it alone (`collplan compile --rank`), equal to
// ranks[rank] of the whole plan (both call one per-rank builder; which
// neighbours sent a non-empty value follows from Lemma 3 and the counts'
// prefix sums): O(p·m + items) for m steps. K up to kMaxRankLocalRanks for
// Algorithm A, kMaxPlanRanks with counts (K numbers in the spec).
// UserError for rank >= K.
ir::RankPlan postal_prefix_local(const Spec& spec, uint32_t rank);

// Broadcast of spec.blocks blocks from spec.root, one message of `blocks`
// elements per send, along the postal spanning tree. Exactly
// min{t : G(t) >= K} steps.
ir::Plan postal_broadcast(const Spec& spec);
// Rank `rank`'s program of it alone (`collplan compile --rank`), equal to
// ranks[rank] of the whole plan (both call one per-rank builder): O(log K +
// p·m) for m steps, K up to kMaxRankLocalRanks. UserError for rank >= K.
ir::RankPlan postal_broadcast_local(const Spec& spec, uint32_t rank);

// Reduce (block-wise sum of every rank's n blocks) into spec.root on the
// same tree, reversed: a broadcast message sent in step s and received in
// step r becomes a message of partial sums sent in step m+1−r and received
// in step m+1−s. Exactly m = min{t : G(t) >= K} steps (the postal bound,
// reversed), C2 = n·(m−λ+1). For λ = 1 the (p+1)-nomial tree reduce;
// for λ >= K − 1 with p = 1 the star (every rank sends to the root, which
// receives one message a step).
ir::Plan postal_reduce(const Spec& spec);
ir::RankPlan postal_reduce_local(const Spec& spec, uint32_t rank);

// Allreduce: postal_reduce into rank 0, then postal_broadcast from it.
// Exactly 2m steps, C2 = 2n·(m−λ+1): more than the dissemination
// allreduce's λ·⌈log_{p+1} K⌉ steps for small λ, fewer for some large λ.
// For machines where a message's latency is long against the time to post
// one, so that a large λ models them and the two trees become stars.
ir::Plan postal_allreduce(const Spec& spec);
ir::RankPlan postal_allreduce_local(const Spec& spec, uint32_t rank);

// ─── Per-rank parts, for the generators above ──────────────────────────────
//
// A generator on the postal tree as a per-rank builder (gen/rank_local.h):
// the whole plan and a rank compiled alone both come from `rank`, given
// G(0..m). Its plan takes `rounds`·m steps (one tree, or two in a row).
struct PostalTreeAlgorithm {
  OpKind op;
  const char* name;  // for messages: "the <name> generator computes ..."
  uint32_t rounds;
  ir::Program (*rank)(const ir::Plan& ctx, const std::vector<uint64_t>& G, uint32_t rank);
};
// Validated as a whole plan (validate_spec_basics) or a rank alone (K up to
// kMaxRankLocalRanks); UserError when spec.op is not alg.op.
ir::Plan postal_tree_whole_plan(const Spec& spec, const PostalTreeAlgorithm& alg);
ir::RankPlan postal_tree_rank_plan(const Spec& spec, const PostalTreeAlgorithm& alg, uint32_t rank);
// Where position x > 0 (relative to the root) joins the broadcast tree: it
// receives in step j, through port `port`, from position `parent`.
struct PostalParent {
  uint32_t j;
  uint32_t port;
  uint64_t parent;
};
PostalParent postal_parent(const std::vector<uint64_t>& G, uint32_t p, uint32_t lambda, uint64_t x);
// prog.rank's part of the postal broadcast from `root`, in steps
// offset+1 .. offset+m: the root forwards `held` (its n slots); any other
// rank receives n fresh slots and forwards them. Returns the slots the rank
// holds at the end.
std::vector<ir::SlotId> postal_broadcast_part(const ir::Plan& ctx, const std::vector<uint64_t>& G, ir::Program& prog,
                                              uint32_t root, std::vector<ir::SlotId> held, uint32_t offset);
// Rank r's whole postal reduce into `root` in steps 1..m: n input slots,
// summed with its subtree's and sent to its parent; at the root the sums
// are the outputs, elsewhere there are none.
ir::Program postal_reduce_program(const ir::Plan& ctx, const std::vector<uint64_t>& G, uint32_t r, uint32_t root);

// The paper's §4 split of n items over P ranks: the first n − P·⌊n/P⌋ ranks
// hold ⌈n/P⌉ items, the others ⌊n/P⌋ (n = 75, P = 10: 8,8,8,8,8,7,7,7,7,7).
std::vector<uint32_t> postal_block_counts(uint32_t n, uint32_t P);

}  // namespace collplan::gen
