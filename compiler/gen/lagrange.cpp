// Lagrange matrices (encode paper §VI, Thm 4; journal Remark 9;
// docs/structured-matrices.md).
//
// A = V(ω)^{-1}·V(α): processor k holds f(ω_k) and wants f(α_k). Inverse
// draw-and-loose on ω (interpolation: processor r gets the coefficient f_r),
// then draw-and-loose on α (evaluation), composed in sequence. Each point
// set may be its structure up to a column permutation (one extra step each).
//
// Costs: C1 = C1(ω) + C1(α), C2 = C2(ω) + C2(α), with C(·) the
// draw-and-loose costs of gen/draw_loose.cpp.
#include "gen/vandermonde_plans.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

struct LagrangeParts {
  VandermondeStructure omega, alpha;
};

LagrangeParts parts(const Spec& s, const passes::CostModel& cm) {
  if (std::string why = structured_spec_why_not("lagrange", s, {"lagrange"}); !why.empty()) throw UserError(why);
  const uint32_t K = s.K;
  const std::vector<Elem> omega(s.matrix.points.begin(), s.matrix.points.begin() + K);
  const std::vector<Elem> alpha(s.matrix.points.begin() + K, s.matrix.points.end());
  return {structure_or_error("lagrange: omega", s.field, omega, s.p, cm, true, false),
          structure_or_error("lagrange: alpha", s.field, alpha, s.p, cm, true, false)};
}

}  // namespace

const StructuredGenerator& lagrange_generator() {
  static const StructuredGenerator g = [] {
    StructuredGenerator out;
    out.why_not = [](const Spec& s, const passes::CostModel& cm) { return reason_of([&] { parts(s, cm); }); };
    out.cost = [](const Spec& s, const passes::CostModel& cm) {
      const LagrangeParts lp = parts(s, cm);
      return interpolate_evaluate_cost(lp.omega, lp.alpha, s.p);
    };
    out.build = [](const Spec& s, const passes::CostModel& cm) {
      const LagrangeParts lp = parts(s, cm);
      return interpolate_evaluate_plan(s, lp.omega, lp.alpha, {}, {}, "omega", "alpha");
    };
    return out;
  }();
  return g;
}

}  // namespace collplan::gen
