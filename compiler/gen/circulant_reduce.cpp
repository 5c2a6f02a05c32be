// Reduce on the circulant graph: the n-block broadcast (Algorithm 6,
// gen/circulant_broadcast.cpp) run backwards (docs/circulant.md,
// "Generators").
//
// In the broadcast every non-root rank receives every block exactly once,
// so for each block b the messages carrying b form a tree rooted at the
// root. Reversed in time (step t → T+1−t, T = n−1+q), every message of
// block b from u to w becomes a message from w to u carrying w's partial sum
// of block b: w's own input plus what its children in tree b sent it, all of
// which arrive in earlier reversed steps (the children received b after w
// did). The receiver adds it in (an op right after the receive). The root
// ends with the block-wise sums. One send and one receive per rank and step,
// as in the broadcast.
//
// C1 = n − 1 + q, C2 = n − 1 + q (one block per message), (K − 1)·n elements.
// Rank r's program needs only r's broadcast program: O(q³ + n + q).
#include "gen/circulant_plans.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// Rank r's reduce program: r's broadcast program (built alone, from r's own
// schedule) reversed.
ir::Program reduce_rank(const ir::Plan& ctx, const Circulant& c, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  Spec bspec = spec;
  bspec.op = OpKind::Broadcast;
  const uint32_t n = spec.blocks, T = ctx.num_steps;
  const Program b = circulant_broadcast_rank(plan_context(bspec, T), c, r);
  Program prog;
  prog.rank = r;
  // Slot b: the partial sum of block b (starts as input b); slot n: the
  // received partial sum, added in at once.
  prog.num_slots = n + 1;
  for (uint32_t blk = 0; blk < n; ++blk) prog.inputs.push_back(blk);
  if (r == spec.root) prog.outputs = prog.inputs;
  for (auto it = b.steps.rbegin(); it != b.steps.rend(); ++it) {
    const StepNo t = T + 1 - it->t;
    for (const Recv& rv : it->recvs)  // w got block b from u: w sends its sum of b to u
      prog.at(t).sends.push_back(make_send(ctx, prog, 0, rv.from, {unit(rv.into.at(0))}));
    for (const Send& sd : it->sends) {  // u sent block b to w: u adds w's sum of b
      const SlotId blk = sd.payload.at(0).terms.at(0).slot;
      Step& st = prog.at(t);
      st.recvs.push_back(make_recv(ctx, prog, t, 0, sd.to, {n}));
      st.ops.push_back(make_op(prog, blk, {Term{blk, 1}, Term{n, 1}}));
    }
  }
  return prog;
}

constexpr CirculantAlgorithm kReduce{OpKind::Reduce, "circulant-reduce", true, reduce_rank};

}  // namespace

ir::Plan circulant_reduce(const Spec& spec) { return circulant_whole_plan(spec, kReduce); }

ir::RankPlan circulant_reduce_local(const Spec& spec, uint32_t rank) {
  return circulant_rank_plan(spec, kReduce, rank, kMaxRankLocalRanks);
}

PostalSplitCost circulant_reduce_cost(const Spec& spec) {
  const uint32_t T = spec.blocks - 1 + Circulant(spec.K).q();
  return circulant_cost(spec, T, T);
}

}  // namespace collplan::gen
