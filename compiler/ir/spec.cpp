#include "ir/spec.h"

#include <fmt/format.h>

#include "support/error.h"

namespace collplan {

namespace {
struct OpName {
  OpKind op;
  const char* name;
};
constexpr OpName kOps[] = {
    {OpKind::Encode, "encode"},       {OpKind::DecentralizedEncode, "decentralized-encode"},
    {OpKind::Broadcast, "broadcast"}, {OpKind::Reduce, "reduce"},
    {OpKind::Allgather, "allgather"}, {OpKind::Allgatherv, "allgatherv"},
    {OpKind::Allreduce, "allreduce"}, {OpKind::Prefix, "prefix"},
    {OpKind::ReduceScatter, "reduce-scatter"},
};
}  // namespace

const char* op_name(OpKind op) {
  for (const auto& o : kOps)
    if (o.op == op) return o.name;
  return "unknown-op";
}

const std::vector<OpKind>& all_ops() {
  static const std::vector<OpKind> ops = [] {
    std::vector<OpKind> v;
    for (const auto& o : kOps) v.push_back(o.op);
    return v;
  }();
  return ops;
}

OpKind parse_op(const std::string& name) {
  std::string valid;
  for (const auto& o : kOps) {
    if (name == o.name) return o.op;
    valid += valid.empty() ? "" : ", ";
    valid += o.name;
  }
  user_error("unknown operation '{}' (valid: {})", name, valid);
}

std::string Digest::hex() const {
  std::string s;
  for (uint8_t b : bytes) s += fmt::format("{:02x}", b);
  return s;
}

Spec make_encode_spec(uint32_t K, uint32_t p, uint32_t lambda, const Field& f, MatrixSpec m) {
  Spec s;
  s.op = OpKind::Encode;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.field = f;
  s.matrix = std::move(m);
  return s;
}

Spec make_decentralized_spec(uint32_t N, uint32_t K, uint32_t p, uint32_t lambda, const Field& f, MatrixSpec m) {
  Spec s = make_encode_spec(K, p, lambda, f, std::move(m));
  s.op = OpKind::DecentralizedEncode;
  s.N = N;
  return s;
}

void validate_spec_basics(const Spec& s, uint32_t max_ranks) {
  if (s.op == OpKind::DecentralizedEncode) {
    // K sources among N processors: one source is allowed (its sinks get
    // multiples of x_0), one processor is not.
    if (s.K < 1) user_error("K = {} is too small: decentralized-encode needs K >= 1 sources", s.K);
    if (s.N <= s.K) user_error("N = {} is too small: decentralized-encode needs N > K = {} processors", s.N, s.K);
    if (s.N > max_ranks) user_error("N = {} is too large: collplan supports N <= {}", s.N, max_ranks);
  } else if (s.K < 2) {
    user_error("K = {} is too small: a collective needs K >= 2 processors", s.K);
  }
  if (s.K > max_ranks)
    user_error("K = {} is too large: collplan supports K <= {}{}", s.K, max_ranks,
               max_ranks == kMaxPlanRanks ? " in a whole plan (a rank-local compile of a circulant broadcast, reduce "
                                            "or allreduce, `compile --rank`, accepts K <= 2147483648)"
                                          : "");
  if (s.p < 1) user_error("p = {} is invalid: every processor needs p >= 1 ports", s.p);
  if (s.p > 1024) user_error("p = {} is too large: collplan supports p <= 1024 ports", s.p);
  if (s.lambda < 1) user_error("lambda = {} is invalid: postal latency must be >= 1 (1 = synchronous rounds)", s.lambda);
  if (s.lambda > 1024) user_error("lambda = {} is too large: collplan supports lambda <= 1024", s.lambda);
  if (s.blocks < 1) user_error("blocks = {} is invalid: a buffer is split into n >= 1 blocks", s.blocks);
  if ((s.op == OpKind::Broadcast || s.op == OpKind::Reduce) && s.root >= s.K)
    user_error("root = {} is not a processor (valid: 0..{})", s.root, s.K - 1);
  if (s.op == OpKind::Allgatherv && s.counts.size() != s.K)
    user_error("allgatherv needs one count per rank: got {} counts for K = {}", s.counts.size(), s.K);
  if (s.op == OpKind::Prefix && !s.counts.empty() && s.counts.size() != s.K)
    user_error("prefix over blocks needs one item count per rank: got {} counts for K = {}", s.counts.size(), s.K);
  if (s.op == OpKind::Prefix && s.blocks != 1)
    user_error("blocks = {}: prefix takes items per rank through counts, not blocks (blocks = 1)", s.blocks);
  // A rank of these holds K·n elements (allgather's outputs, reduce-scatter's
  // inputs), counted in 32 bits like every other per-rank count.
  if ((s.op == OpKind::Allgather || s.op == OpKind::ReduceScatter) && uint64_t{s.K} * s.blocks > (uint64_t{1} << 24))
    user_error("{}: K*n = {}*{} = {} elements per rank is too large: collplan supports K*n <= 16777216", op_name(s.op),
               s.K, s.blocks, uint64_t{s.K} * s.blocks);
  if (s.exclusive && s.op != OpKind::Prefix)
    user_error("exclusive applies to prefix only, not to {}", op_name(s.op));
}

}  // namespace collplan
