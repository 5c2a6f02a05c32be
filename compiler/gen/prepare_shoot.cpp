// Prepare-and-shoot — universal all-to-all encode.
// Source: C. Wang, N. Raviv, "All-to-All Encode in Synchronous Systems"
// (ITW 2022), §IV, Thm 1, with the corrections listed in
// docs/paper-errata.md.
//
// b = p+1, L = max{L : b^L < K}, Tp/Ts as in prepare_shoot.h, m = b^Tp,
// n = b^Ts, indices mod K.
//
// Prepare (rounds 1..Tp): K parallel one-to-m broadcasts. In round t rank k
// sends everything it holds to k + ρ·m/b^t (ρ = 1..p). Slot i of rank k
// holds x_{k−i}; after round t rank k holds offsets i that are multiples of
// m/b^t, so the message of round t has b^{t−1} elements and the receiver
// stores offset i into slot i + ρ·m/b^t. Afterwards slots 0..min(m,K)−1 hold
// x_k, x_{k−1}, ….
//
// Shoot (rounds Tp+1..Tp+Ts): K parallel n-to-one reduces. Rank k keeps n
// variables w_l (l = 0..n−1), w_l destined for rank k + l·m, indexed by l
// (destinations may coincide mod K). Initialised at the end of round Tp:
//   w_l = Σ_{i < min(m,K), l·m+i < K} A[k−i][k+l·m] · x_{k−i}
// (each residue l·m+i counted once: m·n >= K, and a term with l·m+i >= K
// would wrap around mod K and count an input twice; this corrects the
// paper's eq. (3)). In shoot round t (δ = m·b^{t−1}, the corrected shoot
// distance) rank k sends through port ρ to k + ρδ the variables whose base-b
// digits 0..t−2 are 0 and digit t−1 is ρ; the receiver adds each into its
// w_{l − ρ·b^{t−1}}. When ρδ ≡ 0 (mod K) the addition is local. At the end
// w_0 holds (x·A)_k.
//
// K <= p+1: L = 0, a single prepare round in which rank k sends x_k to the
// K−1 others on ports 0..K−2; the other p−K+1 ports stay idle (nothing they
// could carry would shorten the one round or shrink its 1-element messages).
//
// Costs: C1 = Tp + Ts = ⌈log_{p+1} K⌉ (optimal, Lemma 1);
//        C2 = Σ_t b^{t−1} + Σ_t b^{Ts−t} = (m−1)/p + (n−1)/p.
// Variables with l·m >= K are identically zero; the drop-zeros pass removes
// them from the messages and lowers C2 (K = 4096, p = 2: 66 instead of 80).
#include "gen/prepare_shoot.h"

#include "passes/recode.h"
#include "support/error.h"

