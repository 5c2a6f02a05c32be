#include "passes/recode.h"

#include <span>

#include "matrix/matrix.h"
#include "matrix/postcondition.h"
#include "ir/simulate.h"
#include "support/error.h"

namespace collplan::passes {

namespace {

using namespace ir;

// Value: the global input index a slot holds unmodified, or −1.
//
// The coefficients are written into the plan while it is simulated (an
// encode of K ranks has K^2 of them; collecting them first would hold a
// second copy). An op's terms are read by its own evaluation, right after
// on_op, and never again, so its coefficients are written at the next on_op
// (or by flush() at the end): the analysis sees the plan as it was given.
struct PureInputs {
  using Value = int64_t;
  Plan& plan;
  const std::vector<uint32_t>& input_offset;  // rank-major global input numbering, size R+1
  const Matrix& A;
  Op* pending = nullptr;
  std::vector<Elem> pending_coeffs;

  Value undefined() { return -1; }
  Value input(Rank k, uint32_t i) { return input_offset[k] + i; }
  Value eval(Rank, std::span<const Term> terms, std::span<const Value> slots) {
    return terms.size() == 1 && terms[0].coeff == 1 ? slots[terms[0].slot] : -1;
  }
  void flush() {
    if (!pending) return;
    for (size_t i = 0; i < pending_coeffs.size(); ++i) pending->terms[i].coeff = pending_coeffs[i];
    pending = nullptr;
  }
  void on_op(Rank k, const Step& st, size_t oi, std::span<const Value> slots) {
    flush();
    const Op& op = st.ops[oi];
    if (op.matrix_col == kNoCol) return;
    if (op.matrix_col >= A.cols)
      user_error("rank {} step {} op {}: matrix column {} is outside the {}x{} matrix", k, st.t, oi, op.matrix_col, A.rows, A.cols);
    pending_coeffs.clear();
    for (const Term& t : op.terms) {
      const int64_t r = slots[t.slot];
      if (r < 0 || static_cast<uint64_t>(r) >= A.rows)
        user_error("rank {} step {} op {}: slot {} does not hold a single input, so the plan cannot be re-coded", k, st.t, oi, t.slot);
      pending_coeffs.push_back(A.at(static_cast<uint32_t>(r), op.matrix_col));
    }
    const size_t si = static_cast<size_t>(&st - plan.ranks[k].steps.data());
    pending = &plan.ranks[k].steps[si].ops[oi];
  }
};

}  // namespace

bool is_recodable(const Plan& plan) {
  for (const Program& p : plan.ranks)
    for (const Step& st : p.steps)
      for (const Op& op : st.ops)
        if (op.matrix_col != kNoCol) return true;
  return false;
}

void recode(Plan& plan, const MatrixSpec& ms) {
  if (plan.spec.blocks > 1)
    user_error("plan '{}' carries blocks = {} (a widened plan, passes/widen.h) and is not re-codable: re-code its "
               "one-block plan, or compile again for the new matrix",
               plan.spec.algorithm, plan.spec.blocks);
  if (!is_recodable(plan))
    user_error("plan '{}' has no matrix-bound ops: only universal plans (prepare-and-shoot) can be re-coded", plan.spec.algorithm);
  if (ms.rows != plan.spec.matrix.rows || ms.cols != plan.spec.matrix.cols)
    user_error("the new matrix is {}x{}, the plan needs {}x{}", ms.rows, ms.cols, plan.spec.matrix.rows, plan.spec.matrix.cols);
  plan.spec.matrix = ms;
  // The matrix, its shape and digest checked against the spec as
  // postcondition() checks them, without building the map beside it.
  const Matrix A = coded_matrix(plan.spec);
  const std::vector<RankIO> ios = rank_ios(plan.spec);
  std::vector<uint32_t> input_offset(ios.size() + 1, 0);
  for (size_t k = 0; k < ios.size(); ++k) input_offset[k + 1] = input_offset[k] + ios[k].inputs;
  PureInputs dom{plan, input_offset, A, nullptr, {}};
  simulate(plan, dom);
  dom.flush();
}

}  // namespace collplan::passes
