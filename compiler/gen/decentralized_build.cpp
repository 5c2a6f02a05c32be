// Assembly helpers of the decentralized generators (gen/decentralized_build.h)
// and the block encoder hook (gen/decentralized.h).
#include "gen/decentralized_build.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "gen/circulant_plans.h"
#include "gen/registry.h"
#include "matrix/postcondition.h"
#include "passes/cost.h"
#include "passes/drop_zeros.h"
#include "support/error.h"

namespace collplan::gen {

bool decentralized_systematic(const Spec& spec) { return spec.matrix.cols != spec.N; }

namespace {
Spec block_spec(uint32_t K, uint32_t p, uint32_t lambda, const Field& f) {
  return make_encode_spec(K, p, lambda, f, MatrixSpec{});
}
}  // namespace

std::string block_encode_name(uint32_t K, uint32_t p, uint32_t lambda, const passes::CostModel& cm) {
  return choose_generator(block_spec(K, p, lambda, Field::gf256()), cm).name;
}

ir::Plan block_encode(const Spec& block, const passes::CostModel& cm) {
  const GeneratorInfo& g = choose_generator(block, cm);
  Spec named = block;
  named.algorithm = g.name;
  return g.build(named, cm);
}

namespace {

// The schedules a row of a decentralized plan can take: the (p+1)-nomial
// tree of whole vectors, and for n > 1 blocks the pipelined chain and the
// circulant schedule. Their registry estimates are their closed forms, and
// registry order (tree, pipelined, circulant) breaks ties.
bool row_schedule(const GeneratorInfo& g, uint32_t n) {
  if (g.name.starts_with("tree-")) return true;
  return n > 1 && (g.name.starts_with("pipelined-") || g.name.starts_with("circulant-"));
}

// One row's broadcast or reduce of n blocks among `size` ranks, root = local
// rank 0, on the whole plan's machine model.
Spec row_spec(const Spec& whole, uint32_t size, OpKind op, uint32_t n) {
  Spec s;
  s.op = op;
  s.K = size;
  s.p = whole.p;
  s.lambda = whole.lambda;
  s.field = whole.field;
  s.root = 0;
  s.blocks = n;
  return s;
}

std::vector<Candidate> row_candidates(const Spec& row, const passes::CostModel& cm) {
  return candidates(row, cm, [n = row.blocks](const GeneratorInfo& g) { return row_schedule(g, n); });
}

// The longest row of the plan auto would stream, and what it does there.
std::pair<uint32_t, OpKind> streamed_row(const Spec& s) {
  const uint32_t K = s.K, R = s.N - s.K;
  if (!decentralized_systematic(s)) return {s.N / K, OpKind::Broadcast};  // grouped: x_i to each of ⌊N/K⌋ groups
  if (K >= R) return {(K + R - 1) / R + 1, OpKind::Reduce};
  return {(R + K - 1) / K + 1, OpKind::Broadcast};
}

// Modeled time of the cheapest row schedule for `size` ranks, n blocks of
// ⌈m/n⌉ elements.
double row_time(const Spec& whole, uint32_t size, OpKind op, uint32_t n, uint64_t m, double beta, double tau) {
  if (size < 2) return 0;
  double best = std::numeric_limits<double>::infinity();
  for (const Candidate& c : row_candidates(row_spec(whole, size, op, n), passes::CostModel{beta, tau, (m + n - 1) / n}))
    if (c.why_not.empty()) best = std::min(best, c.time);
  return best;
}

uint32_t blocks_limit(const Spec& s) {
  const uint64_t outs = decentralized_systematic(s) ? s.N - s.K : s.N;
  uint64_t n = 1;
  while (uint64_t{s.K} * outs * (n + 1) * (n + 1) <= kMaxPostconditionEntries) ++n;
  return static_cast<uint32_t>(n);
}

}  // namespace

uint32_t decentralized_auto_blocks(const Spec& spec, uint64_t m, double beta, double tau) {
  validate_spec_basics(spec);
  if (m == 0) user_error("--blocks auto: the message length (--cost-len) must be >= 1 element");
  if (!(beta >= 0) || !(tau >= 0)) user_error("--blocks auto: beta = {} and tau = {} must be >= 0", beta, tau);
  const auto [g, op] = streamed_row(spec);
  const uint64_t top = std::min<uint64_t>({m, kCirculantMaxAutoBlocks, blocks_limit(spec)});
  uint32_t best = 1;
  double best_time = row_time(spec, g, op, 1, m, beta, tau);
  for (uint32_t n = 2; n <= top; ++n)
    if (const double t = row_time(spec, g, op, n, m, beta, tau); t < best_time) {
      best = n;
      best_time = t;
    }
  return best;
}

std::string decentralized_auto_blocks_note(const Spec& spec, uint64_t m, double beta, double tau, uint32_t n) {
  return fmt::format(" n={} (blocks auto: the streamed row phase on rows of {} ranks, m={}, beta={}, tau={}, n <= {})",
                     n, streamed_row(spec).first, m, beta, tau,
                     std::min<uint64_t>({m, kCirculantMaxAutoBlocks, blocks_limit(spec)}));
}

namespace detail {

using passes::Held;

Assembly start(const Spec& spec, const char* generator) {
  if (spec.op != OpKind::DecentralizedEncode)
    user_error("{} computes 'decentralized-encode', not '{}'", generator, op_name(spec.op));
  Assembly a;
  a.M = coded_matrix(spec);  // the spec, the matrix's shape and its digest checked
  a.systematic = decentralized_systematic(spec);
  a.K = spec.K;
  a.N = spec.N;
  a.R = spec.N - spec.K;
  a.n = spec.blocks;
  a.plan = ir::make_plan(spec, 0);
  a.held.assign(a.N, std::vector<Held>(a.n, Held::zero()));
  for (uint32_t k = 0; k < a.K; ++k) {
    ir::Program& prog = a.plan.ranks[k];
    for (uint32_t b = 0; b < a.n; ++b) {
      const ir::SlotId s = prog.new_slot();
      prog.inputs.push_back(s);
      a.held[k][b] = Held{s, 1};
    }
  }
  return a;
}

namespace {

std::string step_range(uint32_t from, uint32_t steps) {
  if (steps == 0) return "no steps";
  return steps == 1 ? fmt::format("step {}", from + 1) : fmt::format("steps {}-{}", from + 1, from + steps);
}

// One group's broadcast or reduce part (root = local rank 0) of n blocks:
// the row schedule of least modeled time (for one block, the tree).
ir::Plan group_part(const Spec& whole, uint32_t size, OpKind op, const passes::CostModel& cm) {
  Spec s = row_spec(whole, size, op, whole.blocks);
  const GeneratorInfo& g = choose_generator(s, cm, [n = s.blocks](const GeneratorInfo& i) { return row_schedule(i, n); });
  s.algorithm = g.name;
  return g.build(s, cm);
}

// Places one broadcast or reduce (root = local 0) per group.
uint32_t tree_groups(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups, OpKind op, const passes::CostModel& cm,
                     const std::string& what) {
  const uint32_t offset = a.plan.num_steps;
  uint32_t steps = 0;
  std::vector<std::string> used;  // distinct part generators, in order of first use
  std::map<uint32_t, ir::Plan> parts;  // by group size: groups of one size take the same schedule
  for (const auto& grp : groups) {
    if (grp.size() < 2) continue;
    const uint32_t size = static_cast<uint32_t>(grp.size());
    auto it = parts.find(size);
    if (it == parts.end()) it = parts.emplace(size, group_part(a.plan.spec, size, op, cm)).first;
    const ir::Plan& part = it->second;
    if (std::find(used.begin(), used.end(), part.spec.algorithm) == used.end()) used.push_back(part.spec.algorithm);
    std::vector<std::vector<Held>> in(grp.size());
    if (op == OpKind::Broadcast) {
      in[0] = a.held[grp[0]];
    } else {
      for (size_t i = 0; i < grp.size(); ++i) in[i] = a.held[grp[i]];
    }
    const auto out = passes::place(a.plan, part, grp, offset, in);
    for (size_t i = 0; i < grp.size(); ++i)
      if (!out[i].empty()) a.held[grp[i]] = out[i];
    steps = std::max(steps, part.num_steps);
  }
  a.plan.num_steps = offset + steps;
  std::string by;
  for (const std::string& u : used) by += (by.empty() ? " by " : " and ") + u;
  if (a.n == 1)
    a.phases.push_back(fmt::format("{}: {}{}, the (p+1)-nomial tree, one plan element per message (--blocks n "
                                   "streams long vectors)",
                                   step_range(offset, steps), what, by));
  else
    a.phases.push_back(fmt::format("{}: {}{} ({} blocks per vector; the cheapest of tree, pipelined chain and "
                                   "circulant by the cost model)",
                                   step_range(offset, steps), what, by, a.n));
  return steps;
}

}  // namespace

uint32_t encode_blocks(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups, const std::vector<Matrix>& blocks,
                       const passes::CostModel& cm, const std::string& what) {
  std::vector<MatrixSpec> specs;
  specs.reserve(blocks.size());
  for (const Matrix& B : blocks) specs.push_back(matrix_explicit(B, a.plan.spec.field));
  return encode_blocks(a, groups, specs, cm, what);
}

uint32_t encode_blocks(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups,
                       const std::vector<MatrixSpec>& blocks, const passes::CostModel& cm, const std::string& what) {
  COLLPLAN_ASSERT(groups.size() == blocks.size(), "encode_blocks: one block per group");
  const Field& f = a.plan.spec.field;
  const uint32_t offset = a.plan.num_steps;
  uint32_t steps = 0;
  std::vector<std::string> used;  // distinct block generators, in order of first use
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& grp = groups[g];
    const MatrixSpec& B = blocks[g];
    COLLPLAN_ASSERT(B.rows == grp.size() && B.cols == grp.size(), "encode_blocks: block shape");
    if (grp.size() == 1) {  // x·[b]: a local scaling, folded into later reads
      const Elem c = materialize(B, f).at(0, 0);
      for (Held& v : a.held[grp[0]]) v.coeff = f.mul(v.coeff, c);
      continue;
    }
    Spec bs = make_encode_spec(static_cast<uint32_t>(grp.size()), a.plan.spec.p, a.plan.spec.lambda, f, B);
    bs.blocks = a.n;  // the registry widens the one-block encode (passes/widen.h)
    const ir::Plan part = block_encode(bs, cm);
    if (std::find(used.begin(), used.end(), part.spec.algorithm) == used.end()) used.push_back(part.spec.algorithm);
    std::vector<std::vector<Held>> in(grp.size());
    for (size_t i = 0; i < grp.size(); ++i) in[i] = a.held[grp[i]];
    const auto out = passes::place(a.plan, part, grp, offset, in);
    for (size_t i = 0; i < grp.size(); ++i) a.held[grp[i]] = out[i];
    steps = std::max(steps, part.num_steps);
  }
  a.plan.num_steps = offset + steps;
  std::string by;
  for (const std::string& u : used) by += (by.empty() ? " by " : " and ") + u;
  a.phases.push_back(
      fmt::format("{}: {}{}", step_range(offset, steps), what, used.empty() ? " (1x1 blocks: local scaling)" : by));
  return steps;
}

uint32_t broadcast_groups(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups, const passes::CostModel& cm,
                          const std::string& what) {
  return tree_groups(a, groups, OpKind::Broadcast, cm, what);
}

uint32_t reduce_groups(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups, const passes::CostModel& cm,
                       const std::string& what) {
  return tree_groups(a, groups, OpKind::Reduce, cm, what);
}

ir::Plan finish(Assembly& a) {
  if (a.plan.num_steps == 0) a.plan.num_steps = 1;  // a rank's output may need a scaling op
  for (uint32_t r = a.systematic ? a.K : 0; r < a.N; ++r)
    for (const Held& v : a.held[r])
      a.plan.ranks[r].outputs.push_back(passes::materialize_held(a.plan, r, v, a.plan.num_steps));
  std::string& alg = a.plan.spec.algorithm;
  alg += " [" + a.layout + "]";
  for (size_t i = 0; i < a.phases.size(); ++i) alg += fmt::format("; phase {} ({})", i + 1, a.phases[i]);
  return std::move(a.plan);
}

PostalSplitCost delivered_cost(ir::Plan plan) {
  passes::drop_zeros(plan);
  const passes::CostReport c = passes::cost(plan);
  return {0, 0, c.C1, c.C2};
}

}  // namespace detail
}  // namespace collplan::gen
