// Decentralized encoding of a systematic [N, K] code, G = [I | A]: the
// framework of the journal paper (§III–§VI, Appendix A; SPEC §4.3).
// R = N − K sinks, b = p + 1.
//
// Case K >= R. Sources in an R × c grid, c = ⌈K/R⌉: source k in row k mod R,
// column ⌊k/R⌋. Missing cells of the last column (rows r >= K − (c−1)R) are
// filled by borrowing sink K+r, which holds zero.
//   Phase 1: every column j encodes its R×R block of A (rows jR..jR+R−1,
//            zero rows for borrowed cells): the member in row r gets the
//            column's partial sum Σ_{k in column j} x_k A[k][r].
//   Phase 2: every row r reduces its partials into sink K+r (a member of its
//            own row when borrowed, else an extra member holding zero).
//   C1 = ⌈log_b R⌉ + ⌈log_b(c+1)⌉ (λ = 1, prepare-and-shoot blocks),
//   C2 = C2(R×R encode) + ⌈log_b(c+1)⌉.
// Case K < R. Sinks in a K × d grid, d = ⌈R/K⌉: sink K+s in row s mod K,
// column ⌊s/K⌋; the sources are an extra column (source i in row i). Missing
// cells of the last sink column (rows i >= R − (d−1)K) are filled by
// borrowing source i, which holds x_i already.
//   Phase 1: every row i broadcasts x_i from source i to its sinks.
//   Phase 2: every sink column j encodes its K×K block of A (columns
//            jK..jK+K−1; padded with zero columns for borrowed cells, whose
//            result is discarded).
//   C1 = ⌈log_b(d+1)⌉ + ⌈log_b K⌉, C2 = ⌈log_b(d+1)⌉ + C2(K×K encode).
// A 1×1 block (R = 1, or K = 1) is a local scaling: no steps.
// With λ > 1 every phase is the λ-stretched tree or the registry's postal
// encode; C1 is then the sum of the phases' steps.
#include <fmt/format.h>

#include "gen/decentralized_build.h"
#include "support/error.h"

namespace collplan::gen {

using ir::Rank;

ir::Plan decentralized_grid(const Spec& spec, const CostModel& cm) {
  detail::Assembly a = detail::start(spec, "the decentralized grid generator");
  if (!a.systematic)
    user_error("decentralized-grid encodes systematic codes (a {}x{} matrix A); this spec has a {}x{} generator "
               "matrix G: use decentralized-grouped or decentralized-padded",
               a.K, a.R, a.K, a.N);
  const uint32_t K = a.K, R = a.R;
  if (K >= R) {
    const uint32_t c = (K + R - 1) / R;
    const uint32_t full = K - (c - 1) * R;  // rows filled in the last column
    a.layout = fmt::format("K >= R: sources in a {} x {} grid, {} borrowed sink(s) in the last column", R, c, R - full);
    std::vector<std::vector<Rank>> cols(c), rows(R);
    std::vector<Matrix> blocks(c, Matrix::zeros(R, R));
    for (uint32_t j = 0; j < c; ++j)
      for (uint32_t r = 0; r < R; ++r) {
        const uint32_t k = j * R + r;
        cols[j].push_back(k < K ? k : K + r);
        if (k < K)
          for (uint32_t s = 0; s < R; ++s) blocks[j].at(r, s) = a.M.at(k, s);
      }
    for (uint32_t r = 0; r < R; ++r) {
      rows[r].push_back(K + r);  // the root: local rank 0
      for (uint32_t j = 0; j < c; ++j)
        if (j * R + r < K) rows[r].push_back(j * R + r);
    }
    detail::encode_blocks(a, cols, blocks, cm, fmt::format("column encodes of {}x{} blocks of A", R, R));
    detail::reduce_groups(a, rows, "row reduces of the partial sums into the sinks");
  } else {
    const uint32_t d = (R + K - 1) / K;
    const uint32_t full = R - (d - 1) * K;  // rows filled in the last sink column
    a.layout = fmt::format("K < R: sinks in a {} x {} grid plus the sources' column, {} borrowed source(s) in the last "
                           "column",
                           K, d, K - full);
    std::vector<std::vector<Rank>> rows(K), cols(d);
    std::vector<Matrix> blocks(d, Matrix::zeros(K, K));
    for (uint32_t i = 0; i < K; ++i) rows[i].push_back(i);  // the root: local rank 0
    for (uint32_t j = 0; j < d; ++j)
      for (uint32_t i = 0; i < K; ++i) {
        const uint32_t s = j * K + i;
        if (s < R) {
          rows[i].push_back(K + s);
          cols[j].push_back(K + s);
          for (uint32_t k = 0; k < K; ++k) blocks[j].at(k, i) = a.M.at(k, s);
        } else {
          cols[j].push_back(i);  // borrowed source, zero column of the padded block
        }
      }
    detail::broadcast_groups(a, rows, "row broadcasts of x_i from the sources");
    detail::encode_blocks(a, cols, blocks, cm, fmt::format("column encodes of {}x{} blocks of A", K, K));
  }
  return detail::finish(a);
}

PostalSplitCost decentralized_grid_estimate(const Spec& spec, const CostModel& cm) {
  if (!decentralized_systematic(spec) || spec.N <= spec.K) return detail::not_applicable();
  return detail::delivered_cost(decentralized_grid(spec, cm));
}

}  // namespace collplan::gen
