// n-block broadcast on the circulant graph (Träff, Algorithm 6;
// docs/circulant.md).
//
// Relative rank v = (rank − root) mod K, q = ⌈log₂K⌉, x = (q − (n−1+q) mod q)
// mod q dummy rounds. In step t = 1..n−1+q (absolute round i = x + t − 1,
// k = i mod q) rank v sends to v + skips[k] the block send[k] + q·⌊i/q⌋ − x
// and receives from v − skips[k] the block recv[k] + q·⌊i/q⌋ − x, where
// send/recv are v's phase schedules (gen/circulant.h). Blocks < 0 are not
// sent (nor received); blocks > n−1 are sent (and received) as n−1, which
// every rank gets exactly once, in the last phase. Messages to the root are
// dropped: it holds every block (the paper's MPI code sends them anyway).
// Slot b holds block b on every rank.
//
// C1 = n − 1 + q (round-optimal among schedules sending one block per
// message; a tree of whole buffers has fewer, longer rounds);
// C2 = n − 1 + q (one block per message, and the root sends in every step),
// which meets the block broadcast bound on C2 (passes/cost.h);
// (K − 1)·n elements moved in all, no block received twice.
// Each rank's program is computed from its own schedule alone
// (circulant_broadcast_rank, O(q³)); the full plan is K such programs, and
// circulant_broadcast_local builds one (K up to 2^31).
#include "gen/circulant_plans.h"

#include "support/error.h"

namespace collplan::gen {

ir::Program circulant_broadcast_rank(const ir::Plan& ctx, const Circulant& c, uint32_t rank) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint32_t K = spec.K, n = spec.blocks, q = c.q();
  COLLPLAN_ASSERT(c.p() == K && rank < K, "circulant broadcast: rank or schedule size mismatch");
  const uint64_t v = (rank + K - spec.root) % K;
  auto abs_rank = [&](uint64_t rel) { return static_cast<Rank>((rel + spec.root) % K); };
  const CirculantSchedule s = c.schedule(v);
  const uint32_t x = circulant_dummy_rounds(q, n);

  Program prog;
  prog.rank = rank;
  for (uint32_t b = 0; b < n; ++b) prog.outputs.push_back(prog.new_slot());
  if (v == 0) prog.inputs = prog.outputs;
  for (uint32_t t = 1; t <= n - 1 + q; ++t) {
    const uint64_t i = x + t - 1;
    const uint32_t k = static_cast<uint32_t>(i % q);
    const uint64_t to = (v + c.skip(k)) % K, from = (v + K - c.skip(k)) % K;
    const int64_t sb = circulant_block(s.send[k], i, q, x, n);
    const int64_t rb = circulant_block(s.recv[k], i, q, x, n);
    if (sb >= 0 && to != 0)
      prog.at(t).sends.push_back(make_send(ctx, prog, 0, abs_rank(to), {unit(static_cast<SlotId>(sb))}));
    if (rb >= 0 && v != 0)
      prog.at(t).recvs.push_back(make_recv(ctx, prog, t, 0, abs_rank(from), {static_cast<SlotId>(rb)}));
  }
  return prog;
}

namespace {
constexpr CirculantAlgorithm kBroadcast{OpKind::Broadcast, "circulant-broadcast", true, circulant_broadcast_rank};
}  // namespace

ir::Plan circulant_broadcast(const Spec& spec) { return circulant_whole_plan(spec, kBroadcast); }

ir::RankPlan circulant_broadcast_local(const Spec& spec, uint32_t rank) {
  return circulant_rank_plan(spec, kBroadcast, rank, kMaxRankLocalRanks);
}

PostalSplitCost circulant_broadcast_cost(const Spec& spec) {
  const uint32_t T = spec.blocks - 1 + Circulant(spec.K).q();
  return circulant_cost(spec, T, T);
}

}  // namespace collplan::gen