namespace collplan::gen {

std::vector<uint64_t> PrepareShootShape::round_sizes() const {
  std::vector<uint64_t> v;
  uint64_t s = 1;
  for (uint32_t t = 0; t < Tp; ++t, s *= b) v.push_back(s);
  s = n / b;
  for (uint32_t t = 0; t < Ts; ++t, s /= b) v.push_back(s);
  return v;
}

uint64_t PrepareShootShape::C2_zero_dropped() const {
  const uint64_t n_eff = (K + m - 1) / m;
  uint64_t c2 = (m - 1) / p;  // prepare rounds: unchanged
  uint64_t bt1 = 1;           // b^{t−1}
  for (uint32_t t = 1; t <= Ts; ++t, bt1 *= b)
    if (n_eff > bt1) c2 += (n_eff - bt1 + bt1 * b - 1) / (bt1 * b);
  return c2;
}

PrepareShootShape prepare_shoot_shape(uint32_t K, uint32_t p) {
  if (K < 2) user_error("K = {} is too small: all-to-all encode needs K >= 2", K);
  if (p < 1) user_error("p = {} is invalid: p >= 1 ports", p);
  PrepareShootShape s;
  s.K = K;
  s.p = p;
  s.b = p + 1;
  uint64_t pw = 1;  // b^L
  while (pw * s.b < K) {
    pw *= s.b;
    ++s.L;
  }
  if (s.L % 2 == 0) {
    s.Tp = s.L / 2 + 1;
    s.Ts = s.L / 2;
  } else {
    s.Tp = s.Ts = (s.L + 1) / 2;
  }
  s.m = s.n = 1;
  for (uint32_t i = 0; i < s.Tp; ++i) s.m *= s.b;
  for (uint32_t i = 0; i < s.Ts; ++i) s.n *= s.b;
  return s;
}

ir::Plan prepare_shoot_schedule(const Spec& spec) {
  using namespace ir;
  validate_spec_basics(spec);
  if (spec.op != OpKind::Encode)
    user_error("prepare-and-shoot computes 'encode', not '{}'", op_name(spec.op));
  const PrepareShootShape sh = prepare_shoot_shape(spec.K, spec.p);
  const uint64_t K = spec.K, b = sh.b, m = sh.m, n = sh.n, lam = spec.lambda;
  const uint64_t mm = std::min<uint64_t>(m, K);
  // Round r occupies steps (r−1)λ+1 .. rλ: sent in the first, received and
  // combined in the last.
  auto send_step = [&](uint64_t r) { return static_cast<StepNo>((r - 1) * lam + 1); };
  auto recv_step = [&](uint64_t r) { return static_cast<StepNo>(r * lam); };
  Plan plan = make_plan(spec, static_cast<uint32_t>(sh.C1() * lam));
  const uint64_t tmp_per_port = sh.Ts > 0 ? n / b : 0;
  const SlotId w0 = static_cast<SlotId>(mm);
  const SlotId tmp0 = static_cast<SlotId>(mm + n);

  for (Program& prog : plan.ranks) {
    prog.num_slots = static_cast<uint32_t>(mm + n + spec.p * tmp_per_port);
    prog.inputs = {0};
    prog.outputs = {w0};
  }
  auto mod = [&](int64_t v) { return static_cast<Rank>(((v % static_cast<int64_t>(K)) + static_cast<int64_t>(K)) % static_cast<int64_t>(K)); };

  // Prepare.
  uint64_t held_stride = m;  // offsets held before round t are multiples of this
  for (uint32_t t = 1; t <= sh.Tp; ++t) {
    const uint64_t shift = held_stride / b;  // m / b^t
    const uint32_t ports = static_cast<uint32_t>(std::min<uint64_t>(spec.p, K - 1));
    for (Program& prog : plan.ranks) {
      const Rank k = prog.rank;
      Step& ss = prog.at(send_step(t));
      for (uint32_t rho = 1; rho <= ports; ++rho) {
        std::vector<Combo> payload;
        for (uint64_t i = 0; i < m && i < mm; i += held_stride) payload.push_back(unit(static_cast<SlotId>(i)));
        ss.sends.push_back(make_send(plan, prog, rho - 1, mod(int64_t(k) + int64_t(rho * shift)), std::move(payload)));
      }
    }
    for (Program& prog : plan.ranks) {
      const Rank k = prog.rank;
      Step& rs = prog.at(recv_step(t));
      for (uint32_t rho = 1; rho <= ports; ++rho) {
        std::vector<SlotId> into;
        for (uint64_t i = 0; i < m && i < mm; i += held_stride) into.push_back(static_cast<SlotId>(i + rho * shift));
        rs.recvs.push_back(make_recv(plan, prog, recv_step(t), rho - 1, mod(int64_t(k) - int64_t(rho * shift)), std::move(into)));
      }
    }
    held_stride = shift;
  }

  // Shoot initialisation, at the end of the last prepare round. The
  // coefficients are A[k−i][k+l·m]: left 0 here, filled by recode via
  // matrix_col.
  for (Program& prog : plan.ranks) {
    const Rank k = prog.rank;
    Step& st = prog.at(recv_step(sh.Tp));
    for (uint64_t l = 0; l < n; ++l) {
      std::vector<Term> terms;
      terms.reserve(l * m < K ? std::min(mm, K - l * m) : 0);
      for (uint64_t i = 0; i < mm && l * m + i < K; ++i) terms.push_back(Term{static_cast<SlotId>(i), 0});
      st.ops.push_back(make_op(prog, static_cast<SlotId>(w0 + l), std::move(terms), mod(int64_t(k) + int64_t(l * m))));
    }
  }

  // Shoot rounds.
  uint64_t bt1 = 1;  // b^{t−1}
  for (uint32_t t = 1; t <= sh.Ts; ++t, bt1 *= b) {
    const uint64_t delta = m * bt1;
    const uint64_t count = n / (bt1 * b);  // b^{Ts−t}
    const uint64_t r = sh.Tp + t;
    for (Program& prog : plan.ranks) {
      const Rank k = prog.rank;
      Step& ss = prog.at(send_step(r));
      for (uint32_t rho = 1; rho <= spec.p; ++rho) {
        const Rank to = mod(int64_t(k) + int64_t((rho * delta) % K));
        if (to == k) continue;  // local, handled with the receives
        std::vector<Combo> payload;
        for (uint64_t j = 0; j < count; ++j) payload.push_back(unit(static_cast<SlotId>(w0 + rho * bt1 + j * bt1 * b)));
        ss.sends.push_back(make_send(plan, prog, rho - 1, to, std::move(payload)));
      }
    }
    for (Program& prog : plan.ranks) {
      const Rank k = prog.rank;
      Step& rs = prog.at(recv_step(r));
      for (uint32_t rho = 1; rho <= spec.p; ++rho) {
        const Rank from = mod(int64_t(k) - int64_t((rho * delta) % K));
        if (from != k) {
          std::vector<SlotId> into;
          for (uint64_t j = 0; j < count; ++j) into.push_back(static_cast<SlotId>(tmp0 + (rho - 1) * tmp_per_port + j));
          rs.recvs.push_back(make_recv(plan, prog, recv_step(r), rho - 1, from, std::move(into)));
        }
      }
      for (uint32_t rho = 1; rho <= spec.p; ++rho) {
        const Rank from = mod(int64_t(k) - int64_t((rho * delta) % K));
        for (uint64_t j = 0; j < count; ++j) {
          const SlotId target = static_cast<SlotId>(w0 + j * bt1 * b);
          const SlotId src = from == k ? static_cast<SlotId>(w0 + rho * bt1 + j * bt1 * b)
                                       : static_cast<SlotId>(tmp0 + (rho - 1) * tmp_per_port + j);
          rs.ops.push_back(make_op(prog, target, {Term{target, 1}, Term{src, 1}}));
        }
      }
    }
  }
  return plan;
}

}  // namespace collplan::gen

namespace collplan::gen {

ir::Plan prepare_shoot(const Spec& spec) {
  ir::Plan plan = prepare_shoot_schedule(spec);
  passes::recode(plan, spec.matrix);
  return plan;
}

}  // namespace collplan::gen
