// Shared pieces of the dissemination generators: round lists, the spec
// check, the allgather and reduce-scatter phases, exact costs and
// `--blocks auto` for allreduce (gen/dissemination.h).
#include "gen/dissemination_build.h"

#include <algorithm>

#include <fmt/format.h>

#include "gen/circulant.h"
#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

std::vector<DisseminationRound> dissemination_rounds(uint32_t K, uint32_t p) {
  COLLPLAN_ASSERT(K >= 1 && p >= 1, "dissemination_rounds: K, p >= 1");
  std::vector<DisseminationRound> rounds;
  uint64_t D = 1;
  while (D < K) {
    DisseminationRound round;
    const uint64_t rest = K - D;
    if (rest >= uint64_t{p} * D) {
      for (uint32_t j = 0; j < p; ++j)
        round.push_back({static_cast<uint32_t>(D + j * D), static_cast<uint32_t>(D)});
      D += uint64_t{p} * D;
    } else {
      // The last round: K − D < p·D positions over p ports, evenly.
      uint64_t start = D;
      for (uint32_t j = 0; j < p; ++j) {
        const uint64_t len = rest / p + (j < rest % p ? 1 : 0);
        if (len == 0) break;
        round.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(len)});
        start += len;
      }
      D = K;
    }
    rounds.push_back(std::move(round));
  }
  return rounds;
}

std::vector<DisseminationRound> circulant_rounds(uint32_t K) {
  const Circulant c(K);
  std::vector<DisseminationRound> rounds;
  for (uint32_t k = 0; k < c.q(); ++k)
    rounds.push_back({{static_cast<uint32_t>(c.skip(k)), static_cast<uint32_t>(c.skip(k + 1) - c.skip(k))}});
  return rounds;
}

std::vector<uint32_t> dissemination_allreduce_coverage(uint32_t K, uint32_t p) {
  std::vector<uint32_t> L{K};
  while (L.back() > 1) L.push_back(static_cast<uint32_t>((uint64_t{L.back()} + p) / (p + 1)));
  std::reverse(L.begin(), L.end());
  return L;
}

void validate_dissemination_spec(const Spec& spec, const std::vector<OpKind>& ops, const char* generator,
                                 bool circulant, uint32_t rank_local_max) {
  if (rank_local_max == 0) validate_spec_basics(spec);
  else validate_spec_ranges(spec, rank_local_max);
  if (std::find(ops.begin(), ops.end(), spec.op) == ops.end()) {
    std::string names;
    for (OpKind op : ops) names += fmt::format("{}'{}'", names.empty() ? "" : " or ", op_name(op));
    user_error("the {} generator computes {}, not '{}'", generator, names, op_name(spec.op));
  }
  if (circulant) {
    if (spec.p != 1)
      user_error("{}: p = {} ports; circulant schedules use one port per processor (p = 1; "
                 "dissemination-reduce-scatter covers p > 1)",
                 generator, spec.p);
    if (spec.lambda != 1)
      user_error("{}: lambda = {}; circulant schedules assume synchronous rounds (lambda = 1; "
                 "dissemination-reduce-scatter covers lambda > 1)",
                 generator, spec.lambda);
  }
}

std::string dissemination_why_not(const Spec& spec, bool circulant) {
  if (circulant && spec.p != 1)
    return fmt::format("circulant schedules use one port per processor (p = 1), got p = {}", spec.p);
  if (circulant && spec.lambda != 1)
    return fmt::format("circulant schedules assume synchronous rounds (lambda = 1), got lambda = {}", spec.lambda);
  return {};
}

std::vector<ir::SlotId> SlotRun::slots() const {
  std::vector<ir::SlotId> v(count);
  for (uint32_t e = 0; e < count; ++e) v[e] = first + e;
  return v;
}

