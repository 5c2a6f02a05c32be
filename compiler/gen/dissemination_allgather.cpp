// Allgather and allgatherv with p ports: the (p+1)-ary dissemination
// (Bruck, Ho, Kipnis, Upfal, Weathers, "Efficient algorithms for all-to-all
// communications in multiport message-passing systems", the k-port
// allgather), each rank's blocks kept in place instead of rotated at the end.
//
// Rank r holds positions [0, D) (position j = rank (r + j) mod K's blocks),
// D = 1 at first. A round with (p+1)·D <= K receives on port i positions
// [(i+1)D, (i+2)D) from rank r + (i+1)D, which holds them as its own
// [0, D), and sends r's [0, D) to r − (i+1)D: D grows (p+1)-fold. The last
// round splits the K − D missing positions over the p ports evenly
// (gen/dissemination.h). With λ > 1 every round takes λ steps (sent in its
// first, received in its last).
//
// C1 = λ·⌈log_{p+1} K⌉ (the postal bound for λ = 1). C2 = n·⌈(K−1)/p⌉ for
// allgather: full rounds move (p+1)^k positions per port, Σ = (D−1)/p, and
// the last ⌈(K−D)/p⌉; every rank must receive n(K−1) elements through p
// ports, so C2 >= ⌈n(K−1)/p⌉ and the gap is below n. Allgatherv: a piece
// carries its positions' counts; C2 = Σ_rounds the largest piece over all
// ranks (phase_C2).
#include "gen/dissemination_build.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

uint32_t position_size(const Spec& s, uint32_t a) { return s.op == OpKind::Allgatherv ? s.counts[a] : s.blocks; }

}  // namespace

namespace {

// Rank r's program: its own elements in place, the others' gathered over
// the rounds, outputs in absolute rank order. O(K + elements gathered).
ir::Program allgather_rank(const ir::Plan& ctx, const std::vector<DisseminationRound>& rounds, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint32_t K = spec.K;
  auto size = [&](uint32_t a) { return position_size(spec, a); };
  Program prog;
  prog.rank = r;
  PositionSlots pos(K);
  pos[0] = SlotRun{prog.num_slots, size(r)};
  prog.num_slots += size(r);
  prog.inputs = pos[0].slots();
  allgather_phase(ctx, prog, rounds, 1, pos, size);
  for (uint32_t a = 0; a < K; ++a) {
    const SlotRun& slots = pos[(uint64_t{a} + K - r) % K];
    for (uint32_t e = 0; e < slots.count; ++e) prog.outputs.push_back(slots[e]);
  }
  return prog;
}

// Every rank's program lists all K ranks' elements as outputs: one rank is
// as large as K, so a rank-local compile keeps the whole-plan limit on K.
const DisseminationAlgorithm kAllgather{
    "dissemination-allgather", {OpKind::Allgather, OpKind::Allgatherv}, false, 1, kMaxPlanRanks, allgather_rank};

}  // namespace

ir::Plan dissemination_allgather(const Spec& spec) { return dissemination_whole_plan(spec, kAllgather); }

ir::RankPlan dissemination_allgather_local(const Spec& spec, uint32_t rank) {
  return dissemination_rank_plan(spec, kAllgather, rank);
}

PostalSplitCost dissemination_allgather_cost(const Spec& spec) {
  const auto rounds = dissemination_rounds(spec.K, spec.p);
  const uint32_t C1 = static_cast<uint32_t>(rounds.size()) * spec.lambda;
  if (spec.op != OpKind::Allgatherv) {
    uint64_t C2 = 0;
    for (const auto& round : rounds) C2 += uint64_t{spec.blocks} * (round.empty() ? 0 : round.front().len);
    return {0, 0, C1, C2};
  }
  return {0, 0, C1, phase_C2(spec.K, rounds, [&](uint32_t a) { return spec.counts[a]; })};
}

}  // namespace collplan::gen
