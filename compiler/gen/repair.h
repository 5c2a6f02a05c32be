// Generators of repair and decode plans (docs/repair.md; what they compute:
// matrix/repair.h). Every one works from the spec's RepairMap F: output
// symbol o, at rank out_rank[o], is Σ_h c_h·F[h][o] over the helpers.
//
//   repair-central      the repair storage systems do today: every receiving
//                       rank reads the whole chunks of the helpers it needs
//                       and decodes locally. E = max(helpers, receivers);
//                       C1 = ⌈E/p⌉ + λ − 1, C2 = n·⌈E/p⌉.
//   repair-tree         partial-parallel repair: per output symbol, the
//                       helpers' scaled chunks are summed up a (p+1)-nomial
//                       tree into the receiver; outputs one after another.
//                       C1 = m·λ·⌈log_{p+1}(h+1)⌉, C2 = m·n·⌈log_{p+1}(h+1)⌉
//                       for m output symbols of h helpers each.
//   repair-pipelined    repair pipelining: per output symbol, the n blocks
//                       stream along the helpers' p-ary chain (a path for
//                       p = 1), each adding its scaled block, into the
//                       receiver: C1 = m·(n − 1 + D·λ) for depth D; one
//                       symbol costs about one chunk's transfer for n ≫ h.
//   repair-lagrange     Reed–Solomon: one K×K encode among the K helpers of
//                       the Lagrange matrix V(α_H)^{-1}·V(α_T) (or
//                       V(α_H)^{-1}), structured where the points allow it,
//                       then each symbol sent to its receiver if computed
//                       elsewhere (gen/repair_lagrange.cpp).
//   repair-decentralized the decentralized encode of F (helpers as sources,
//                       receivers as sinks) by the best decentralized-encode
//                       generator (grid, padded, grouped, naive), its ranks
//                       mapped onto the helpers and receivers; one output
//                       symbol per receiver, receivers not helpers.
#pragma once

#include <string>

#include "gen/postal_encode.h"
#include "ir/plan.h"
#include "passes/cost.h"

namespace collplan::gen {

ir::Plan repair_central(const Spec& spec);
PostalSplitCost repair_central_estimate(const Spec& spec);

// `pipelined` = false: the tree; true: the chain.
ir::Plan repair_reduce(const Spec& spec, bool pipelined, const passes::CostModel& cm);
PostalSplitCost repair_reduce_estimate(const Spec& spec, bool pipelined);

// repair-lagrange: collplan's RS code, exactly K helpers, at most K output
// symbols (gen/repair_lagrange.cpp).
ir::Plan repair_lagrange(const Spec& spec, const passes::CostModel& cm);
PostalSplitCost repair_lagrange_estimate(const Spec& spec, const passes::CostModel& cm);
std::string repair_lagrange_why_not(const Spec& spec);

ir::Plan repair_decentralized(const Spec& spec, const passes::CostModel& cm);
PostalSplitCost repair_decentralized_estimate(const Spec& spec, const passes::CostModel& cm);
std::string repair_decentralized_why_not(const Spec& spec);

}  // namespace collplan::gen
