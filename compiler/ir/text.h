// The human-readable plan dump, for `collplan show` and golden tests.
//
// Deterministic (same plan, same bytes) and line-bounded: no line is longer
// than kTextWidth columns unless a single token is (long payloads, term lists
// and slot lists wrap, continuation lines are indented further). Layout, with
// the full description in docs/plan-format.md:
//
//   collplan plan
//     op         encode
//     K          4
//     p          1
//     lambda     1
//     field      gf256 = GF(2^8) mod 0x11d
//     matrix     random 4x4, seed 7
//     digest     <32 hex digits>
//     algorithm  hand
//     blocks     1
//     steps      2
//     terms      9
//
//   rank 0: 3 slots, inputs [s0], outputs [s2]
//     step 1
//       send port 0 -> 1 [s0, 2*s1 + s4]
//       recv port 0 <- 3 (sent 1) -> s1 s2
//       s2 := s2 + 3*s1  (matrix col 0)
//
// A term with coefficient 1 prints as its slot alone; an empty combination
// prints as 0. Steps in which a rank does nothing are omitted.
#pragma once

#include <optional>
#include <string>

#include "ir/plan.h"

namespace collplan::ir {

inline constexpr size_t kTextWidth = 100;

// The dump of the whole plan, or of the header and one rank (UserError when
// that rank is not in the plan). With one rank, the header's `terms` line
// counts that rank's terms only, so a plan holding just that rank's program
// (as read_rank loads it) dumps the same.
std::string to_text(const Plan& plan, std::optional<Rank> only_rank = std::nullopt);
// The same dump of one rank's program loaded alone (a single-rank or
// rank-local file), without the K-program plan to_text would need.
std::string to_text(const Spec& spec, uint32_t num_steps, const Program& prog);

}  // namespace collplan::ir
