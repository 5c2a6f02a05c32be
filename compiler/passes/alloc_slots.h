// alloc-slots: renumber each rank's slots so that values whose lifetimes do
// not overlap share a slot, shrinking the runtime's scratch arena (slots are
// ℓ-element vectors, so every slot saved is ℓ·elem_bytes of working set).
//
// Per rank, every slot is one variable live from its first write to its last
// read (outputs: to the end). Positions follow plan.h's order inside a step:
// sends, then receives, then each op. Two variables interfere when one is
// written while the other is live; a value last read by an op or a send may
// share its slot with a value first written by that op or by a later receive
// of the same step (sends and op operands are read before the write).
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
// rank compiled alone (`collplan compile --rank`) with the same result.
void alloc_slots_rank(ir::Program& prog);

}  // namespace collplan::passes
