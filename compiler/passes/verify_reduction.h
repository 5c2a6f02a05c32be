// Which reduction plans are valid for which operators, and which give
// identical bits at every rank.
//
// verify() (passes/verify.h) proves a reduce, allreduce, reduce-scatter or
// prefix plan as a FIELD computation. Replaying it with an MPI-style
// operator ⊕ (a double SUM, MAX on ints, MINLOC, a user operator) needs
// more: over GF(2^m) x + x = 0, so a plan may use a term twice or cancel one
// ((a+b)+b = a), which no such ⊕ undoes; a non-commutative ⊕ needs the
// operands in rank order; and floating-point + is commutative bitwise but
// not associative, so ranks that are to hold the same result must compute
// it by the same expression tree to get the same bits.
// reduction_properties() says which of the three holds, and why not.
//
// ─── Items and results ───────────────────────────────────────────────────────
//
// Every input slot starts as one item of one result (spec.cpp rank_io):
//   reduce, allreduce  rank r's input b is item r of result b (block b);
//   reduce-scatter     rank r's input i is item r of result i (block i goes
//                      to rank i / n as its block i mod n);
//   prefix             rank k's input j is item g = Σ_{r<k} counts[r] + j of
//                      the single result sequence (as in verify_order.h).
// The required value of an output is its result's items 0..K−1 in rank
// order (x_0 ⊕ x_1 ⊕ … ⊕ x_{K−1}, as MPI defines a reduction), for prefix
// items 0..g (inclusive) or 0..g−1 (exclusive; item 0 of an exclusive scan
// must hold "no value", the only place that is accepted).
//
// ─── Rules ───────────────────────────────────────────────────────────────────
//
// Every Combo (send payload element or Op) is read as t_1 ⊕ t_2 ⊕ … ⊕ t_m,
// folded left to right, exactly as verify_order.h and the user-operator
// replay read it: m = 0 gives "no value", m = 1 copies, m ≥ 2 combines.
//
// exact: every coefficient is 1; no combination joins items of two results
//   or joins two values that share an item (a duplicate: over a field it may
//   cancel, for ⊕ it never does); no combination joins "no value"; and every
//   output holds exactly its required set. A combination is judged even if
//   its value is never used: the replay computes it all the same, and no
//   generator forms such a value. Exact ⇒ correct for every associative and
//   commutative ⊕ (MPI's predefined operators).
// ordered: exact, and every combination with m ≥ 2 joins adjacent intervals
//   in increasing item order ([a,b] then [b+1,c]) — verify_order's rule.
//   Ordered ⇒ correct for every associative ⊕, commutative or not (MPI_Op
//   created with commute = 0).
// consistent: every result that several outputs hold (allreduce: block b at
//   every rank) is computed by the same expression tree at each of them, up
//   to swapping the two operands of a node. Trees are hash-consed: a leaf is
//   an input item, a node the unordered pair of its children, and a
//   combination t_1 ⊕ … ⊕ t_m the left fold ((t_1 ⊕ t_2) ⊕ …) ⊕ t_m. IEEE
//   + and · round the same way whichever operand comes first, so identical
//   trees give identical bits. A coefficient other than 1 makes it false (the
//   value is not a ⊕ tree). Trivially true where each result appears once
//   (reduce, reduce-scatter, prefix). Independent of exact: it says nothing
//   about whether the tree is the right one.
//
// The why_not_* strings hold the first failure in step order, naming rank,
// step, op or send (port, element) and slot, e.g.
//   "rank 3 step 2 op 0 (slot 5 := ...): combines block 0 of ranks {0..3} with block 0 of ranks {2..3} (term 1, slot 4): ranks {2..3} twice (a field may cancel a repeated term, an operator does not)"
//   "rank 0 output 1 (slot 9, block 1) holds block 1 of ranks {0..3,5..7}, reduce needs block 1 of ranks {0..7} (missing {4})"
//   "rank 1 step 1 op 0 (slot 1 := ...): combines block 0 of ranks {1} then block 0 of ranks {0} (term 1, slot 1): out of order (the right operand's ranks come before the left's)"
//   "rank 2 output 0 (slot 4, block 0) is ((x0⊕x2)⊕x1), rank 0 output 0 (slot 4) is ((x0⊕x1)⊕x2): floating-point results may differ in the last bits"
// (x_r is item r). Empty when the property holds.
//
// Cost: one simulation; values are sorted item vectors shared between
// copies, so time and memory are O(plan size + Σ sizes of combined values).
//
// ─── Errors ──────────────────────────────────────────────────────────────────
//
// UserError when plan.spec.op is not reduce, allreduce, reduce-scatter or
// prefix. It first runs verify_structure(plan), whose errors are
// VerifyErrors. A plan that is not even a field reduction is simply not
// exact (and verify() says what is wrong over the field).
#pragma once

#include <string>

#include "ir/plan.h"

namespace collplan::passes {

struct ReductionProperties {
  bool exact = false;       // correct for every associative and commutative ⊕
  bool ordered = false;     // exact and correct for every associative ⊕
  bool consistent = false;  // every repeated result computed by the same tree
  std::string why_not_exact, why_not_ordered, why_not_consistent;
};

// Whether reduction_properties() applies to plans of `op`.
bool is_reduction_op(OpKind op);

ReductionProperties reduction_properties(const ir::Plan& plan);

}  // namespace collplan::passes
