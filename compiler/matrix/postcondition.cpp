#include "matrix/postcondition.h"

#include <algorithm>

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
  pc.op = s.op;
  pc.n = n;
  pc.root = s.root;
  pc.exclusive = s.exclusive;
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
  set_offsets(pc);
  if (coded) {
    pc.dense = true;
    // One block: the map is M itself, moved rather than copied (an encode's
    // may be 1 GiB, held next to the plan).
    pc.map = n == 1 ? std::move(M) : blockwise(M, n);
    return pc;
  }
  if (repair) {
    // Helper h's block b feeds output symbol o's block b with F[h][o]
    // (matrix/repair.h); the other survivors' inputs feed nothing.
    pc.dense = true;
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
  // Uncoded: the operation describes the map (column(), Evaluator); nothing
  // of size inputs × outputs is built.
  return pc;
}

namespace {

// The rank whose outputs contain global output `col`.
uint32_t output_rank(const Postcondition& pc, uint32_t col) {
  const auto it = std::upper_bound(pc.output_offset.begin(), pc.output_offset.end(), col);
  return static_cast<uint32_t>(it - pc.output_offset.begin()) - 1;
}

}  // namespace

void Postcondition::column(uint32_t col, std::vector<Entry>& out) const {
  out.clear();
  if (dense) {
    for (uint32_t i = 0; i < map.rows; ++i)
      if (const Elem c = map.at(i, col); c != 0) out.push_back({i, c});
    return;
  }
  const uint32_t k = output_rank(*this, col), j = col - output_offset[k];
  switch (op) {
    case OpKind::Broadcast:
      out.push_back({input_offset[root] + j, 1});
      break;
    case OpKind::Reduce:
    case OpKind::Allreduce:
      for (uint32_t src = 0; src < K; ++src) out.push_back({input_offset[src] + j, 1});
      break;
    case OpKind::Allgather:
    case OpKind::Allgatherv:
      out.push_back({j, 1});
      break;
    case OpKind::ReduceScatter:
      for (uint32_t src = 0; src < K; ++src) out.push_back({input_offset[src] + k * n + j, 1});
      break;
    case OpKind::Prefix: {
      // Item g (global, rank-major) gets items 0..g (inclusive) or 0..g−1.
      const uint32_t g = input_offset[k] + j, end = g + (exclusive ? 0 : 1);
      for (uint32_t i = 0; i < end; ++i) out.push_back({i, 1});
      break;
    }
    default:
      COLLPLAN_ASSERT(false, "postcondition: uncoded form of a coded operation");
  }
}

uint64_t Postcondition::nonzeros() const {
  auto mul = [](uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; };
  if (dense) {
    uint64_t nz = 0;
    for (const Elem c : map.a) nz += c != 0;
    return nz;
  }
  const uint64_t outs = num_outputs(), ins = num_inputs();
  switch (op) {
    case OpKind::Broadcast: return outs;
    case OpKind::Reduce:
    case OpKind::Allreduce:
    case OpKind::ReduceScatter: return mul(outs, K);
    case OpKind::Allgather:
    case OpKind::Allgatherv: return outs;
    case OpKind::Prefix: return exclusive ? mul(ins, ins - (ins > 0)) / 2 : mul(ins, ins + 1) / 2;
    default: return 0;
  }
}

