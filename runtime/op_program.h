// One rank's program replayed with a caller-supplied operator ⊕ (like
// MPI_Op) over any Transport: threads, TCP, MPI. It is what an MPI
// interposition layer needs: each process loads only its own rank's
// program (ir::read_rank) and replays it with MPI's operator.
//
// The plan's meaning with a user operator: every combination t1 ⊕ t2 ⊕ …
// is evaluated as a left fold in the order the plan lists its terms, so the
// results are deterministic bit for bit (the same plan, operator and inputs
// give the same bytes on every run and every transport). Only coefficients
// 1 have a meaning; an empty combination is "no value" (see run()).
//
// What OpProgram checks and what it does not: the program's structure alone
// (ir::verify_rank_structure: slots, ports, peers, steps in range) and its
// coefficients. It does NOT check that the plan computes what its operation
// promises, or keeps operand order for a non-commutative ⊕: that is a
// property of the whole plan, proven by the checker (passes/verify.h,
// passes/verify_order.h) before a plan is shipped; run_user_op_threads
// (user_op.h) does it for a whole plan in memory.
//
// Costs: construction is O(program) and allocates nothing proportional to
// the data; storage for rows of count·elem_size bytes is allocated by run()
// only when the row grows. No allocation in the round loop.
//
// How it works: docs/runtime.md, "Replaying with any operator (OpProgram)".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/plan.h"
#include "runtime/transport.h"

namespace collplan::rt {

// out[i] = a[i] ⊕ b[i] for count elements of elem_size bytes; `a` is the
// earlier (left) operand. out may alias a, never b. a, b and out are aligned
// to at least alignof(std::max_align_t). Must not throw.
using UserOpFn = void (*)(const void* a, const void* b, void* out, size_t count, void* ctx);

struct UserOp {
  UserOpFn fn = nullptr;
  void* ctx = nullptr;
  size_t elem_size = 0;  // bytes per element
  // ⊕ commutes (MPI_Op_create's commute flag). OpProgram does not read it
  // (it checks no algebra); run_user_op_threads (user_op.h) then needs
  // reduce, allreduce and reduce-scatter plans only exact, not ordered.
  bool commutative = false;
};

// One input row: `bytes` <= the row size (count · elem_size); the rest of
// the row is zero-filled, so a caller can run a count that does not divide
// into the plan's blocks. data may be null only when bytes is 0.
struct InPiece {
  const void* data = nullptr;
  size_t bytes = 0;
};

// One output row: its first `bytes` are copied to data; bytes 0 skips this
// output (data may then be null).
struct OutPiece {
  void* data = nullptr;
  size_t bytes = 0;
};

// UserError naming rank, step and the send or op when a combination of
// `prog` has a coefficient other than 1 (no meaning for a user operator).
void require_unit_coefficients(const ir::Program& prog);

class OpProgram {
 public:
  // One rank's program (e.g. from ir::read_rank) of a plan with `spec` and
  // `num_steps`. Validates its structure (VerifyError / UserError naming the
  // problem) and its coefficients (require_unit_coefficients). Does not
  // check the algebra (see above).
  OpProgram(const Spec& spec, uint32_t num_steps, const ir::Program& prog);
  ~OpProgram();
  OpProgram(OpProgram&&) noexcept;
  OpProgram& operator=(OpProgram&&) noexcept;

  // Replays the program once with ⊕ = op over rows of `count` elements.
  // inputs: num_inputs() pieces, outputs: num_outputs() pieces. op.fn may be
  // null when the program has no combination of two or more terms (a
  // broadcast, an allgather); with such a combination it is a UserError.
  // Inputs are all read in (copied, or read in place where the program
  // never overwrites them and the piece is a whole row aligned to
  // max_align_t) before any output is written, so an input may alias an
  // output (MPI_IN_PLACE). An output whose value is "no value" is
  // left untouched: an empty combination is none, a one-term copy passes on
  // what its term holds, and received data and inputs are values (decided
  // from this program alone; e.g. item 0 of an exclusive scan). Bad
  // arguments (piece counts, null pointers, bytes beyond the row, count or
  // elem_size 0, a row over 2^40 bytes, rows needing over 2^48 bytes in
  // all) are a UserError naming the value, raised before the transport is
  // touched; a transport failure is a UserError naming rank, step, peer and
  // port (RunAborted when the transport reports Status::aborted). Not
  // reentrant; one thread at a time.
  void run(Transport& tr, const UserOp& op, size_t count, const InPiece* inputs, const OutPiece* outputs);
  // The same, first checking the list lengths (UserError naming both counts).
  void run(Transport& tr, const UserOp& op, size_t count, const InPiece* inputs, size_t num_inputs,
           const OutPiece* outputs, size_t num_outputs);

  // Non-blocking replay (for MPI_Iallreduce and its kin): start() does what
  // run() does before the first step (the same checks and errors; with
  // Inputs::copy the inputs are copied in, so the caller may reuse them at
  // once; with Inputs::borrow, as run() does, an input the program never
  // overwrites may be read from the caller's buffer instead, which must
  // then stay unchanged until the end), posts the first step's messages and
  // returns without waiting for any;
  // progress() then runs the steps whose messages have arrived, never
  // blocking (Transport::test), and returns true when the replay is over
  // and the outputs are written. Until then the output buffers, the
  // transport and op.ctx must stay valid (the piece list itself is copied).
  // A failure throws from progress() as from run() and ends the replay.
  // One replay at a time per OpProgram: start() while one is running, or
  // progress() with none, is a UserError.
  enum class Inputs { copy, borrow };
  void start(Transport& tr, const UserOp& op, size_t count, const InPiece* inputs, const OutPiece* outputs,
             Inputs mode = Inputs::copy);
  bool progress();
  bool running() const;
  // How many inputs the last run() or start() read in place (the rest were
  // copied in).
  size_t inputs_read_in_place() const;

  size_t num_inputs() const;
  size_t num_outputs() const;
  ir::Rank rank() const;
  // Transport requests outstanding at once (what run() passes to begin()).
  uint32_t max_requests() const;
  // Whether some combination has two or more terms (run() then needs op.fn).
  bool combines() const;

  // What construction made of the program (for tests and reports).
  struct Stats {
    size_t zero_copy_sends = 0;  // one-term, one-element sends read straight from a slot row
    size_t staged_sends = 0;
    size_t direct_recvs = 0;     // one-element receives landing in their slot row
    size_t staged_recvs = 0;
    size_t applies = 0;          // operator calls per run
  };
  const Stats& stats() const;
  // Bytes of row storage held now (grows with the largest row run so far).
  size_t storage_bytes() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace collplan::rt
