// The collplan plan IR: plain structs, index references, no pointers.
//
// ─── What a plan means ──────────────────────────────────────────────────────
//
// A Plan is a Spec (the header: operation, K, p, λ, field, matrix) and one
// Program per rank 0..K-1. Every rank runs the same numbered steps
// 1..num_steps in lock-step (the postal model, docs/design.md).
//
// Slots. A program owns slots 0..num_slots-1. A slot holds one plan element:
//   one field element when the checker evaluates the plan, a vector of ℓ
//   field elements when the runtime replays it (ℓ is chosen at run time).
//   A slot holds no value until it is written; reading it before is an error.
//   `inputs[i]` is pre-loaded with this rank's i-th input before step 1;
//   `outputs[j]` is read as this rank's j-th output after the last step.
//   Global input (output) numbering is rank-major: all of rank 0's inputs,
//   then rank 1's, ...; the postcondition (matrix/postcondition.h) is a
//   matrix over that numbering.
//
// Combinations. A Combo is an ordered list of (slot, coefficient) terms and
//   denotes Σ coeff·slot, evaluated left to right. The order is kept so that
//   non-commutative operators (prefix with a user operator) are expressible:
//   with unit coefficients a Combo is "slot_1 ⊕ slot_2 ⊕ …" in that order.
//   An empty Combo is the zero element. Coefficients are field elements in
//   canonical form (< q).
//
// Steps and ports. In step t a rank, in this order:
//   (1) evaluates the payload of each Send from its slots as they were at the
//       end of step t-1 and sends it through port `port` (0..p-1) to rank
//       `to`; a payload is a list of Combos, one plan element each;
//   (2) completes each Recv: the message that rank `from` sent through port
//       `port` in step `sent_at` = t-λ+1 is written, element i into slot
//       `into[i]` (the receiving port is the sender's port number);
//   (3) runs its Ops in order: dst := Σ terms (dst may appear in its terms).
//   Ops at the end of step t may read what was received in step t; a value
//   so received or computed can be sent from step t+1 on. With postal
//   latency λ a message sent in step t is received in step t+λ-1 and usable
//   from step t+λ (the postal model); λ = 1 is the synchronous round model.
//
// The model's limits, enforced by the checker (passes/verify.h): per rank and
// step at most one Send and at most one Recv per port, so at most p of each;
// no Send to oneself (a local copy is an Op); every Send is matched by
// exactly one Recv at the receiver in step t+λ-1 on the same port with the
// same element count, and vice versa; no message is still in flight after
// the last step.
//
// Costs (passes/cost.h): C1 = num_steps; C2 = Σ_t max size (elements) of any
// message sent in step t.
//
// Re-coding. An Op may carry `matrix_col` = c: it then claims to be
// dst := Σ_i A[r_i][c]·s_i where slot s_i holds exactly input x_{r_i}. The
// recode pass (passes/recode.h) uses this to put a new matrix's coefficients
// into a plan without regenerating its schedule; the checker verifies the
// result like any other plan.
//
// Plans are built through the checking helpers below (they reject a port,
// rank or slot out of range as an InternalError at construction time), then
// always verified as a whole by the checker.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "ir/spec.h"
#include "support/small_vec.h"

