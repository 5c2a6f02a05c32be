// @collplan:begin banner
// Template of the dispatch header `collplan emit-cpp` writes (one per plan).
// It is real C++: the sample between each pair of markers describes a
// two-rank plan, so the file compiles as it is (tests compile it). The C++
// backend (compiler/backend/emit_cpp.h) replaces every region from a
// `@collplan:begin NAME` line to its `@collplan:end NAME` line, both
// included, with the generated text of that name; the rest is copied as is.
// @collplan:end banner
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "collplan_embedded.h"

// @collplan:begin namespace_open
namespace collplan_template {
// @collplan:end namespace_open

// @collplan:begin plan
// The plan: its spec, its identity (the .cplan content hash) and its shape.
inline constexpr char kSpec[] = "encode K=2 p=1 lambda=1 field=gf256 matrix=explicit 2x2 algorithm=sample";
inline constexpr char kDigest[] = "00000000000000000000000000000000";
using Field = collplan_embedded::Gf2m<8, 0x11D>;
inline constexpr uint32_t kNumRanks = 2;
inline constexpr uint32_t kNumSteps = 1;
inline constexpr uint32_t kPorts = 1;
inline constexpr uint32_t kLambda = 1;
// The ranks whose source was emitted, ascending, and for each (same index)
// its inputs and outputs (vectors of len elements each) and workspace rows.
// Only these ranks are described, so a header for one rank stays small
// whatever K is.
inline constexpr uint32_t kNumEmitted = 2;
inline constexpr uint32_t kEmittedRanks[kNumEmitted] = {0, 1};
inline constexpr uint32_t kEmittedInputs[kNumEmitted] = {1, 1};
inline constexpr uint32_t kEmittedOutputs[kNumEmitted] = {1, 1};
inline constexpr uint32_t kEmittedWorkspaceRows[kNumEmitted] = {3, 3};

// The entry point of every emitted rank (one source file each).
collplan_embedded::Result rank_0(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs,
                                 size_t len, void* workspace);
collplan_embedded::Result rank_1(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs,
                                 size_t len, void* workspace);
// @collplan:end plan

inline constexpr size_t kElemBytes = sizeof(Field::elem);

// Position of `rank` in kEmittedRanks, or kNumEmitted when it was not
// emitted (binary search: the list is ascending).
constexpr uint32_t emitted_index(uint32_t rank) {
  uint32_t lo = 0, hi = kNumEmitted;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (kEmittedRanks[mid] < rank) lo = mid + 1;
    else hi = mid;
  }
  return lo < kNumEmitted && kEmittedRanks[lo] == rank ? lo : kNumEmitted;
}
// Whether rank `rank`'s source was emitted (run_rank() can call it).
constexpr bool emitted(uint32_t rank) { return emitted_index(rank) < kNumEmitted; }
// Inputs, outputs and workspace rows of an emitted rank (0 for another).
constexpr uint32_t num_inputs(uint32_t rank) { return emitted(rank) ? kEmittedInputs[emitted_index(rank)] : 0; }
constexpr uint32_t num_outputs(uint32_t rank) { return emitted(rank) ? kEmittedOutputs[emitted_index(rank)] : 0; }
constexpr uint32_t workspace_rows(uint32_t rank) {
  return emitted(rank) ? kEmittedWorkspaceRows[emitted_index(rank)] : 0;
}

// Bytes of workspace rank `rank` needs for vectors of `len` elements (0 for
// a rank that was not emitted). Align it for Field::elem (4 bytes suffice).
constexpr size_t workspace_bytes(uint32_t rank, size_t len) {
  return static_cast<size_t>(workspace_rows(rank)) * len * kElemBytes;
}

// Runs rank `rank`'s program once: inputs[i] is its i-th input vector,
// outputs[j] its j-th output, each `len` field elements (kElemBytes each,
// host byte order); `workspace` holds workspace_bytes(rank, len) bytes.
// A rank that was not emitted gives Error::bad_argument.
inline collplan_embedded::Result run_rank(uint32_t rank, collplan_embedded::Channel& ch, const void* const* inputs,
                                          void* const* outputs, size_t len, void* workspace) {
  switch (rank) {
// @collplan:begin dispatch
    case 0: return rank_0(ch, inputs, outputs, len, workspace);
    case 1: return rank_1(ch, inputs, outputs, len, workspace);
// @collplan:end dispatch
    default: break;
  }
  return collplan_embedded::Result{collplan_embedded::Error::bad_argument, 0, rank, 0};
}

// @collplan:begin namespace_close
}  // namespace collplan_template
// @collplan:end namespace_close
