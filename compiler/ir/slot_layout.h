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

}  // namespace collplan::ir
