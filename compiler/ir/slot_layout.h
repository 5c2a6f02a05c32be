// slot-layout: the row of every slot of one rank's program, chosen so that
// messages move without copies. A message goes without a copy only if its
// slots are adjacent rows, and generators number slots for their own
// convenience (prepare-and-shoot sends slots 0, 3, 6 and receives into 1, 4,
// 7). So each multi-element message (a payload of plain slots, or the slots
// a message is received into) asks for its slots to be a chain s1 → s2 → …;
// messages are granted largest first, whole or not at all, as long as
// chains stay simple paths; chains are then laid out in the order of their
// first slot. Only adjacency changes; the program's meaning does not (it is
// renamed consistently by relabel). Used by the replay engine and by the C++
// backend, so both receive the same messages in place.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/plan.h"

namespace collplan::ir {

// pos[s] = the new number of slot s (a permutation of 0..num_slots-1).
std::vector<uint32_t> slot_layout(const ir::Program& prog);
// The program with every slot s renamed pos[s] (inputs, outputs, payloads,
// receives and ops).
ir::Program relabel(const ir::Program& prog, const std::vector<uint32_t>& pos);

// Where each slot lives when the caller's buffers hold what they can, so
// that nothing is copied in before step 1 or out after the last step (the
// engine with zero copy, emitted C++): home[s] = n_in + j for an output slot
// (its first listing, j, if listed twice), = i for an input slot listed
// once that is never written (no receive or op writes it) and is no output
// (read in its input buffer, never written there), else kNoHome (a row of
// the engine's arena or the emitted code's workspace). An input slot that
// is also an output is copied into the output's buffer before step 1.
inline constexpr uint32_t kNoHome = UINT32_MAX;
std::vector<uint32_t> caller_homes(const ir::Program& prog);

}  // namespace collplan::ir
