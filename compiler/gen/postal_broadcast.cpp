// Broadcast in the p-port postal model along the spanning tree of the postal
// prefix paper (林彥君, 葉青松, §3.1, the tree T_0).
//
// Ranks are relabelled relative to the root, x = (rank − root) mod K. After
// step j the holders are exactly x < G(j) (Thm 1 says no schedule can have
// more). In step j every holder x < G(j−1) sends the n blocks, as one message
// of n elements, to U_{x,j} = {x + G(j+λ−2) + t·G(j−1) < K} through port t;
// they arrive in step j+λ−1, when the holders become
// x < G(j+λ−2) + p·G(j−1) = G(j+λ−1). The receiver y, with
// G(j−1) <= y < G(j), hears in step j the one member of W_{y,j} that is a
// holder, x = y − G(j−1) − t·G(j−λ) with t = ⌊(y − G(j−1)) / G(j−λ)⌋.
// Holders keep sending while anyone is left to reach, so no extra step:
// exactly m = min{t : G(t) >= K} steps, C2 = n·(number of send steps)
// = n·(m−λ+1). For λ = 1 this is the classic (p+1)-ary doubling.
#include "gen/postal.h"

#include <algorithm>

#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

PostalParent postal_parent(const std::vector<uint64_t>& G, uint32_t p, uint32_t lambda, uint64_t x) {
  // G(j) = 1 below λ, so j >= λ here; W_{x,j}'s holder is on port t.
  const uint32_t m = static_cast<uint32_t>(G.size() - 1);
  const uint32_t j = static_cast<uint32_t>(std::upper_bound(G.begin(), G.end(), x) - G.begin());
  COLLPLAN_ASSERT(x > 0 && j <= m && j >= lambda, "postal tree: a rank was not reached");
  const std::vector<uint32_t> W = postal_W(G, p, lambda, x, j);
  const uint64_t t = (x - G[j - 1]) / G[j - lambda];
  COLLPLAN_ASSERT(t < W.size() && W[t] < G[j - lambda], "postal tree: no holder in W");
  return {j, static_cast<uint32_t>(t), W[t]};
}

// Relative rank x = (r − root) mod K. Reached in the step j with
// G(j−1) <= x < G(j) (the root holds from the start), then a sender in
// every later step with receivers left: O(log K + p·m), m the step count.
std::vector<ir::SlotId> postal_broadcast_part(const ir::Plan& ctx, const std::vector<uint64_t>& G, ir::Program& prog,
                                              uint32_t root, std::vector<ir::SlotId> held, uint32_t offset) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint64_t K = spec.K;
  const uint32_t p = spec.p, lam = spec.lambda, n = spec.blocks;
  const uint32_t m = static_cast<uint32_t>(G.size() - 1);
  const uint64_t x = (uint64_t{prog.rank} + K - root) % K;
  auto rank_of = [&](uint64_t y) { return static_cast<Rank>((y + root) % K); };
  uint32_t reached = 0;  // the step x holds the blocks after
  if (x != 0) {
    const PostalParent up = postal_parent(G, p, lam, x);
    held.clear();
    for (uint32_t b = 0; b < n; ++b) held.push_back(prog.new_slot());
    prog.at(offset + up.j).recvs.push_back(make_recv(ctx, prog, offset + up.j, up.port, rank_of(up.parent), held));
    reached = up.j;
  }
  for (uint32_t j = reached + 1; j <= m; ++j) {
    const std::vector<uint32_t> U = postal_U(G, p, lam, K, x, j);
    if (U.empty()) continue;
    std::vector<Combo> payload;
    for (SlotId s : held) payload.push_back(unit(s));
    Step& st = prog.at(offset + j);
    for (uint32_t t = 0; t < U.size(); ++t) st.sends.push_back(make_send(ctx, prog, t, rank_of(U[t]), payload));
  }
  return held;
}

namespace {

std::vector<uint64_t> postal_tree_G(const Spec& spec, uint32_t rank_local_max, const PostalTreeAlgorithm& alg) {
  if (rank_local_max == 0) validate_spec_basics(spec);
  else validate_spec_ranges(spec, rank_local_max);
  if (spec.op != alg.op)
    user_error("the {} generator computes '{}', not '{}'", alg.name, op_name(alg.op), op_name(spec.op));
  return postal_G(spec.p, spec.lambda, spec.K);
}

uint32_t postal_tree_steps(const std::vector<uint64_t>& G, const PostalTreeAlgorithm& alg) {
  return checked_steps(uint64_t{alg.rounds} * (G.size() - 1), alg.name);
}

ir::Program postal_broadcast_rank(const ir::Plan& ctx, const std::vector<uint64_t>& G, uint32_t r) {
  ir::Program prog;
  prog.rank = r;
  std::vector<ir::SlotId> held;
  if (r == ctx.spec.root) {
    for (uint32_t b = 0; b < ctx.spec.blocks; ++b) prog.inputs.push_back(prog.new_slot());
    held.assign(prog.inputs.begin(), prog.inputs.end());
  }
  prog.outputs = postal_broadcast_part(ctx, G, prog, ctx.spec.root, std::move(held), 0);
  return prog;
}

constexpr PostalTreeAlgorithm kPostalBroadcast{OpKind::Broadcast, "postal broadcast", 1, postal_broadcast_rank};

}  // namespace

ir::Plan postal_tree_whole_plan(const Spec& spec, const PostalTreeAlgorithm& alg) {
  const std::vector<uint64_t> G = postal_tree_G(spec, 0, alg);
  return whole_plan_by_rank(spec, postal_tree_steps(G, alg),
                            [&](const ir::Plan& ctx, uint32_t r) { return alg.rank(ctx, G, r); });
}

ir::RankPlan postal_tree_rank_plan(const Spec& spec, const PostalTreeAlgorithm& alg, uint32_t rank) {
  const std::vector<uint64_t> G = postal_tree_G(spec, kMaxRankLocalRanks, alg);
  return one_rank_plan(spec, postal_tree_steps(G, alg), rank,
                       [&](const ir::Plan& ctx, uint32_t r) { return alg.rank(ctx, G, r); });
}

ir::Plan postal_broadcast(const Spec& spec) { return postal_tree_whole_plan(spec, kPostalBroadcast); }

ir::RankPlan postal_broadcast_local(const Spec& spec, uint32_t rank) {
  return postal_tree_rank_plan(spec, kPostalBroadcast, rank);
}

}  // namespace collplan::gen
