// Parallel prefix in the p-port postal model: Algorithms A and B of the
// postal prefix paper (林彥君, 葉青松, "在郵遞模式下通訊數最佳的平行前置計算",
// §3.2 Fig. 3 and §4 Fig. 4). Conventions: gen/postal.h.
//
// Algorithm A (one item per rank, n = K ranks). m = min{t : G(t) >= n}.
// In step j <= m−λ+1 rank i sends its value c(i) (as at the end of step j−1)
// to every y in U_{i,j}, port t to i + G(j+λ−2) + t·G(j−1). In step
// j >= λ it receives from W_{i,j} the values sent in step j−λ+1 and sets
//     c(i) := c(e_1) ⊕ … ⊕ c(e_h) ⊕ c(i),   e_1 < … < e_h,
// the order that keeps operands in input order (Lemma 3: after step j,
// c(i) = v(max(0, i−G(j)+1)) ⊕ … ⊕ v(i), so the received intervals are
// adjacent and end right before c(i)'s). Steps: exactly m, the bound of
// Thm 1; messages of one element in steps 1..m−λ+1, so C2 = m−λ+1 (also
// for B).
//
// Algorithm B (counts[k] items at rank k). The same communication on the
// K ranks, carrying c(i) = the block total (own items, then everything
// received in front); then local prefixes. The paper also carries
// d(i) = v(first item) ⊕ received and finishes u(first) := d(i),
// u(next) := u(prev) ⊕ v(next). Here the received part x(i) (everything left
// of the block) is kept instead: d(i) = x(i) ⊕ v(first) is then the first
// inclusive output, x(i) itself the first exclusive output, and an exclusive
// scan needs no subtraction (which a non-commutative operator lacks). The
// block total is the payload of the step-1 sends (materialised in a slot by
// an op of step 1 when it is sent again before it changes), and the local
// prefixes are ops of step m: exactly m = min{t : G(t) >= K} steps.
//
// Exclusive A is B with one item per rank: x(i) is the output, and rank 0's
// output is the empty combination (the zero element; an identity under a
// user operator).
//
// Updates of c that can no longer be sent (rank i sends nothing after step
// j once i + G(j+λ−1) >= K) are dropped, except in inclusive A where c is
// the output. Ranks with zero items are allowed (the total must be >= 1):
// their value is the empty combination until something is received, and an
// empty value is not sent at all, so every combination stays a union of
// adjacent non-empty intervals.
//
// Paper errors found while checking this against the exact verifier (listed
// in docs/paper-errata.md): the §3.2 example prints
// W_{1,3} = {10}, but rank 1 hears in step 3 from 1 − G(2) = 0, so it is {0};
// Lemma 2 case 3 prints the sender as i − G(j−1) + t·G(j−λ); it is
// i − G(j−1) − t·G(j−λ) (as in W's definition and the proof). Lemma 2
// case 3's range is also printed as G(j−1) + t·G(j−λ) <= i; the proof's
// k·G(j−λ) is meant.
#include <limits>
#include <numeric>

#include "gen/postal.h"
#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

using namespace ir;

// A value under construction: ordered unit terms (empty = zero / identity).
using Val = std::vector<Term>;

Val one(SlotId s) { return {Term{s, 1}}; }

Val cat(const Val& a, const Val& b) {
  Val r = a;
  r.insert(r.end(), b.begin(), b.end());
  return r;
}

constexpr SlotId kNoSlot = std::numeric_limits<SlotId>::max();

struct RankState {
  std::vector<SlotId> items;  // the rank's inputs, in item order
  Val c;                      // received (left) part ⊕ own block
  Val x;                      // received part only: the items left of the block
  SlotId c_slot = kNoSlot, x_slot = kNoSlot;
};

