// Replaying a prefix plan with a user-supplied associative operator (MPI_Op).
//
// The engine (runtime/engine.h) replays plans over a field. A scan must also
// work with any associative, possibly non-commutative operator ⊕ — matrix
// products, string concatenation, affine-map composition — so prefix plans
// keep operand order (ir/plan.h: with unit coefficients a Combo is
// "slot_1 ⊕ slot_2 ⊕ …", left to right). This replays such a plan with ⊕
// supplied by the caller, on the in-process threads transport.
//
// ─── The operator contract ───────────────────────────────────────────────────
//
//   fn(a, b, out, count, ctx)   out[i] = a[i] ⊕ b[i] for i < count, each
//                               element elem_size bytes. `a` is the LEFT
//                               (earlier items) operand, `b` the right one.
//
//   - ⊕ must be associative; it need not be commutative and need not have an
//     identity (the replay never invents one, see "No value" below).
//   - out may alias a (the replay accumulates in place: out == a), never b.
//   - a, b, out point at the start of `count` packed elements and are
//     aligned to at least alignof(std::max_align_t) (rows are 64-byte
//     aligned), so fn may view them as arrays of any type whose size is
//     elem_size.
//   - fn is called concurrently from several threads (one per rank) and must
//     not throw; ctx is passed through untouched.
//
// ─── Semantics ───────────────────────────────────────────────────────────────
//
// Every Combo t_1 … t_m is a left fold: acc = t_1; acc = acc ⊕ t_2; … ⊕ t_m.
// An op whose dst is not among t_2 … t_m folds in dst itself (t_1 copied
// there first unless it is dst; then out == a); otherwise, and for payload
// elements, the fold runs in a scratch row that is copied to its
// destination at the end — a term still to be read is never overwritten.
// One term is a copy.
//
// No value. An empty combination (item 0 of an exclusive scan) produces "no
// value", like MPI_Exscan's undefined result on rank 0: the replay finds out
// before the run which outputs end with no value and leaves those caller
// buffers UNTOUCHED (no zero, no identity is written). Inside the arena such a
// slot is zero-filled, so that even a plan that misuses it computes
// reproducible bytes.
//
// ─── Checks ──────────────────────────────────────────────────────────────────
//
// UserError when the plan is not a prefix plan, when any combination (op or
// payload) has a coefficient other than 1 (over a field that would be a
// scaling; for a user operator it has no meaning), or when the arguments do
// not fit the plan (list sizes, null pointers, elem_size or count 0). The
// plan's structure is always checked (passes/verify.h, verify_structure); the
// operand order (passes/verify_order.h) too unless UserOpOptions::verify is
// false — both fail with VerifyError. Turning order verification off exists
// for tests that show what a misordered plan does; do not use it otherwise.
// Transport failures are UserErrors naming rank, step, peer and port (the
// rank that failed first, not the ranks its failure aborted).
//
// ─── Shape ───────────────────────────────────────────────────────────────────
//
// Each rank's program is compiled once into a flat instruction list (copy,
// zero fill, apply ⊕) over one arena of slot rows plus one staging area per
// message, every address resolved before step 1; the round loop only runs
// instructions and talks to the transport (no allocation, no schedule
// logic). The messages move over the existing Transport interface through a
// ThreadsWorld (runtime/transport/threads.h), one thread per rank, with the
// same post/wait discipline as the engine: both sides post in the step the
// message is sent and wait in the step it is received (t+λ−1).
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