Evaluator::Evaluator(const Field& f, const Postcondition& pc, std::vector<Elem> x, uint32_t W)
    : f_(f), pc_(pc), x_(std::move(x)), W_(W) {
  COLLPLAN_ASSERT(x_.size() == static_cast<size_t>(pc.num_inputs()) * W, "Evaluator: input size");
  auto add_into = [&](Elem* acc, size_t g) {
    const Elem* v = &x_[g * W_];
    for (uint32_t w = 0; w < W_; ++w) acc[w] = f_.add(acc[w], v[w]);
  };
  if (pc.dense) {
    // y = map^T x, lane by lane (mul_batch takes and gives lane-major vectors).
    const size_t in = pc.num_inputs(), out = pc.num_outputs();
    std::vector<Elem> xs(in * W);
    for (size_t g = 0; g < in; ++g)
      for (uint32_t w = 0; w < W; ++w) xs[w * in + g] = x_[g * W + w];
    const std::vector<Elem> ys = mul_batch(f, pc.map, xs, W);
    pre_.resize(out * W);
    for (size_t c = 0; c < out; ++c)
      for (uint32_t w = 0; w < W; ++w) pre_[c * W + w] = ys[w * out + c];
    return;
  }
  switch (pc.op) {
    case OpKind::Reduce:
    case OpKind::Allreduce:
      // pre_[b]: the sum over ranks of block b.
      pre_.assign(static_cast<size_t>(pc.n) * W, 0);
      for (uint32_t src = 0; src < pc.K; ++src)
        for (uint32_t b = 0; b < pc.n; ++b) add_into(&pre_[static_cast<size_t>(b) * W], pc.input_offset[src] + b);
      break;
    case OpKind::ReduceScatter: {
      // pre_[k·n + b]: the sum over ranks of their block b for rank k.
      const size_t per = static_cast<size_t>(pc.K) * pc.n;
      pre_.assign(per * W, 0);
      for (uint32_t src = 0; src < pc.K; ++src)
        for (size_t i = 0; i < per; ++i) add_into(&pre_[i * W], pc.input_offset[src] + i);
      break;
    }
    case OpKind::Prefix: {
      // pre_[g]: the inclusive running sum of items 0..g.
      const size_t T = pc.num_inputs();
      pre_.assign(T * W, 0);
      for (size_t g = 0; g < T; ++g) {
        if (g > 0) std::copy_n(&pre_[(g - 1) * W], W, &pre_[g * W]);
        add_into(&pre_[g * W], g);
      }
      break;
    }
    default:
      break;  // broadcast, allgather(v): outputs are inputs
  }
}

void Evaluator::output(uint32_t col, Elem* y) const {
  auto copy = [&](const Elem* v) { std::copy_n(v, W_, y); };
  if (pc_.dense) return copy(&pre_[static_cast<size_t>(col) * W_]);
  const uint32_t k = output_rank(pc_, col), j = col - pc_.output_offset[k];
  switch (pc_.op) {
    case OpKind::Broadcast: return copy(&x_[static_cast<size_t>(pc_.input_offset[pc_.root] + j) * W_]);
    case OpKind::Reduce:
    case OpKind::Allreduce: return copy(&pre_[static_cast<size_t>(j) * W_]);
    case OpKind::ReduceScatter: return copy(&pre_[(static_cast<size_t>(k) * pc_.n + j) * W_]);
    case OpKind::Allgather:
    case OpKind::Allgatherv: return copy(&x_[static_cast<size_t>(j) * W_]);
    case OpKind::Prefix: {
      const size_t g = pc_.input_offset[k] + j;
      if (!pc_.exclusive) return copy(&pre_[g * W_]);
      if (g == 0) {
        std::fill_n(y, W_, Elem{0});
        return;
      }
      return copy(&pre_[(g - 1) * W_]);
    }
    default:
      COLLPLAN_ASSERT(false, "Evaluator: uncoded form of a coded operation");
  }
}

std::vector<std::vector<std::vector<Elem>>> direct_compute(const Field& f, const Postcondition& pc,
                                                           const std::vector<std::vector<std::vector<Elem>>>& inputs) {
  if (inputs.size() != pc.K) user_error("direct_compute: {} ranks of inputs, postcondition has {}", inputs.size(), pc.K);
  size_t len = SIZE_MAX;
  for (uint32_t k = 0; k < pc.K; ++k) {
    if (inputs[k].size() != pc.inputs_per_rank[k])
      user_error("direct_compute: rank {} has {} inputs, needs {}", k, inputs[k].size(), pc.inputs_per_rank[k]);
    for (const auto& v : inputs[k]) {
      if (len == SIZE_MAX) len = v.size();
      if (v.size() != len) user_error("direct_compute: input vectors differ in length ({} vs {})", v.size(), len);
    }
  }
  if (len == SIZE_MAX) len = 0;
  std::vector<std::vector<std::vector<Elem>>> out(pc.K);
  if (len == 0) {
    for (uint32_t k = 0; k < pc.K; ++k) out[k].assign(pc.outputs_per_rank[k], {});
    return out;
  }
  // The vectors' elements are the evaluator's lanes.
  std::vector<Elem> x;
  x.reserve(static_cast<size_t>(pc.num_inputs()) * len);
  for (const auto& rank : inputs)
    for (const auto& v : rank) x.insert(x.end(), v.begin(), v.end());
  const Evaluator ev(f, pc, std::move(x), static_cast<uint32_t>(len));
  for (uint32_t k = 0; k < pc.K; ++k) {
    out[k].assign(pc.outputs_per_rank[k], std::vector<Elem>(len, 0));
    for (uint32_t j = 0; j < pc.outputs_per_rank[k]; ++j) ev.output(pc.output_offset[k] + j, out[k][j].data());
  }
  return out;
}

}  // namespace collplan
