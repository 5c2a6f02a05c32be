// All-to-all encode in the p-port postal model with latency λ >= 1: a
// generalisation of prepare-and-shoot to postal trees, parameterised by the
// prepare spread m (1 <= m <= K; n = ⌈K/m⌉ shoot positions).
//
//   m = K      "postal-allgather": every input spreads to every rank along
//              the postal G-tree, then each rank combines locally.
//              C1 = T(K) = min{t : G(t) >= K}, the lower bound for any
//              matrix with a row without zeros (optimal).
//   m < K      "postal-prepare-shoot": inputs spread to m ranks (T(m)
//              steps), then n-to-one postal reduces (T(n) steps):
//              C1 = T(m) + T(n) >= T(K), with a much smaller C2.
//
// The design, its costs and how the split is chosen are in
// docs/postal-encode.md.
#pragma once

#include <cstdint>

#include "ir/plan.h"
#include "passes/cost.h"

namespace collplan::gen {

// Steps of the postal broadcast to s positions: min{t : G(t) >= s} (0 for s <= 1).
uint32_t postal_T(uint64_t s, uint32_t p, uint32_t lambda);

struct PostalSplitCost {
  uint32_t m = 0, n = 0;
  uint32_t C1 = 0;
  uint64_t C2 = 0;  // as scheduled, before zero elimination
};
// Cost of the split m for K processors, computed without building the plan.
PostalSplitCost postal_split_cost(uint32_t K, uint32_t p, uint32_t lambda, uint32_t m);

// The split minimising the modeled time (ties: smaller C1, then larger m).
uint32_t choose_postal_split(uint32_t K, uint32_t p, uint32_t lambda, const passes::CostModel& cm);

// The plan for a given split (op == Encode; coefficients of spec.matrix).
ir::Plan postal_prepare_shoot(const Spec& spec, uint32_t m);

}  // namespace collplan::gen
