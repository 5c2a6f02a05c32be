// Allreduce (census) on the circulant graph (Träff, Algorithm 8;
// docs/circulant.md).
//
// Invariant: after round k rank r holds S = x_{r+1} + … + x_{r+skips[k+1]−1}
// (indices mod K; S empty before round 0), per block. In round k:
//   skips[k+1] = 2·skips[k]      r receives x_f + S_f from f = r + skips[k]
//                                (and sends x_r + S to r − skips[k]);
//   skips[k+1] = 2·skips[k] − 1  r receives S_f from f = r + skips[k] − 1
//                                (and sends S to r − skips[k] + 1);
// then S += received. Finally out = x_r + S, the sum of all K inputs. The
// printed Algorithm 8 tests skips[i] + skips[i] > skips[i+1] in line 3,
// where i is meant to be the round k.
// Round 0 sends x_r alone (S is empty) and receives straight into S.
//
// C1 = q = ⌈log₂K⌉ (optimal); C2 = n·q (n blocks per message).
#include "gen/circulant_plans.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

ir::Program allreduce_rank(const ir::Plan& ctx, const Circulant& c, uint32_t r) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, n = ctx.spec.blocks, q = c.q();
  Program prog;
  prog.rank = r;
  // Slots: x_b = b (inputs), S_b = n + b (outputs), received R_b = 2n + b.
  prog.num_slots = 3 * n;
  for (uint32_t b = 0; b < n; ++b) {
    prog.inputs.push_back(b);
    prog.outputs.push_back(n + b);
  }
  for (uint32_t k = 0; k < q; ++k) {
    const bool odd = 2 * c.skip(k) > c.skip(k + 1);
    const uint64_t d = odd ? c.skip(k) - 1 : c.skip(k);
    std::vector<Combo> payload;
    std::vector<SlotId> into;
    for (uint32_t b = 0; b < n; ++b) {
      if (k == 0) payload.push_back(unit(b));
      else if (odd) payload.push_back(unit(n + b));
      else payload.push_back(Combo{{Term{b, 1}, Term{n + b, 1}}});
      into.push_back(k == 0 ? n + b : 2 * n + b);
    }
    Step& st = prog.at(k + 1);
    st.sends.push_back(make_send(ctx, prog, 0, static_cast<Rank>((r + K - d) % K), std::move(payload)));
    st.recvs.push_back(make_recv(ctx, prog, k + 1, 0, static_cast<Rank>((r + d) % K), std::move(into)));
    for (uint32_t b = 0; b < n; ++b) {
      if (k > 0) st.ops.push_back(make_op(prog, n + b, {Term{n + b, 1}, Term{2 * n + b, 1}}));
      if (k + 1 == q) st.ops.push_back(make_op(prog, n + b, {Term{b, 1}, Term{n + b, 1}}));
    }
  }
  return prog;
}

constexpr CirculantAlgorithm kAllreduce{OpKind::Allreduce, "circulant-allreduce", false, allreduce_rank};

}  // namespace

ir::Plan circulant_allreduce(const Spec& spec) { return circulant_whole_plan(spec, kAllreduce); }

ir::RankPlan circulant_allreduce_local(const Spec& spec, uint32_t rank) {
  return circulant_rank_plan(spec, kAllreduce, rank, kMaxRankLocalRanks);
}

PostalSplitCost circulant_allreduce_cost(const Spec& spec) {
  const uint32_t q = Circulant(spec.K).q();
  return circulant_cost(spec, q, uint64_t{spec.blocks} * q);
}

}  // namespace collplan::gen
