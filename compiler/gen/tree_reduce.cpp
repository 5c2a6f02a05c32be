// Reduce on the (p+1)-nomial tree: tree_broadcast (gen/tree_broadcast.cpp)
// with its rounds in reverse order and sums instead of copies.
//
// Relative rank x = (rank − root) mod K, T = ⌈log_b K⌉, b = p+1. The
// broadcast edge h → y = h + ρ·b^{t−1} of round t becomes, in reduce round
// u = T − t + 1, y sending its partial sum (its own blocks plus everything
// its broadcast subtree sent it, which arrived in earlier reduce rounds) to
// h through port ρ−1; h adds what arrives on all ports into a fresh partial
// in the receiving step. The root's final partial is the output.
// Round u occupies steps (u−1)λ+1 .. uλ. C1 = λ·T, C2 = n·T.
#include "gen/trees.h"
#include "support/error.h"

namespace collplan::gen {

ir::Plan tree_reduce(const Spec& spec) {
  using namespace ir;
  validate_spec_ranges(spec);  // the checker limits the dense map, not the generator
  if (spec.op != OpKind::Reduce) user_error("the tree reduce generator computes 'reduce', not '{}'", op_name(spec.op));
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda, n = spec.blocks, b = p + 1;
  const uint32_t T = nomial_rounds(K, p);
  auto rank_of = [&](uint64_t x) { return static_cast<Rank>((x + spec.root) % K); };
  Plan plan = make_plan(spec, T * lam);
  std::vector<std::vector<SlotId>> acc(K);  // current partial sums, per relative rank
  for (uint64_t x = 0; x < K; ++x) {
    Program& prog = plan.ranks[rank_of(x)];
    for (uint32_t i = 0; i < n; ++i) prog.inputs.push_back(prog.new_slot());
    acc[x] = prog.inputs;
  }
  std::vector<uint64_t> spans(T);  // b^{t−1} for t = 1..T
  for (uint32_t t = 0; t < T; ++t) spans[t] = t == 0 ? 1 : spans[t - 1] * b;
  for (uint32_t u = 1; u <= T; ++u) {
    const uint64_t span = spans[T - u];
    const StepNo s_send = (u - 1) * lam + 1, s_recv = u * lam;
    // received[h]: slots of the messages h receives this round.
    std::vector<std::vector<std::vector<SlotId>>> received(std::min<uint64_t>(span, K));
    for (uint64_t y = span; y < span * b && y < K; ++y) {
      const uint64_t h = y % span;
      const Port port = static_cast<Port>(y / span - 1);
      Program& from = plan.ranks[rank_of(y)];
      std::vector<Combo> payload;
      for (SlotId s : acc[y]) payload.push_back(unit(s));
      from.at(s_send).sends.push_back(make_send(plan, from, port, rank_of(h), std::move(payload)));
      Program& to = plan.ranks[rank_of(h)];
      std::vector<SlotId> into;
      for (uint32_t i = 0; i < n; ++i) into.push_back(to.new_slot());
      to.at(s_recv).recvs.push_back(make_recv(plan, to, s_recv, port, rank_of(y), into));
      received[h].push_back(std::move(into));
    }
    for (uint64_t h = 0; h < received.size(); ++h) {
      if (received[h].empty()) continue;
      Program& prog = plan.ranks[rank_of(h)];
      for (uint32_t i = 0; i < n; ++i) {
        std::vector<Term> terms{Term{acc[h][i], 1}};
        for (const auto& msg : received[h]) terms.push_back(Term{msg[i], 1});
        const SlotId dst = prog.new_slot();
        prog.at(s_recv).ops.push_back(make_op(prog, dst, std::move(terms)));
        acc[h][i] = dst;
      }
    }
  }
  plan.ranks[spec.root].outputs = acc[0];
  return plan;
}

}  // namespace collplan::gen
