// The replay engine: runs one rank's Program over vectors of ℓ field elements.
//
// ─── Shape ───────────────────────────────────────────────────────────────────
//
// Construction compiles the Program once into a flat instruction stream; run()
// is then a small round loop (after LibNBC's NBC_Start_round / NBC_Progress):
//
//   copy the inputs that are not read in place into their slots
//   for each step t in which this rank does something:
//     (1) evaluate the payloads of step t's sends into staging
//     (2) post step t's sends, and the receives of the messages sent to this
//         rank in step t (they complete in step t+λ−1)
//     (3) wait for the requests due in step t: receives of messages sent in
//         step t−λ+1, and this rank's sends of step t−λ+1
//     (4) copy staged receives into their slots; run step t's ops
//   copy the outputs whose slots do not live in their output buffer
//
// which is exactly the step semantics of ir/plan.h: sends read the slots as
// they were at the end of step t−1, a message sent in step s is written into
// its slots in step s+λ−1 before that step's ops. The loop does no
// allocation and no schedule logic: every address is precomputed, every
// combination already lowered to kernel calls with prepared coefficient
// tables.
//
// ─── The arena ───────────────────────────────────────────────────────────────
//
// Every value lives in a row of ℓ·elem_bytes bytes: either in the caller's
// buffers (see "The caller's buffers") or in the engine's arena, whose rows
// are packed, not padded, so that consecutive slots form one contiguous
// message:
//   slot rows                the program's slots that do not live in a
//                            caller's buffer, in an order the engine chooses
//                            (see "Zero copy"); zeroed when the arena is
//                            sized
//   send staging             λ banks: payloads of step s go to bank s mod λ,
//                            each bank as large as the largest step using it
//   receive staging          λ banks, likewise, for received messages that
//                            cannot land in their slots directly
//   (both banks also hold the fallback rows of direct messages that may be
//   split, see "Pieces"; pages of rows a run never uses are never touched)
//   scratch rows             one for ops whose dst is read after being
//                            written, 32 more for the partial sums of dot
//                            calls with over 32 sources (only if needed)
// arena_bytes(ℓ) gives the exact size. A bank is reused λ steps later, after
// the wait that completed the messages using it.
//
// ─── The caller's buffers ────────────────────────────────────────────────────
//
// With zero copy, an output slot lives in its output buffer for the whole run
// (whatever it holds meanwhile: the plan may use it as a temporary), so
// receives land in the caller's memory directly and nothing is copied after
// the last step; a slot listed as two outputs lives in the first and is
// copied to the other. An input slot that is never written (no receive, no
// op) and is no output is read from its input buffer where it is; an input
// slot that is also an output is copied into the output buffer before step
// 1 (as MPI_Allgather copies its own block); any other input slot is copied
// into the arena. An output slot that the program reads before writing
// (never in a verified plan) is zeroed before step 1.
//
// Contract (checked, not assumed): inputs may alias one another (they are
// only read); outputs must not overlap one another or any input for the
// in-place path. run() checks this whenever the buffer pointers differ from
// the previous run's (sorting the output ranges, O(n log n)); when they do
// overlap it falls back to private copies: outputs that overlap each other
// are produced privately and copied out in output order after the last step
// (the later output wins, as with the staged path), and inputs that overlap
// an output are copied privately before step 1. So any aliasing gives the
// same bytes as EngineOptions::zero_copy = false, which reads every input
// before step 1 and writes every output after the last step. The engine never
// writes an input buffer. A run that fails may leave output buffers partly
// written (receives land in them as they arrive); with zero_copy = false they
// are untouched.
//
// ─── Zero copy ───────────────────────────────────────────────────────────────
//
// A message is handed to the transport without a copy when it consists of
// slots themselves:
//   a send whose payload is plain slots with coefficient 1 is sent from the
//   slots, provided no slot of it is written while the transport may still
//   read it (from posting in step s to the wait in step s+λ−1);
//   a receive into distinct slots is received in place, provided nothing
//   else reads or writes them while the message may land (from posting in
//   step s to completion in step s+λ−1).
// Everything else is staged. The engine orders the arena's slot rows so that
// as many multi-element messages as possible (largest first) have their
// slots adjacent and in message order.
//
// Pieces. The rows of a direct message are wherever its slots live: adjacent
// arena rows, output buffers the caller happened to place back to back
// (mpi::Collective does), or separate places (the slots of a rotated
// allgather wrap from the last output buffer to the first). When the buffers
// are bound (the first run, and whenever the pointers, ℓ or the transport's
// max_pieces() change) each direct message's rows are merged into runs of
// adjacent memory. One run: one buffer. Several, up to the transport's
// max_pieces(): a list of pieces (transport.h). More: the message is
// gathered into (sends) or scattered from (receives) its fallback staging
// rows, reserved at construction for every direct message that is not
// surely contiguous; copying there at evaluation / scatter time is within
// the window the zero-copy analysis already cleared. Stats report which
// path the last binding took.
//
// EngineOptions::zero_copy = false keeps the plan's slot order, keeps every
// slot in the arena and stages every message (the tests check that both
// paths compute the same bytes).
//
// ─── Combinations ────────────────────────────────────────────────────────────
//
// Terms with coefficient 0 are dropped (over a field they contribute
// nothing); an empty combination is a zero fill. dst := dst + Σ… (dst as the
// first term, nowhere else) accumulates in place; a dst appearing anywhere
// else among its terms is computed into the scratch row and copied. A first
// term with coefficient 1 is a copy, otherwise a multiply; further terms are
// adds (coefficient 1) or multiply-accumulates. Combinations of two or more
// terms with some coefficient ≠ 1 use the dot-product kernel (one pass over
// the sources). Consecutive independent ops (no dst among the run's sources
// or other dsts) share one dot call over the union of their sources while
// the zero padding stays under a third; payload elements of one step over
// the same source list share one too. Dot calls are split so that none
// exceeds 32 sources × 32 rows (the kernel then needs no allocation).
//
// ─── Errors ──────────────────────────────────────────────────────────────────
//
// A program that cannot be replayed (slot, port, peer or step out of range,
// a receive whose sent_at is not t−λ+1, a send still in flight after the last
// step, two sends or receives on one port in one step, a coefficient not in
// the field) is a UserError at construction, naming rank, step and value.
// A transport failure during run() is a UserError naming rank, step, peer,
// port and the transport's detail; when the failure is Status::aborted the
// exception is RunAborted, so that a driver running many ranks can report the
// rank that failed first rather than those it took down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "field/field.h"
#include "ir/plan.h"
#include "runtime/transport.h"
#include "support/error.h"

