// Postal prepare-and-shoot — all-to-all encode of any K×K matrix in the
// p-port postal model with latency λ. No paper covers this; it combines the
// encode paper's prepare-and-shoot (§IV) with the postal G-tree of the
// postal prefix paper (Thm 1). Design and costs: docs/postal-encode.md.
//
// G(j) = 1 for j < λ, G(j) = G(j−1) + p·G(j−λ); T(s) = min{t : G(t) >= s}.
// Postal broadcast on positions 0..s−1: in step j (1 <= j <= T(s)−λ+1) every
// position x < G(j−1) sends to x + off_t(j), off_t(j) = G(j+λ−2) + t·G(j−1)
// (port t = 0..p−1) when that is < s; it arrives in step j+λ−1. The targets
// of step j are exactly [G(j+λ−2), G(j+λ−1)), so after T(s) steps every
// position holds the value.
//
// Prepare (steps 1..T(m)): K such broadcasts on m positions at once, the tree
// of input k placing position x at rank k+x. Rank r's slot x holds x_{r−x};
// in step j it sends, through port t to rank r + off_t(j), its slots
// x < G(j−1) with x + off_t(j) < m, stored by the receiver at x + off_t(j).
// Message size min(G(j−1), m − off_t(j)).
//
// Shoot initialisation (end of step T(m)): rank k's variable w_l, destined
// for rank k + l·m, is Σ_{i < m, l·m+i < K} A[k−i][k+l·m]·x_{k−i} (the exact
// form of prepare-and-shoot's shoot initialisation, each residue once;
// docs/paper-errata.md).
//
// Shoot (steps T(m)+1..T(m)+T(n), n = ⌈K/m⌉): K n-to-one reduces at once,
// the tree of destination d placing position l at rank d − l·m. It is the
// postal broadcast on n positions run backwards: the broadcast edge x → y =
// x + off_t(j) (sent j, arrives j+λ−1) becomes y → x sent in local step
// T(n)−j−λ+2 and arriving in T(n)−j+1. A position's children arrive before
// it sends (their broadcast sends come at or after j+λ). Rank k sends
// through port t to k + off_t(j)·m its variables w_y, y ∈ [off_t(j),
// off_t(j)+G(j−1)) ∩ [0, n); the receiver adds each into its w_{y−off}.
// When off·m ≡ 0 (mod K) the addition is local.
//
// Costs: C1 = T(m) + T(n) (m = K: T(K), the postal lower bound);
// C2 = Σ_j max_t min(G(j−1), m − off_t(j)) + the same over the shoot with n.
// λ = 1, m = (p+1)^{T_p} gives back the step count ⌈log_{p+1} K⌉ of the
// synchronous prepare-and-shoot (with near-first instead of far-first trees).
#include "gen/postal_encode.h"

#include "gen/postal.h"

#include <algorithm>
#include <limits>

#include "passes/cost.h"
#include "passes/recode.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// G(0..T(s)) of postal.h, read as G(j). Indices up to T(s)−1 are all the
// schedules below use (off_t(j) = G(j+λ−2) + t·G(j−1) with j <= T(s)−λ+1).
struct PostalG {
  std::vector<uint64_t> g;
  PostalG(uint32_t p, uint32_t lambda, uint64_t s) : g(postal_G(p, lambda, s)) {}
  uint64_t operator()(uint32_t j) const { return g[j]; }
};

// The per-step sizes of a postal broadcast on s positions, largest message
// first per step, skipping ports for which `skip(off)` holds.
template <class Skip>
std::vector<uint64_t> broadcast_sizes(uint64_t s, uint32_t p, uint32_t lambda, const PostalG& G, Skip skip) {
  std::vector<uint64_t> sizes;
  const uint32_t T = postal_T(s, p, lambda);
  for (uint32_t j = 1; j + lambda <= T + 1; ++j) {
    uint64_t best = 0;
    for (uint32_t t = 0; t < p; ++t) {
      const uint64_t off = G(j + lambda - 2) + t * G(j - 1);
      if (off >= s) break;
      if (skip(off)) continue;
      best = std::max(best, std::min(G(j - 1), s - off));
    }
    sizes.push_back(best);
  }
  return sizes;
}

}  // namespace

