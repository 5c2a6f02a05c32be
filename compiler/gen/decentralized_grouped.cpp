// Decentralized encoding of a non-systematic [N, K] code G (K×N): the
// grouped scheme of the encode paper's Remark 1 (K | N) and of the journal
// paper's Appendix B-B (any N).
//
// g = ⌊N/K⌋ groups, r = N − gK left-over ranks. Group 0 is the sources
// 0..K−1, group j = 1..g−1 is ranks jK..jK+K−1; the left-over rank gK+t
// joins group t mod g (Appendix B-B: the incomplete column is distributed
// evenly over the others), holding zero.
//   Phase 1: source i broadcasts x_i to rank jK+i of every group j >= 1
//            (row broadcasts among g ranks).
//   Phase 2: every group encodes its block of G by the padded method of
//            Appendix B-A: the columns of G of its members, zero rows for the
//            left-over members' zero inputs.
// C1 = ⌈log_b g⌉ + ⌈log_b(K + ⌈r/g⌉)⌉ (λ = 1, prepare-and-shoot blocks),
// Remark 1's ⌈log_b(N/K)⌉ + ⌈log_b K⌉ when K | N.
// g = 1 (N < 2K) is the padded N-rank encode.
#include <fmt/format.h>

#include "gen/decentralized_build.h"
#include "support/error.h"

namespace collplan::gen {

using ir::Rank;

ir::Plan decentralized_grouped(const Spec& spec, const passes::CostModel& cm) {
  detail::Assembly a = detail::start(spec, "the decentralized grouped generator");
  if (a.systematic)
    user_error("decentralized-grouped encodes non-systematic codes (a {}x{} generator matrix G); this spec has a {}x{} "
               "matrix A: use decentralized-grid",
               a.K, a.N, a.K, a.R);
  const uint32_t K = a.K, N = a.N, g = N / K, r = N - g * K;
  a.layout = fmt::format("non-systematic, {} group(s) of {} ranks (group 0 = the sources), {} left-over rank(s) "
                         "spread over the groups",
                         g, K, r);
  std::vector<std::vector<Rank>> rows(K), groups(g);
  for (uint32_t i = 0; i < K; ++i)
    for (uint32_t j = 0; j < g; ++j) {
      rows[i].push_back(j * K + i);  // root: the source, local rank 0
      groups[j].push_back(j * K + i);
    }
  for (uint32_t t = 0; t < r; ++t) groups[t % g].push_back(g * K + t);
  std::vector<Matrix> blocks;
  for (const auto& grp : groups) {
    const uint32_t n = static_cast<uint32_t>(grp.size());
    Matrix B = Matrix::zeros(n, n);  // rows >= K stay zero: those members hold zero
    for (uint32_t k = 0; k < K; ++k)
      for (uint32_t c = 0; c < n; ++c) B.at(k, c) = a.M.at(k, grp[c]);
    blocks.push_back(std::move(B));
  }
  if (g > 1) detail::broadcast_groups(a, rows, cm, "row broadcasts of x_i to every group");
  detail::encode_blocks(a, groups, blocks, cm, "group encodes of the blocks of G");
  return detail::finish(a);
}

PostalSplitCost decentralized_grouped_estimate(const Spec& spec, const passes::CostModel& cm) {
  if (decentralized_systematic(spec) || spec.N <= spec.K) return detail::not_applicable();
  return detail::delivered_cost(decentralized_grouped(spec, cm));
}

}  // namespace collplan::gen
