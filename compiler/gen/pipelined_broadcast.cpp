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
#include "support/error.h"

namespace collplan::gen {

ir::Plan pipelined_broadcast(const Spec& spec) {
  using namespace ir;
  validate_spec_ranges(spec);  // the checker limits the dense map, not the generator
  if (spec.op != OpKind::Broadcast)
    user_error("the pipelined broadcast generator computes 'broadcast', not '{}'", op_name(spec.op));
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda, n = spec.blocks;
  const uint32_t D = pary_depth(K, p);
  auto rank_of = [&](uint64_t x) { return static_cast<Rank>((x + spec.root) % K); };
  Plan plan = make_plan(spec, n - 1 + D * lam);
  std::vector<std::vector<SlotId>> held(K);
  std::vector<uint32_t> depth(K, 0);
  {
    Program& root = plan.ranks[spec.root];
    for (uint32_t i = 0; i < n; ++i) root.inputs.push_back(root.new_slot());
    held[0] = root.inputs;
  }
  for (uint64_t x = 1; x < K; ++x) {
    Program& prog = plan.ranks[rank_of(x)];
    for (uint32_t i = 0; i < n; ++i) held[x].push_back(prog.new_slot());
    depth[x] = depth[(x - 1) / p] + 1;
  }
  // Steps must be appended in order per rank: walk the steps, and in each
  // the nodes whose send or receive falls on it.
  for (StepNo t = 1; t <= plan.num_steps; ++t) {
    for (uint64_t x = 0; x < K; ++x) {
      // x sends block k = t − 1 − depth·λ to its children.
      const int64_t k = static_cast<int64_t>(t) - 1 - static_cast<int64_t>(depth[x]) * lam;
      if (k < 0 || k >= n) continue;
      for (uint32_t rho = 1; rho <= p; ++rho) {
        const uint64_t c = p * x + rho;
        if (c >= K) break;
        Program& from = plan.ranks[rank_of(x)];
        from.at_any(t).sends.push_back(make_send(plan, from, rho - 1, rank_of(c), {unit(held[x][k])}));
        Program& to = plan.ranks[rank_of(c)];
        const StepNo r = t + lam - 1;
        to.at_any(r).recvs.push_back(make_recv(plan, to, r, rho - 1, rank_of(x), {held[c][k]}));
      }
    }
  }
  for (uint64_t x = 0; x < K; ++x) plan.ranks[rank_of(x)].outputs = held[x];
  return plan;
}

}  // namespace collplan::gen