uint32_t postal_T(uint64_t s, uint32_t p, uint32_t lambda) { return passes::postal_steps_bound(s, p, lambda); }

PostalSplitCost postal_split_cost(uint32_t K, uint32_t p, uint32_t lambda, uint32_t m) {
  if (m < 2 || m > K) user_error("prepare spread m = {} is out of range (valid: 2..K = {})", m, K);
  PostalSplitCost c;
  c.m = m;
  c.n = (K + m - 1) / m;
  const uint32_t Tm = postal_T(m, p, lambda), Tn = postal_T(c.n, p, lambda);
  c.C1 = Tm + Tn;
  const PostalG G(p, lambda, std::max<uint64_t>(m, c.n));
  for (uint64_t z : broadcast_sizes(m, p, lambda, G, [](uint64_t) { return false; })) c.C2 += z;
  for (uint64_t z : broadcast_sizes(c.n, p, lambda, G, [&](uint64_t off) { return (off * m) % K == 0; })) c.C2 += z;
  return c;
}

uint32_t choose_postal_split(uint32_t K, uint32_t p, uint32_t lambda, const passes::CostModel& cm) {
  uint32_t best_m = K;
  PostalSplitCost best = postal_split_cost(K, p, lambda, K);
  for (uint32_t m = K - 1; m >= 2; --m) {
    const PostalSplitCost c = postal_split_cost(K, p, lambda, m);
    const double a = cm.time(c.C1, c.C2), b = cm.time(best.C1, best.C2);
    if (a < b || (a == b && c.C1 < best.C1)) {
      best = c;
      best_m = m;
    }
  }
  return best_m;
}

