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

}  // namespace

ir::Plan postal_prefix(const Spec& spec) {
  validate_spec_basics(spec);
  if (spec.op != OpKind::Prefix) user_error("the postal prefix generator computes 'prefix', not '{}'", op_name(spec.op));
  const bool alg_b = !spec.counts.empty();
  const uint32_t K = spec.K, p = spec.p, lam = spec.lambda;
  const std::vector<uint32_t> q = alg_b ? spec.counts : std::vector<uint32_t>(K, 1);
  const uint64_t total = std::accumulate(q.begin(), q.end(), uint64_t{0});
  if (total == 0) user_error("prefix: counts hold 0 items in total; at least one rank needs an item");
  if (total > (1u << 24)) user_error("prefix: total item count {} is too large (at most 16777216)", total);

  const std::vector<uint64_t> G = postal_G(p, lam, K);
  const uint32_t m = static_cast<uint32_t>(G.size() - 1);
  COLLPLAN_ASSERT(m >= lam, "K >= 2 needs at least λ steps");
  const uint32_t last_send = m - lam + 1;
  const bool c_is_output = !alg_b && !spec.exclusive;  // inclusive A
  // Does rank y send anything in a step after j (then c must stay current)?
  auto sends_after = [&](uint64_t y, uint32_t j) { return j + 1 <= last_send && y + G[j + lam - 1] < K; };

  Plan plan = make_plan(spec, m);
  std::vector<RankState> rs(K);
  for (uint32_t k = 0; k < K; ++k) {
    Program& prog = plan.ranks[k];
    for (uint32_t i = 0; i < q[k]; ++i) prog.inputs.push_back(prog.new_slot());
    rs[k].items = prog.inputs;
    for (SlotId s : prog.inputs) rs[k].c.push_back(Term{s, 1});
  }

  // sent[j][x]: rank x sent its value in step j (an empty value is not sent).
  std::vector<std::vector<char>> sent(m + 1, std::vector<char>(K, 0));
  for (uint32_t j = 1; j <= m; ++j) {
    if (j <= last_send) {
      for (uint32_t x = 0; x < K; ++x) {
        if (rs[x].c.empty()) continue;
        const std::vector<uint32_t> U = postal_U(G, p, lam, K, x, j);
        if (U.empty()) continue;
        Program& prog = plan.ranks[x];
        Step& st = prog.at(j);
        for (uint32_t t = 0; t < U.size(); ++t)
          st.sends.push_back(make_send(plan, prog, t, U[t], {Combo{rs[x].c}}));
        sent[j][x] = 1;
        // The block total of B, sent again in step 2 before anything can
        // have changed it (λ >= 2): compute it once.
        if (j == 1 && lam >= 2 && rs[x].c.size() >= 2 && sends_after(x, 1))
          assign(prog, st, rs[x].c, rs[x].c_slot, rs[x].c);
      }
    }
    if (j < lam) continue;
    for (uint32_t y = 0; y < K; ++y) {
      const std::vector<uint32_t> W = postal_W(G, p, lam, y, j);
      // Senders in increasing rank order: W lists them decreasing in t.
      Val recv;
      std::vector<std::pair<Port, Rank>> from;
      for (uint32_t t = static_cast<uint32_t>(W.size()); t-- > 0;)
        if (sent[j - lam + 1][W[t]]) from.emplace_back(t, W[t]);
      if (from.empty()) continue;
      Program& prog = plan.ranks[y];
      Step& st = prog.at(j);
      for (auto [port, r] : from) {
        const SlotId s = prog.new_slot();
        st.recvs.push_back(make_recv(plan, prog, j, port, r, {s}));
        recv.push_back(Term{s, 1});
      }
      RankState& S = rs[y];
      const bool upd_c = c_is_output || sends_after(y, j);
      const bool upd_x = !c_is_output && q[y] > 0;
      // Both values take the same received prefix: combine it once.
      if (upd_c && upd_x && recv.size() >= 2) {
        const SlotId tmp = prog.new_slot();
        st.ops.push_back(make_op(prog, tmp, recv));
        recv = one(tmp);
      }
      if (upd_x) assign(prog, st, S.x, S.x_slot, cat(recv, S.x));
      if (upd_c) assign(prog, st, S.c, S.c_slot, cat(recv, S.c));
    }
  }

  // Outputs, at the end of step m.
  for (uint32_t k = 0; k < K; ++k) {
    Program& prog = plan.ranks[k];
    auto out_slot = [&](const Val& v) -> SlotId {
      if (v.size() == 1) return v[0].slot;
      const SlotId d = prog.new_slot();  // v empty: the zero element
      prog.at(m).ops.push_back(make_op(prog, d, v));
      return d;
    };
    if (c_is_output) {
      prog.outputs = {out_slot(rs[k].c)};
      continue;
    }
    // u(first) = x ⊕ v(first) (inclusive) or x (exclusive); then each output
    // is the previous one ⊕ one more item.
    Val cur = rs[k].x;
    for (SlotId item : rs[k].items) {
      if (!spec.exclusive) cur = cat(cur, one(item));
      const SlotId o = out_slot(cur);
      prog.outputs.push_back(o);
      cur = cur.empty() ? Val{} : one(o);  // never ⊕ an explicit zero
      if (spec.exclusive) cur = cat(cur, one(item));
    }
  }
  return plan;
}

}  // namespace collplan::gen
