// Re-coding: put a new matrix's coefficients into a plan without touching its
// schedule: the same prepare-and-shoot schedule computes every K×K matrix
// (docs/design.md, "Prepare-and-shoot").
//
// Every op with matrix_col = c claims dst := Σ_i A[r_i][c]·s_i where slot s_i
// holds exactly the global input r_i when the op runs. recode() finds r_i by
// a step-ordered analysis of which slots hold unmodified inputs (a unit copy
// of an input stays that input) and writes A[r_i][c] into each term. A term
// whose slot does not hold a pure input makes the plan not re-codable: a
// UserError naming rank, step and op.
//
// The plan's spec.matrix becomes `ms`; callers re-verify the result (the
// pipeline does).
#pragma once

#include "ir/plan.h"

namespace collplan::passes {

void recode(ir::Plan& plan, const MatrixSpec& ms);
// True when the plan has at least one matrix_col op (it is re-codable).
bool is_recodable(const ir::Plan& plan);

}  // namespace collplan::passes
