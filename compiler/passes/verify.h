// The checker: proves a plan computes its spec's postcondition within the
// model's rules. It is a pass every other pass keeps green (the pipeline
// runs it after the generator and after every pass), and the engine of
// `collplan check`. Verification cannot be switched off.
//
// The structure (ir/validate.h, verify_structure) is checked first; verify()
// adds the algebra:
//   exact       every slot as its coefficient vector over all inputs, held
//               sparse (the non-zero terms only, a value passed on unchanged
//               shared); the outputs must equal the postcondition's columns.
//               A proof. Its cost follows the values' sizes: about the
//               postcondition's non-zeros for a plain collective (an
//               allgather of K = 2048 ranks: 2^22 one-term outputs).
//   randomized  s independent uniformly random input vectors; a plan whose
//               map differs from the postcondition passes one trial with
//               probability exactly 1/q (its error is a non-zero linear form,
//               Schwartz–Zippel with degree 1), so all s with probability
//               <= q^−s. s is chosen so that q^−s <= 2^−40 unless given;
//               8 trials are simulated side by side, more take more runs. The
//               expected outputs come from the postcondition's evaluator
//               (matrix/postcondition.h), in O(s · inputs) for a plain
//               collective: memory follows the plan, not inputs × outputs.
//   auto        exact when it is cheap: for the coded operations when
//               ranks·slots·inputs <= 2^25; for the others when the
//               postcondition has at most 2^23 non-zeros and the evaluation
//               builds at most 2^26 entries (else randomized).
//               An exact check asked for by name stops with a UserError past
//               2^32 entries.
// Every failure is a VerifyError whose message names rank, step, port, slot.
#pragma once

#include <cstdint>
#include <string>

#include "ir/plan.h"
#include "ir/validate.h"
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

// ir::verify_rank_structure plus, for encode and decentralized-encode, the
// matrix's shape and digest (what one rank's file can tell of the algebra).
void verify_rank_structure(const Spec& spec, uint32_t num_steps, const ir::Program& prog,
                           uint32_t max_ranks = kMaxPlanRanks);
VerifyReport verify(const ir::Plan& plan, const VerifyOptions& opt = {});
// The same, against a postcondition the caller already built from
// plan.spec (the pipeline builds it once for all its verifications).
VerifyReport verify(const ir::Plan& plan, const Postcondition& pc, const VerifyOptions& opt = {});

const char* mode_name(VerifyMode m);

}  // namespace collplan::passes
