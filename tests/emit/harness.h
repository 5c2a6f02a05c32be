// What the test harness (harness.cpp, built once) needs to know about the
// plan it runs; plan_glue.cpp, built with each plan's dispatch header, fills
// it in. So the heavy part (threads, mailboxes) is compiled once per test
// run and each plan costs only its own light translation units.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "collplan_embedded.h"

namespace collplan_test {

struct PlanInfo {
  uint32_t num_ranks;
  size_t elem_bytes;
  uint32_t (*num_inputs)(uint32_t rank);
  uint32_t (*num_outputs)(uint32_t rank);
  size_t (*workspace_bytes)(uint32_t rank, size_t len);
  collplan_embedded::Result (*run_rank)(uint32_t rank, collplan_embedded::Channel& ch, const void* const* inputs,
                                        void* const* outputs, size_t len, void* workspace);
};

PlanInfo plan_info();

}  // namespace collplan_test
