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
#include "support/error.h"

namespace collplan::gen {

ir::Plan postal_broadcast(const Spec& spec) {
  using namespace ir;
  validate_spec_basics(spec);
  if (spec.op != OpKind::Broadcast)
    user_error("the postal broadcast generator computes 'broadcast', not '{}'", op_name(spec.op));
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda, n = spec.blocks;
  const std::vector<uint64_t> G = postal_G(p, lam, K);
  const uint32_t m = static_cast<uint32_t>(G.size() - 1);
  auto rank_of = [&](uint64_t x) { return static_cast<Rank>((x + spec.root) % K); };

  Plan plan = make_plan(spec, m);
  // held[x]: slots holding the n blocks at relative rank x (empty = not yet).
  std::vector<std::vector<SlotId>> held(K);
  {
    Program& root = plan.ranks[spec.root];
    for (uint32_t b = 0; b < n; ++b) root.inputs.push_back(root.new_slot());
    held[0] = root.inputs;
  }
  for (uint32_t j = 1; j <= m; ++j) {
    // Sends of step j, by the holders after step j−1.
    for (uint64_t x = 0; x < G[j - 1] && x < K; ++x) {
      const std::vector<uint32_t> U = postal_U(G, p, lam, K, x, j);
      if (U.empty()) continue;
      Program& prog = plan.ranks[rank_of(x)];
      Step& st = prog.at(j);
      std::vector<Combo> payload;
      for (SlotId s : held[x]) payload.push_back(unit(s));
      for (uint32_t t = 0; t < U.size(); ++t) st.sends.push_back(make_send(plan, prog, t, rank_of(U[t]), payload));
    }
    if (j < lam) continue;
    // Receives of step j: the new holders G(j−1) <= y < G(j).
    for (uint64_t y = G[j - 1]; y < G[j] && y < K; ++y) {
      const std::vector<uint32_t> W = postal_W(G, p, lam, y, j);
      const uint64_t t = (y - G[j - 1]) / G[j - lam];
      COLLPLAN_ASSERT(t < W.size() && W[t] < G[j - lam], "postal broadcast: no holder in W");
      Program& prog = plan.ranks[rank_of(y)];
      std::vector<SlotId> into;
      for (uint32_t b = 0; b < n; ++b) into.push_back(prog.new_slot());
      prog.at(j).recvs.push_back(make_recv(plan, prog, j, static_cast<Port>(t), rank_of(W[t]), into));
      held[y] = std::move(into);
    }
  }
  for (uint32_t k = 0; k < K; ++k) {
    const uint64_t x = (k + K - spec.root) % K;
    COLLPLAN_ASSERT(!held[x].empty(), "postal broadcast: a rank was not reached");
    plan.ranks[k].outputs = held[x];
  }
  return plan;
}

}  // namespace collplan::gen