// v := nv, as an op of `st` into `slot` (allocated once) unless nv is a
// single term: those are fresh receive or temporary slots never written
// again, so the value can stay where it is.
void assign(Program& prog, Step& st, Val& v, SlotId& slot, Val nv) {
  if (nv.size() == 1) {
    v = std::move(nv);
    return;
  }
  if (slot == kNoSlot) slot = prog.new_slot();
  st.ops.push_back(make_op(prog, slot, std::move(nv)));
  v = one(slot);
}

// What every rank's program needs besides its own position: the G table,
// the items per rank, and which ranks hold an item (for Algorithm B's
// empty values). Built once per compile: O(K) for counts, O(m) else.
struct PrefixShape {
  bool alg_b = false, exclusive = false, c_is_output = false;
  uint32_t K = 0, p = 0, lam = 0, m = 0, last_send = 0;
  std::vector<uint64_t> G;
  std::vector<uint64_t> held_before;  // B: items of ranks 0..a−1 (K+1 entries)

  uint32_t items(uint64_t k, const Spec& spec) const { return alg_b ? spec.counts[k] : 1; }
  // Does rank y send anything in a step after j (then c must stay current)?
  bool sends_after(uint64_t y, uint32_t j) const { return j + 1 <= last_send && y + G[j + lam - 1] < K; }
  // Did rank x send its value in step j? It sends to U_{x,j} unless the
  // value is empty: by Lemma 3 it then combines the items of ranks
  // max(0, x−G(j−1)+1) .. x, empty when none of them holds one (only B
  // has ranks without items).
  bool sent(uint64_t x, uint32_t j) const {
    if (j > last_send || postal_U(G, p, lam, K, x, j).empty()) return false;
    if (!alg_b) return true;
    const uint64_t lo = x + 1 >= G[j - 1] ? x + 1 - G[j - 1] : 0;
    return held_before[x + 1] > held_before[lo];
  }
};

PrefixShape prefix_shape(const Spec& spec, uint32_t rank_local_max) {
  if (rank_local_max == 0) validate_spec_basics(spec);
  else validate_spec_ranges(spec, rank_local_max);
  if (spec.op != OpKind::Prefix) user_error("the postal prefix generator computes 'prefix', not '{}'", op_name(spec.op));
  PrefixShape sh;
  sh.alg_b = !spec.counts.empty();
  sh.exclusive = spec.exclusive;
  sh.K = spec.K;
  sh.p = spec.p;
  sh.lam = spec.lambda;
  if (sh.alg_b) {
    sh.held_before.assign(1, 0);
    for (uint32_t c : spec.counts) sh.held_before.push_back(sh.held_before.back() + c);
    const uint64_t total = sh.held_before.back();
    if (total == 0) user_error("prefix: counts hold 0 items in total; at least one rank needs an item");
    if (total > (1u << 24)) user_error("prefix: total item count {} is too large (at most 16777216)", total);
  }
  sh.G = postal_G(sh.p, sh.lam, sh.K);
  sh.m = static_cast<uint32_t>(sh.G.size() - 1);
  COLLPLAN_ASSERT(sh.m >= sh.lam, "K >= 2 needs at least λ steps");
  sh.last_send = sh.m - sh.lam + 1;
  sh.c_is_output = !sh.alg_b && !sh.exclusive;  // inclusive A
  return sh;
}