namespace collplan::ir {

using Rank = uint32_t;
using SlotId = uint32_t;
using StepNo = uint32_t;  // 1-based
using Port = uint32_t;    // 0..p-1

inline constexpr uint32_t kNoCol = std::numeric_limits<uint32_t>::max();

struct Term {
  SlotId slot = 0;
  Elem coeff = 1;
  friend bool operator==(const Term&, const Term&) = default;
};

// A combination's terms (one in almost every plan) and an op's (two in
// almost every reduction), held in place (support/small_vec.h) instead of
// one heap block each.
using Terms = SmallVec<Term, 1>;
using OpTerms = SmallVec<Term, 2>;

struct Combo {
  Terms terms;  // ordered; empty = zero
  friend bool operator==(const Combo&, const Combo&) = default;
};

// A message's elements and the slots a receive writes: one element in
// almost every latency-optimal plan (two slots fit in the same 8 bytes as a
// pointer), held in place as the term lists are.
using Payload = SmallVec<Combo, 1>;
using Slots = SmallVec<SlotId, 2>;

struct Send {
  Port port = 0;
  Rank to = 0;
  Payload payload;  // one plan element per Combo
  friend bool operator==(const Send&, const Send&) = default;
};

struct Recv {
  Port port = 0;
  Rank from = 0;
  StepNo sent_at = 0;  // = t - λ + 1 of the step holding this Recv
  Slots into;          // element i of the message → slot into[i]
  friend bool operator==(const Recv&, const Recv&) = default;
};

struct Op {
  SlotId dst = 0;
  uint32_t matrix_col = kNoCol;  // see "Re-coding" above
  OpTerms terms;                 // dst := Σ terms, in order
  // Arguments in the order dst, terms, matrix_col (the two 32-bit fields
  // sit side by side so that an Op is 32 bytes, not 40).
  Op() = default;
  Op(SlotId d, OpTerms t, uint32_t col = kNoCol) : dst(d), matrix_col(col), terms(std::move(t)) {}
  friend bool operator==(const Op&, const Op&) = default;
};

// A step's sends, receives and ops: at most one of each in almost every
// step of a latency-optimal plan, so one of each is held in place (a Step
// is 128 bytes with no heap block, against 80 bytes and three to six heap
// blocks as std::vectors).
struct Step {
  StepNo t = 0;
  SmallVec<Send, 1> sends;
  SmallVec<Recv, 1> recvs;
  SmallVec<Op, 1> ops;
  friend bool operator==(const Step&, const Step&) = default;
};
static_assert(sizeof(Send) == 32 && sizeof(Recv) == 32 && sizeof(Op) == 32 && sizeof(Step) == 128,
              "the IR's records as docs/scale.md gives them");

// One rank's program. `steps` lists only the steps in which the rank does
// something, in strictly increasing t. The input and output lists hold one
// or two slots in almost every program (one per block of n), so they are
// held in place as a receive's slots are: a Program is 64 bytes with no
// heap block for them, against 80 bytes and two 32-byte blocks as
// std::vectors — most of a broadcast's memory per rank beside its steps.
struct Program {
  Rank rank = 0;
  uint32_t num_slots = 0;
  Slots inputs;
  Slots outputs;
  std::vector<Step> steps;
  friend bool operator==(const Program&, const Program&) = default;

  // The Step record for step t, created (in order) if absent. Generators
  // append in increasing t; asking for an earlier t than the last one is an
  // InternalError.
  Step& at(StepNo t);
  // The same for any order of requests: inserted in order if absent.
  Step& at_any(StepNo t);
  SlotId new_slot() { return num_slots++; }
};
static_assert(sizeof(Program) == 64, "a Program as docs/scale.md gives it");

struct Plan {
  Spec spec;
  uint32_t num_steps = 0;
  std::vector<Program> ranks;  // ranks[k].rank == k
  friend bool operator==(const Plan&, const Plan&) = default;
};

// One rank's program compiled alone (`collplan compile --rank`), without the
// other ranks': the plan's spec and step count and that rank's program, which
// equals ranks[program.rank] of the whole plan the same generator builds. It
// serves where a whole plan cannot be built (K up to kMaxRankLocalRanks), or
// need not be (a device or an MPI process building only its own part).
struct RankPlan {
  Spec spec;
  uint32_t num_steps = 0;
  Program program;
  friend bool operator==(const RankPlan&, const RankPlan&) = default;
};

// A plan with `spec` and `num_steps` but no programs: what the checking
// constructors below need (they read spec and num_steps only) when one rank's
// program is built alone.
Plan plan_context(const Spec& spec, uint32_t num_steps);

// An empty plan for `spec`: K programs with no slots and no steps.
Plan make_plan(const Spec& spec, uint32_t num_steps);

// Checking constructors: each validates its indices against the plan's spec
// and the program's slot count and raises InternalError (a generator bug) when
// one is out of range.
Send make_send(const Plan& plan, const Program& from, Port port, Rank to, Payload payload);
Recv make_recv(const Plan& plan, const Program& at, StepNo t, Port port, Rank from, Slots into);
Op make_op(const Program& at, SlotId dst, std::vector<Term> terms, uint32_t matrix_col = kNoCol);
Combo unit(SlotId s);  // the combination 1·s

// Counting helpers used by the cost pass, codecs and benchmarks.
uint64_t count_terms(const Program& prog);
uint64_t count_terms(const Plan& plan);

// The most slots a program may declare: 4·W + 64, W = its slot writes
// (inputs, received elements, ops). A slot holds a value only once written,
// so further slots are dead; generated programs declare at most W, the slack
// admits hand-written ones with spare slots. The plan readers refuse more, so
// a plan file cannot make the checker or a replay, which keep state per slot,
// allocate out of proportion to the program the file holds.
uint64_t slot_limit(const Program& prog);

}  // namespace collplan::ir
