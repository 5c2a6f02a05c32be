// Allgather (and allgatherv) by direct exchange (gen/direct.h): in step t
// rank r sends its own elements through port q to r + d and receives rank
// r − d's through port q, d = (t−1)·p + q + 1, for t = 1..⌈(K−1)/p⌉.
//
// C1 = ⌈(K−1)/p⌉ + λ − 1. C2 = ⌈(K−1)/p⌉·n: each of those steps carries one
// rank's n elements per port; every rank must receive n(K−1) elements
// through p ports, so C2 meets the receive-volume bound when p divides K − 1
// or n = 1. Allgatherv: every rank sends in every step, so
// C2 = ⌈(K−1)/p⌉·max counts, far above the bound for irregular counts.
//
// The pieces gen/direct.h shares between the two direct generators are
// defined here too.
#include "gen/direct.h"

#include <algorithm>

#include "gen/dissemination_build.h"
#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

uint32_t run_size(const Spec& s, uint32_t a) { return s.op == OpKind::Allgatherv ? s.counts[a] : s.blocks; }

// Rank r's program: its own elements in place, every other rank's received
// into new slots in the step they arrive, outputs in rank order. O(K + n·K).
ir::Program direct_allgather_rank(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda;
  Program prog;
  prog.rank = r;
  std::vector<SlotRun> runs(K);
  runs[r] = SlotRun{prog.num_slots, run_size(spec, r)};
  prog.num_slots += runs[r].count;
  prog.inputs = runs[r].slots();
  std::vector<Combo> own;
  for (uint32_t e = 0; e < runs[r].count; ++e) own.push_back(unit(runs[r][e]));
  // Step s: the sends of step s, then the receives of what was sent in step
  // s − λ + 1 (steps are built in order).
  const uint32_t T = direct_send_steps(spec);
  for (uint32_t s = 1; s <= T + lam - 1; ++s)
    for (uint32_t q = 0; q < p; ++q) {
      if (s <= T && !own.empty()) {
        const uint32_t d = (s - 1) * p + q + 1;
        if (d < K) prog.at(s).sends.push_back(make_send(ctx, prog, q, (r + d) % K, own));
      }
      if (s < lam) continue;
      const uint32_t d = (s - lam) * p + q + 1;  // sent in step s − λ + 1
      if (d >= K) continue;
      const uint32_t a = (r + K - d) % K;
      runs[a] = SlotRun{prog.num_slots, run_size(spec, a)};
      prog.num_slots += runs[a].count;
      if (runs[a].count > 0) prog.at(s).recvs.push_back(make_recv(ctx, prog, s, q, a, runs[a].slots()));
    }
  for (uint32_t a = 0; a < K; ++a)
    for (uint32_t e = 0; e < runs[a].count; ++e) prog.outputs.push_back(runs[a][e]);
  return prog;
}

const DirectAlgorithm kDirectAllgather{"direct-allgather", {OpKind::Allgather, OpKind::Allgatherv},
                                       direct_allgather_rank};

}  // namespace

uint32_t direct_send_steps(const Spec& spec) { return (spec.K - 1 + spec.p - 1) / spec.p; }

ir::Plan direct_whole_plan(const Spec& spec, const DirectAlgorithm& alg) {
  validate_dissemination_spec(spec, alg.ops, alg.name);
  return whole_plan_by_rank(spec, checked_steps(uint64_t{direct_send_steps(spec)} + spec.lambda - 1, alg.name),
                            alg.rank);
}

ir::RankPlan direct_rank_plan(const Spec& spec, const DirectAlgorithm& alg, uint32_t rank) {
  validate_dissemination_spec(spec, alg.ops, alg.name, false, kMaxPlanRanks);
  return one_rank_plan(spec, checked_steps(uint64_t{direct_send_steps(spec)} + spec.lambda - 1, alg.name), rank,
                       alg.rank);
}

PostalSplitCost direct_cost(const Spec& spec, uint64_t largest_message) {
  const uint32_t T = direct_send_steps(spec);
  return {0, 0, static_cast<uint32_t>(std::min<uint64_t>(uint64_t{T} + spec.lambda - 1, UINT32_MAX)),
          T * largest_message};
}

ir::Plan direct_allgather(const Spec& spec) { return direct_whole_plan(spec, kDirectAllgather); }

ir::RankPlan direct_allgather_local(const Spec& spec, uint32_t rank) {
  return direct_rank_plan(spec, kDirectAllgather, rank);
}

PostalSplitCost direct_allgather_cost(const Spec& spec) {
  uint64_t most = spec.blocks;
  if (spec.op == OpKind::Allgatherv)
    most = spec.counts.empty() ? 0 : *std::max_element(spec.counts.begin(), spec.counts.end());
  return direct_cost(spec, most);
}

}  // namespace collplan::gen
