// Recursive doubling for K a power of p + 1: the allgather
// (gen/recursive_doubling_allgather.cpp) and the allreduce by recursive
// halving then doubling (gen/recursive_halving_doubling.cpp). Every message
// is a run of consecutive ranks' (or chunks') elements in rank order, so a
// rank whose outputs are one buffer sends and receives every message as one
// contiguous piece.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gen/postal_encode.h"
#include "gen/dissemination_build.h"
#include "ir/plan.h"

namespace collplan::gen {

ir::Plan recursive_doubling_allgather(const Spec& spec);
ir::RankPlan recursive_doubling_allgather_local(const Spec& spec, uint32_t rank);
PostalSplitCost recursive_doubling_allgather_cost(const Spec& spec);
// "" when K is a power of p + 1 (both generators' condition), else why not.
std::string recursive_doubling_why_not(const Spec& spec);

ir::Plan recursive_halving_doubling(const Spec& spec);
ir::RankPlan recursive_halving_doubling_local(const Spec& spec, uint32_t rank);
PostalSplitCost recursive_halving_doubling_cost(const Spec& spec);

// m with (p+1)^m = K, or −1 when K is no power of p + 1.
int recursive_rounds(uint64_t K, uint64_t p);
// Appends the allgather rounds to rank prog.rank's program from step
// first_step (round k sent in first_step + kλ, received λ − 1 steps later).
// On entry runs[prog.rank] holds the rank's own elements and every runs[a]
// its count; on exit every run is set (received into new consecutive slots;
// a run of no elements is neither sent nor received). Returns the last
// step used.
uint32_t recursive_doubling_phase(const ir::Plan& ctx, ir::Program& prog, ir::StepNo first_step,
                                  std::vector<SlotRun>& runs);

}  // namespace collplan::gen
