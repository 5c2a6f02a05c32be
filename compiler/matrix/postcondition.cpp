#include "matrix/postcondition.h"

#include "matrix/repair.h"
#include "support/error.h"

namespace collplan {

namespace {

void set_offsets(Postcondition& pc) {
  pc.input_offset.assign(pc.K + 1, 0);
  pc.output_offset.assign(pc.K + 1, 0);
  for (uint32_t k = 0; k < pc.K; ++k) {
    pc.input_offset[k + 1] = pc.input_offset[k] + pc.inputs_per_rank[k];
    pc.output_offset[k + 1] = pc.output_offset[k] + pc.outputs_per_rank[k];
  }
}

void check_matrix_shape(const Spec& s, uint32_t rows, uint32_t cols) {
  if (s.matrix.rows != rows || s.matrix.cols != cols)
    user_error("{} on {} processors needs a {}x{} matrix, the spec has {}x{}", op_name(s.op), num_ranks(s), rows, cols,
               s.matrix.rows, s.matrix.cols);
}

void check_digest(const Spec& s, const Matrix& m) {
  if (matrix_digest(m, s.field) != s.matrix.digest)
    user_error("the matrix digest in the spec ({}) does not match its entries ({})", s.matrix.digest.hex(),
               matrix_digest(m, s.field).hex());
}

// Blocks of the coded operations are independent copies: input block b
// feeds output block b only, with the matrix's coefficient (M ⊗ I_n in the
// rank-major, block-minor numbering).
Matrix blockwise(const Matrix& M, uint32_t n) {
  if (n == 1) return M;
  Matrix W = Matrix::zeros(M.rows * n, M.cols * n);
  for (uint32_t i = 0; i < M.rows; ++i)
    for (uint32_t j = 0; j < M.cols; ++j)
      if (const Elem c = M.at(i, j); c != 0)
        for (uint32_t b = 0; b < n; ++b) W.at(i * n + b, j * n + b) = c;
  return W;
}

}  // namespace

Matrix coded_matrix(const Spec& s) {
  validate_spec_basics(s);
  if (s.op == OpKind::Encode) {
    check_matrix_shape(s, s.K, s.K);
  } else if (is_code_op(s.op)) {
    // [N, K] code (repair and decode take the code as decentralized-encode
    // does), sources 0..K-1 hold x_k. The matrix's shape says which
    // kind (the two shapes never coincide, K >= 1):
    //   K x (N-K)  systematic, G = [I | A]: sink K+j gets Σ_k x_k A[k][j];
    //   K x N      non-systematic G: every rank j gets Σ_k x_k G[k][j].
    if (s.matrix.rows != s.K || (s.matrix.cols != s.N - s.K && s.matrix.cols != s.N))
      user_error("{} with N = {}, K = {} needs a {}x{} matrix A (systematic, G = [I | A]) or a "
                 "{}x{} generator matrix G (non-systematic), the spec has {}x{}",
                 op_name(s.op), s.N, s.K, s.K, s.N - s.K, s.K, s.N, s.matrix.rows, s.matrix.cols);
  } else {
    user_error("'{}' has no matrix (encode, decentralized-encode, repair and decode have one)", op_name(s.op));
  }
  // The map M ⊗ I_n is dense: refuse, before building anything, what could
  // not be checked. An encode's shape is K×K, so validate_spec_basics has
  // already applied its own limit (ir/spec.cpp, kMaxEncodeMapEntries).
  const uint64_t n = s.blocks, entries = uint64_t{s.matrix.rows} * s.matrix.cols * n * n;
  if (entries > kMaxPostconditionEntries && s.op != OpKind::Encode && s.op != OpKind::Repair && s.op != OpKind::Decode)
    user_error("blocks = {}: the {}x{} matrix in {} blocks makes a {}-entry postcondition, over the 2^26 collplan "
               "checks; use fewer blocks (the runtime's vector length covers long vectors)",
               n, s.matrix.rows, s.matrix.cols, n, entries);
  Matrix M = materialize(s.matrix, s.field);
  check_digest(s, M);
  return M;
}

Postcondition postcondition(const Spec& s) {
  validate_spec_basics(s);
  Postcondition pc;
  pc.K = num_ranks(s);
  const uint32_t K = pc.K, n = s.blocks;
  const bool coded = s.op == OpKind::Encode || s.op == OpKind::DecentralizedEncode;
  const bool repair = s.op == OpKind::Repair || s.op == OpKind::Decode;
  Matrix M = coded ? coded_matrix(s) : Matrix{};  // shape and digest checked first
  pc.inputs_per_rank.resize(K);
  pc.outputs_per_rank.resize(K);
  const std::vector<RankIO> ios = rank_ios(s);
  for (uint32_t k = 0; k < K; ++k) {
    pc.inputs_per_rank[k] = ios[k].inputs;
    pc.outputs_per_rank[k] = ios[k].outputs;
  }
  if (coded) {
    set_offsets(pc);
    // One block: the map is M itself, moved rather than copied (an encode's
    // may be 1 GiB, held next to the plan).
    pc.map = n == 1 ? std::move(M) : blockwise(M, n);
    return pc;
  }
  if (repair) {
    // Helper h's block b feeds output symbol o's block b with F[h][o]
    // (matrix/repair.h); the other survivors' inputs feed nothing.
    set_offsets(pc);
    const RepairMap r = repair_map(s);
    pc.map = Matrix::zeros(pc.num_inputs(), pc.num_outputs());
    std::vector<uint32_t> seen(K, 0);  // output symbols placed per rank
    for (uint32_t o = 0; o < r.out_rank.size(); ++o) {
      const uint32_t rank = r.out_rank[o], col = pc.output_offset[rank] + seen[rank]++ * n;
      for (uint32_t i = 0; i < s.helpers.size(); ++i)
        if (const Elem c = r.F.at(i, o); c != 0)
          for (uint32_t b = 0; b < n; ++b) pc.map.at(pc.input_offset[s.helpers[i]] + b, col + b) = c;
    }
    return pc;
  }
  set_offsets(pc);
  // The map is dense: refuse, before allocating, one that could not be held
  // (allgather and reduce-scatter grow as K³·n²).
  const uint64_t cells = uint64_t{pc.num_inputs()} * pc.num_outputs();
  if (cells > kMaxUncodedMapEntries)
    user_error("{} with K = {}, n = {}: its postcondition map has {} inputs x {} outputs = {} entries, over the {} "
               "collplan checks; use fewer ranks or blocks (the runtime's vector length covers long vectors)",
               op_name(s.op), K, n, pc.num_inputs(), pc.num_outputs(), cells, kMaxUncodedMapEntries);
  pc.map = Matrix::zeros(pc.num_inputs(), pc.num_outputs());
  for (uint32_t k = 0; k < K; ++k) {
    const uint32_t o = pc.output_offset[k];
    switch (s.op) {
      case OpKind::Broadcast:
        for (uint32_t b = 0; b < n; ++b) pc.map.at(pc.input_offset[s.root] + b, o + b) = 1;
        break;
      case OpKind::Reduce:
        if (k == s.root)
          for (uint32_t src = 0; src < K; ++src)
            for (uint32_t b = 0; b < n; ++b) pc.map.at(pc.input_offset[src] + b, o + b) = 1;
        break;
      case OpKind::Allgather:
      case OpKind::Allgatherv:
        for (uint32_t i = 0; i < pc.num_inputs(); ++i) pc.map.at(i, o + i) = 1;
        break;
      case OpKind::Allreduce:
        for (uint32_t src = 0; src < K; ++src)
          for (uint32_t b = 0; b < n; ++b) pc.map.at(pc.input_offset[src] + b, o + b) = 1;
        break;
      case OpKind::ReduceScatter:
        for (uint32_t src = 0; src < K; ++src)
          for (uint32_t b = 0; b < n; ++b) pc.map.at(pc.input_offset[src] + k * n + b, o + b) = 1;
        break;
      case OpKind::Prefix:
        // Item g (global, rank-major) gets items 0..g (inclusive) or 0..g−1.
        for (uint32_t j = 0; j < pc.outputs_per_rank[k]; ++j) {
          const uint32_t g = pc.input_offset[k] + j;
          for (uint32_t i = 0; i < g + (s.exclusive ? 0 : 1); ++i) pc.map.at(i, o + j) = 1;
        }
        break;
      default:
        break;
    }
  }
  return pc;
}

std::vector<std::vector<std::vector<Elem>>> direct_compute(const Field& f, const Postcondition& pc,
                                                           const std::vector<std::vector<std::vector<Elem>>>& inputs) {
  if (inputs.size() != pc.K) user_error("direct_compute: {} ranks of inputs, postcondition has {}", inputs.size(), pc.K);
  size_t len = SIZE_MAX;
  std::vector<const std::vector<Elem>*> flat;
  for (uint32_t k = 0; k < pc.K; ++k) {
    if (inputs[k].size() != pc.inputs_per_rank[k])
      user_error("direct_compute: rank {} has {} inputs, needs {}", k, inputs[k].size(), pc.inputs_per_rank[k]);
    for (const auto& v : inputs[k]) {
      if (len == SIZE_MAX) len = v.size();
      if (v.size() != len) user_error("direct_compute: input vectors differ in length ({} vs {})", v.size(), len);
      flat.push_back(&v);
    }
  }
  if (len == SIZE_MAX) len = 0;
  std::vector<std::vector<std::vector<Elem>>> out(pc.K);
  for (uint32_t k = 0; k < pc.K; ++k) {
    out[k].assign(pc.outputs_per_rank[k], std::vector<Elem>(len, 0));
    for (uint32_t j = 0; j < pc.outputs_per_rank[k]; ++j) {
      const uint32_t col = pc.output_offset[k] + j;
      auto& y = out[k][j];
      for (uint32_t i = 0; i < pc.num_inputs(); ++i) {
        const Elem c = pc.map.at(i, col);
        if (c == 0) continue;
        const auto& x = *flat[i];
        for (size_t e = 0; e < len; ++e) y[e] = f.add(y[e], f.mul(c, x[e]));
      }
    }
  }
  return out;
}

}  // namespace collplan
