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
// Per rank: inputs and outputs (vectors of len elements each), workspace
// rows, and whether its source was emitted (run_rank() can call it).
inline constexpr uint32_t kNumInputs[kNumRanks] = {1, 1};
inline constexpr uint32_t kNumOutputs[kNumRanks] = {1, 1};
inline constexpr uint32_t kWorkspaceRows[kNumRanks] = {3, 3};
inline constexpr bool kEmitted[kNumRanks] = {true, true};

// Every rank's entry point (one source file each).
collplan_embedded::Result rank_0(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs,
                                 size_t len, void* workspace);
collplan_embedded::Result rank_1(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs,
                                 size_t len, void* workspace);
// @collplan:end plan

inline constexpr size_t kElemBytes = sizeof(Field::elem);

// Bytes of workspace rank `rank` needs for vectors of `len` elements (0 for
// a rank that does not exist). Align it for Field::elem (4 bytes suffice).
constexpr size_t workspace_bytes(uint32_t rank, size_t len) {
  return rank < kNumRanks ? static_cast<size_t>(kWorkspaceRows[rank]) * len * kElemBytes : 0;
}

// Runs rank `rank`'s program once: inputs[i] is its i-th input vector,
// outputs[j] its j-th output, each `len` field elements (kElemBytes each,
// host byte order); `workspace` holds workspace_bytes(rank, len) bytes.
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
