// Pipelined reduce of n blocks on the heap-ordered p-ary tree (a chain for
// p = 1): the pipelined broadcast (gen/pipelined_broadcast.cpp) reversed.
//
// Relative rank x = (rank − root) mod K, children p·x+ρ (ρ = 1..p) reached
// through port ρ−1, D = pary_depth(K, p). Node x at depth d >= 1 sends its
// partial of block k (own block plus its children's partials) to its parent
// in step k + 1 + (D−d)·λ; the children, at depth d+1, sent theirs in step
// k + 1 + (D−d−1)·λ, which arrived in step k + (D−d)·λ, where x added them
// (all children of x share a depth, so block k arrives from all of them in
// the same step). The root adds the last block in step n − 1 + D·λ.
// C1 = n − 1 + D·λ, C2 = n + (D−1)·min(n, λ), as for the broadcast.
#include "gen/trees.h"
#include "support/error.h"

namespace collplan::gen {

ir::Plan pipelined_reduce(const Spec& spec) {
  using namespace ir;
  validate_spec_ranges(spec);  // the checker limits the dense map, not the generator
  if (spec.op != OpKind::Reduce)
    user_error("the pipelined reduce generator computes 'reduce', not '{}'", op_name(spec.op));
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda, n = spec.blocks;
  const uint32_t D = pary_depth(K, p);
  auto rank_of = [&](uint64_t x) { return static_cast<Rank>((x + spec.root) % K); };
  Plan plan = make_plan(spec, n - 1 + D * lam);
  std::vector<std::vector<SlotId>> acc(K);
  std::vector<uint32_t> depth(K, 0);
  for (uint64_t x = 0; x < K; ++x) {
    Program& prog = plan.ranks[rank_of(x)];
    for (uint32_t i = 0; i < n; ++i) prog.inputs.push_back(prog.new_slot());
    acc[x] = prog.inputs;
    if (x > 0) depth[x] = depth[(x - 1) / p] + 1;
  }
  for (StepNo t = 1; t <= plan.num_steps; ++t) {
    // Sends of step t: node y (depth >= 1) sends block k = t − 1 − (D−depth)·λ.
    // recv_slots[x]: slots x receives block k_x into in step t + λ − 1.
    for (uint64_t x = 0; x < K; ++x) {
      std::vector<Term> incoming;
      int64_t k = -1;
      for (uint32_t rho = 1; rho <= p; ++rho) {
        const uint64_t y = p * x + rho;
        if (y >= K) break;
        k = static_cast<int64_t>(t) - 1 - static_cast<int64_t>(D - depth[y]) * lam;
        if (k < 0 || k >= n) break;
        Program& from = plan.ranks[rank_of(y)];
        from.at_any(t).sends.push_back(make_send(plan, from, rho - 1, rank_of(x), {unit(acc[y][k])}));
        Program& to = plan.ranks[rank_of(x)];
        const StepNo r = t + lam - 1;
        const SlotId s = to.new_slot();
        to.at_any(r).recvs.push_back(make_recv(plan, to, r, rho - 1, rank_of(y), {s}));
        incoming.push_back(Term{s, 1});
      }
      if (incoming.empty()) continue;
      Program& prog = plan.ranks[rank_of(x)];
      incoming.insert(incoming.begin(), Term{acc[x][k], 1});
      const SlotId dst = prog.new_slot();
      prog.at_any(t + lam - 1).ops.push_back(make_op(prog, dst, std::move(incoming)));
      acc[x][k] = dst;
    }
  }
  plan.ranks[spec.root].outputs = acc[0];
  return plan;
}

}  // namespace collplan::gen
