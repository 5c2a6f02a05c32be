// Plan composition: build an encode plan out of verified encode plans
// (draw-and-loose, Lagrange and Cauchy are compositions of simpler encodes:
// docs/structured-matrices.md).
//
// Every function here takes and returns all-to-all encode plans (op ==
// Encode, one input and one output slot per rank); any other operation is a
// UserError naming it. Each result carries a spec whose matrix is what the
// composition computes (stored as an explicit matrix), so the result is
// checked like any plan: callers run passes::verify on it. Nothing here
// proves the result correct by construction; the checker does.
//
// Re-coding (plan.h, passes/recode.h): compose_sequence, scale_outputs and
// scale_inputs set every op's matrix_col to kNoCol, because the plan's
// coefficients are no longer entries of the result's matrix (they are
// entries of the factors); such plans are not re-codable and must be
// regenerated for a new matrix. compose_parallel keeps them re-codable: a
// part's column mark c becomes column rank_map[c] of the whole matrix, which
// holds the same entry when the whole matrix has the parts' block structure.
#pragma once

#include <vector>

#include "ir/plan.h"

namespace collplan::passes {

// x·A1 then ·A2: rank k's output of `first` becomes rank k's input of
// `second`, so the result computes x·(A1·A2) (output k = Σ_r x_r (A1·A2)[r][k]).
// Requires equal K, p, λ and field (UserError naming the mismatched value).
// Plain concatenation, no overlap: second's steps run at
// first.num_steps + t, so C1 = C1(first) + C1(second) and C2 is the sum of
// the two. Overlapping second's first step with first's tail would need a
// proof that the inputs it reads are final earlier; we do not attempt it.
// Per rank, second's slots are renumbered after first's (first.num_slots + s),
// except its input slot, which becomes first's output slot; run alloc_slots
// to pack them. The spec: first's header with matrix = explicit A1·A2 and
// algorithm "first.algorithm+second.algorithm".
//
// `result`, when given, is the matrix the caller states the composition
// computes; it becomes the spec's matrix instead of the product A1·A2,
// which is then not formed (a dense product costs O(K³); generators of
// structured matrices know the result, and the checker judges the claim).
// The factors' matrices are then never read, so they may be placeholders.
ir::Plan compose_sequence(const ir::Plan& first, const ir::Plan& second, const MatrixSpec* result = nullptr);

// Parts side by side on disjoint rank subsets: parts[i]'s local rank j runs
// as rank rank_maps[i][j] of `whole` (sends' `to` and receives' `from` are
// mapped the same way). Requirements, each a UserError naming the value:
// whole and every part are encode specs with the same p, λ and field;
// rank_maps.size() == parts.size(); rank_maps[i].size() == parts[i].spec.K;
// every mapped rank < whole.K and no rank in two parts (or twice in one).
// Ranks in no part get a program whose output is its own input (one slot,
// no steps), so whole's column k must be the unit vector e_k there or the
// result fails verification. Steps keep their numbers (the parts run at once; ports cannot
// conflict because the rank sets are disjoint); num_steps is the parts'
// maximum. The result's spec is `whole` (algorithm "parallel(a,b,...)" of
// the parts' algorithms when whole.algorithm is empty). The whole matrix is
// NOT derived from the parts: verifying the result against it is what
// catches a wrong rank map or a wrong block matrix.
ir::Plan compose_parallel(const Spec& whole, const std::vector<ir::Plan>& parts,
                          const std::vector<std::vector<ir::Rank>>& rank_maps);

// Rank k's output multiplied by factors[k]: an op out := c·out is appended
// after every other op of step num_steps (sends of that step read the state
// before it, so nothing in the plan sees the scaled value; a plan with no
// steps gets num_steps = 1). spec.matrix becomes explicit A·diag(c).
// factors.size() must be K and every factor a non-zero field element
// (UserError naming the index and value otherwise).
// With `result` given, spec.matrix becomes *result instead (as for
// compose_sequence; the plan's own matrix is not read).
void scale_outputs(ir::Plan& plan, const std::vector<Elem>& factors, const MatrixSpec* result = nullptr);

// Rank k's input x_k scaled by factors[k] before any use. No step is added:
// the factor is folded into the coefficient of every term that reads the
// input slot while it still holds the input, found by a step-ordered walk in
// the model's order (sends, then receives, then ops in order; an op's terms
// are read before it writes dst). If the input slot is never overwritten and
// is also the output slot, an op out := c·out is appended as in
// scale_outputs. spec.matrix becomes explicit diag(c)·A. Same requirements
// on factors as scale_outputs.
void scale_inputs(ir::Plan& plan, const std::vector<Elem>& factors, const MatrixSpec* result = nullptr);

// ---- placement of sub-plans of any operation ---------------------------------
//
// The functions above compose encode plans into an encode plan. A plan of a
// different operation (decentralized encode, gen/decentralized.h) is built
// from sub-plans of several operations (encodes, broadcasts, reduces) placed
// on rank subsets at step offsets; `place` does one such placement.

// A value a rank holds while a plan is being assembled: coeff·(slot), or the
// zero element when coeff == 0 (slot then unused). Binding a part's input to
// a scaled or zero value costs nothing: the factor is folded into the terms
// that read the input.
struct Held {
  ir::SlotId slot = 0;
  Elem coeff = 1;
  static Held zero() { return Held{0, 0}; }
};

// Places `part` (any operation) into `whole`: part's local rank j runs as
// rank rank_map[j] of whole, its step t as step t + step_offset; sends' `to`
// and receives' `from` are mapped the same way. Part rank j's input i is
// bound to inputs[j][i], a value whole's rank rank_map[j] already holds:
// every read of the input slot while it still holds the input reads
// coeff·slot instead (a term with a zero value is dropped, a message element
// left without terms is the zero element). Every other slot of the part is
// fresh in whole (appended to the rank's slots; run alloc_slots to pack).
// Returns, per part rank, the values its outputs hold at the end of the
// part: a fresh slot (coefficient 1), or the bound input value when the
// output slot is an input slot the part never writes.
// Requirements (UserError naming the value): same p, λ and field;
// rank_map.size() == part.ranks.size(), distinct ranks < num_ranks(whole);
// inputs shaped like the part's inputs. Steps are merged into whole's
// programs in order (whole.num_steps grows to cover the part). Nothing here
// prevents two placements from using one port of one rank in the same step:
// the caller places parts on disjoint ranks or disjoint step ranges, and the
// checker rejects the result otherwise. matrix_col marks are dropped (the
// part's coefficients are not entries of whole's matrix).
std::vector<std::vector<Held>> place(ir::Plan& whole, const ir::Plan& part, const std::vector<ir::Rank>& rank_map,
                                     uint32_t step_offset, const std::vector<std::vector<Held>>& inputs);

// Rank `rank` of `plan` makes `v` available in a slot of its own at the end
// of step `at` (1 <= at <= num_steps): v's slot itself when coeff == 1, else
// a fresh slot written by an op dst := coeff·slot (dst := 0 for the zero
// value) appended to step `at`.
ir::SlotId materialize_held(ir::Plan& plan, ir::Rank rank, const Held& v, uint32_t at);

}  // namespace collplan::passes
