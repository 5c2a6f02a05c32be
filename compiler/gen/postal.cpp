// Shared helpers of the postal-model generators: the G table of the paper's
// Thm 1 and the sets U_{x,j} (§3.1) and W_{y,j} (§3.2). See gen/postal.h for
// the conventions; the generators are in postal_prefix.cpp and
// postal_broadcast.cpp.
#include "gen/postal.h"

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::gen {

std::vector<uint64_t> postal_G(uint32_t p, uint32_t lambda, uint64_t upto_n) {
  COLLPLAN_ASSERT(p >= 1 && lambda >= 1, fmt::format("postal_G: p = {}, lambda = {}", p, lambda));
  // G grows by at least one per step from j = λ on, so the loop ends; the
  // last value may exceed upto_n but stays below (p+1)·upto_n, far from
  // overflow for any K the compiler accepts.
  std::vector<uint64_t> G;
  for (uint32_t j = 0;; ++j) {
    G.push_back(j < lambda ? 1 : G[j - 1] + static_cast<uint64_t>(p) * G[j - lambda]);
    if (G.back() >= upto_n) return G;
  }
}

std::vector<uint32_t> postal_U(const std::vector<uint64_t>& G, uint32_t p, uint32_t lambda, uint64_t n, uint64_t x,
                               uint32_t j) {
  COLLPLAN_ASSERT(j >= 1, "postal_U: steps start at 1");
  std::vector<uint32_t> out;
  const uint64_t far = static_cast<uint64_t>(j) + lambda - 2;  // index of the first receiver's offset
  // Past the end of G every offset is >= G(m) >= n: the set is empty.
  if (far >= G.size()) return out;
  for (uint64_t t = 0; t < p; ++t) {
    const uint64_t y = x + G[far] + t * G[j - 1];
    if (y >= n) break;  // y grows with t: the valid t are a prefix
    out.push_back(static_cast<uint32_t>(y));
  }
  return out;
}

std::vector<uint32_t> postal_W(const std::vector<uint64_t>& G, uint32_t p, uint32_t lambda, uint64_t y, uint32_t j) {
  COLLPLAN_ASSERT(j >= lambda && j < G.size() + 1, fmt::format("postal_W: step {} outside {}..{}", j, lambda, G.size()));
  std::vector<uint32_t> out;
  for (uint64_t t = 0; t < p; ++t) {
    const uint64_t off = G[j - 1] + t * G[j - lambda];
    if (off > y) break;  // the sender shrinks with t: the valid t are a prefix
    out.push_back(static_cast<uint32_t>(y - off));
  }
  return out;
}

std::vector<uint32_t> postal_block_counts(uint32_t n, uint32_t P) {
  if (P < 1) user_error("P = {} is invalid: items are split over P >= 1 ranks", P);
  std::vector<uint32_t> c(P, n / P);
  for (uint32_t i = 0; i < n % P; ++i) ++c[i];  // n − P·⌊n/P⌋ ranks get one more
  return c;
}

}  // namespace collplan::gen
