// alloc-slots: renumber each rank's slots so that values whose lifetimes do
// not overlap share a slot, shrinking the runtime's scratch arena (slots are
// ℓ-element vectors, so every slot saved is ℓ·elem_bytes of working set).
//
// Per rank, every write of a slot is one variable (the value it holds until
// the next write), live from its write to its last read (outputs: to the
// end; inputs: the whole run, so they are read in place and never
// overwritten). Positions follow plan.h's order inside a step: sends, then
// receives, then each op. Two variables interfere when one is written while
// the other is live; a value last read by an op may share its slot with the
// value that op writes (an in-place accumulation). The intervals also keep
// the runtime's zero-copy conditions (runtime/engine_place.cpp): a value a
// send reads keeps its slot until the message is due (step t + λ − 1), and
// a receive's slots are taken from the step its message is sent in, so
// messages go from and into the slots themselves, without staging copies.
//
// The interference graph of such lifetimes is an interval graph, so the
// left-edge algorithm (take the lowest free slot in order of first write)
// colours it optimally in O(n log n) without building it. A general
// colouring over explicit edges (Boost.Graph's sequential_vertex_coloring)
// was tried first: the graph has tens of millions of edges at K = 4096,
// p = 2 and the pass took 11.6 s there; the left-edge pass takes 0.16 s.
#pragma once

#include "ir/plan.h"

namespace collplan::passes {

void alloc_slots(ir::Plan& plan);
// The same for one program: the pass looks at no other rank, so it runs on a
// rank compiled alone (`collplan compile --rank`) with the same result. λ
// (how long a message is in flight) decides how long a sent value keeps its
// slot; without it, the largest latency the program's receives show.
void alloc_slots_rank(ir::Program& prog, uint32_t lambda);
void alloc_slots_rank(ir::Program& prog);

}  // namespace collplan::passes
