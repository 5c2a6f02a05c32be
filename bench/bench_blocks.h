// Block counts the benchmarks give the n-block broadcasts, from the same
// linear model the compiler chooses by (time = beta·C1 + tau·C2·⌈m/n⌉ for a
// message of m elements in n blocks).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "gen/circulant_plans.h"
#include "gen/registry.h"
#include "ir/spec.h"

namespace collplan::bench {

inline Spec broadcast_spec(uint32_t K, uint32_t blocks) {
  Spec s;
  s.op = OpKind::Broadcast;
  s.K = K;
  s.field = Field::gf256();
  s.root = 0;
  s.blocks = blocks;
  return s;
}

// circulant-broadcast: `--blocks auto` (gen::circulant_auto_blocks, the
// paper's n* made exact).
inline uint32_t circulant_blocks(uint32_t K, uint64_t m, double beta, double tau) {
  return gen::circulant_auto_blocks(K, m, beta, tau);
}

// Any other broadcast generator: the exact argmin over n in
// [1, min(m, max_n)] of the registry's cost estimate under the model
// (smallest n on ties). For pipelined-broadcast (a chain when p = 1) the
// estimate is C1 = n − 1 + (K − 1), C2 = C1.
inline uint32_t model_blocks(const std::string& algorithm, uint32_t K, uint64_t m, double beta, double tau,
                             uint32_t max_n = gen::kCirculantMaxAutoBlocks) {
  const gen::GeneratorInfo& g = gen::find_generator(algorithm);
  auto time = [&](uint32_t n) {
    const gen::PostalSplitCost c = g.estimate(broadcast_spec(K, n), passes::CostModel{});
    return beta * c.C1 + tau * static_cast<double>(c.C2) * static_cast<double>((m + n - 1) / n);
  };
  uint32_t best = 1;
  for (uint32_t n = 2; n <= std::min<uint64_t>(m, max_n); ++n)
    if (time(n) < time(best)) best = n;
  return best;
}

}  // namespace collplan::bench
