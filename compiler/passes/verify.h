// The checker: proves a plan computes its spec's postcondition within the
// model's rules. It is a pass every other pass keeps green (the pipeline
// runs it after the generator and after every pass), and the engine of
// `collplan check`. Verification cannot be switched off.
//
// verify_structure() checks the rules of plan.h: rank/slot/port bounds, at
// most one send and one receive per port per step, no send to oneself, every
// send matched by exactly one receive at step t+λ−1 on the same port with the
// same size (and vice versa), no message in flight after the last step,
// no slot read before it is written, outputs written, coefficients in the
// field. verify() adds the algebra:
//   exact       every slot as a coefficient vector over all inputs; the
//               outputs must equal the postcondition's columns. A proof.
//   randomized  s independent uniformly random input vectors; a plan whose
//               map differs from the postcondition passes one trial with
//               probability exactly 1/q (its error is a non-zero linear form,
//               Schwartz–Zippel with degree 1), so all s with probability
//               <= q^−s. s is chosen so that q^−s <= 2^−40 unless given.
//   auto        exact when ranks·slots·inputs <= 2^25 cells, else randomized.
// Every failure is a VerifyError whose message names rank, step, port, slot.
#pragma once

#include <cstdint>
#include <string>

#include "ir/plan.h"
#include "matrix/postcondition.h"

namespace collplan::passes {

enum class VerifyMode { Auto, Exact, Randomized };

struct VerifyOptions {
  VerifyMode mode = VerifyMode::Auto;
  uint32_t trials = 0;  // randomized: 0 = the least s with q^−s <= 2^−40
  uint64_t seed = 0x636f6c6c706c616eull;
};

struct VerifyReport {
  VerifyMode mode = VerifyMode::Exact;  // the mode actually used
  uint32_t trials = 0;
  uint64_t seed = 0;
  double error_log2 = 0;  // log2 of the false-accept bound (−inf for exact)
  std::string describe() const;  // "exact" / "randomized, 5 trials, false-accept probability <= 2^-40.0"
};

void verify_structure(const ir::Plan& plan);
// What can be checked of one rank's program alone (a single-rank file from
// `collplan extract`): the rules above that involve only this rank — slot,
// rank and port bounds, at most one send and one receive per port and step,
// no send to or receive from itself, receives of messages sent in step
// t−λ+1, no message still in flight after the last step, no read before
// write, outputs written, and the postcondition's input and output counts
// for this rank. NOT checkable without the other ranks: that every send is
// received and every receive sent (with equal sizes), and the algebra.
// `max_ranks`: kMaxRankLocalRanks for a rank compiled alone (`collplan
// compile --rank`), whose K may exceed a whole plan's limit.
void verify_rank_structure(const Spec& spec, uint32_t num_steps, const ir::Program& prog,
                           uint32_t max_ranks = kMaxPlanRanks);
VerifyReport verify(const ir::Plan& plan, const VerifyOptions& opt = {});
// The same, against a postcondition the caller already built from
// plan.spec (the pipeline builds it once for all its verifications).
void verify_structure(const ir::Plan& plan, const Postcondition& pc);
VerifyReport verify(const ir::Plan& plan, const Postcondition& pc, const VerifyOptions& opt = {});

const char* mode_name(VerifyMode m);

}  // namespace collplan::passes
