// Pipelined broadcast of n blocks on the heap-ordered p-ary tree (a chain
// for p = 1): each message carries one block, so the blocks stream down the
// tree and every edge is busy in consecutive steps.
//
// Relative rank x = (rank − root) mod K; the children of x are p·x+ρ
// (ρ = 1..p, < K), each reached through port ρ−1; depth(0) = 0. Node x at
// depth d sends block k to all its children in step k + 1 + d·λ; it has it
// by then because its parent sent it in step k + 1 + (d−1)·λ, which arrives
// in step k + d·λ. One block per port per step, one receive per step.
// The (p+1)-nomial tree cannot be pipelined this way: its root sends to a
// different child in every round, so a stream of blocks would queue.
// C1 = n − 1 + D·λ with D = pary_depth(K, p);
// C2 = n + (D−1)·min(n, λ) (one element in every step in which something is
// sent: the union of the intervals [1 + dλ, n + dλ], d < D).
// With λ = 1: C1 = C2 = n + D − 1, against n·⌈log_{p+1} K⌉ for the tree.
#include "gen/trees.h"

#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// Relative rank x = (r − root) mod K at depth d: block k arrives from the
// parent (x−1)/p, port (x−1) mod p, in step k + dλ and goes on to the
// children p·x+ρ in step k + 1 + dλ. O(p·n + log K).
ir::Program pipelined_broadcast_rank(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const TreePosition pos(spec, r);
  const uint64_t K = spec.K, x = pos.x;
  const uint32_t p = spec.p, lam = spec.lambda, n = spec.blocks;
  const uint64_t d = heap_depth(x, p);
  Program prog;
  prog.rank = r;
  std::vector<SlotId> held;
  for (uint32_t i = 0; i < n; ++i) held.push_back(prog.new_slot());
  if (x == 0) prog.inputs = held;
  for (uint32_t k = 0; k < n; ++k) {
    if (x > 0) {
      const auto at = static_cast<StepNo>(k + d * lam);
      prog.at(at).recvs.push_back(
          make_recv(ctx, prog, at, static_cast<Port>((x - 1) % p), pos.rank_of((x - 1) / p), {held[k]}));
    }
    const auto t = static_cast<StepNo>(k + 1 + d * lam);
    for (uint32_t rho = 1; rho <= p && p * x + rho < K; ++rho)
      prog.at(t).sends.push_back(make_send(ctx, prog, rho - 1, pos.rank_of(p * x + rho), {unit(held[k])}));
  }
  prog.outputs = held;
  return prog;
}

constexpr TreeAlgorithm kPipelinedBroadcast{OpKind::Broadcast, "pipelined broadcast", false, pipelined_steps,
                                            pipelined_broadcast_rank};

}  // namespace

uint64_t pipelined_steps(const Spec& spec) {
  return spec.blocks - 1 + uint64_t{pary_depth(spec.K, spec.p)} * spec.lambda;
}

ir::Plan pipelined_broadcast(const Spec& spec) { return tree_whole_plan(spec, kPipelinedBroadcast); }

ir::RankPlan pipelined_broadcast_local(const Spec& spec, uint32_t rank) {
  return tree_rank_plan(spec, kPipelinedBroadcast, rank);
}

}  // namespace collplan::gen
