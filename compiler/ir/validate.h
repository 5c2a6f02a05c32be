// The structural validator: the rules of ir/plan.h, checked without any
// algebra (no matrices, no postconditions), so the runtime can use it.
//
// verify_structure(): rank/slot/port bounds, at most one send and one
// receive per port per step, no send to oneself, every send matched by
// exactly one receive at step t+λ−1 on the same port with the same size
// (and vice versa), nothing in flight after the last step, no slot read
// before it is written, outputs written, coefficients in the field, and the
// spec's input and output counts per rank (ir/spec.h, rank_ios).
// Every failure is a VerifyError naming rank, step, port and slot.
// passes/verify.h adds the algebra (the checker proper).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/plan.h"

namespace collplan::ir {

void verify_structure(const Plan& plan);
// The same with the per-rank input and output counts given by the caller
// (the checker has them from the postcondition it already built).
void verify_structure(const Plan& plan, const std::vector<uint32_t>& inputs_per_rank,
                      const std::vector<uint32_t>& outputs_per_rank);
// The most steps a plan may have (a step number is checked against it before
// anything is allocated per step).
inline constexpr uint32_t kMaxSteps = 1u << 24;

// One end of a message: a send (rank = sender, peer = destination) or a
// receive (rank = receiver, peer = source), with the step it was sent in,
// the step of the end itself, and its element count.
struct MessageEnd {
  Rank rank = 0;
  Rank peer = 0;
  Port port = 0;
  StepNo sent_at = 0;
  StepNo t = 0;
  uint64_t size = 0;
};
// verify_structure's checks for a checker that holds one program at a
// time (`collplan check --streaming`), in two halves: the rules one program
// keeps on its own (those of verify_rank_structure, with n_in inputs and
// n_out outputs), its sends and receives appended to `sends` and `recvs`;
// then, once every rank has been through it, every receive matched with
// exactly one send and every send received (the same errors as
// verify_structure, which holds the whole plan and so looks each message's
// other end up in it instead of gathering these lists).
void check_rank_messages(const Spec& spec, uint32_t num_steps, const Program& prog, uint32_t n_in, uint32_t n_out,
                         std::vector<MessageEnd>& sends, std::vector<MessageEnd>& recvs);
void match_messages(const Spec& spec, std::vector<MessageEnd>& sends, const std::vector<MessageEnd>& recvs);
// The rank count and every program's input and output counts against the
// spec, in O(ranks): run before anything of the operation's size is built,
// so a small file claiming a large operation is refused in time
// proportional to the file.
void check_io_counts(const Plan& plan);
// What can be checked of one rank's program alone (a single-rank file from
// `collplan extract`): the rules above that involve only this rank. NOT
// checkable without the other ranks: that every send is received and every
// receive sent (with equal sizes). `max_ranks`: kMaxRankLocalRanks for a
// rank compiled alone (`collplan compile --rank`).
void verify_rank_structure(const Spec& spec, uint32_t num_steps, const Program& prog,
                           uint32_t max_ranks = kMaxPlanRanks);

}  // namespace collplan::ir
