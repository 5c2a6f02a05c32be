// @collplan:begin banner
// Template of one rank's source file, as `collplan emit-cpp` writes it. It is
// real C++: the sample between the markers is rank 0 of a two-rank encode
// (send s0 to rank 1, receive s1 from it, s2 := s0 + 3*s1), so the file
// compiles as it is (tests compile it with -Wall -Wextra -Werror). The C++
// backend (compiler/backend/emit_cpp.h) replaces every region from a
// `@collplan:begin NAME` line to its `@collplan:end NAME` line, both
// included, with the generated text of that name; the rest is copied as is.
// @collplan:end banner
#include "collplan_embedded.h"
// @collplan:begin include
#include "dispatch.template.h"
// @collplan:end include

// @collplan:begin namespace_open
namespace collplan_template {
// @collplan:end namespace_open
namespace {

using collplan_embedded::Result;
using R = collplan_embedded::Rank<Field>;
using E = Field::elem;

// @collplan:begin constants
// This rank's shape: slots, then staging rows (payloads being built,
// messages landing in scattered slots, ops whose destination is a source).
// Ids kNumSlots + b name slots held in the caller's buffers (here the input
// s0 as 3 and the output s2 as 4: Rank::bind).
constexpr uint32_t kRank = 0;
constexpr uint32_t kNumSlots = 3;
// The terms of every combination the code below evaluates, in order of use:
// a combination of n sources reads rows kSlot[a..a+n) with coefficients
// kCoef[b..b+n) (prepared: kPrep.c[b..b+n)); m combinations fused into one
// set_rows call read an m x n coefficient matrix, row by row, from kPrep.c[b].
constexpr uint8_t kSlot[] = {3, 1};
constexpr E kCoef[] = {1, 3};
// The coefficients prepared at compile time for the kernel this file is built with.
constexpr collplan_embedded::Prepared<Field, sizeof(kCoef) / sizeof(kCoef[0])> kPrep(kCoef);
// @collplan:end constants

// @collplan:begin steps
bool step_1(R& r, Result* res) {
  // send port 0 -> 1 [s0]
  if (!r.send(1, 0, 1, r.row(3), 1, res)) return false;
  // recv port 0 <- 1 (sent 1) -> s1
  if (!r.recv(1, 0, 1, r.row(1), 1, res)) return false;
  // s2 := s0 + 3*s1
  r.set(r.row(4), kSlot + 0, kPrep.c + 0, 2);
  return true;
}
// @collplan:end steps

Result run(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs, size_t len,
           void* workspace) {
  Result res;
  if (len == 0 || workspace == nullptr || (num_inputs(kRank) != 0 && inputs == nullptr) ||
      (num_outputs(kRank) != 0 && outputs == nullptr)) {
    res.error = collplan_embedded::Error::bad_argument;
    return res;
  }
  R r(ch, workspace, len, kNumSlots);
// @collplan:begin body
  void* bound[2];
  r.bind(bound);
  r.bind_input(0, inputs[0]);
  const bool overlap = r.overlapping(inputs, 1, outputs, 1);
  r.bind_output(1, outputs[0], 2, overlap);
  if (!step_1(r, &res)) return res;
  r.unbind_output(1, outputs[0]);
// @collplan:end body
  return res;
}

}  // namespace

// @collplan:begin entry
Result rank_0(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs, size_t len,
              void* workspace) {
  return run(ch, inputs, outputs, len, workspace);
}
// @collplan:end entry
// @collplan:begin namespace_close
}  // namespace collplan_template
// @collplan:end namespace_close
