// Replay-and-compare: run a plan on the in-process threads transport with
// random data and compare every output with the direct computation of the
// spec's postcondition. This is what `collplan run` reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/plan.h"
#include "runtime/transport/threads.h"

namespace collplan::rt {

struct ReplayReport {
  size_t len = 0;               // ℓ, elements per vector
  double seconds_median = 0;    // wall time of one replay (all ranks), median over reps
  double seconds_min = 0;
  size_t reps = 0;
  uint64_t bytes_in_total = 0;  // input bytes over all ranks: inputs · ℓ · elem_bytes
  bool equal = false;           // every output byte equals the direct computation
  // Empty when equal; otherwise "rank R, output J, element I: expected X, got Y"
  // for the first differing element in (rank, output, element) order.
  std::string first_mismatch;
  double throughput_gbps = 0;   // bytes_in_total / seconds_median / 1e9
};

// Inputs: every rank's input vectors filled with uniform field elements drawn
// from SplitMix64(seed), in rank-major, input, element order. Runs the plan
// `reps` times (at least once; outputs are poisoned before each run, so every
// run must write them all), then compares the last run's outputs with
// direct_compute(field, postcondition(plan.spec), inputs). A transport or
// plan error propagates as UserError; a wrong result is reported, not thrown.
ReplayReport replay_and_compare(const ir::Plan& plan, size_t len, uint64_t seed, size_t reps = 5,
                                ThreadsOptions opt = {});

}  // namespace collplan::rt
