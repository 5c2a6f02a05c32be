// Cauchy-like matrices and the systematic part of generalized Reed-Solomon
// codes (journal §VI, Thm 6–9; docs/structured-matrices.md).
//
// C[i][j] = c_i·d_j/(x_i − y_j) = (D1·V(x)^{-1}·V(y)·D2)[i][j] with
// D1 = diag(−c_i·Π_{l≠i}(x_i − x_l)), D2 = diag(d_j/Π_l(y_j − x_l)): scale the
// inputs by D1 (folded into their first use, no step), inverse draw-and-loose
// on x, draw-and-loose on y, scale the outputs by D2 (a local op). The
// systematic part of the GRS [2K, K] code [V(x)diag(v) | V(y)diag(v')] is
// A = diag(v)^{-1}·V(x)^{-1}·V(y)·diag(v'): the same with D1 = diag(1/v_i),
// D2 = diag(v'_j).
//
// Costs: C1 = C1(x) + C1(y), C2 = C2(x) + C2(y) (draw-and-loose costs): twice
// a Vandermonde, so the cost model often prefers prepare-and-shoot.
#include "gen/vandermonde_plans.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

struct CauchyParts {
  VandermondeStructure x, y;
  std::vector<Elem> d1, d2;
};

CauchyParts parts(const Spec& s, const passes::CostModel& cm, bool with_factors) {
  if (std::string why = structured_spec_why_not("cauchy", s, {"cauchy", "rs-systematic"}); !why.empty())
    throw UserError(why);
  const uint32_t K = s.K;
  auto list = [&](uint32_t i) {
    return std::vector<Elem>(s.matrix.points.begin() + i * K, s.matrix.points.begin() + (i + 1) * K);
  };
  CauchyParts cp{structure_or_error("cauchy: x", s.field, list(0), s.p, cm, true, false),
                 structure_or_error("cauchy: y", s.field, list(1), s.p, cm, true, false),
                 {},
                 {}};
  if (!with_factors) return cp;
  const Field& f = s.field;
  if (s.matrix.family == "cauchy") {
    CauchyFactors fac = cauchy_factors(f, list(0), list(1), list(2), list(3));
    cp.d1 = std::move(fac.d1);
    cp.d2 = std::move(fac.d2);
  } else {
    for (Elem v : list(2)) cp.d1.push_back(f.inv(v));
    cp.d2 = list(3);
  }
  return cp;
}

}  // namespace

const StructuredGenerator& cauchy_generator() {
  static const StructuredGenerator g = [] {
    StructuredGenerator out;
    out.why_not = [](const Spec& s, const passes::CostModel& cm) { return reason_of([&] { parts(s, cm, false); }); };
    out.cost = [](const Spec& s, const passes::CostModel& cm) {
      const CauchyParts cp = parts(s, cm, false);
      return interpolate_evaluate_cost(cp.x, cp.y, s.p);
    };
    out.build = [](const Spec& s, const passes::CostModel& cm) {
      const CauchyParts cp = parts(s, cm, true);
      return interpolate_evaluate_plan(s, cp.x, cp.y, cp.d1, cp.d2, "x", "y");
    };
    return out;
  }();
  return g;
}

}  // namespace collplan::gen
