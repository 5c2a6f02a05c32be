// drop-zeros: remove what is structurally zero, then what is dead.
//
// A slot is structurally zero when it was last written by an empty
// combination or by one whose terms all read zero slots: a fact of the
// schedule, true for every input and every matrix (coefficients are ignored,
// so re-coding stays possible).
// The pass (1) removes zero elements from messages (and the matching
// receive slots; a message left empty is not sent), (2) removes terms that
// read zero slots, in ops and in the elements of messages, and ops reduced
// to dst := dst, (3) removes ops whose result
// is never read (per-rank liveness), and (4) writes dst := 0 for an output
// whose only writes were removed. For prepare-and-shoot it drops the shoot
// variables with l·m >= K, lowering C2 below the paper's figure
// (K = 4096, p = 2: 66 instead of 80; docs/design.md).
#pragma once

#include "ir/plan.h"

namespace collplan::passes {

void drop_zeros(ir::Plan& plan);

}  // namespace collplan::passes