ir::Plan postal_prepare_shoot(const Spec& spec, uint32_t m) {
  using namespace ir;
  validate_spec_basics(spec);
  if (spec.op != OpKind::Encode) user_error("postal prepare-and-shoot computes 'encode', not '{}'", op_name(spec.op));
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda;
  const PostalSplitCost cost = postal_split_cost(K, p, lam, m);
  const uint32_t n = cost.n;
  const uint32_t Tm = postal_T(m, p, lam), Tn = postal_T(n, p, lam);
  const PostalG G(p, lam, std::max<uint64_t>(m, n));
  Plan plan = make_plan(spec, Tm + Tn);
  auto mod = [&](int64_t v) { return static_cast<Rank>(((v % int64_t(K)) + int64_t(K)) % int64_t(K)); };

  // Shoot receive buffers: one run per port, as long as the largest message.
  uint64_t max_shoot = 0;
  for (uint32_t j = 1; j + lam <= Tn + 1; ++j) max_shoot = std::max(max_shoot, G(j - 1));
  max_shoot = std::min<uint64_t>(max_shoot, n);
  const SlotId w0 = m, tmp0 = m + n;
  for (Program& prog : plan.ranks) {
    prog.num_slots = static_cast<uint32_t>(m + n + p * max_shoot);
    prog.inputs = {0};
    prog.outputs = {w0};
  }

  // Events are generated step by step for all ranks, so that every rank's
  // step records are appended in increasing t.
  struct Pending {
    StepNo at;
    Rank rank;
    Port port;
    Rank from;
    std::vector<SlotId> into;
    std::vector<std::pair<SlotId, SlotId>> adds;  // target += source
  };
  std::vector<Pending> pending;
  auto flush = [&](StepNo upto) {
    std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.at < b.at; });
    size_t i = 0;
    for (; i < pending.size() && pending[i].at <= upto; ++i) {
      Pending& e = pending[i];
      Program& prog = plan.ranks[e.rank];
      Step& st = prog.at(e.at);
      if (!e.into.empty()) st.recvs.push_back(make_recv(plan, prog, e.at, e.port, e.from, e.into));
      for (auto [target, src] : e.adds) st.ops.push_back(make_op(prog, target, {Term{target, 1}, Term{src, 1}}));
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(i));
  };

  // Prepare.
  for (uint32_t j = 1; j + lam <= Tm + 1; ++j) {
    flush(j - 1);
    for (Program& prog : plan.ranks) {
      const Rank r = prog.rank;
      for (uint32_t t = 0; t < p; ++t) {
        const uint64_t off = G(j + lam - 2) + t * G(j - 1);
        if (off >= m) break;
        const uint64_t cnt = std::min<uint64_t>(G(j - 1), m - off);
        std::vector<Combo> payload;
        std::vector<SlotId> into;
        for (uint64_t x = 0; x < cnt; ++x) {
          payload.push_back(unit(static_cast<SlotId>(x)));
          into.push_back(static_cast<SlotId>(x + off));
        }
        const Rank to = mod(int64_t(r) + int64_t(off));
        prog.at(j).sends.push_back(make_send(plan, prog, t, to, std::move(payload)));
        pending.push_back({j + lam - 1, to, t, r, std::move(into), {}});
      }
    }
  }
  flush(Tm);

  // Shoot initialisation at the end of step Tm (coefficients by recode).
  const StepNo init_at = std::max<StepNo>(Tm, 1);
  for (Program& prog : plan.ranks) {
    const Rank k = prog.rank;
    Step& st = prog.at(init_at);
    for (uint64_t l = 0; l < n; ++l) {
      std::vector<Term> terms;
      for (uint64_t i = 0; i < m && l * m + i < K; ++i) terms.push_back(Term{static_cast<SlotId>(i), 0});
      st.ops.push_back(make_op(prog, static_cast<SlotId>(w0 + l), std::move(terms), mod(int64_t(k) + int64_t(l * m))));
    }
  }

  // Shoot: broadcast step j on n positions, reversed.
  for (uint32_t sl = 1; sl + lam <= Tn + 1; ++sl) {
    const uint32_t j = Tn - sl - lam + 2;  // the broadcast step this mirrors
    const StepNo send_at = Tm + sl, arrive_at = Tm + Tn - j + 1;
    flush(send_at - 1);
    for (Program& prog : plan.ranks) {
      const Rank k = prog.rank;
      for (uint32_t t = 0; t < p; ++t) {
        const uint64_t off = G(j + lam - 2) + t * G(j - 1);
        if (off >= n) break;
        const uint64_t cnt = std::min<uint64_t>(G(j - 1), n - off);
        const Rank to = mod(int64_t(k) + int64_t((off * m) % K));
        Pending ev{arrive_at, to, t, k, {}, {}};
        if (to == k) {  // the partner is this rank: add locally on arrival
          for (uint64_t x = 0; x < cnt; ++x)
            ev.adds.push_back({static_cast<SlotId>(w0 + x), static_cast<SlotId>(w0 + x + off)});
          pending.push_back(std::move(ev));
          continue;
        }
        std::vector<Combo> payload;
        for (uint64_t x = 0; x < cnt; ++x) {
          payload.push_back(unit(static_cast<SlotId>(w0 + x + off)));
          const SlotId tmp = static_cast<SlotId>(tmp0 + t * max_shoot + x);
          ev.into.push_back(tmp);
          ev.adds.push_back({static_cast<SlotId>(w0 + x), tmp});
        }
        prog.at(send_at).sends.push_back(make_send(plan, prog, t, to, std::move(payload)));
        pending.push_back(std::move(ev));
      }
    }
  }
  flush(Tm + Tn);
  COLLPLAN_ASSERT(pending.empty(), "postal prepare-and-shoot: events after the last step");
  passes::recode(plan, spec.matrix);
  return plan;
}

}  // namespace collplan::gen
