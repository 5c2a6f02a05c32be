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

}  // namespace collplan::gen
