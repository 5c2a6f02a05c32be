// Regular allgather on the circulant graph (Träff, Algorithm 7;
// docs/circulant.md).
//
// Every rank holds n blocks; rank r keeps a buffer of K positions, position
// j holding rank (r + j) mod K's n blocks (position 0: its own). In round
// k = 0..q−1 (step k+1) rank r sends positions 0..skips[k+1]−skips[k]−1 to
// r − skips[k] and receives positions skips[k]..skips[k+1]−1 from
// r + skips[k] (the edges used opposite to the broadcast's). After round k
// r holds positions 0..skips[k+1]−1: the sender holds skips[k] >=
// skips[k+1] − skips[k] positions (Lemma 1), and skips[q] = K.
//
// C1 = q = ⌈log₂K⌉ (optimal); C2 = n·Σ_k (skips[k+1] − skips[k]) = n·(K − 1)
// (optimal: every rank must receive (K−1)·n elements).
#include "gen/circulant_plans.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

ir::Program allgather_rank(const ir::Plan& ctx, const Circulant& c, uint32_t r) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, n = ctx.spec.blocks;
  Program prog;
  prog.rank = r;
  prog.num_slots = K * n;  // position j, block b: slot j·n + b
  for (uint32_t b = 0; b < n; ++b) prog.inputs.push_back(b);
  for (uint32_t src = 0; src < K; ++src)
    for (uint32_t b = 0; b < n; ++b) prog.outputs.push_back(((src + K - r) % K) * n + b);
  for (uint32_t k = 0; k < c.q(); ++k) {
    const uint64_t width = c.skip(k + 1) - c.skip(k);
    std::vector<Combo> payload;
    std::vector<SlotId> into;
    for (uint64_t e = 0; e < width * n; ++e) {
      payload.push_back(unit(static_cast<SlotId>(e)));
      into.push_back(static_cast<SlotId>(c.skip(k) * n + e));
    }
    Step& st = prog.at(k + 1);
    st.sends.push_back(make_send(ctx, prog, 0, static_cast<Rank>((r + K - c.skip(k)) % K), std::move(payload)));
    st.recvs.push_back(make_recv(ctx, prog, k + 1, 0, static_cast<Rank>((r + c.skip(k)) % K), std::move(into)));
  }
  return prog;
}

constexpr CirculantAlgorithm kAllgather{OpKind::Allgather, "circulant-allgather", false, allgather_rank};

}  // namespace

ir::Plan circulant_allgather(const Spec& spec) { return circulant_whole_plan(spec, kAllgather); }

ir::RankPlan circulant_allgather_local(const Spec& spec, uint32_t rank) {
  // Not the rank-local limit: one rank's program already has K·n outputs.
  if (spec.K > kMaxPlanRanks)
    user_error("circulant-allgather: K = {} is too large for a rank-local compile too (at most {}): every rank's "
               "program holds all K*n = {} gathered blocks as outputs, so one rank is as large as K",
               spec.K, kMaxPlanRanks, uint64_t{spec.K} * spec.blocks);
  return circulant_rank_plan(spec, kAllgather, rank, kMaxPlanRanks);
}

PostalSplitCost circulant_allgather_cost(const Spec& spec) {
  return circulant_cost(spec, Circulant(spec.K).q(), uint64_t{spec.blocks} * (spec.K - 1));
}

}  // namespace collplan::gen