uint32_t allgather_phase(const ir::Plan& ctx, ir::Program& prog, const std::vector<DisseminationRound>& rounds,
                         uint32_t first_step, PositionSlots& pos, const std::function<uint32_t(uint32_t)>& size) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, lambda = ctx.spec.lambda, r = prog.rank;
  pos.resize(K);
  uint32_t last = first_step - 1;
  for (size_t k = 0; k < rounds.size(); ++k) {
    const uint32_t ts = first_step + static_cast<uint32_t>(k) * lambda, tr = ts + lambda - 1;
    last = tr;
    for (uint32_t port = 0; port < rounds[k].size(); ++port) {
      const DisseminationPiece& pc = rounds[k][port];
      uint64_t elements = 0;
      for (uint32_t j = 0; j < pc.len; ++j) elements += pos[j].count;
      std::vector<Combo> payload;
      payload.reserve(elements);
      for (uint32_t j = 0; j < pc.len; ++j)
        for (uint32_t e = 0; e < pos[j].count; ++e) payload.push_back(unit(pos[j][e]));
      if (!payload.empty())
        prog.at_any(ts).sends.push_back(make_send(ctx, prog, port, (r + K - pc.offset) % K, std::move(payload)));
      // The piece's positions, in order, land in consecutive new slots.
      const SlotId from = prog.num_slots;
      for (uint32_t j = pc.offset; j < pc.offset + pc.len; ++j) {
        COLLPLAN_ASSERT(!pos[j].set(), "allgather_phase: position received twice");
        pos[j] = SlotRun{prog.num_slots, size((r + j) % K)};
        prog.num_slots += pos[j].count;
      }
      std::vector<SlotId> into(prog.num_slots - from);
      for (uint32_t i = 0; i < into.size(); ++i) into[i] = from + i;
      if (!into.empty())
        prog.at_any(tr).recvs.push_back(make_recv(ctx, prog, tr, port, (r + pc.offset) % K, std::move(into)));
    }
  }
  return last;
}

uint32_t reduce_scatter_phase(const ir::Plan& ctx, ir::Program& prog, const std::vector<DisseminationRound>& rounds,
                              uint32_t first_step, PositionSlots& partial) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, lambda = ctx.spec.lambda, r = prog.rank;
  COLLPLAN_ASSERT(partial.size() == K, "reduce_scatter_phase: one slot run per position");
  uint32_t last = first_step - 1;
  for (size_t i = 0; i < rounds.size(); ++i) {
    const DisseminationRound& round = rounds[rounds.size() - 1 - i];
    const uint32_t ts = first_step + static_cast<uint32_t>(i) * lambda, tr = ts + lambda - 1;
    last = tr;
    // Port q receives contributions to positions 0..len_q − 1, element by
    // element into consecutive new slots from base[q]: element e of position
    // j lands in base[q] + at[j] + e, at[j] = the elements of positions < j.
    uint32_t widest = 0;
    for (const DisseminationPiece& pc : round) widest = std::max(widest, pc.len);
    std::vector<uint64_t> at(widest + 1, 0);
    for (uint32_t j = 0; j < widest; ++j) at[j + 1] = at[j] + partial[j].count;
    std::vector<SlotId> base(round.size());
    for (uint32_t port = 0; port < round.size(); ++port) {
      const DisseminationPiece& pc = round[port];
      uint64_t elements = 0;
      for (uint32_t j = pc.offset; j < pc.offset + pc.len; ++j) elements += partial[j].count;
      std::vector<Combo> payload;
      payload.reserve(elements);
      for (uint32_t j = pc.offset; j < pc.offset + pc.len; ++j)
        for (uint32_t e = 0; e < partial[j].count; ++e) payload.push_back(unit(partial[j][e]));
      if (!payload.empty())
        prog.at_any(ts).sends.push_back(make_send(ctx, prog, port, (r + pc.offset) % K, std::move(payload)));
      base[port] = prog.num_slots;
      std::vector<SlotId> into(at[pc.len]);
      for (SlotId& s : into) s = prog.new_slot();
      if (!into.empty())
        prog.at_any(tr).recvs.push_back(make_recv(ctx, prog, tr, port, (r + K - pc.offset) % K, std::move(into)));
    }
    // Then each element adds what every port brought it, in port order.
    std::vector<Op> ops;
    ops.reserve(at[widest]);
    for (uint32_t j = 0; j < widest; ++j)
      for (uint32_t e = 0; e < partial[j].count; ++e) {
        std::vector<Term> terms;
        terms.reserve(1 + round.size());
        terms.push_back(Term{partial[j][e], 1});
        for (uint32_t port = 0; port < round.size(); ++port)
          if (j < round[port].len) terms.push_back(Term{static_cast<SlotId>(base[port] + at[j] + e), 1});
        ops.push_back(make_op(prog, partial[j][e], std::move(terms)));
      }
    if (!ops.empty()) {
      auto& step_ops = prog.at_any(tr).ops;
      if (step_ops.empty()) step_ops = std::move(ops);
      else step_ops.insert(step_ops.end(), std::make_move_iterator(ops.begin()), std::make_move_iterator(ops.end()));
    }
  }
  return last;
}

