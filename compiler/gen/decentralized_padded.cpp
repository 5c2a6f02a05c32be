// Decentralized encoding by one all-to-all encode among all N ranks (journal
// paper Appendix B; docs/decentralized.md): the K×R matrix A (systematic) or
// the K×N generator G (non-systematic) padded to N×N — zero rows for the
// sinks, which hold zero; for a systematic code zero columns for the
// sources, whose results are discarded. The sinks' zero inputs cost nothing
// (the placement drops every term that reads them).
// C1 = ⌈log_b N⌉, C2 = C2(N-rank encode) (λ = 1, prepare-and-shoot).
// Simple and C1-optimal for the whole system, but every message is sized
// for N ranks: the grid generators have smaller C2 when K or R is small.
#include <fmt/format.h>

#include "gen/decentralized_build.h"
#include "matrix/postcondition.h"
#include "support/error.h"

namespace collplan::gen {

namespace {
// The padded N x N matrix in n blocks is an N-rank encode's postcondition:
// the same 2^26-entry limit as any encode (support/limits.h).
bool padded_fits(const Spec& spec) {
  const uint64_t Nn = uint64_t{spec.N} * spec.blocks;
  return Nn <= 8192 && Nn * Nn <= kMaxPostconditionEntries;  // the first keeps the product from overflowing
}
}  // namespace

ir::Plan decentralized_padded(const Spec& spec, const passes::CostModel& cm) {
  if (spec.N > spec.K && !padded_fits(spec))
    user_error("decentralized-padded: N = {}, blocks = {}: the padded {} x {} matrix in {} blocks is an N-rank encode "
               "of (N*n)^2 = {} coefficients, over the 2^26 = {} collplan checks; use N*n <= 8192 or another "
               "generator (decentralized-grid, -grouped, -naive)",
               spec.N, spec.blocks, spec.N, spec.N, spec.blocks,
               (uint64_t{spec.N} * spec.blocks) * (uint64_t{spec.N} * spec.blocks), kMaxPostconditionEntries);
  detail::Assembly a = detail::start(spec, "the decentralized padded generator");
  const uint32_t K = a.K, N = a.N;
  a.layout = fmt::format("{}, matrix padded to {} x {}, sinks hold zero", a.systematic ? "systematic" : "non-systematic",
                         N, N);
  std::vector<ir::Rank> all(N);
  Matrix B = Matrix::zeros(N, N);
  for (uint32_t r = 0; r < N; ++r) all[r] = r;
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t c = 0; c < N; ++c)
      if (!a.systematic) B.at(k, c) = a.M.at(k, c);
      else if (c >= K) B.at(k, c) = a.M.at(k, c - K);
  detail::encode_blocks(a, {all}, {B}, cm, fmt::format("one encode of the padded {}x{} matrix", N, N));
  return detail::finish(a);
}

PostalSplitCost decentralized_padded_estimate(const Spec& spec, const passes::CostModel& cm) {
  if (spec.N <= spec.K || !padded_fits(spec)) return detail::not_applicable();
  return detail::delivered_cost(decentralized_padded(spec, cm));
}

}  // namespace collplan::gen
