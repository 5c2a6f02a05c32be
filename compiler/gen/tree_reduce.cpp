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

#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// Relative rank x = (r − root) mod K. In reduce round u (broadcast round
// t = T − u + 1, span = b^{t−1}) x receives from x + ρ·span while x < span,
// or sends its partial to x mod span when span <= x < b·span (once; it is
// idle after). O(p·n·log K).
ir::Program tree_reduce_rank(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const TreePosition pos(spec, r);
  const uint64_t K = spec.K, x = pos.x;
  const uint32_t p = spec.p, lam = spec.lambda, n = spec.blocks, b = p + 1;
  const uint32_t T = ctx.num_steps / lam;
  Program prog;
  prog.rank = r;
  for (uint32_t i = 0; i < n; ++i) prog.inputs.push_back(prog.new_slot());
  std::vector<SlotId> acc(prog.inputs.begin(), prog.inputs.end());  // the current partial sums
  std::vector<uint64_t> spans(T);         // b^{t−1} for t = 1..T
  for (uint32_t t = 0; t < T; ++t) spans[t] = t == 0 ? 1 : spans[t - 1] * b;
  for (uint32_t u = 1; u <= T; ++u) {
    const uint64_t span = spans[T - u];
    const StepNo s_send = (u - 1) * lam + 1, s_recv = u * lam;
    if (x >= span && x < span * b) {
      std::vector<Combo> payload;
      for (SlotId s : acc) payload.push_back(unit(s));
      prog.at(s_send).sends.push_back(
          make_send(ctx, prog, static_cast<Port>(x / span - 1), pos.rank_of(x % span), std::move(payload)));
    } else if (x < span) {
      // Every message's slots first, then the sums (the order the slots are
      // numbered in).
      std::vector<std::vector<SlotId>> received;
      for (uint32_t rho = 1; rho <= p && x + rho * span < K; ++rho) {
        std::vector<SlotId> into;
        for (uint32_t i = 0; i < n; ++i) into.push_back(prog.new_slot());
        prog.at(s_recv).recvs.push_back(make_recv(ctx, prog, s_recv, rho - 1, pos.rank_of(x + rho * span), into));
        received.push_back(std::move(into));
      }
      if (received.empty()) continue;
      for (uint32_t i = 0; i < n; ++i) {
        std::vector<Term> terms{Term{acc[i], 1}};
        for (const auto& msg : received) terms.push_back(Term{msg[i], 1});
        const SlotId dst = prog.new_slot();
        prog.at(s_recv).ops.push_back(make_op(prog, dst, std::move(terms)));
        acc[i] = dst;
      }
    }
  }
  if (x == 0) prog.outputs = acc;
  return prog;
}

uint64_t tree_steps(const Spec& spec) { return uint64_t{nomial_rounds(spec.K, spec.p)} * spec.lambda; }

constexpr TreeAlgorithm kTreeReduce{OpKind::Reduce, "tree reduce", false, tree_steps, tree_reduce_rank};

}  // namespace

ir::Plan tree_reduce(const Spec& spec) { return tree_whole_plan(spec, kTreeReduce); }

ir::RankPlan tree_reduce_local(const Spec& spec, uint32_t rank) { return tree_rank_plan(spec, kTreeReduce, rank); }

}  // namespace collplan::gen
