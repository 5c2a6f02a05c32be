// Combinations evaluated together: the one rule the replay engine
// (runtime/engine_combine.cpp) and the C++ backend (backend/emit_cpp.cpp)
// share for turning several of a step's combinations into one
// multi-output kernel call, so that generated code and the engine read each
// source row once for a whole run of combinations instead of once per
// combination (the shoot initialisation of prepare-and-shoot is such a run).
//
// A fused run is a list of consecutive ops of one step, each dot-worthy and
// not reading its own dst, that are independent of one another: no op's dst
// is a source or the dst of another op of the run. That independence is what
// makes evaluating them together exact: every op of the run reads only slots
// no op of the run writes, so running them in one pass over the union of
// their sources gives what running them in order gives.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "field/field.h"
#include "ir/plan.h"

namespace collplan::ir {

// Worth a multi-source kernel call: two or more terms with nonzero
// coefficients, not a plain sum (a plain sum is cheaper as a copy and adds,
// which need no tables). `nonzero_terms` holds no zero coefficient.
bool dot_worthy(std::span<const Term> nonzero_terms);

// Whether `op` may join `run` (a fused run so far, possibly empty: then the
// answer is false, a run starts with its first op): it is independent of
// every op of the run, and the union of the run's sources stays at most
// max(max_sources, the widest single op of the run) and padded with zero
// coefficients in fewer than a third of the fused call's coefficients. The
// caller has checked that `op` itself is dot-worthy and does not read its
// dst.
bool joins_fused_run(std::span<const Op* const> run, const Op& op, size_t max_sources);

// A run as one call: its distinct source slots in first-use order and a
// run.size() × sources.size() row-major coefficient matrix (row j for
// run[j]; 0 where an op does not read a source, the sum of the
// coefficients where it names a slot twice).
struct FusedRun {
  std::vector<SlotId> sources;
  std::vector<Elem> coeffs;
};
FusedRun fuse(std::span<const Op* const> run, const Field& field);

}  // namespace collplan::ir
