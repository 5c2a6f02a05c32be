// Decentralized encoding of a systematic [N, K] code, G = [I | A]: the
// framework of the journal paper (§III–§VI, Appendix A;
// docs/decentralized.md).
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
// Long vectors (spec.blocks = n > 1: every x_k in n blocks): the row phase
// streams the blocks when the cost model says so (decentralized_build.h):
// the circulant n-block broadcast or reduce (p = 1, λ = 1) in
// n − 1 + ⌈log₂ g⌉ steps for a row of g ranks, or the pipelined p-ary
// chain in n − 1 + D·λ, instead of the tree's ⌈log_b g⌉ rounds of whole
// vectors; the column encodes carry all n blocks in each message (the
// block encode widened, passes/widen.h). With the circulant rows and K < R:
// C1 = n − 1 + ⌈log₂(d+1)⌉ + ⌈log_b K⌉, C2 = n − 1 + ⌈log₂(d+1)⌉ + n·C2(K×K),
// against the tree's C2 = n·(⌈log_b(d+1)⌉ + C2(K×K)) in block units.
// Reed-Solomon blocks (docs/decentralized.md, "Reed–Solomon points and
// Cauchy blocks"): when A is the systematic RS matrix of matrix/codes.h,
// A[k][s] = c_k·d_s/(x_k − y_s), and every full block is the
// Cauchy-like matrix of its rows' x, c and its columns' y, d: it is passed to
// the block encoder as a "cauchy" spec, so the registry's cauchy generator
// (gen/cauchy.cpp) encodes it when its modeled time is lower (the code's
// points give the blocks the draw-and-loose structure, codes.h), and
// prepare-and-shoot otherwise. A block with borrowed cells (zero rows, or
// padded columns) is not Cauchy-like and stays explicit.
// With λ > 1 every phase is the λ-stretched tree or the registry's postal
// encode; C1 is then the sum of the phases' steps. With cauchy blocks
// (below) the column encode costs C1 = C2 = C(x) + C(y) of the two
// draw-and-loose pieces instead (2·log₂B for B×B blocks at p = 1, P = 2).
#include <fmt/format.h>

#include <optional>

#include "gen/decentralized_build.h"
#include "matrix/codes.h"
#include "support/error.h"

namespace collplan::gen {

using ir::Rank;

namespace {

// The RS code whose systematic matrix A is, or nothing.
std::optional<RsSystematic> rs_code_of(const Matrix& A, uint32_t N, uint32_t K, const Field& f) {
  if (N > f.size() - 1) return std::nullopt;
  // A[0][0] = c_0·d_0/(x_0 − y_0) first (O(K)): most matrices are not RS,
  // and the whole RS matrix costs as much as A itself.
  const std::vector<Elem> pts = rs_points(N, K, f);
  Elem c0 = 1, d0 = f.neg(1);
  for (uint32_t l = 0; l < K; ++l) {
    if (l != 0) c0 = f.mul(c0, f.sub(pts[0], pts[l]));
    d0 = f.mul(d0, f.sub(pts[K], pts[l]));
  }
  if (A.at(0, 0) != f.div(d0, f.mul(c0, f.sub(pts[0], pts[K])))) return std::nullopt;
  RsSystematic rs = rs_code(N, K, f);
  if (!(rs.A == A)) return std::nullopt;
  return rs;
}

std::vector<Elem> slice(const std::vector<Elem>& v, uint32_t from, uint32_t n) {
  return std::vector<Elem>(v.begin() + from, v.begin() + from + n);
}

// Block j's spec: Cauchy-like when it is a full block of an RS code's A
// (rows rows_from.., columns cols_from.., n each), else its explicit entries.
MatrixSpec block_spec(const std::optional<RsSystematic>& rs, bool full, uint32_t rows_from, uint32_t cols_from,
                      const Matrix& B, const Field& f) {
  const uint32_t n = B.rows;
  if (rs && full)
    return matrix_four_lists("cauchy",
                             {slice(rs->x, rows_from, n), slice(rs->y, cols_from, n), slice(rs->c, rows_from, n),
                              slice(rs->d, cols_from, n)},
                             f);
  return matrix_explicit(B, f);
}

// The grid plan; with `rs`, full blocks are given as Cauchy-like specs.
ir::Plan grid_plan(const Spec& spec, const passes::CostModel& cm, const std::optional<RsSystematic>& rs) {
  detail::Assembly a = detail::start(spec, "the decentralized grid generator");
  if (!a.systematic)
    user_error("decentralized-grid encodes systematic codes (a {}x{} matrix A); this spec has a {}x{} generator "
               "matrix G: use decentralized-grouped or decentralized-padded",
               a.K, a.R, a.K, a.N);
  const uint32_t K = a.K, R = a.R;
  const Field& f = a.plan.spec.field;
  std::vector<MatrixSpec> specs;
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
    for (uint32_t j = 0; j < c; ++j) specs.push_back(block_spec(rs, (j + 1) * R <= K, j * R, 0, blocks[j], f));
    for (uint32_t r = 0; r < R; ++r) {
      rows[r].push_back(K + r);  // the root: local rank 0
      for (uint32_t j = 0; j < c; ++j)
        if (j * R + r < K) rows[r].push_back(j * R + r);
    }
    detail::encode_blocks(a, cols, specs, cm, fmt::format("column encodes of {}x{} blocks of A", R, R));
    detail::reduce_groups(a, rows, cm, "row reduces of the partial sums into the sinks");
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
    for (uint32_t j = 0; j < d; ++j) specs.push_back(block_spec(rs, (j + 1) * K <= R, 0, j * K, blocks[j], f));
    detail::broadcast_groups(a, rows, cm, "row broadcasts of x_i from the sources");
    detail::encode_blocks(a, cols, specs, cm, fmt::format("column encodes of {}x{} blocks of A", K, K));
  }
  return detail::finish(a);
}

}  // namespace

ir::Plan decentralized_grid(const Spec& spec, const passes::CostModel& cm) {
  std::optional<RsSystematic> rs;
  if (spec.op == OpKind::DecentralizedEncode && decentralized_systematic(spec) && spec.N > spec.K)
    rs = rs_code_of(materialize(spec.matrix, spec.field), spec.N, spec.K, spec.field);
  ir::Plan plain = grid_plan(spec, cm, std::nullopt);
  if (!rs) return plain;
  // The blocks' generators are chosen one block at a time, but blocks run
  // side by side and a phase costs the per-step maximum: a Cauchy full block
  // next to a prepare-and-shoot borrowed one can cost more than
  // prepare-and-shoot everywhere. Keep the cheaper of the two whole plans.
  ir::Plan cauchy = grid_plan(spec, cm, rs);
  const PostalSplitCost pc = detail::delivered_cost(plain), cc = detail::delivered_cost(cauchy);
  return cm.time(cc.C1, cc.C2) < cm.time(pc.C1, pc.C2) ? std::move(cauchy) : std::move(plain);
}

PostalSplitCost decentralized_grid_estimate(const Spec& spec, const passes::CostModel& cm) {
  if (!decentralized_systematic(spec) || spec.N <= spec.K) return detail::not_applicable();
  return detail::delivered_cost(decentralized_grid(spec, cm));
}

}  // namespace collplan::gen
