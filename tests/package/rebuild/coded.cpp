// Checks the shape of the decentralized plan collplan_add_plan compiled into
// this program (16 ranks; sources 0..11 with 4 input blocks and no output,
// sinks 12..15 with 4 output blocks) and prints its spec line.
#include <cstdio>

#include "rs.h"

int main() {
  bool ok = rs::kNumRanks == 16;
  for (uint32_t r = 0; r < rs::kNumRanks; ++r) {
    const bool source = r < 12;
    ok = ok && rs::num_inputs(r) == (source ? 4u : 0u) && rs::num_outputs(r) == (source ? 0u : 4u);
  }
  std::printf("%s\n", rs::kSpec);
  return ok ? 0 : 1;
}
