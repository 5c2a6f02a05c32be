// Broadcast on the (p+1)-nomial tree (a building block of decentralized
// encoding, docs/decentralized.md; the classic one-to-all broadcast of the
// encode papers, b = p+1).
//
// Relative rank x = (rank − root) mod K. Round t = 1..T, T = ⌈log_b K⌉:
// every holder h < b^{t−1} sends all n blocks, as one message, to
// h + ρ·b^{t−1} (ρ = 1..p, port ρ−1) while that is < K. After round t the
// holders are x < b^t. The receiver y (b^{t−1} <= y < b^t) hears from
// h = y mod b^{t−1} on port ⌊y / b^{t−1}⌋ − 1.
// Round t occupies steps (t−1)λ+1 .. tλ (sent first, received last).
// C1 = λ·T, C2 = n·T.
#include "gen/trees.h"

#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

uint32_t nomial_rounds(uint64_t K, uint32_t p) {
  uint32_t t = 0;
  for (uint64_t reach = 1; reach < K; reach *= (p + 1)) ++t;
  return t;
}

uint32_t pary_depth(uint64_t K, uint32_t p) { return heap_depth(K - 1, p); }

uint32_t heap_depth(uint64_t x, uint32_t p) {
  if (p == 1) return static_cast<uint32_t>(x);  // a chain: O(1), not O(K)
  uint32_t d = 0;
  for (; x > 0; x = (x - 1) / p) ++d;
  return d;
}

namespace {

// Relative rank x = (r − root) mod K. Receives in the round t with
// b^{t−1} <= x < b^t (none for the root), then sends in every later round;
// O(p·log K + n).
ir::Program tree_broadcast_rank(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const TreePosition pos(spec, r);
  const uint64_t K = spec.K, x = pos.x;
  const uint32_t p = spec.p, lam = spec.lambda, n = spec.blocks, b = p + 1;
  const uint32_t T = ctx.num_steps / lam;
  Program prog;
  prog.rank = r;
  std::vector<SlotId> held;
  if (x == 0) {
    for (uint32_t i = 0; i < n; ++i) prog.inputs.push_back(prog.new_slot());
    held.assign(prog.inputs.begin(), prog.inputs.end());
  }
  uint64_t span = 1;  // b^{t−1}
  for (uint32_t t = 1; t <= T; ++t, span *= b) {
    const StepNo s_send = (t - 1) * lam + 1, s_recv = t * lam;
    if (x < span) {
      // A holder: sends to x + ρ·b^{t−1}, ρ = 1..p, through port ρ−1.
      std::vector<Combo> payload;
      for (SlotId s : held) payload.push_back(unit(s));
      for (uint32_t rho = 1; rho <= p && x + rho * span < K; ++rho)
        prog.at(s_send).sends.push_back(make_send(ctx, prog, rho - 1, pos.rank_of(x + rho * span), payload));
    } else if (x < span * b) {
      // Reached this round, from x mod b^{t−1} on port ⌊x / b^{t−1}⌋ − 1.
      for (uint32_t i = 0; i < n; ++i) held.push_back(prog.new_slot());
      prog.at(s_recv).recvs.push_back(
          make_recv(ctx, prog, s_recv, static_cast<Port>(x / span - 1), pos.rank_of(x % span), held));
    }
  }
  prog.outputs = held;
  return prog;
}

uint64_t tree_steps(const Spec& spec) { return uint64_t{nomial_rounds(spec.K, spec.p)} * spec.lambda; }

constexpr TreeAlgorithm kTreeBroadcast{OpKind::Broadcast, "tree broadcast", true, tree_steps, tree_broadcast_rank};

}  // namespace

ir::Plan tree_whole_plan(const Spec& spec, const TreeAlgorithm& alg) {
  if (alg.whole_dense_limit) validate_spec_basics(spec);
  else validate_spec_ranges(spec);  // the checker limits the dense map, not the generator
  if (spec.op != alg.op)
    user_error("the {} generator computes '{}', not '{}'", alg.name, op_name(alg.op), op_name(spec.op));
  return whole_plan_by_rank(spec, checked_steps(alg.steps(spec), alg.name), alg.rank);
}

ir::RankPlan tree_rank_plan(const Spec& spec, const TreeAlgorithm& alg, uint32_t rank) {
  validate_spec_ranges(spec, kMaxRankLocalRanks);
  if (spec.op != alg.op)
    user_error("the {} generator computes '{}', not '{}'", alg.name, op_name(alg.op), op_name(spec.op));
  return one_rank_plan(spec, checked_steps(alg.steps(spec), alg.name), rank, alg.rank);
}

ir::Plan tree_broadcast(const Spec& spec) { return tree_whole_plan(spec, kTreeBroadcast); }

ir::RankPlan tree_broadcast_local(const Spec& spec, uint32_t rank) {
  return tree_rank_plan(spec, kTreeBroadcast, rank);
}

}  // namespace collplan::gen
