#include "passes/recode.h"

#include <map>
#include <tuple>

#include "matrix/matrix.h"
#include "matrix/postcondition.h"
#include "ir/simulate.h"
#include "support/error.h"

namespace collplan::passes {

namespace {

using namespace ir;

// Value: the global input index a slot holds unmodified, or −1.
struct PureInputs {
  using Value = int64_t;
  const Plan& plan;
  const Postcondition& pc;
  const Matrix& A;
  std::map<std::tuple<Rank, size_t, size_t>, std::vector<Elem>> coeffs;  // (rank, step index, op index)

  Value undefined() { return -1; }
  Value input(Rank k, uint32_t i) { return pc.input_offset[k] + i; }
  Value eval(Rank, const std::vector<Term>& terms, const std::vector<Value>& slots) {
    return terms.size() == 1 && terms[0].coeff == 1 ? slots[terms[0].slot] : -1;
  }
  void on_op(Rank k, const Step& st, size_t oi, const std::vector<Value>& slots) {
    const Op& op = st.ops[oi];
    if (op.matrix_col == kNoCol) return;
    const size_t si = static_cast<size_t>(&st - plan.ranks[k].steps.data());
    if (op.matrix_col >= A.cols)
      user_error("rank {} step {} op {}: matrix column {} is outside the {}x{} matrix", k, st.t, oi, op.matrix_col, A.rows, A.cols);
    std::vector<Elem> cs;
    cs.reserve(op.terms.size());
    for (const Term& t : op.terms) {
      const int64_t r = slots[t.slot];
      if (r < 0 || static_cast<uint64_t>(r) >= A.rows)
        user_error("rank {} step {} op {}: slot {} does not hold a single input, so the plan cannot be re-coded", k, st.t, oi, t.slot);
      cs.push_back(A.at(static_cast<uint32_t>(r), op.matrix_col));
    }
    coeffs.emplace(std::make_tuple(k, si, oi), std::move(cs));
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
  const Matrix A = materialize(ms, plan.spec.field);
  plan.spec.matrix = ms;
  const Postcondition pc = postcondition(plan.spec);
  PureInputs dom{plan, pc, A, {}};
  simulate(plan, dom);
  for (auto& [key, cs] : dom.coeffs) {
    const auto& [k, si, oi] = key;
    Op& op = plan.ranks[k].steps[si].ops[oi];
    for (size_t i = 0; i < cs.size(); ++i) op.terms[i].coeff = cs[i];
  }
}

}  // namespace collplan::passes
