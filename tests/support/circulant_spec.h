// The spec the circulant generator tests build: one port, λ = 1, GF(2^8),
// n blocks, a root, per-rank counts (allgatherv).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/spec.h"

namespace collplan::test {

inline Spec block_spec(OpKind op, uint32_t K, uint32_t n, uint32_t root = 0, std::vector<uint32_t> counts = {}) {
  Spec s;
  s.op = op;
  s.K = K;
  s.p = 1;
  s.lambda = 1;
  s.field = Field::gf256();
  s.blocks = n;
  s.root = root;
  s.counts = std::move(counts);
  return s;
}

}  // namespace collplan::test
