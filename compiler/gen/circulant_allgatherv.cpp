// Irregular allgather (allgatherv) on the circulant graph (Träff,
// Algorithm 9; docs/circulant.md).
//
// Rank j holds counts[j] elements (0 allowed), split into n Träff blocks
// (n = spec.blocks): block b is elements ⌊b·c/n⌋ .. ⌊(b+1)·c/n⌋−1 of the
// c = counts[j] (some empty when c < n). Every rank j is the root of its own
// n-block broadcast (gen/circulant_broadcast.cpp) over relative ranks
// (r − j) mod K; all K broadcasts run in the same n−1+q steps, and in each
// step rank r packs, in root order, the blocks it sends for every root into
// one message to r + skips[k] (and unpacks the one from r − skips[k]).
// Algorithm 9 as printed omits Algorithm 6's dummy-round shift x and is
// wrong whenever x > 0; here every schedule gets it. Blocks for the
// receiver's own root are dropped (it is the owner), as are empty messages.
// Slot layout on every rank: root j's elements at offset Σ_{j'<j} counts[j'],
// which is also the output order (rank order, like MPI_Allgatherv).
//
// C1 = n − 1 + q; C2 <= (n − 1 + q)·Σ_j ⌈counts[j]/n⌉; (K − 1)·Σ_j counts[j]
// elements moved in all (every element reaches every other rank once).
#include <algorithm>

#include "gen/circulant_check.h"
#include "gen/circulant_plans.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// What every rank's program reads: all K relative ranks' schedules (each
// rank is the root of its own broadcast) and where each root's elements sit.
struct AllgathervShape {
  Circulant c;
  CirculantTable sched;
  std::vector<uint32_t> offset;  // root j's elements start at slot offset[j]; offset[K] = Σ counts
};

AllgathervShape allgatherv_shape(const Spec& spec) {
  validate_circulant_spec(spec, OpKind::Allgatherv, "circulant-allgatherv");
  const uint32_t K = spec.K;
  AllgathervShape sh{Circulant(K), {}, std::vector<uint32_t>(K + 1, 0)};
  CirculantScratch scratch;
  circulant_table_fast(K, sh.sched, scratch);  // equal to the per-rank reference (test_circulant.cpp)
  for (uint32_t j = 0; j < K; ++j) sh.offset[j + 1] = sh.offset[j] + spec.counts[j];
  if (sh.offset[K] == 0) user_error("circulant-allgatherv: all counts are 0, nothing to gather");
  return sh;
}

ir::Program allgatherv_rank(const ir::Plan& ctx, const AllgathervShape& sh, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint32_t K = spec.K, n = spec.blocks;
  const Circulant& c = sh.c;
  const CirculantTable& sched = sh.sched;
  const std::vector<uint32_t>& offset = sh.offset;
  const uint32_t q = c.q(), x = circulant_dummy_rounds(q, n);
  // Slots of Träff block b of root j.
  auto block_slots = [&](uint32_t j, int64_t b, std::vector<SlotId>& out) {
    const uint64_t cnt = spec.counts[j];
    for (uint64_t e = cnt * b / n; e < cnt * (b + 1) / n; ++e) out.push_back(static_cast<SlotId>(offset[j] + e));
  };

  Program prog;
  prog.rank = r;
  prog.num_slots = offset[K];
  for (uint32_t e = offset[r]; e < offset[r + 1]; ++e) prog.inputs.push_back(e);
  for (uint32_t e = 0; e < offset[K]; ++e) prog.outputs.push_back(e);
  for (uint32_t t = 1; t <= n - 1 + q; ++t) {
    const uint64_t i = x + t - 1;
    const uint32_t k = static_cast<uint32_t>(i % q);
    const uint32_t to = static_cast<uint32_t>((r + c.skip(k)) % K);
    const uint32_t from = static_cast<uint32_t>((r + K - c.skip(k)) % K);
    std::vector<SlotId> out, in;
    for (uint32_t j = 0; j < K; ++j) {
      const uint64_t v = (r + K - j) % K;
      if (to != j) {
        const int64_t sb = circulant_block(sched.send[v * q + k], i, q, x, n);
        if (sb >= 0) block_slots(j, sb, out);
      }
      if (v != 0) {
        const int64_t rb = circulant_block(sched.recv[v * q + k], i, q, x, n);
        if (rb >= 0) block_slots(j, rb, in);
      }
    }
    if (!out.empty()) {
      std::vector<Combo> payload;
      for (SlotId s : out) payload.push_back(unit(s));
      prog.at(t).sends.push_back(make_send(ctx, prog, 0, to, std::move(payload)));
    }
    if (!in.empty()) prog.at(t).recvs.push_back(make_recv(ctx, prog, t, 0, from, std::move(in)));
  }
  return prog;
}

}  // namespace

ir::Plan circulant_allgatherv(const Spec& spec) {
  const AllgathervShape sh = allgatherv_shape(spec);
  return whole_plan_by_rank(spec, spec.blocks - 1 + sh.c.q(),
                            [&](const ir::Plan& ctx, uint32_t r) { return allgatherv_rank(ctx, sh, r); });
}

ir::RankPlan circulant_allgatherv_local(const Spec& spec, uint32_t rank) {
  // Not the rank-local limit: one rank needs all K schedules and counts, and
  // its program has Σ counts outputs.
  if (spec.K > kMaxPlanRanks)
    user_error("circulant-allgatherv: K = {} is too large for a rank-local compile too (at most {}): every rank's "
               "program holds all K ranks' gathered elements as outputs and follows all K broadcasts, so one rank "
               "is as large as K",
               spec.K, kMaxPlanRanks);
  const AllgathervShape sh = allgatherv_shape(spec);
  return one_rank_plan(spec, spec.blocks - 1 + sh.c.q(), rank,
                       [&](const ir::Plan& ctx, uint32_t r) { return allgatherv_rank(ctx, sh, r); });
}

PostalSplitCost circulant_allgatherv_cost(const Spec& spec) {
  const uint32_t T = spec.blocks - 1 + Circulant(spec.K).q();
  uint64_t per_round = 0;
  for (uint32_t cnt : spec.counts) per_round += (cnt + spec.blocks - 1) / spec.blocks;
  return circulant_cost(spec, T, per_round * T);
}

}  // namespace collplan::gen
