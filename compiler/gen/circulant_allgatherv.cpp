// Irregular allgather (allgatherv) on the circulant graph (Träff,
// Algorithm 9; docs/circulant.md), striped over p ports.
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
// p ports: the packed message of m elements goes as p pieces of ⌊m/p⌋ or
// ⌈m/p⌉ elements, piece i on port i, all to the same peer (the p-port model
// lets every port reach any rank, the same one included: striping over
// rails). Träff's schedule is a one-port schedule; striping keeps its steps
// and divides every step's size by p, which is what the receive-volume
// bound ⌈(Σcounts − min counts)/p⌉ asks for. Every rank receives Σcounts −
// counts[r] elements, so C2 >= that bound, and with n blocks the steps carry
// about Σcounts/n each: C2 ≈ (n−1+q)/n · Σcounts/p, within 1 + (q−1)/n of
// the bound when no count dominates (`--blocks auto` picks n; docs/circulant.md).
//
// C1 = n − 1 + q; C2 = Σ_t ⌈m_t/p⌉ (m_t the largest packed message of step
// t) <= (n − 1 + q)·⌈Σ_j ⌈counts[j]/n⌉ / p⌉; (K − 1)·Σ_j counts[j] elements
// moved in all (every element reaches every other rank once).
#include <algorithm>
#include <limits>
#include <optional>

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
    // Piece i of the sender's `out` is piece i of the receiver's `in`: both
    // list the same roots' blocks in root order (the sender skips the
    // receiver's own root, the receiver skips its own).
    for (uint32_t port = 0; port < spec.p; ++port) {
      const size_t ob = out.size() * port / spec.p, oe = out.size() * (port + 1) / spec.p;
      if (ob < oe) {
        std::vector<Combo> payload;
        for (size_t e = ob; e < oe; ++e) payload.push_back(unit(out[e]));
        prog.at(t).sends.push_back(make_send(ctx, prog, static_cast<Port>(port), to, std::move(payload)));
      }
      const size_t ib = in.size() * port / spec.p, ie = in.size() * (port + 1) / spec.p;
      if (ib < ie)
        prog.at(t).recvs.push_back(make_recv(ctx, prog, t, static_cast<Port>(port), from,
                                             std::vector<SlotId>(in.begin() + ib, in.begin() + ie)));
    }
  }
  return prog;
}

// Exact C2 without building the plan: the largest packed message of every
// step, O(K²·(n−1+q)).
uint64_t exact_C2(const Spec& spec, const AllgathervShape& sh) {
  const uint32_t K = spec.K, n = spec.blocks, q = sh.c.q(), x = circulant_dummy_rounds(q, n);
  auto block_size = [&](uint32_t j, int64_t b) {
    const uint64_t cnt = spec.counts[j];
    return cnt * (b + 1) / n - cnt * b / n;
  };
  uint64_t C2 = 0;
  for (uint32_t t = 1; t <= n - 1 + q; ++t) {
    const uint64_t i = x + t - 1;
    const uint32_t k = static_cast<uint32_t>(i % q);
    uint64_t largest = 0;
    for (uint32_t r = 0; r < K; ++r) {
      const uint32_t to = static_cast<uint32_t>((r + sh.c.skip(k)) % K);
      uint64_t m = 0;
      for (uint32_t j = 0; j < K; ++j) {
        if (j == to) continue;
        const uint64_t v = (r + K - j) % K;
        const int64_t sb = circulant_block(sh.sched.send[v * q + k], i, q, x, n);
        if (sb >= 0) m += block_size(j, sb);
      }
      largest = std::max(largest, m);
    }
    C2 += (largest + spec.p - 1) / spec.p;
  }
  return C2;
}

// The bound of the header: every step's message packs at most one block
// per root.
uint64_t bound_C2(const Spec& spec) {
  const uint32_t T = spec.blocks - 1 + Circulant(spec.K).q();
  uint64_t per_step = 0;
  for (uint32_t cnt : spec.counts) per_step += (cnt + spec.blocks - 1) / spec.blocks;
  return uint64_t{T} * ((per_step + spec.p - 1) / spec.p);
}

// Exact C2 when the O(K²·T) count is cheap, else the bound. `sh` holds the
// K schedules (built on first use; they do not depend on n), so the
// candidates of --blocks auto share one table.
constexpr uint64_t kExactC2Work = uint64_t{1} << 24;
uint64_t estimate_C2(const Spec& spec, std::optional<AllgathervShape>& sh) {
  const uint64_t T = spec.blocks - 1 + Circulant(spec.K).q();
  if (uint64_t{spec.K} * spec.K * T > kExactC2Work) return bound_C2(spec);
  if (!sh) {
    sh.emplace(AllgathervShape{Circulant(spec.K), {}, {}});
    CirculantScratch scratch;
    circulant_table_fast(spec.K, sh->sched, scratch);
  }
  return exact_C2(spec, *sh);
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
  std::optional<AllgathervShape> sh;
  return circulant_cost(spec, spec.blocks - 1 + Circulant(spec.K).q(), estimate_C2(spec, sh));
}

uint32_t circulant_allgatherv_auto_blocks(const Spec& spec, uint64_t len, double beta, double tau) {
  if (len == 0) user_error("--blocks auto: the element length (--cost-len) must be >= 1");
  if (!(beta >= 0) || !(tau >= 0)) user_error("--blocks auto: beta = {} and tau = {} must be >= 0", beta, tau);
  uint32_t most = 0;
  for (uint32_t c : spec.counts) most = std::max(most, c);
  // More blocks than the largest count only adds empty blocks and steps.
  const uint32_t top = std::clamp<uint32_t>(most, 1, kCirculantMaxAutoBlocks);
  const uint32_t q = Circulant(spec.K).q();
  Spec s = spec;
  auto time = [&](uint32_t n, uint64_t C2) { return double(n - 1 + q) * beta + double(C2) * double(len) * tau; };
  // Every n up to 64, then a geometric ladder (ratio ~1.06), ranked by the
  // O(K) bound; C2(n) is not monotone (the blocks' rounding), so no
  // bisection. The exact C2 (O(K²·T) each) decides among the best few.
  std::vector<std::pair<double, uint32_t>> ranked;
  for (uint32_t n = 1; n <= top; n = n < 64 ? n + 1 : n + n / 16) {
    s.blocks = n;
    ranked.emplace_back(time(n, bound_C2(s)), n);
  }
  const size_t keep = std::min<size_t>(ranked.size(), 8);
  std::optional<AllgathervShape> sh;
  std::partial_sort(ranked.begin(), ranked.begin() + keep, ranked.end());
  uint32_t best = 0;
  double best_time = std::numeric_limits<double>::infinity();
  for (size_t c = 0; c < keep; ++c) {
    const uint32_t n = ranked[c].second;
    s.blocks = n;
    const double t = time(n, estimate_C2(s, sh));
    if (t < best_time || (t == best_time && n < best)) best_time = t, best = n;
  }
  return best;
}

}  // namespace collplan::gen
