// Repair and decode of a Reed–Solomon code (matrix/codes.h, either form)
// through one structured all-to-all encode among the K helpers.
//
// Every symbol of the code is an evaluation c_j = p(α_j) of a polynomial p
// of degree < K at the code's points α (rs_points). With K helpers H:
//   repair, systematic decode  the targets are evaluations too (a lost
//       point, or a data point α_j, j < K), so output o is
//       Σ_h c_h·ℓ_h(α_target): the Lagrange matrix V(α_H)^{-1}·V(α_T);
//   non-systematic decode  x is p's coefficient vector, x = c_H·V(α_H)^{-1}.
// Each output symbol is assigned to one helper (the receiver itself when it
// is a helper); a helper without a symbol computes its own point (a unit
// column). The K×K matrix goes to the encode generators as the "lagrange"
// family (ω = α_H, α = the assigned targets) or, for the non-systematic
// decode with the identity assignment, "inverse-draw-loose" when α_H has
// that structure; the registry picks the structured generator
// where the points allow it (docs/structured-matrices.md) and
// prepare-and-shoot elsewhere. A symbol computed at a helper that is not its
// receiver is then sent there: each helper sends at most one message, a
// receiver of c such symbols takes ⌈c/p⌉ steps.
// C1 = C1(encode) + (⌈c_max/p⌉ + λ − 1 when a symbol moves), C2 likewise
// (n blocks per moved message).
#include <algorithm>

#include <fmt/format.h>

#include "gen/decentralized.h"
#include "gen/registry.h"
#include "gen/repair.h"
#include "gen/repair_build.h"
#include "matrix/codes.h"
#include "matrix/postcondition.h"
#include "matrix/structured.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// The code's points when its matrix is collplan's RS code (either form).
std::optional<std::vector<Elem>> rs_points_of(const Spec& spec) {
  const Field& f = spec.field;
  if (spec.N > f.size() - 1 || spec.matrix.source.rfind("Reed-Solomon", 0) != 0) return std::nullopt;
  const Matrix M = materialize(spec.matrix, f);
  const bool systematic = M.cols != spec.N;
  if (!(M == (systematic ? rs_code(spec.N, spec.K, f).A : rs_generator(spec.N, spec.K, f)))) return std::nullopt;
  return rs_points(spec.N, spec.K, f);
}

struct Layout {
  std::vector<int32_t> symbol_of;  // per helper i: the output symbol it computes, or -1
  std::vector<uint32_t> at;        // per output symbol: the helper index computing it
  uint32_t move_steps = 0;         // ⌈c_max/p⌉ for the moved symbols (0: none moves)
};

Layout layout(const Spec& spec, const RepairMap& m) {
  const uint32_t K = spec.K, syms = static_cast<uint32_t>(m.out_rank.size());
  Layout l;
  l.symbol_of.assign(K, -1);
  l.at.assign(syms, UINT32_MAX);
  auto helper = [&](uint32_t rank) {
    const auto it = std::lower_bound(spec.helpers.begin(), spec.helpers.end(), rank);
    return it != spec.helpers.end() && *it == rank ? static_cast<int32_t>(it - spec.helpers.begin()) : -1;
  };
  for (uint32_t o = 0; o < syms; ++o)
    if (const int32_t i = helper(m.out_rank[o]); i >= 0 && l.symbol_of[i] < 0) l.symbol_of[i] = o, l.at[o] = i;
  uint32_t next = 0;
  std::vector<uint32_t> incoming(spec.N, 0);
  for (uint32_t o = 0; o < syms; ++o) {
    if (l.at[o] != UINT32_MAX) continue;
    while (l.symbol_of[next] >= 0) ++next;
    l.symbol_of[next] = o, l.at[o] = next;
    ++incoming[m.out_rank[o]];
  }
  const uint32_t most = *std::max_element(incoming.begin(), incoming.end());
  l.move_steps = (most + spec.p - 1) / spec.p;
  return l;
}

// The K×K encode spec among the helpers (local rank i = helpers[i]).
Spec encode_spec(const Spec& spec, const std::vector<Elem>& alpha, const RepairMap& m, const Layout& l) {
  const Field& f = spec.field;
  const uint32_t K = spec.K;
  const bool coefficients = spec.op == OpKind::Decode && spec.matrix.cols == spec.N;  // non-systematic decode
  std::vector<Elem> omega;
  for (uint32_t h : spec.helpers) omega.push_back(alpha[h]);
  MatrixSpec ms;
  if (!coefficients) {
    std::vector<Elem> pts = omega;
    for (uint32_t i = 0; i < K; ++i) {
      const int32_t o = l.symbol_of[i];
      pts.push_back(o < 0 ? omega[i] : alpha[m.out_col[o]]);  // repair: lost rank's point; decode: x_j = p(α_j)
    }
    ms = matrix_with_points("lagrange", K, pts, f);
  } else {
    bool identity = true;
    for (uint32_t i = 0; i < K; ++i) identity = identity && l.symbol_of[i] >= 0 && m.out_col[l.symbol_of[i]] == i;
    bool structured = false;
    if (identity && !detect_all(f, omega, false).empty()) {
      try {
        ms = matrix_with_points("inverse-draw-loose", K, omega, f);
        structured = true;
      } catch (const UserError&) {
        structured = false;  // not in the family's canonical form: the explicit matrix below
      }
    }
    if (!structured) {
      Matrix A = Matrix::zeros(K, K);  // column i: F's column of the symbol helper i computes
      for (uint32_t i = 0; i < K; ++i)
        for (uint32_t r = 0; r < K; ++r) A.at(r, i) = m.F.at(r, l.symbol_of[i]);
      ms = matrix_explicit(A, f, "decode matrix V(alpha_H)^-1, columns assigned to helpers");
    }
  }
  Spec s = make_encode_spec(K, spec.p, spec.lambda, f, ms);
  s.blocks = spec.blocks;
  return s;
}

}  // namespace

