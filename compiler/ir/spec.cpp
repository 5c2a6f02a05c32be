#include "ir/spec.h"

#include <algorithm>

#include <fmt/format.h>

#include "support/error.h"
#include "support/limits.h"

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
    {OpKind::ReduceScatter, "reduce-scatter"}, {OpKind::Repair, "repair"},
    {OpKind::Decode, "decode"},
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

namespace {

// The postcondition a whole plan is checked against (matrix/
// postcondition.h: a dense map for the coded operations, a function of the
// spec for the others), sized from the spec alone, before anything is built:
// build_spec would otherwise build an encode's K×K matrix first, and the
// 32-bit counts of postcondition() could wrap. Saturating arithmetic, so the
// message names the true size. Limits: support/limits.h.
// An encode's map is its K×K matrix itself (n = 1), held once per compile
// beside a plan of K^2 terms, and large encodes are checked randomized, in
// time linear in the plan: 2^28 entries = 1 GiB, K·n <= 16384. The other
// coded maps keep kMaxPostconditionEntries (support/limits.h).
constexpr uint64_t kMaxEncodeMapEntries = uint64_t{1} << 28;

void check_postcondition_size(const Spec& s) {
  const uint64_t K = s.K, n = s.blocks;
  const uint64_t kCoded = kMaxPostconditionEntries;
  if (s.op == OpKind::Encode) {
    const uint64_t Kn = mul_sat(K, n), entries = mul_sat(Kn, Kn);
    if (entries > kMaxEncodeMapEntries)
      user_error("K = {}, blocks = {}: an encode plan is checked against its dense postcondition of (K*n)^2 = {} "
                 "coefficients, over the 2^28 = {} collplan checks; use K*n <= 16384 (the replay's vector length, "
                 "`run --len`, covers long vectors)",
                 K, n, entries == UINT64_MAX ? std::string("more than 2^64") : std::to_string(entries),
                 kMaxEncodeMapEntries);
    return;
  }
  if (s.op == OpKind::Repair || s.op == OpKind::Decode) {
    // Every survivor's n inputs by every output block (the lost ranks' n
    // each, or the K data symbols' n each).
    const uint64_t outs = s.op == OpKind::Repair ? s.lost.size() : K;
    const uint64_t entries = mul_sat(mul_sat(s.N - s.lost.size(), outs), mul_sat(n, n));
    if (entries > kCoded)
      user_error("N = {}, K = {}, {} lost, blocks = {}: a {} plan is checked against its dense postcondition of "
                 "{} coefficients, over the 2^26 = {} collplan checks; use fewer processors or blocks",
                 s.N, K, s.lost.size(), n, op_name(s.op),
                 entries == UINT64_MAX ? std::string("more than 2^64") : std::to_string(entries), kCoded);
    return;
  }
  if (s.op == OpKind::DecentralizedEncode) {
    // At least K x (N-K) (systematic; K x N otherwise, checked once the
    // matrix's shape is known, in code_matrix and postcondition()).
    const uint64_t entries = mul_sat(mul_sat(K, s.N - K), mul_sat(n, n));
    if (entries > kCoded)
      user_error("N = {}, K = {}, blocks = {}: a decentralized-encode plan is checked against its dense postcondition "
                 "of at least K*(N-K)*n^2 = {} coefficients, over the 2^26 = {} collplan checks; use fewer "
                 "processors or blocks",
                 s.N, K, n, entries == UINT64_MAX ? std::string("more than 2^64") : std::to_string(entries), kCoded);
    return;
  }
  uint64_t in = 0, out = 0;  // total inputs and outputs over all ranks
  switch (s.op) {
    case OpKind::Broadcast: in = n, out = mul_sat(K, n); break;
    case OpKind::Reduce: in = mul_sat(K, n), out = n; break;
    case OpKind::Allgather: in = mul_sat(K, n), out = mul_sat(K, mul_sat(K, n)); break;
    case OpKind::ReduceScatter: in = mul_sat(K, mul_sat(K, n)), out = mul_sat(K, n); break;
    case OpKind::Allreduce: in = out = mul_sat(K, n); break;
    case OpKind::Allgatherv: {
      uint64_t total = 0;
      for (uint32_t c : s.counts) total += c;
      in = total, out = mul_sat(K, total);
      break;
    }
    case OpKind::Prefix: {
      uint64_t total = 0;
      for (uint32_t c : s.counts) total += c;
      in = out = s.counts.empty() ? K : total;
      break;
    }
    default: return;
  }
  // The uncoded postcondition is a function of the spec, not a map
  // (matrix/postcondition.h): what bounds it is the 32-bit numbering of
  // every rank's inputs and outputs in one sequence.
  const uint64_t most = std::max(in, out);
  if (most > kMaxPostconditionIO)
    user_error("{} with K = {}, blocks = {}: its ranks hold {} {} in all, over the {} (2^31) a whole plan numbers; "
               "use fewer ranks or blocks (the replay's vector length, `run --len`, covers long vectors), or compile "
               "one rank alone (`compile --rank`)",
               op_name(s.op), K, n, most == UINT64_MAX ? std::string("more than 2^64") : std::to_string(most),
               out >= in ? "outputs" : "inputs", kMaxPostconditionIO);
}

}  // namespace

