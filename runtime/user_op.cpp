#include "runtime/user_op.h"

#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "passes/verify.h"
#include "passes/verify_order.h"
#include "passes/verify_reduction.h"
#include "runtime/engine.h"
#include "runtime/op_program.h"
#include "support/error.h"

namespace collplan::rt {

namespace {

using namespace ir;

// A reduction plan must be exact for any ⊕, and ordered for one that does
// not commute (runtime/user_op.h). A UserError, not a VerifyError: the plan
// may be a right field plan, just not one for this operator.
void require_fit_for(const Plan& plan, const UserOp& op) {
  const passes::ReductionProperties rp = passes::reduction_properties(plan);  // includes verify_structure
  if (!rp.exact)
    user_error("user-operator replay: this {} plan ({}) is right over its field only, not for an operator: {}",
               op_name(plan.spec.op), plan.spec.algorithm, rp.why_not_exact);
  if (!op.commutative && !rp.ordered)
    user_error("user-operator replay: this {} plan ({}) does not combine in rank order, which a non-commutative "
               "operator needs: {}; if the operator commutes, set UserOp::commutative",
               op_name(plan.spec.op), plan.spec.algorithm, rp.why_not_ordered);
}

}  // namespace

void run_user_op_threads(const Plan& plan, const UserOp& op, size_t count,
                         const std::vector<std::vector<const void*>>& inputs,
                         const std::vector<std::vector<void*>>& outputs, const UserOpOptions& opt) {
  if (!passes::is_reduction_op(plan.spec.op))
    user_error("user-operator replay takes reduce, allreduce, reduce-scatter and prefix plans, this plan is {}",
               op_name(plan.spec.op));
  if (!op.fn) user_error("user operator: the function pointer is null");
  if (op.elem_size == 0) user_error("user operator: elem_size is 0 (needs at least 1 byte)");
  if (count == 0) user_error("user operator: count is 0 (needs at least 1 element)");
  if (count > SIZE_MAX / 4 / op.elem_size)
    user_error("user operator: count {} × elem_size {} bytes is too large", count, op.elem_size);
  // Before the order and fitness checks, so that the caller learns the plan
  // is of the wrong kind, not merely wrong.
  for (const Program& prog : plan.ranks) require_unit_coefficients(prog);
  if (!opt.verify)
    ir::verify_structure(plan);
  else if (plan.spec.op == OpKind::Prefix)
    passes::verify_order(plan);  // includes verify_structure
  else
    require_fit_for(plan, op);

  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  if (inputs.size() != K || outputs.size() != K)
    user_error("user operator replay: {} input lists and {} output lists given, the plan has {} ranks", inputs.size(),
               outputs.size(), K);
  for (Rank r = 0; r < K; ++r) {
    if (inputs[r].size() != plan.ranks[r].inputs.size())
      user_error("user operator replay: rank {} has {} inputs in the plan, {} given", r, plan.ranks[r].inputs.size(),
                 inputs[r].size());
    if (outputs[r].size() != plan.ranks[r].outputs.size())
      user_error("user operator replay: rank {} has {} outputs in the plan, {} given", r, plan.ranks[r].outputs.size(),
                 outputs[r].size());
    for (size_t i = 0; i < inputs[r].size(); ++i)
      if (!inputs[r][i]) user_error("user operator replay: rank {} input {} is a null pointer", r, i);
    for (size_t j = 0; j < outputs[r].size(); ++j)
      if (!outputs[r][j]) user_error("user operator replay: rank {} output {} is a null pointer", r, j);
  }

  // The programs and their piece lists are built here, before any rank
  // starts; each program sizes its rows in its first (only) run.
  std::vector<OpProgram> progs;
  progs.reserve(K);
  std::vector<std::vector<InPiece>> in(K);
  std::vector<std::vector<OutPiece>> out(K);
  const size_t row = count * op.elem_size;
  ThreadsWorld world(K, opt.threads);
  for (Rank r = 0; r < K; ++r) {
    progs.emplace_back(plan.spec, plan.num_steps, plan.ranks[r]);
    for (const void* p : inputs[r]) in[r].push_back({p, row});
    for (void* p : outputs[r]) out[r].push_back({p, row});
    world.reserve(r, mailbox_capacity(plan, r));
  }

  std::mutex mu;
  std::exception_ptr first;
  bool first_is_abort = false;
  auto worker = [&](Rank r) {
    std::exception_ptr err;
    bool is_abort = false;
    try {
      progs[r].run(world.endpoint(r), op, count, in[r].data(), out[r].data());
    } catch (const RunAborted&) {
      err = std::current_exception();
      is_abort = true;
    } catch (...) {
      err = std::current_exception();
    }
    if (err && !is_abort) world.abort();
    if (err) {
      std::lock_guard lk(mu);
      // Keep the root cause: a real failure outranks the aborts it caused.
      if (!first || (first_is_abort && !is_abort)) {
        first = err;
        first_is_abort = is_abort;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(K);
  try {
    for (Rank r = 0; r < K; ++r) threads.emplace_back(worker, r);
  } catch (...) {
    world.abort();
    for (auto& t : threads) t.join();
    throw;
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace collplan::rt
