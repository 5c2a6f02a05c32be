// Reduce in the p-port postal model: the postal broadcast's spanning tree
// (gen/postal_broadcast.cpp) with time reversed and sums instead of copies.
//
// Ranks are relabelled relative to the root, x = (rank − root) mod K, and m
// = min{t : G(t) >= K}. The broadcast reaches x in step j_x (sent in step
// j_x − λ + 1 by its parent W_{x,j_x}[t] on port t) and x sends in every
// later step j to U_{x,j}. Reversing time maps a message sent in step s and
// received in step r to one sent in step m+1−r and received in step m+1−s,
// which is again λ − 1 steps in flight, on the same port. So x receives the
// partial sums of U_{x,j} in steps m+1−j (j > j_x, all of them in steps up
// to m − j_x), adds them to its own partial sums in the receiving step, and
// sends the result to its parent in step m+1−j_x, after its last receive.
// Every rank's blocks reach the root exactly once, along the tree.
//
// C1 = m, the postal bound (a reduce reversed is a broadcast, so no reduce
// takes fewer steps); C2 = n·(m−λ+1), one message of n elements in each of
// the steps 1..m−λ+1. λ = 1 gives the (p+1)-nomial tree reduce; λ >= K − 1
// with p = 1 gives the star: every rank sends to the root, which receives
// one message a step.
#include "gen/postal.h"

#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// prog.rank's part of the reduce into `root`, in steps 1..m: `acc` (its n
// slots) plus its subtree's partial sums; a rank other than the root sends
// the result to its parent. Returns the slots of its final partial sums.
std::vector<ir::SlotId> postal_reduce_part(const ir::Plan& ctx, const std::vector<uint64_t>& G, ir::Program& prog,
                                           uint32_t root, std::vector<ir::SlotId> acc) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint64_t K = spec.K;
  const uint32_t p = spec.p, lam = spec.lambda, n = spec.blocks;
  const uint32_t m = static_cast<uint32_t>(G.size() - 1);
  const uint64_t x = (uint64_t{prog.rank} + K - root) % K;
  auto rank_of = [&](uint64_t y) { return static_cast<Rank>((y + root) % K); };
  COLLPLAN_ASSERT(acc.size() == n, "postal reduce: one partial sum per block");
  PostalParent up{0, 0, 0};  // up.j: the broadcast's j_x (0 for the root)
  if (x != 0) up = postal_parent(G, p, lam, x);
  const uint32_t reached = up.j;
  // Broadcast steps j = m .. reached+1 are reduce steps 1 .. m − reached.
  for (uint32_t j = m; j > reached; --j) {
    const std::vector<uint32_t> U = postal_U(G, p, lam, K, x, j);
    if (U.empty()) continue;
    const StepNo s = m + 1 - j;
    // Every message's slots first, then the sums (the order the slots are
    // numbered in, as tree-reduce does).
    std::vector<std::vector<SlotId>> received;
    for (uint32_t t = 0; t < U.size(); ++t) {
      std::vector<SlotId> into;
      for (uint32_t i = 0; i < n; ++i) into.push_back(prog.new_slot());
      prog.at(s).recvs.push_back(make_recv(ctx, prog, s, static_cast<Port>(t), rank_of(U[t]), into));
      received.push_back(std::move(into));
    }
    for (uint32_t i = 0; i < n; ++i) {
      std::vector<Term> terms{Term{acc[i], 1}};
      for (const auto& msg : received) terms.push_back(Term{msg[i], 1});
      const SlotId dst = prog.new_slot();
      prog.at(s).ops.push_back(make_op(prog, dst, std::move(terms)));
      acc[i] = dst;
    }
  }
  if (x != 0) {
    std::vector<Combo> payload;
    for (SlotId a : acc) payload.push_back(unit(a));
    prog.at(m + 1 - reached)
        .sends.push_back(make_send(ctx, prog, up.port, rank_of(up.parent), std::move(payload)));
  }
  return acc;
}

}  // namespace

ir::Program postal_reduce_program(const ir::Plan& ctx, const std::vector<uint64_t>& G, uint32_t r, uint32_t root) {
  ir::Program prog;
  prog.rank = r;
  for (uint32_t b = 0; b < ctx.spec.blocks; ++b) prog.inputs.push_back(prog.new_slot());
  std::vector<ir::SlotId> acc(prog.inputs.begin(), prog.inputs.end());
  acc = postal_reduce_part(ctx, G, prog, root, std::move(acc));
  if (r == root) prog.outputs = acc;
  return prog;
}

namespace {

ir::Program postal_reduce_rank(const ir::Plan& ctx, const std::vector<uint64_t>& G, uint32_t r) {
  return postal_reduce_program(ctx, G, r, ctx.spec.root);
}

constexpr PostalTreeAlgorithm kPostalReduce{OpKind::Reduce, "postal reduce", 1, postal_reduce_rank};

}  // namespace

ir::Plan postal_reduce(const Spec& spec) { return postal_tree_whole_plan(spec, kPostalReduce); }

ir::RankPlan postal_reduce_local(const Spec& spec, uint32_t rank) {
  return postal_tree_rank_plan(spec, kPostalReduce, rank);
}

}  // namespace collplan::gen
