// Replaying a reduce, allreduce, reduce-scatter or prefix plan with a
// caller-supplied associative operator ⊕ (like MPI_Op) on the in-process
// threads transport.
//
// The operator: fn(a, b, out, count, ctx) sets out[i] = a[i] ⊕ b[i] for i <
// count, each element elem_size bytes; `a` is the LEFT (earlier items)
// operand. ⊕ must be associative and need not have an identity. out may
// alias a (the replay accumulates in place), never b. a, b and out are
// aligned to at least alignof(std::max_align_t), so fn may view them as
// arrays of any type of size elem_size. fn is called concurrently from one
// thread per rank and must not throw; ctx is passed through untouched.
//
// Which plans: a field plan may use a term twice, cancel one, or combine
// operands out of rank order, none of which an operator ⊕ undoes
// (passes/verify_reduction.h). So
//   - prefix plans must keep operand order (passes/verify_order.h), whatever
//     UserOp::commutative says: ⊕ may be non-commutative;
//   - reduce, allreduce and reduce-scatter plans must be exact (each output
//     the required items, each once), and also ordered (operands in rank
//     order: the result is x_0 ⊕ x_1 ⊕ … ⊕ x_{K−1}, as MPI defines it)
//     unless UserOp::commutative says ⊕ commutes.
// Identical bits at every rank are not required: an allreduce plan that is
// not "consistent" gives every rank a right result, but for floating point
// not necessarily the same one.
//
// Every combination is a left fold of its terms. An output whose result is
// "no value" (an empty combination, such as item 0 of an exclusive scan) is
// left untouched. UserError when the plan is of another operation, when a
// combination has a coefficient other than 1, when (unless
// UserOpOptions::verify is false) a reduction plan is not exact, or not
// ordered for a non-commutative ⊕ (naming the first offending combination
// or output), or when the arguments do not fit the plan (list sizes, null
// pointers, elem_size or count 0); VerifyError when the plan's structure
// (passes/verify.h) or, unless UserOpOptions::verify is false, a prefix
// plan's operand order is wrong. A transport failure is a UserError naming
// rank, step, peer and port of the rank that failed first.
//
// Inputs and outputs are those of spec.cpp's rank_io: reduce, allreduce n
// inputs per rank (the root's n outputs, every rank's), reduce-scatter K·n
// inputs (blocks j·n … j·n+n−1 for rank j) and n outputs, prefix counts[k]
// items (or 1) in and out.
//
// How the replay works: docs/runtime.md, "Engine internals".
#pragma once

#include <cstddef>
#include <vector>

#include "ir/plan.h"
#include "runtime/op_program.h"
#include "runtime/transport/threads.h"

namespace collplan::rt {

// UserOpFn and UserOp (the operator) are declared in runtime/op_program.h,
// the one-rank replay this file runs on every thread.

struct UserOpOptions {
  ThreadsOptions threads;
  // Prove the plan fit for the operator before replaying (verify_order for
  // prefix, reduction_properties otherwise). Only tests turn this off.
  bool verify = true;
};

// Replays `plan` with ⊕ = op over vectors of `count` elements: inputs[r][i]
// is rank r's i-th input (count · elem_size bytes), outputs[r][j] receives
// its j-th result (left untouched when the result is "no value").
void run_user_op_threads(const ir::Plan& plan, const UserOp& op, size_t count,
                         const std::vector<std::vector<const void*>>& inputs,
                         const std::vector<std::vector<void*>>& outputs, const UserOpOptions& opt = {});

}  // namespace collplan::rt
