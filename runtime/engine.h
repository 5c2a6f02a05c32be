// The replay engine: replays one rank's Program of a plan over vectors of ℓ
// field elements, exchanging its messages through a Transport.
//
// Construction validates and compiles the program once: one that cannot be
// replayed (a slot, port, peer or step out of range, a coefficient outside
// the field, ...) is a UserError naming rank, step and value. run() then
// replays it any number of times. The Engine owns its arena; the caller owns
// the input and output buffers, which run() reads and writes until it
// returns, never writing an input. Inputs may alias one another; any other
// overlap is detected and gives the bytes of EngineOptions::zero_copy =
// false. A transport failure is a UserError naming rank, step, peer, port and
// the transport's detail (RunAborted when the transport reports
// Status::aborted); it may leave outputs partly written (untouched with
// zero_copy = false). One thread at a time per Engine; distinct Engines are
// independent.
//
// How it works (round loop, arena, zero copy, combinations): docs/runtime.md,
// "Engine internals".
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
  bool zero_copy = true;  // false: every slot in the arena, every message staged
  bool use_dot = true;    // group terms into dot-product kernel calls
  // Complete a send read straight from its slots when its slots are next
  // written (or after the last step) instead of in the step it is due
  // (Stats::late_sends). false: every send completes when due, as the
  // plan's cost model counts it (for comparison).
  bool late_sends = true;
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
  // whole run (aliasing: see above); the caller must not touch them until
  // run() returns. The first run on a set of pointers binds them
  // (allocates); later runs on the same pointers do not allocate. run() is
  // not reentrant.
  void run(Transport& tr, const void* const* inputs, void* const* outputs, size_t len);

  // What construction made of the program (for tests and reports).
  struct Stats {
    size_t units = 0;              // arena rows
    size_t instructions = 0;       // kernel calls per run (with the copies before step 1 and after the last)
    size_t staged_sends = 0, zero_copy_sends = 0;
    // Zero-copy sends completed after their step, when their slots are next
    // written or after the last step, rather than in the step they are due.
    size_t late_sends = 0;
    size_t staged_recvs = 0, direct_recvs = 0;
    size_t dot_calls = 0;
    uint32_t max_requests = 0;     // outstanding transport requests at once
    size_t inputs_in_place = 0;    // input slots read from the caller's input buffer
    size_t outputs_in_place = 0;   // output slots living in the caller's output buffer
    // Of the last run's buffers and transport: direct messages handed over
    // as several pieces, and those gathered / scattered through staging
    // because the transport takes fewer pieces.
    size_t split_messages = 0, gathered_messages = 0;
    // Of the last run, in bytes: what the engine copied itself, outside the
    // transport and the field kernels (an input or output copied aside
    // because the caller's buffers overlap, a slot copied to another, a
    // message gathered into or scattered out of staging rows), and what the
    // transport delivered to this rank (every received message). Copies the
    // plan needs whatever the engine does (an input into the output buffer
    // that holds it, e.g. an allgather's own block; an op dst = src; the
    // first term of a sum) are op_copy_bytes, not staging.
    uint64_t staged_bytes = 0, delivered_bytes = 0, op_copy_bytes = 0;
  };
  const Stats& stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace collplan::rt