// Rank y's program: its sends in steps 1..last_send, its receives from
// W_{y,j} (those senders that sent), then its outputs. O(p·m + items).
ir::Program prefix_rank(const ir::Plan& ctx, const PrefixShape& sh, uint32_t y) {
  const Spec& spec = ctx.spec;
  const uint32_t K = sh.K, p = sh.p, lam = sh.lam, m = sh.m;
  const auto& G = sh.G;
  Program prog;
  prog.rank = y;
  RankState S;
  for (uint32_t i = 0; i < sh.items(y, spec); ++i) prog.inputs.push_back(prog.new_slot());
  S.items.assign(prog.inputs.begin(), prog.inputs.end());
  for (SlotId s : prog.inputs) S.c.push_back(Term{s, 1});
  for (uint32_t j = 1; j <= m; ++j) {
    if (j <= sh.last_send && !S.c.empty()) {
      const std::vector<uint32_t> U = postal_U(G, p, lam, K, y, j);
      if (!U.empty()) {
        Step& st = prog.at(j);
        for (uint32_t t = 0; t < U.size(); ++t) st.sends.push_back(make_send(ctx, prog, t, U[t], {Combo{S.c}}));
        // The block total of B, sent again in step 2 before anything can
        // have changed it (λ >= 2): compute it once.
        if (j == 1 && lam >= 2 && S.c.size() >= 2 && sh.sends_after(y, 1)) assign(prog, st, S.c, S.c_slot, S.c);
      }
    }
    if (j < lam) continue;
    const std::vector<uint32_t> W = postal_W(G, p, lam, y, j);
    // Senders in increasing rank order: W lists them decreasing in t.
    std::vector<std::pair<Port, Rank>> from;
    for (uint32_t t = static_cast<uint32_t>(W.size()); t-- > 0;)
      if (sh.sent(W[t], j - lam + 1)) from.emplace_back(t, W[t]);
    if (from.empty()) continue;
    Step& st = prog.at(j);
    Val recv;
    for (auto [port, r] : from) {
      const SlotId s = prog.new_slot();
      st.recvs.push_back(make_recv(ctx, prog, j, port, r, {s}));
      recv.push_back(Term{s, 1});
    }
    const bool upd_c = sh.c_is_output || sh.sends_after(y, j);
    const bool upd_x = !sh.c_is_output && sh.items(y, spec) > 0;
    // Both values take the same received prefix: combine it once.
    if (upd_c && upd_x && recv.size() >= 2) {
      const SlotId tmp = prog.new_slot();
      st.ops.push_back(make_op(prog, tmp, recv));
      recv = one(tmp);
    }
    if (upd_x) assign(prog, st, S.x, S.x_slot, cat(recv, S.x));
    if (upd_c) assign(prog, st, S.c, S.c_slot, cat(recv, S.c));
  }

  // Outputs, at the end of step m.
  auto out_slot = [&](const Val& v) -> SlotId {
    if (v.size() == 1) return v[0].slot;
    const SlotId d = prog.new_slot();  // v empty: the zero element
    prog.at(m).ops.push_back(make_op(prog, d, v));
    return d;
  };
  if (sh.c_is_output) {
    prog.outputs = {out_slot(S.c)};
    return prog;
  }
  // u(first) = x ⊕ v(first) (inclusive) or x (exclusive); then each output
  // is the previous one ⊕ one more item.
  Val cur = S.x;
  for (SlotId item : S.items) {
    if (!sh.exclusive) cur = cat(cur, one(item));
    const SlotId o = out_slot(cur);
    prog.outputs.push_back(o);
    cur = cur.empty() ? Val{} : one(o);  // never ⊕ an explicit zero
    if (sh.exclusive) cur = cat(cur, one(item));
  }
  return prog;
}

}  // namespace

ir::Plan postal_prefix(const Spec& spec) {
  const PrefixShape sh = prefix_shape(spec, 0);
  return whole_plan_by_rank(spec, sh.m, [&](const ir::Plan& ctx, uint32_t r) { return prefix_rank(ctx, sh, r); });
}

ir::RankPlan postal_prefix_local(const Spec& spec, uint32_t rank) {
  // Algorithm B's counts are K numbers of the spec: the whole-plan limit on
  // K stays for it; Algorithm A builds nothing of size K.
  const PrefixShape sh = prefix_shape(spec, spec.counts.empty() ? kMaxRankLocalRanks : kMaxPlanRanks);
  return one_rank_plan(spec, sh.m, rank, [&](const ir::Plan& ctx, uint32_t r) { return prefix_rank(ctx, sh, r); });
}

}  // namespace collplan::gen
