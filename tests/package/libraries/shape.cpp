// Checks the shape of the decentralized plan rs (6 ranks, all emitted;
// sources 0..3 with one input, sinks 4..5 with one output) and prints its
// spec line. It calls run_rank(), which dispatches to every rank's entry
// point, so it links only when every rank's object library is in.
#include <cstdio>

#include "rs.h"

namespace {
// A channel that refuses everything: the first send or receive fails.
class NoChannel final : public collplan_embedded::Channel {
 public:
  bool send(uint32_t, uint32_t, const void*, size_t) override { return false; }
  bool recv(uint32_t, uint32_t, void*, size_t) override { return false; }
};
uint32_t workspace[64];
uint8_t data[rs::kNumRanks][4];
}  // namespace

int main() {
  bool ok = rs::kNumRanks == 6 && rs::kNumEmitted == 6;
  NoChannel ch;
  for (uint32_t r = 0; r < rs::kNumRanks; ++r) {
    const bool source = r < 4;
    ok = ok && rs::emitted(r) && rs::num_inputs(r) == (source ? 1u : 0u) && rs::num_outputs(r) == (source ? 0u : 1u);
    ok = ok && rs::workspace_bytes(r, 4) <= sizeof workspace;
    const void* in[] = {data[r]};
    void* out[] = {data[r]};
    // Every rank communicates, so over this channel each run stops at its
    // first send or receive.
    ok = ok && !rs::run_rank(r, ch, in, out, 4, workspace).ok();
  }
  std::printf("%s\n", rs::kSpec);
  return ok ? 0 : 1;
}
