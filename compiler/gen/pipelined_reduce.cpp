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

#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// Relative rank x = (r − root) mod K at depth d of D: block k of its
// children's partials arrives in step k + (D−d)·λ (one slot per child, then
// the sum), and x's partial goes to the parent in step k + 1 + (D−d)·λ.
// O(p·n + log K).
ir::Program pipelined_reduce_rank(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const TreePosition pos(spec, r);
  const uint64_t K = spec.K, x = pos.x;
  const uint32_t p = spec.p, lam = spec.lambda, n = spec.blocks;
  const uint64_t up = uint64_t{pary_depth(K, p) - heap_depth(x, p)} * lam;  // (D − d)·λ
  Program prog;
  prog.rank = r;
  for (uint32_t i = 0; i < n; ++i) prog.inputs.push_back(prog.new_slot());
  std::vector<SlotId> acc(prog.inputs.begin(), prog.inputs.end());
  for (uint32_t k = 0; k < n; ++k) {
    const auto at = static_cast<StepNo>(k + up);
    std::vector<Term> terms{Term{acc[k], 1}};
    for (uint32_t rho = 1; rho <= p && p * x + rho < K; ++rho) {
      const SlotId s = prog.new_slot();
      prog.at(at).recvs.push_back(make_recv(ctx, prog, at, rho - 1, pos.rank_of(p * x + rho), {s}));
      terms.push_back(Term{s, 1});
    }
    if (terms.size() > 1) {
      const SlotId dst = prog.new_slot();
      prog.at(at).ops.push_back(make_op(prog, dst, std::move(terms)));
      acc[k] = dst;
    }
    if (x > 0)
      prog.at(at + 1).sends.push_back(
          make_send(ctx, prog, static_cast<Port>((x - 1) % p), pos.rank_of((x - 1) / p), {unit(acc[k])}));
  }
  if (x == 0) prog.outputs = acc;
  return prog;
}

constexpr TreeAlgorithm kPipelinedReduce{OpKind::Reduce, "pipelined reduce", false, pipelined_steps,
                                         pipelined_reduce_rank};

}  // namespace

ir::Plan pipelined_reduce(const Spec& spec) { return tree_whole_plan(spec, kPipelinedReduce); }

ir::RankPlan pipelined_reduce_local(const Spec& spec, uint32_t rank) {
  return tree_rank_plan(spec, kPipelinedReduce, rank);
}

}  // namespace collplan::gen
