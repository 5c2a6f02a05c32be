// Latency-optimal allreduce with p ports: Träff's circulant allreduce
// (Algorithm 8, gen/circulant_allreduce.cpp) generalised from one port to p.
//
// Rank r keeps S = x_{r+1} + … + x_{r+L−1} per block (indices mod K): its
// coverage, counting itself, is L. Before round k it is L[k], after it
// L[k+1] (L[0] = 1, S empty; L[q] = K; L[k] = ⌈L[k+1]/(p+1)⌉, so
// (p+1)L[k] − p <= L[k+1] <= (p+1)L[k]). The positions [L, L') still
// missing are tiled by p pieces of length L or L − 1:
//   a piece of length L starting at a comes from f = r + a as x_f + S_f
//   (f's own coverage [f, f+L));
//   a piece of length L − 1 starting at a comes from f = r + a − 1 as S_f
//   (f's coverage without f itself).
// With extra = L' − L = p·L − m, m = p·L − extra in [0, p] pieces are short
// and p − m full; full pieces first. Symmetrically r sends x_r + S (full) or
// S (short) to the matching r − f on each port. Then S += the p received
// sums; finally out = x_r + S = Σ_k x_k. Round 0 (L = 1) has no short
// pieces (they would be empty) and receives straight into S when one piece
// arrives. Every round takes λ steps.
//
// C1 = λ·⌈log_{p+1} K⌉ (optimal for λ = 1); C2 = n·⌈log_{p+1} K⌉ (every
// message carries the n blocks).
#include "gen/dissemination_build.h"
#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

struct AllreducePiece {
  uint32_t peer = 0;  // f − r: the rank received from is r + peer, sent to r − peer
  bool full = false;  // x_f + S_f (length L) rather than S_f (length L − 1)
};

std::vector<std::vector<AllreducePiece>> allreduce_rounds(uint32_t K, uint32_t p) {
  const std::vector<uint32_t> L = dissemination_allreduce_coverage(K, p);
  std::vector<std::vector<AllreducePiece>> rounds;
  for (size_t k = 0; k + 1 < L.size(); ++k) {
    const uint64_t cur = L[k], extra = L[k + 1] - cur;
    COLLPLAN_ASSERT(extra <= p * cur && extra + p >= p * cur, "dissemination-allreduce: coverage out of range");
    const uint64_t m = p * cur - extra;  // short pieces
    std::vector<AllreducePiece> round;
    uint64_t start = cur;
    for (uint64_t i = 0; i < p - m; ++i, start += cur) round.push_back({static_cast<uint32_t>(start), true});
    if (cur > 1)
      for (uint64_t i = 0; i < m; ++i, start += cur - 1) round.push_back({static_cast<uint32_t>(start - 1), false});
    COLLPLAN_ASSERT(start == L[k + 1], "dissemination-allreduce: pieces do not tile the round");
    rounds.push_back(std::move(round));
  }
  return rounds;
}

// Rank r's program: O(p·n) per round, O(p·n·log K) in all, whatever K.
ir::Program allreduce_rank(const ir::Plan& ctx, const std::vector<std::vector<AllreducePiece>>& rounds, uint32_t r) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, n = ctx.spec.blocks, lambda = ctx.spec.lambda;
  const uint32_t q = static_cast<uint32_t>(rounds.size());
  Program prog;
  prog.rank = r;
  // Slots: x_b = b (inputs), S_b = n + b (outputs), then received sums.
  prog.num_slots = 2 * n;
  for (uint32_t b = 0; b < n; ++b) {
    prog.inputs.push_back(b);
    prog.outputs.push_back(n + b);
  }
  for (uint32_t k = 0; k < q; ++k) {
    const uint32_t ts = k * lambda + 1, tr = ts + lambda - 1;
    const auto& round = rounds[k];
    const bool direct = k == 0 && round.size() == 1;  // receive straight into S
    std::vector<std::vector<SlotId>> got(n);
    for (uint32_t port = 0; port < round.size(); ++port) {
      const AllreducePiece& pc = round[port];
      std::vector<Combo> payload;
      std::vector<SlotId> into;
      for (uint32_t b = 0; b < n; ++b) {
        if (k == 0) payload.push_back(unit(b));
        else if (pc.full) payload.push_back(Combo{{Term{b, 1}, Term{n + b, 1}}});
        else payload.push_back(unit(n + b));
        const SlotId s = direct ? n + b : prog.new_slot();
        got[b].push_back(s);
        into.push_back(s);
      }
      // 64-bit: r + K reaches 2^32 − 1 at K = 2^31.
      const auto to = static_cast<Rank>((uint64_t{r} + K - pc.peer) % K);
      const auto from = static_cast<Rank>((uint64_t{r} + pc.peer) % K);
      prog.at_any(ts).sends.push_back(make_send(ctx, prog, port, to, std::move(payload)));
      prog.at_any(tr).recvs.push_back(make_recv(ctx, prog, tr, port, from, std::move(into)));
    }
    Step& st = prog.at_any(tr);
    for (uint32_t b = 0; b < n; ++b) {
      if (!direct) {
        std::vector<Term> terms;
        if (k > 0) terms.push_back(Term{n + b, 1});
        for (SlotId s : got[b]) terms.push_back(Term{s, 1});
        st.ops.push_back(make_op(prog, n + b, std::move(terms)));
      }
      if (k + 1 == q) st.ops.push_back(make_op(prog, n + b, {Term{n + b, 1}, Term{b, 1}}));
    }
  }
  return prog;
}

struct AllreduceShape {
  std::vector<std::vector<AllreducePiece>> rounds;
  uint32_t steps = 0;
};

AllreduceShape allreduce_shape(const Spec& spec, uint32_t rank_local_max) {
  validate_dissemination_spec(spec, {OpKind::Allreduce}, "dissemination-allreduce", false, rank_local_max);
  AllreduceShape sh;
  sh.rounds = allreduce_rounds(spec.K, spec.p);
  sh.steps = static_cast<uint32_t>(sh.rounds.size()) * spec.lambda;
  return sh;
}

}  // namespace

ir::Plan dissemination_allreduce(const Spec& spec) {
  const AllreduceShape sh = allreduce_shape(spec, 0);
  return whole_plan_by_rank(spec, sh.steps,
                            [&](const ir::Plan& ctx, uint32_t r) { return allreduce_rank(ctx, sh.rounds, r); });
}

ir::RankPlan dissemination_allreduce_local(const Spec& spec, uint32_t rank) {
  const AllreduceShape sh = allreduce_shape(spec, kMaxRankLocalRanks);
  return one_rank_plan(spec, sh.steps, rank,
                       [&](const ir::Plan& ctx, uint32_t r) { return allreduce_rank(ctx, sh.rounds, r); });
}

PostalSplitCost dissemination_allreduce_cost(const Spec& spec) {
  const uint32_t q = static_cast<uint32_t>(dissemination_allreduce_coverage(spec.K, spec.p).size() - 1);
  return {0, 0, q * spec.lambda, uint64_t{spec.blocks} * q};
}

}  // namespace collplan::gen
