// The non-commutative (operand-order) checker for prefix plans.
//
// Over a field a prefix plan is linear and verify() (passes/verify.h) proves
// it. But the runtime must also replay prefix plans with any associative,
// possibly non-commutative user operator ⊕ (like MPI_Op, see
// runtime/user_op.h), and an operator without commutativity sees more than
// the sum: c := v_1 + v_0 is a correct linear prefix and a wrong scan for
// matrix products. verify_order() proves that a plan computes every item's
// scan for EVERY associative operator, by tracking what each slot holds as
// an ordered interval of global inputs instead of a coefficient vector.
//
// ─── Rules ───────────────────────────────────────────────────────────────────
//
// Items are numbered globally, rank-major (postcondition.h): rank k's item j
// is g = Σ_{r<k} counts[r] + j. Each slot value is one of
//   no value   (the result of an empty combination), or
//   [lo, hi]   v_lo ⊕ v_{lo+1} ⊕ … ⊕ v_hi, a contiguous interval in order.
// Rank k's i-th input slot starts as [g, g]. Every Combo (send payload
// element or Op) is read as "t_1 ⊕ t_2 ⊕ … ⊕ t_m", folded left to right:
//   - every coefficient must be exactly 1 (a coefficient has no meaning for a
//     user operator; 0 too is refused, the term would have to be dropped);
//   - m = 0 gives "no value": ⊕ has no identity, so an empty combination is
//     not "zero" but "nothing here" (MPI_Exscan's undefined rank-0 result);
//   - m = 1 copies the term's value, "no value" included;
//   - m ≥ 2: every term must hold an interval, and each must start right
//     after the previous one ends ([a, b] then [b+1, c] gives [a, c]):
//     a gap, an overlap, or a term that comes earlier than the accumulated
//     interval is an error. "No value" may not be combined.
// After the last step, output j of rank k (item g) must be [0, g] for an
// inclusive scan, [0, g−1] for an exclusive one (spec.exclusive), and "no
// value" for item 0 of an exclusive scan — that is the only place "no value"
// is accepted.
//
// A plan that passes is correct for every associative ⊕, in particular over
// every field, so it also passes verify(); the converse fails (operand
// order). verify_order() first runs verify_structure(plan) (timing, ports,
// matching, no read before write), whose errors are VerifyErrors too.
//
// ─── Errors ──────────────────────────────────────────────────────────────────
//
// UserError when plan.spec.op is not Prefix. VerifyError naming rank, step,
// the op or send (port, element), the slot and the intervals, e.g.
//   "rank 3 step 2 op 0 (slot 5 := ...): combines [0,2] then [4,4] (term 1, slot 3): not adjacent (items 3..3 missing)"
//   "rank 2 step 1 send 0 (port 0 to rank 3, element 0): has coefficient 3 on slot 1; ..."
//   "rank 4 output 0 (slot 7, item 4) is [1,4], the inclusive prefix needs [0,4]"
#pragma once

#include "ir/plan.h"

namespace collplan::passes {

void verify_order(const ir::Plan& plan);

}  // namespace collplan::passes
