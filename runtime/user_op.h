// Replaying a prefix plan with a caller-supplied associative operator ⊕
// (like MPI_Op) on the in-process threads transport. Prefix plans keep
// operand order, so ⊕ need not be commutative.
//
// The operator: fn(a, b, out, count, ctx) sets out[i] = a[i] ⊕ b[i] for i <
// count, each element elem_size bytes; `a` is the LEFT (earlier items)
// operand. ⊕ must be associative and need not have an identity. out may
// alias a (the replay accumulates in place), never b. a, b and out are
// aligned to at least alignof(std::max_align_t), so fn may view them as
// arrays of any type of size elem_size. fn is called concurrently from one
// thread per rank and must not throw; ctx is passed through untouched.
//
// Every combination is a left fold of its terms. An output whose result is
// "no value" (an empty combination, such as item 0 of an exclusive scan) is
// left untouched. UserError when the plan is not a prefix plan, when a
// combination has a coefficient other than 1, or when the arguments do not
// fit the plan (list sizes, null pointers, elem_size or count 0); VerifyError
// when the plan's structure (passes/verify.h) or, unless
// UserOpOptions::verify is false, its operand order (passes/verify_order.h)
// is wrong. A transport failure is a UserError naming rank, step, peer and
// port of the rank that failed first.
//
// How the replay works: docs/runtime.md, "Engine internals".
#pragma once

#include <cstddef>
#include <vector>

#include "ir/plan.h"
#include "runtime/transport/threads.h"

namespace collplan::rt {

// out[i] = a[i] ⊕ b[i] for count elements of elem_size bytes; `a` is the
// earlier (left) operand. out may alias a.
using UserOpFn = void (*)(const void* a, const void* b, void* out, size_t count, void* ctx);

struct UserOp {
  UserOpFn fn = nullptr;
  void* ctx = nullptr;
  size_t elem_size = 0;  // bytes per element
};

struct UserOpOptions {
  ThreadsOptions threads;
  // Run verify_order() before replaying. Only tests turn this off.
  bool verify = true;
};

// Replays `plan` with ⊕ = op over vectors of `count` elements: inputs[r][i]
// is rank r's i-th item (count · elem_size bytes), outputs[r][j] receives its
// j-th result (left untouched when the result is "no value").
void run_user_op_threads(const ir::Plan& plan, const UserOp& op, size_t count,
                         const std::vector<std::vector<const void*>>& inputs,
                         const std::vector<std::vector<void*>>& outputs, const UserOpOptions& opt = {});

}  // namespace collplan::rt