std::string repair_lagrange_why_not(const Spec& spec) {
  if (spec.K < 2) return "the helpers' encode needs K >= 2";
  if (spec.helpers.size() != spec.K)
    return fmt::format("it encodes among exactly K = {} helpers, the spec has {}", spec.K, spec.helpers.size());
  const size_t syms = spec.op == OpKind::Repair ? spec.lost.size() : spec.K;
  if (syms > spec.K) return fmt::format("{} output symbols are more than the K = {} helpers", syms, spec.K);
  if (!rs_points_of(spec)) return "the code is not collplan's Reed-Solomon code (--code rs)";
  return "";
}

ir::Plan repair_lagrange(const Spec& spec, const passes::CostModel& cm) {
  if (const std::string why = repair_lagrange_why_not(spec); !why.empty())
    user_error("repair-lagrange does not apply: {}", why);
  detail::RepairAssembly a = detail::repair_start(spec, "repair-lagrange");
  const std::vector<Elem> alpha = *rs_points_of(spec);
  const Layout l = layout(spec, a.map);
  const Spec es = encode_spec(spec, alpha, a.map, l);
  const ir::Plan part = block_encode(es, cm);
  std::vector<std::vector<passes::Held>> in(spec.K);
  for (uint32_t i = 0; i < spec.K; ++i) in[i] = a.held[spec.helpers[i]];
  const std::vector<ir::Rank> ranks(spec.helpers.begin(), spec.helpers.end());
  const auto out = passes::place(a.plan, part, ranks, 0, in);
  a.plan.num_steps = part.num_steps;
  a.phases.push_back(fmt::format("steps 1-{}: {} of the {} matrix among the {} helpers", part.num_steps,
                                 part.spec.algorithm, es.matrix.family, spec.K));
  // Symbols computed away from their receiver travel there.
  std::vector<uint32_t> sent_to(spec.N, 0);
  const uint32_t offset = a.plan.num_steps;
  bool moved = false;
  for (uint32_t o = 0; o < a.out.size(); ++o) {
    const uint32_t i = l.at[o], from = spec.helpers[i], to = a.map.out_rank[o];
    if (from == to) {
      a.out[o] = out[i];
      continue;
    }
    moved = true;
    const uint32_t k = sent_to[to]++;
    const ir::StepNo t = offset + k / spec.p + 1, tr = t + spec.lambda - 1;
    const ir::Port port = k % spec.p;
    ir::Program& src = a.plan.ranks[from];
    std::vector<ir::SlotId> vals;
    for (const passes::Held& v : out[i]) vals.push_back(passes::materialize_held(a.plan, from, v, std::max(offset, 1u)));
    std::vector<ir::Combo> payload;
    for (ir::SlotId s : vals) payload.push_back(ir::unit(s));
    a.plan.num_steps = std::max(a.plan.num_steps, tr);
    src.at_any(t).sends.push_back(ir::make_send(a.plan, src, port, to, std::move(payload)));
    ir::Program& dst = a.plan.ranks[to];
    std::vector<ir::SlotId> into;
    for (uint32_t b = 0; b < a.n; ++b) into.push_back(dst.new_slot());
    dst.at_any(tr).recvs.push_back(ir::make_recv(a.plan, dst, tr, port, from, into));
    for (ir::SlotId s : into) a.out[o].push_back(passes::Held{s, 1});
  }
  if (moved)
    a.phases.push_back(fmt::format("steps {}-{}: symbols computed at another helper sent to their receivers",
                                   offset + 1, a.plan.num_steps));
  return detail::repair_finish(a);
}

PostalSplitCost repair_lagrange_estimate(const Spec& spec, const passes::CostModel& cm) {
  if (!repair_lagrange_why_not(spec).empty()) return {0, 0, UINT32_MAX, UINT64_MAX};
  const RepairMap m = repair_map(spec);
  const Layout l = layout(spec, m);
  const Spec es = encode_spec(spec, *rs_points_of(spec), m, l);
  const PostalSplitCost e = choose_generator(es, cm).estimate(es, cm);
  if (l.move_steps == 0) return e;  // every symbol is computed at its receiver
  return {0, 0, e.C1 + l.move_steps + spec.lambda - 1, e.C2 + uint64_t{l.move_steps} * spec.blocks};
}

}  // namespace collplan::gen
