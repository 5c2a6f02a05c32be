// Solving G_H·F = T over the field by Gauss-Jordan elimination
// (matrix/repair.h).
#include "matrix/repair.h"

#include <algorithm>

#include <fmt/format.h>

#include "matrix/postcondition.h"
#include "support/error.h"

namespace collplan {

Matrix full_generator(const Spec& s, const Matrix& M) {
  if (M.cols == s.N) return M;
  Matrix G = Matrix::zeros(s.K, s.N);
  for (uint32_t k = 0; k < s.K; ++k) {
    G.at(k, k) = 1;
    for (uint32_t j = 0; j < M.cols; ++j) G.at(k, s.K + j) = M.at(k, j);
  }
  return G;
}

namespace {

// The code's matrix, its shape and digest checked. The spec's ranges are
// checked without the dense postcondition's size limit: F is K × outputs,
// small; the checker, which builds the dense map, applies the limit itself
// (so a generator can build a plan of many blocks for simulation).
Matrix code_of(const Spec& s) {
  validate_spec_ranges(s);
  if (!is_code_op(s.op)) user_error("'{}' is not repair or decode", op_name(s.op));
  Spec one = s;
  one.blocks = 1;
  return coded_matrix(one);
}

std::string list(const std::vector<uint32_t>& v) {
  std::string s;
  for (uint32_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The target columns T (K × outputs) and their labels.
Matrix targets(const Spec& s, const Matrix& G, RepairMap& r) {
  if (s.op == OpKind::Repair) {
    r.out_rank = s.lost;
    r.out_col = s.lost;
  } else {
    for (uint32_t rank = 0; rank < s.N; ++rank)
      for (uint32_t j = 0; j < s.K; ++j)
        if (s.to[j] == rank) r.out_rank.push_back(rank), r.out_col.push_back(j);
  }
  Matrix T = Matrix::zeros(s.K, static_cast<uint32_t>(r.out_col.size()));
  for (uint32_t o = 0; o < T.cols; ++o)
    for (uint32_t k = 0; k < s.K; ++k)
      T.at(k, o) = s.op == OpKind::Repair ? G.at(k, r.out_col[o]) : (k == r.out_col[o] ? 1 : 0);
  return T;
}

std::string target_name(const Spec& s, const RepairMap& r, uint32_t o) {
  return s.op == OpKind::Repair ? fmt::format("lost rank {}", r.out_col[o])
                                : fmt::format("data symbol x_{} (for rank {})", r.out_col[o], r.out_rank[o]);
}

struct Reduced {
  Matrix W;                     // [G_H | T] reduced
  std::vector<uint32_t> pivot;  // pivot row of helper column i, or UINT32_MAX
  uint32_t rank = 0;
};

// Gauss-Jordan on [G_H | T] over the helper columns.
Reduced reduce(const Field& f, const Matrix& G, const std::vector<uint32_t>& H, const Matrix& T) {
  const uint32_t K = G.rows, h = static_cast<uint32_t>(H.size());
  Reduced r;
  r.W = Matrix::zeros(K, h + T.cols);
  for (uint32_t k = 0; k < K; ++k) {
    for (uint32_t i = 0; i < h; ++i) r.W.at(k, i) = G.at(k, H[i]);
    for (uint32_t o = 0; o < T.cols; ++o) r.W.at(k, h + o) = T.at(k, o);
  }
  r.pivot.assign(h, UINT32_MAX);
  for (uint32_t c = 0; c < h && r.rank < K; ++c) {
    uint32_t p = r.rank;
    while (p < K && r.W.at(p, c) == 0) ++p;
    if (p == K) continue;
    for (uint32_t j = 0; j < r.W.cols; ++j) std::swap(r.W.at(p, j), r.W.at(r.rank, j));
    const Elem inv = f.inv(r.W.at(r.rank, c));
    for (uint32_t j = 0; j < r.W.cols; ++j) r.W.at(r.rank, j) = f.mul(r.W.at(r.rank, j), inv);
    for (uint32_t k = 0; k < K; ++k) {
      if (k == r.rank) continue;
      const Elem m = r.W.at(k, c);
      if (m == 0) continue;
      for (uint32_t j = 0; j < r.W.cols; ++j) r.W.at(k, j) = f.sub(r.W.at(k, j), f.mul(m, r.W.at(r.rank, j)));
    }
    r.pivot[c] = r.rank++;
  }
  return r;
}

}  // namespace

RepairMap repair_map(const Spec& s) {
  const Matrix M = code_of(s);  // validates the spec, the matrix's shape and digest
  if (s.op != OpKind::Repair && s.op != OpKind::Decode)
    user_error("'{}' is not repair or decode", op_name(s.op));
  const Field& f = s.field;
  const Matrix G = full_generator(s, M);
  RepairMap r;
  const Matrix T = targets(s, G, r);
  const std::vector<uint32_t>& H = s.helpers;
  if (H.empty()) user_error("{} needs helpers, the survivors whose symbols it combines (compile chooses them)", op_name(s.op));
  const uint32_t h = static_cast<uint32_t>(H.size());
  const Reduced red = reduce(f, G, H, T);
  for (uint32_t i = 0; i < h; ++i)
    if (red.pivot[i] == UINT32_MAX)
      user_error("helper {}'s symbol is a linear combination of the other helpers' ({}): the helpers' columns of G must "
                 "be independent; drop helper {}",
                 H[i], list(H), H[i]);
  for (uint32_t o = 0; o < T.cols; ++o)
    for (uint32_t k = red.rank; k < s.K; ++k)
      if (red.W.at(k, h + o) != 0)
        user_error("{} cannot be rebuilt from helpers {}: its column of G is not in the span of theirs{}",
                   target_name(s, r, o), list(H),
                   h < s.K ? fmt::format(" (give more helpers: {} of at most K = {})", h, s.K)
                           : std::string(" (the pattern is unrecoverable)"));
  r.F = Matrix::zeros(h, T.cols);
  for (uint32_t i = 0; i < h; ++i)
    for (uint32_t o = 0; o < T.cols; ++o) r.F.at(i, o) = red.W.at(red.pivot[i], h + o);
  return r;
}

std::vector<uint32_t> default_helpers(const Spec& spec) {
  const Matrix M = code_of(spec);
  Spec s = spec;
  std::vector<uint32_t> survivors;
  for (uint32_t j = 0; j < s.N; ++j)
    if (!std::binary_search(s.lost.begin(), s.lost.end(), j)) survivors.push_back(j);
  // A basis of the survivors' span, greedily in rank order.
  const Matrix G = full_generator(s, M);
  const Reduced all = reduce(s.field, G, survivors, Matrix::zeros(s.K, 0));
  s.helpers.clear();
  for (size_t i = 0; i < survivors.size(); ++i)
    if (all.pivot[i] != UINT32_MAX) s.helpers.push_back(survivors[i]);
  RepairMap r;
  const Matrix T = targets(s, G, r);
  const Reduced red = reduce(s.field, G, s.helpers, T);
  const uint32_t h = static_cast<uint32_t>(s.helpers.size());
  for (uint32_t o = 0; o < T.cols; ++o)
    for (uint32_t k = red.rank; k < s.K; ++k)
      if (red.W.at(k, h + o) != 0)
        user_error("{} cannot be rebuilt: the survivors' symbols span {} of the code's K = {} dimensions and not its "
                   "column (lost: {}; the loss pattern is unrecoverable for this code)",
                   target_name(s, r, o), red.rank, s.K, list(s.lost));
  std::vector<uint32_t> used;
  for (uint32_t i = 0; i < h; ++i) {
    bool any = false;
    for (uint32_t o = 0; o < T.cols && !any; ++o) any = red.W.at(red.pivot[i], h + o) != 0;
    if (any) used.push_back(s.helpers[i]);
  }
  if (used.empty()) used.push_back(s.helpers.front());  // every target is zero: keep one helper
  return used;
}

}  // namespace collplan
