// Decentralized encoding of a non-systematic [N, K] code G (K×N): the grouped
// scheme of the encode paper's Remark 1, extended to K ∤ N.
//
// g = ⌊N/K⌋ groups of ranks, r = N − gK left over. Group 0 is the sources
// 0..K−1 together with the r left-over ranks gK..N−1 (which hold zero);
// group j = 1..g−1 is ranks jK..jK+K−1.
//   Phase 1: source i broadcasts x_i to rank jK+i of every group j >= 1
//            (row broadcasts among g ranks).
//   Phase 2: every group encodes its block of G: group j >= 1 the K×K block
//            of columns jK..jK+K−1; group 0 the (K+r)×(K+r) block of columns
//            0..K−1 and gK..N−1, padded with zero rows for the left-over
//            ranks' zero inputs.
// C1 = ⌈log_b g⌉ + ⌈log_b(K + r)⌉ (λ = 1, prepare-and-shoot blocks), which
// is Remark 1's ⌈log_b(N/K)⌉ + ⌈log_b K⌉ when K | N. Remark 1 assumes K | N;
// placing the left-over ranks in group 0 (rather than a short last group
// filled with borrowed ranks, which would be busy in their own group's
// encode at the same time) is this generator's extension.
// g = 1 (N < 2K) is the padded N-rank encode.
#include <fmt/format.h>

#include "gen/decentralized_build.h"
#include "support/error.h"

namespace collplan::gen {

using ir::Rank;

ir::Plan decentralized_grouped(const Spec& spec, const CostModel& cm) {
  detail::Assembly a = detail::start(spec, "the decentralized grouped generator");
  if (a.systematic)
    user_error("decentralized-grouped encodes non-systematic codes (a {}x{} generator matrix G); this spec has a {}x{} "
               "matrix A: use decentralized-grid",
               a.K, a.N, a.K, a.R);
  const uint32_t K = a.K, N = a.N, g = N / K, r = N - g * K;
  a.layout = fmt::format("non-systematic, {} group(s) of {} ranks; group 0 = the sources and {} left-over rank(s)", g, K, r);
  std::vector<std::vector<Rank>> rows(K), groups(g);
  std::vector<Matrix> blocks;
  for (uint32_t i = 0; i < K; ++i)
    for (uint32_t j = 0; j < g; ++j) rows[i].push_back(j * K + i);  // root: the source, local rank 0
  // Group 0: sources, then the left-over ranks (zero rows).
  {
    for (uint32_t i = 0; i < K; ++i) groups[0].push_back(i);
    for (uint32_t t = 0; t < r; ++t) groups[0].push_back(g * K + t);
    Matrix B = Matrix::zeros(K + r, K + r);
    for (uint32_t k = 0; k < K; ++k)
      for (uint32_t c = 0; c < K + r; ++c) B.at(k, c) = a.M.at(k, groups[0][c]);
    blocks.push_back(std::move(B));
  }
  for (uint32_t j = 1; j < g; ++j) {
    Matrix B = Matrix::zeros(K, K);
    for (uint32_t i = 0; i < K; ++i) {
      groups[j].push_back(j * K + i);
      for (uint32_t k = 0; k < K; ++k) B.at(k, i) = a.M.at(k, j * K + i);
    }
    blocks.push_back(std::move(B));
  }
  if (g > 1) detail::broadcast_groups(a, rows, "row broadcasts of x_i to every group");
  detail::encode_blocks(a, groups, blocks, cm, "group encodes of the blocks of G");
  return detail::finish(a);
}

PostalSplitCost decentralized_grouped_estimate(const Spec& spec, const CostModel& cm) {
  if (decentralized_systematic(spec) || spec.N <= spec.K) return detail::not_applicable();
  return detail::delivered_cost(decentralized_grouped(spec, cm));
}

}  // namespace collplan::gen
