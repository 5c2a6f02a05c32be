// Widening: an n-block plan out of a one-block plan.
//
// Every operation whose blocks are independent copies of the one-block
// operation (encode, decentralized encode, broadcast, reduce, allgather,
// allreduce: blocks are numbered rank-major, block-minor, see
// matrix/postcondition.h) has an n-block plan that runs the one-block plan's
// schedule once and carries all n copies in it: slot s becomes slots
// s·n + b (b = 0..n−1), every message element becomes n elements (one per
// block), every op becomes n ops. C1 is unchanged and every message is n
// times longer, so C2 grows n-fold; the bytes moved are the same as running
// the one-block plan on vectors n times longer. Widening buys nothing by
// itself: it is the baseline that block-pipelined schedules (circulant,
// pipelined chains) are measured against, and the way a one-block building
// block (an encode) joins a plan whose values are n blocks each.
#pragma once

#include <cstdint>

#include "ir/plan.h"

namespace collplan::passes {

// The n-block plan of `plan` (n >= 1; spec.blocks must be 1, and the
// operation one of the above: UserError naming the value otherwise). The
// result's spec is plan.spec with blocks = n; input i block b is input
// i·n + b of its rank, likewise for outputs. matrix_col marks are dropped
// (a widened encode is not re-codable). n = 1 returns a copy.
ir::Plan widen(const ir::Plan& plan, uint32_t n);

}  // namespace collplan::passes
