// The randomized check's vectors, drawn once and shared by several
// verifications (the pipeline's: after the generator and after each pass).
//
// The random input vectors and their images under the postcondition depend
// on the postcondition, the field and the VerifyOptions only, not on the
// plan. For an encode of K ranks the images cost K^2·trials field
// operations, as much as simulating the plan, and need the K×K map, which a
// caller can release once they are drawn and no exact check can follow. The
// evaluator keeps references to the postcondition's offsets: the
// Postcondition must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "matrix/postcondition.h"
#include "passes/verify.h"

namespace collplan::passes {

struct RandomizedInputs {
  uint32_t trials = 0;  // 0: not drawn yet
  uint64_t seed = 0;
  // The `trials` vectors over all inputs (expected->inputs(), input-major)
  // and the postcondition applied to them: the dense images for a coded
  // map, O(trials · inputs) sums for the plain collectives.
  std::shared_ptr<const Evaluator> expected;
};

// verify(plan, pc, opt), with the randomized check's vectors taken from
// *drawn, which is filled first when empty (trials == 0). The same pc,
// field and options must come with the same *drawn. Once *drawn is filled,
// a randomized check reads pc's offsets and counts but not pc.map.
VerifyReport verify(const ir::Plan& plan, const Postcondition& pc, const VerifyOptions& opt, RandomizedInputs* drawn);

// Whether verify() can take the exact path for any plan of `ranks`
// programs against pc (auto mode: when ranks·slots·inputs <= 2^25 for the
// plan's largest slot count, which is at least 1). When it cannot, a caller
// holding a filled RandomizedInputs no longer needs pc.map.
bool may_verify_exactly(const Postcondition& pc, uint64_t ranks, const VerifyOptions& opt);

}  // namespace collplan::passes