namespace collplan::rt {

class RunAborted : public UserError {
 public:
  using UserError::UserError;
};

struct EngineOptions {
  bool zero_copy = true;  // see "Zero copy" above
  bool use_dot = true;    // group terms into dot-product kernel calls
};

class Engine {
 public:
  // Rank `rank`'s program of `plan`.
  Engine(const ir::Plan& plan, ir::Rank rank, EngineOptions opt = {});
  // A program alone (e.g. one rank loaded from a plan file).
  Engine(const Spec& spec, uint32_t num_steps, const ir::Program& prog, EngineOptions opt = {});
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  ir::Rank rank() const;
  const Field& field() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  size_t elem_bytes() const;

  // Exact arena size for vectors of `len` elements.
  size_t arena_bytes(size_t len) const;
  // Sizes the arena for `len` (allocates; call it outside any timed loop).
  // run() calls it itself when `len` changed.
  void prepare(size_t len);

  // Replays the program once. inputs[i] is this rank's i-th input, outputs[j]
  // its j-th output, each `len` canonical field elements at elem_bytes()
  // width. With zero copy, inputs are read and outputs written during the
  // whole run (see "The caller's buffers" for aliasing); the caller must not
  // touch them until run() returns. The first run on a set of pointers binds
  // them (allocates); later runs on the same pointers do not allocate. One
  // thread at a time per Engine (run() is not reentrant); distinct Engines
  // are independent.
  void run(Transport& tr, const void* const* inputs, void* const* outputs, size_t len);

  // What construction made of the program (for tests and reports).
  struct Stats {
    size_t units = 0;              // arena rows
    size_t instructions = 0;       // kernel calls per run (with the copies before step 1 and after the last)
    size_t staged_sends = 0, zero_copy_sends = 0;
    size_t staged_recvs = 0, direct_recvs = 0;
    size_t dot_calls = 0;
    uint32_t max_requests = 0;     // outstanding transport requests at once
    size_t inputs_in_place = 0;    // input slots read from the caller's input buffer
    size_t outputs_in_place = 0;   // output slots living in the caller's output buffer
    // Of the last run's buffers and transport: direct messages handed over
    // as several pieces, and those gathered / scattered through staging
    // because the transport takes fewer pieces.
    size_t split_messages = 0, gathered_messages = 0;
  };
  const Stats& stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace collplan::rt