ir::Program reduce_scatter_rank(const ir::Plan& ctx, const std::vector<DisseminationRound>& rounds, uint32_t r) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, n = ctx.spec.blocks;
  Program prog;
  prog.rank = r;
  prog.num_slots = K * n;
  prog.inputs.resize(K * n);
  for (SlotId s = 0; s < K * n; ++s) prog.inputs[s] = s;
  PositionSlots partial(K);
  for (uint32_t j = 0; j < K; ++j) partial[j] = SlotRun{static_cast<SlotId>((uint64_t{r} + j) % K) * n, n};
  reduce_scatter_phase(ctx, prog, rounds, 1, partial);
  prog.outputs = partial[0].slots();
  return prog;
}

namespace {

struct DisseminationShape {
  std::vector<DisseminationRound> rounds;
  uint32_t steps = 0;
};

DisseminationShape dissemination_shape(const Spec& spec, const DisseminationAlgorithm& alg, uint32_t rank_local_max) {
  validate_dissemination_spec(spec, alg.ops, alg.name, alg.circulant, rank_local_max);
  DisseminationShape sh;
  sh.rounds = alg.circulant ? circulant_rounds(spec.K) : dissemination_rounds(spec.K, spec.p);
  sh.steps = alg.phases * static_cast<uint32_t>(sh.rounds.size()) * spec.lambda;
  return sh;
}

}  // namespace

ir::Plan dissemination_whole_plan(const Spec& spec, const DisseminationAlgorithm& alg) {
  const DisseminationShape sh = dissemination_shape(spec, alg, 0);
  return whole_plan_by_rank(spec, sh.steps,
                            [&](const ir::Plan& ctx, uint32_t r) { return alg.rank(ctx, sh.rounds, r); });
}

ir::RankPlan dissemination_rank_plan(const Spec& spec, const DisseminationAlgorithm& alg, uint32_t rank) {
  const DisseminationShape sh = dissemination_shape(spec, alg, alg.rank_local_max);
  return one_rank_plan(spec, sh.steps, rank,
                       [&](const ir::Plan& ctx, uint32_t r) { return alg.rank(ctx, sh.rounds, r); });
}

uint64_t phase_C2(uint32_t K, const std::vector<DisseminationRound>& rounds,
                  const std::function<uint32_t(uint32_t)>& size) {
  // Window sums over the cyclic sizes: prefix[i] = Σ size(a mod K), a < i.
  std::vector<uint64_t> prefix(2 * uint64_t{K} + 1, 0);
  for (uint64_t a = 0; a < 2 * uint64_t{K}; ++a) prefix[a + 1] = prefix[a] + size(static_cast<uint32_t>(a % K));
  auto widest = [&](uint32_t len) {
    uint64_t m = 0;
    for (uint32_t start = 0; start < K; ++start) m = std::max(m, prefix[start + len] - prefix[start]);
    return m;
  };
  uint64_t C2 = 0;
  for (const DisseminationRound& round : rounds) {
    uint32_t longest = 0;  // windows nest: the longest piece has the largest one
    for (const DisseminationPiece& pc : round) longest = std::max(longest, pc.len);
    C2 += widest(longest);
  }
  return C2;
}

uint32_t allreduce_auto_blocks(const Spec& spec, uint64_t m, double beta, double tau) {
  if (m == 0) user_error("--blocks auto: the message length (--cost-len) must be >= 1 element");
  if (!(beta >= 0) || !(tau >= 0)) user_error("--blocks auto: beta = {} and tau = {} must be >= 0", beta, tau);
  Spec one = spec, wide = spec;
  one.blocks = 1;
  wide.blocks = spec.K;
  const PostalSplitCost latency = dissemination_allreduce_cost(one), bandwidth = reduce_scatter_allgather_cost(wide);
  const uint64_t chunk = (m + spec.K - 1) / spec.K;
  const double t_latency = latency.C1 * beta + static_cast<double>(latency.C2) * static_cast<double>(m) * tau;
  const double t_bandwidth = bandwidth.C1 * beta + static_cast<double>(bandwidth.C2) * static_cast<double>(chunk) * tau;
  return t_bandwidth < t_latency ? spec.K : 1;
}

}  // namespace collplan::gen
