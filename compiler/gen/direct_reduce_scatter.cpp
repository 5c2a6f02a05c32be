// Reduce-scatter by direct exchange (gen/direct.h): in step t rank r sends
// its n blocks for rank r + d through port q straight to it and receives
// rank r − d's blocks for r through port q, d = (t−1)·p + q + 1, for
// t = 1..⌈(K−1)/p⌉; each receiving step adds what arrived to r's partial
// sums (its own blocks for r to start with).
//
// C1 = ⌈(K−1)/p⌉ + λ − 1, C2 = ⌈(K−1)/p⌉·n: every rank must receive n(K−1)
// elements through p ports, so C2 meets that bound when p divides K − 1 or
// n = 1.
#include "gen/direct.h"

#include "support/error.h"

namespace collplan::gen {

namespace {

// Rank r's program: inputs a·n + b (its block b for rank a), partial sums
// of its own blocks. O(K·n).
ir::Program direct_reduce_scatter_rank(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda, n = spec.blocks;
  Program prog;
  prog.rank = r;
  for (uint64_t i = 0; i < uint64_t{K} * n; ++i) prog.inputs.push_back(prog.new_slot());
  std::vector<SlotId> acc(prog.inputs.begin() + uint64_t{r} * n, prog.inputs.begin() + uint64_t{r + 1} * n);
  // Step s: the sends of step s, then the receives of what was sent in step
  // s − λ + 1 and their sums (steps are built in order).
  const uint32_t T = direct_send_steps(spec);
  for (uint32_t s = 1; s <= T + lam - 1; ++s) {
    for (uint32_t q = 0; q < p && s <= T; ++q) {
      const uint32_t d = (s - 1) * p + q + 1;
      if (d >= K) break;
      const uint32_t to = (r + d) % K;
      std::vector<Combo> payload;
      for (uint32_t b = 0; b < n; ++b) payload.push_back(unit(prog.inputs[uint64_t{to} * n + b]));
      prog.at(s).sends.push_back(make_send(ctx, prog, q, to, std::move(payload)));
    }
    if (s < lam) continue;
    std::vector<std::vector<SlotId>> received;
    for (uint32_t q = 0; q < p; ++q) {
      const uint32_t d = (s - lam) * p + q + 1;  // sent in step s − λ + 1
      if (d >= K) break;
      std::vector<SlotId> into;
      for (uint32_t b = 0; b < n; ++b) into.push_back(prog.new_slot());
      prog.at(s).recvs.push_back(make_recv(ctx, prog, s, q, (r + K - d) % K, into));
      received.push_back(std::move(into));
    }
    for (uint32_t b = 0; b < n; ++b) {
      std::vector<Term> terms{Term{acc[b], 1}};
      for (const auto& msg : received) terms.push_back(Term{msg[b], 1});
      const SlotId dst = prog.new_slot();
      prog.at(s).ops.push_back(make_op(prog, dst, std::move(terms)));
      acc[b] = dst;
    }
  }
  prog.outputs = acc;
  return prog;
}

const DirectAlgorithm kDirectReduceScatter{"direct-reduce-scatter", {OpKind::ReduceScatter},
                                           direct_reduce_scatter_rank};

}  // namespace

ir::Plan direct_reduce_scatter(const Spec& spec) { return direct_whole_plan(spec, kDirectReduceScatter); }

ir::RankPlan direct_reduce_scatter_local(const Spec& spec, uint32_t rank) {
  return direct_rank_plan(spec, kDirectReduceScatter, rank);
}

PostalSplitCost direct_reduce_scatter_cost(const Spec& spec) { return direct_cost(spec, spec.blocks); }

}  // namespace collplan::gen
