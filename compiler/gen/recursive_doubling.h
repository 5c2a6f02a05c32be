// The recursive-doubling allgather (gen/recursive_doubling_allgather.cpp):
// for K a power of p + 1, every message a block of consecutive ranks in rank
// order, so that a rank's outputs in one buffer send and receive every
// message as one contiguous piece.
#pragma once

#include <cstdint>
#include <string>

#include "gen/postal_encode.h"
#include "ir/plan.h"

namespace collplan::gen {

ir::Plan recursive_doubling_allgather(const Spec& spec);
ir::RankPlan recursive_doubling_allgather_local(const Spec& spec, uint32_t rank);
PostalSplitCost recursive_doubling_allgather_cost(const Spec& spec);
// "" when K is a power of p + 1 (the generator's condition), else why not.
std::string recursive_doubling_why_not(const Spec& spec);

}  // namespace collplan::gen