namespace {

// A strictly increasing list of ranks < N (lost, helpers).
void check_rank_list(const std::vector<uint32_t>& v, const char* what, uint32_t N) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] >= N) user_error("{} rank {} is not a processor (valid: 0..{})", what, v[i], N - 1);
    if (i > 0 && v[i] <= v[i - 1])
      user_error("{} ranks must be distinct and in increasing order: {} follows {}", what, v[i], v[i - 1]);
  }
}

// repair and decode: the lost set, the helpers and (decode) the receivers.
void validate_repair(const Spec& s) {
  const char* op = op_name(s.op);
  check_rank_list(s.lost, "lost", s.N);
  if (s.op == OpKind::Repair && s.lost.empty()) user_error("repair needs at least one lost rank (--lost)");
  if (s.lost.size() > s.N - s.K)
    user_error("{} lost ranks are too many for an [N, K] = [{}, {}] code: at most N - K = {} symbols can be lost",
               s.lost.size(), s.N, s.K, s.N - s.K);
  check_rank_list(s.helpers, "helper", s.N);  // empty only while a spec is built (repair_map refuses it)
  for (uint32_t h : s.helpers)
    if (std::binary_search(s.lost.begin(), s.lost.end(), h))
      user_error("helper {} is lost: helpers must be survivors (ranks not in --lost)", h);
  if (s.helpers.size() > s.K)
    user_error("{} helpers are too many: an [N, K] code's symbols span at most K = {} dimensions, so more than K "
               "helpers are linearly dependent",
               s.helpers.size(), s.K);
  if (s.op == OpKind::Decode) {
    if (s.to.size() != s.K)
      user_error("decode needs one receiving rank per data symbol: got {} for K = {}", s.to.size(), s.K);
    for (size_t j = 0; j < s.to.size(); ++j)
      if (s.to[j] >= s.N) user_error("to[{}] = {} is not a processor (valid: 0..{})", j, s.to[j], s.N - 1);
  } else if (!s.to.empty()) {
    user_error("to applies to decode only, not to {}", op);
  }
}

}  // namespace

void validate_spec_basics(const Spec& s, uint32_t max_ranks) {
  validate_spec_ranges(s, max_ranks);
  // A whole plan is checked against its dense postcondition; a rank-local
  // one (max_ranks above kMaxPlanRanks) builds nothing of size K.
  if (max_ranks <= kMaxPlanRanks) check_postcondition_size(s);
}

