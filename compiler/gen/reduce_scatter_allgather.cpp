// Bandwidth-optimal allreduce: reduce-scatter, then allgather (Rabenseifner's
// scheme, here on the p-port dissemination schedules of gen/dissemination.h,
// so any K and any p).
//
// The n blocks are cut into K chunks, chunk c = blocks [chunk_offset(c),
// chunk_offset(c) + chunk_size(c)) (sizes ⌊n/K⌋ or ⌈n/K⌉; empty when
// n < K). Rank r, position j = chunk (r + j) mod K:
//   phase 1  dissemination reduce-scatter of the chunks: position 0 ends with
//            the sum of chunk r over all ranks (the partial sums are the
//            input slots, updated in place);
//   phase 2  dissemination allgather of the summed chunks, in the next
//            rounds; output block b is read from the position of its chunk.
// A piece whose chunks are empty is not sent.
//
// C1 = 2λ⌈log_{p+1} K⌉. C2 = 2·Σ_rounds (largest piece in blocks) =
// 2⌈n/K⌉⌈(K−1)/p⌉ when K | n: 2(K−1)/K·n for p = 1, each rank sending and
// receiving (K−1)/K of the vector twice, as opposed to ⌈log₂K⌉·n for the
// latency-optimal allreduce. Pick by the cost model (`--algorithm auto`,
// `--blocks auto`).
#include <algorithm>

#include "gen/dissemination_build.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// Rank r: its n input slots, cut into chunks, are the partial sums of the
// reduce-scatter; chunk r, summed, seeds the allgather. Walks all K
// positions (empty chunks included): O(K + n + p·log K).
ir::Program rsa_rank(const ir::Plan& ctx, const std::vector<DisseminationRound>& rounds, uint32_t r) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, n = ctx.spec.blocks;
  const uint32_t phase = static_cast<uint32_t>(rounds.size()) * ctx.spec.lambda;
  auto size = [&](uint32_t c) { return chunk_size(n, K, c); };
  Program prog;
  prog.rank = r;
  prog.num_slots = n;
  prog.inputs.resize(n);
  for (SlotId s = 0; s < n; ++s) prog.inputs[s] = s;
  PositionSlots partial(K);
  for (uint32_t j = 0; j < K; ++j) {
    const uint32_t c = static_cast<uint32_t>((uint64_t{r} + j) % K);
    partial[j] = SlotRun{chunk_offset(n, K, c), size(c)};
  }
  reduce_scatter_phase(ctx, prog, rounds, 1, partial);
  PositionSlots pos(K);
  pos[0] = partial[0];
  allgather_phase(ctx, prog, rounds, phase + 1, pos, size);
  prog.outputs.reserve(n);
  for (uint32_t c = 0; c < K; ++c) {
    const SlotRun& slots = pos[(uint64_t{c} + K - r) % K];
    for (uint32_t e = 0; e < slots.count; ++e) prog.outputs.push_back(slots[e]);
  }
  return prog;
}

// Every rank walks the K positions: the whole-plan limit on K stays.
const DisseminationAlgorithm kReduceScatterAllgather{
    "reduce-scatter-allgather", {OpKind::Allreduce}, false, 2, kMaxPlanRanks, rsa_rank};

}  // namespace

ir::Plan reduce_scatter_allgather(const Spec& spec) { return dissemination_whole_plan(spec, kReduceScatterAllgather); }

ir::RankPlan reduce_scatter_allgather_local(const Spec& spec, uint32_t rank) {
  return dissemination_rank_plan(spec, kReduceScatterAllgather, rank);
}

PostalSplitCost reduce_scatter_allgather_cost(const Spec& spec) {
  const uint32_t K = spec.K, n = spec.blocks;
  const auto rounds = dissemination_rounds(K, spec.p);
  // The chunk sizes are ⌈n/K⌉ for the first n mod K chunks, ⌊n/K⌋ after: a
  // window of len chunks holds at most len·⌊n/K⌋ + min(len, n mod K).
  uint64_t C2 = 0;
  for (const auto& round : rounds) {
    uint32_t longest = 0;
    for (const auto& pc : round) longest = std::max(longest, pc.len);
    C2 += uint64_t{longest} * (n / K) + std::min(longest, n % K);
  }
  return {0, 0, 2 * static_cast<uint32_t>(rounds.size()) * spec.lambda, 2 * C2};
}

}  // namespace collplan::gen
