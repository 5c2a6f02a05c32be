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
#include "support/error.h"

namespace collplan::gen {

uint32_t nomial_rounds(uint64_t K, uint32_t p) {
  uint32_t t = 0;
  for (uint64_t reach = 1; reach < K; reach *= (p + 1)) ++t;
  return t;
}

uint32_t pary_depth(uint64_t K, uint32_t p) {
  uint32_t d = 0;
  for (uint64_t x = K - 1; x > 0; x = (x - 1) / p) ++d;
  return d;
}

ir::Plan tree_broadcast(const Spec& spec) {
  using namespace ir;
  validate_spec_basics(spec);
  if (spec.op != OpKind::Broadcast)
    user_error("the tree broadcast generator computes 'broadcast', not '{}'", op_name(spec.op));
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda, n = spec.blocks, b = p + 1;
  const uint32_t T = nomial_rounds(K, p);
  auto rank_of = [&](uint64_t x) { return static_cast<Rank>((x + spec.root) % K); };
  Plan plan = make_plan(spec, T * lam);
  std::vector<std::vector<SlotId>> held(K);
  {
    Program& root = plan.ranks[spec.root];
    for (uint32_t i = 0; i < n; ++i) root.inputs.push_back(root.new_slot());
    held[0] = root.inputs;
  }
  uint64_t span = 1;  // b^{t−1}
  for (uint32_t t = 1; t <= T; ++t, span *= b) {
    const StepNo s_send = (t - 1) * lam + 1, s_recv = t * lam;
    for (uint64_t y = span; y < span * b && y < K; ++y) {
      const uint64_t h = y % span;
      const Port port = static_cast<Port>(y / span - 1);
      Program& from = plan.ranks[rank_of(h)];
      std::vector<Combo> payload;
      for (SlotId s : held[h]) payload.push_back(unit(s));
      from.at(s_send).sends.push_back(make_send(plan, from, port, rank_of(y), std::move(payload)));
      Program& to = plan.ranks[rank_of(y)];
      for (uint32_t i = 0; i < n; ++i) held[y].push_back(to.new_slot());
      to.at(s_recv).recvs.push_back(make_recv(plan, to, s_recv, port, rank_of(h), held[y]));
    }
  }
  for (uint64_t x = 0; x < K; ++x) plan.ranks[rank_of(x)].outputs = held[x];
  return plan;
}

}  // namespace collplan::gen