void validate_spec_ranges(const Spec& s, uint32_t max_ranks) {
  if (is_code_op(s.op)) {
    // K sources among N processors: one source is allowed (its sinks get
    // multiples of x_0), one processor is not.
    if (s.K < 1) user_error("K = {} is too small: {} needs K >= 1 (the code's dimension)", s.K, op_name(s.op));
    if (s.N <= s.K) user_error("N = {} is too small: {} needs N > K = {} processors", s.N, op_name(s.op), s.K);
    if (s.N > max_ranks) user_error("N = {} is too large: collplan supports N <= {}", s.N, max_ranks);
    if (s.op != OpKind::DecentralizedEncode) validate_repair(s);
  } else if (s.K < 2) {
    user_error("K = {} is too small: a collective needs K >= 2 processors", s.K);
  }
  if (s.K > max_ranks)
    user_error("K = {} is too large: collplan supports K <= {}{}", s.K, max_ranks,
               max_ranks == kMaxPlanRanks ? " in a whole plan (a rank-local compile of a broadcast, reduce, "
                                            "allreduce or prefix, `compile --rank`, accepts K <= 2147483648)"
                                          : "");
  if (s.p < 1) user_error("p = {} is invalid: every processor needs p >= 1 ports", s.p);
  if (s.p > 1024) user_error("p = {} is too large: collplan supports p <= 1024 ports", s.p);
  if (s.lambda < 1) user_error("lambda = {} is invalid: postal latency must be >= 1 (1 = synchronous rounds)", s.lambda);
  if (s.lambda > 1024) user_error("lambda = {} is too large: collplan supports lambda <= 1024", s.lambda);
  if (s.blocks < 1) user_error("blocks = {} is invalid: a buffer is split into n >= 1 blocks", s.blocks);
  // A rank holds its n blocks as slots, counted in 32 bits like every
  // per-rank count (support/limits.h); this also bounds a rank compiled alone.
  if (s.blocks > kMaxBlocks)
    user_error("blocks = {} is too large: a rank holds its n blocks as slots, at most 2^24 = 16777216 (the replay's "
               "vector length, `run --len`, covers long vectors)",
               s.blocks);
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
  if (!is_code_op(s.op) || s.op == OpKind::DecentralizedEncode)
    if (!s.lost.empty() || !s.helpers.empty() || !s.to.empty())
      user_error("lost, helpers and to apply to repair and decode only, not to {}", op_name(s.op));
}

uint64_t total_count(const Spec& s) {
  uint64_t total = 0;
  for (uint32_t c : s.counts) total += c;
  if (total == 0 || total > (1u << 24))
    user_error("{}: total {} count {} must be in 1..16777216", op_name(s.op),
               s.op == OpKind::Allgatherv ? "block" : "item", total);
  return total;
}


namespace {

// Rank k's counts; `total` = total_count(s) where the operation has counts.
RankIO rank_io(const Spec& s, uint32_t k, uint64_t total) {
  const uint32_t n = s.blocks;
  switch (s.op) {
    case OpKind::Encode: return {n, n};
    case OpKind::DecentralizedEncode: {
      const bool systematic = s.matrix.cols != s.N;
      return {k < s.K ? n : 0, (!systematic || k >= s.K) ? n : 0};
    }
    case OpKind::Broadcast: return {k == s.root ? n : 0, n};
    case OpKind::Reduce: return {n, k == s.root ? n : 0};
    case OpKind::Allgather: return {n, s.K * n};
    case OpKind::Allreduce: return {n, n};
    case OpKind::ReduceScatter: return {s.K * n, n};
    case OpKind::Allgatherv: return {s.counts[k], static_cast<uint32_t>(total)};
    case OpKind::Prefix:
      if (s.counts.empty()) return {1, 1};
      return {s.counts[k], s.counts[k]};
    case OpKind::Repair: {
      const bool lost = std::binary_search(s.lost.begin(), s.lost.end(), k);
      return {lost ? 0 : n, lost ? n : 0};
    }
    case OpKind::Decode: {
      const bool lost = std::binary_search(s.lost.begin(), s.lost.end(), k);
      return {lost ? 0 : n, static_cast<uint32_t>(std::count(s.to.begin(), s.to.end(), k)) * n};
    }
  }
  return {};
}

}  // namespace

RankIO rank_io(const Spec& s, uint32_t k) {
  validate_spec_basics(s, kMaxRankLocalRanks);
  if (k >= num_ranks(s)) user_error("rank {} is not a processor (valid: 0..{})", k, num_ranks(s) - 1);
  const bool counted = s.op == OpKind::Allgatherv || (s.op == OpKind::Prefix && !s.counts.empty());
  return rank_io(s, k, counted ? total_count(s) : 0);
}

std::vector<RankIO> rank_ios(const Spec& s) {
  validate_spec_basics(s);
  const bool counted = s.op == OpKind::Allgatherv || (s.op == OpKind::Prefix && !s.counts.empty());
  const uint64_t total = counted ? total_count(s) : 0;
  std::vector<RankIO> io(num_ranks(s));
  for (uint32_t k = 0; k < io.size(); ++k) io[k] = rank_io(s, k, total);
  return io;
}

}  // namespace collplan
