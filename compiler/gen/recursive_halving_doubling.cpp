// Bandwidth-optimal allreduce by recursive halving then recursive doubling
// (Rabenseifner's algorithm; Thakur, Rabenseifner, Gropp 2005), with p ports
// by recursive multiplying: for K = (p+1)^m.
//
// The n blocks are cut into K chunks, chunk a = blocks [chunk_offset(a),
// chunk_offset(a) + chunk_size(a)) (gen/dissemination.h), held in the input
// slots, which are the partial sums. Write ranks in base p + 1.
//   phase 1  rounds j = 0..m−1, S = K/(p+1)^(j+1): before round j rank r
//            holds partial sums of the chunks of its run of S·(p+1)
//            consecutive ranks; the run splits by digit into p + 1 runs of
//            S. r (digit c) sends the partner with digit c′ (r + (c′ − c)·S)
//            its sums of the partner's S chunks and adds what each partner
//            sends of its own S chunks. After round m − 1 chunk r is summed
//            over all ranks.
//   phase 2  the recursive-doubling allgather of the summed chunks
//            (gen/recursive_doubling_allgather.cpp).
// Rank r with digit c talks to digit c′ on port (c′ − c − 1) mod (p+1) in
// both phases. With λ > 1 every round takes λ steps. Every message is a run
// of consecutive chunks, so a rank whose vector is one buffer sends and
// receives it as one piece (docs/collectives.md).
//
// C1 = 2λm. C2 = Σ over both phases of the largest message in blocks: a run
// of D chunks holds at most D⌊n/K⌋ + min(D, n mod K) blocks, and the runs
// are D = K/(p+1), …, p+1, 1 then 1, p+1, …; for K | n C2 = 2(K−1)/p·n/K,
// the dissemination reduce-scatter-allgather's where both apply.
#include <algorithm>

#include "gen/dissemination.h"
#include "gen/recursive_doubling.h"

namespace collplan::gen {

namespace {

// Rank r: its n input slots, cut into chunks, are the partial sums of phase
// 1; chunk r, summed, seeds phase 2. O(n + K).
ir::Program rank_program(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint32_t K = spec.K, lambda = spec.lambda, n = spec.blocks;
  const auto m = static_cast<uint32_t>(recursive_rounds(K, spec.p));
  Program prog;
  prog.rank = r;
  prog.num_slots = n;
  prog.inputs.resize(n);
  for (SlotId s = 0; s < n; ++s) prog.inputs[s] = s;
  std::vector<SlotRun> sum(K);
  for (uint32_t a = 0; a < K; ++a) sum[a] = SlotRun{chunk_offset(n, K, a), chunk_size(n, K, a)};
  recursive_halving_phase(ctx, prog, sum);
  // Phase 2: every rank's summed chunk to every rank.
  std::vector<SlotRun> runs(K);
  for (uint32_t a = 0; a < K; ++a) runs[a].count = sum[a].count;
  runs[r] = sum[r];
  recursive_doubling_phase(ctx, prog, m * lambda + 1, runs);
  prog.outputs.reserve(n);
  for (uint32_t a = 0; a < K; ++a)
    for (uint32_t e = 0; e < runs[a].count; ++e) prog.outputs.push_back(runs[a][e]);
  return prog;
}

const RecursiveAlgorithm kHalvingDoubling{"recursive-halving-doubling", {OpKind::Allreduce}, "reduce-scatter-allgather",
                                          2, rank_program};

}  // namespace

ir::Plan recursive_halving_doubling(const Spec& spec) { return recursive_whole_plan(spec, kHalvingDoubling); }

ir::RankPlan recursive_halving_doubling_local(const Spec& spec, uint32_t rank) {
  return recursive_rank_plan(spec, kHalvingDoubling, rank);
}

PostalSplitCost recursive_halving_doubling_cost(const Spec& spec) {
  const int m = recursive_rounds(spec.K, spec.p);
  if (spec.K < 2 || m < 0) return {0, 0, UINT32_MAX, UINT64_MAX};
  const uint64_t n = spec.blocks, K = spec.K;
  auto run_blocks = [&](uint64_t D) { return D * (n / K) + std::min(D, n % K); };
  uint64_t C2 = 0;
  for (uint64_t D = 1; D < K; D *= spec.p + 1) C2 += 2 * run_blocks(D);
  return {0, 0, 2 * static_cast<uint32_t>(m) * spec.lambda, C2};
}

}  // namespace collplan::gen
