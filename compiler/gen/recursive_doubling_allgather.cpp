// Allgather by recursive doubling (Thakur, Rabenseifner, Gropp,
// "Optimization of collective communication operations in MPICH", 2005),
// with p ports as recursive multiplying: for K = (p+1)^m.
//
// Write a rank in base p + 1. Before round k (k = 0..m−1) rank r holds the
// blocks of the D = (p+1)^k ranks that share all of r's digits above digit
// k−1: the ranks [r − r mod D, r − r mod D + D), in rank order. In round k
// it exchanges them with the p ranks that differ from r in digit k only
// (r + (c' − c)·D for the other digit values c'), one per port, so that it
// ends the round with its (p+1)·D-rank group. Rank r with digit c sends to
// the partner with digit c' on port (c' − c − 1) mod (p+1): distinct ports
// for distinct partners on both sides. With λ > 1 every round takes λ steps
// (sent in its first, received in its last).
//
// Why beside the dissemination allgather, with the same costs: every
// message here is a run of consecutive ranks' blocks, [g, g + D) with g a
// multiple of D, so a rank whose outputs are one buffer in rank order sends
// and receives each message as one contiguous piece. The dissemination
// messages are runs modulo K: whenever one wraps past rank K − 1 it is two
// pieces at both ends, which MPI carries as a derived datatype, off its
// single-copy path (docs/benchmarks.md, "Wrapped messages").
//
// C1 = λ·m = λ·log_{p+1} K (the postal bound for λ = 1). C2 = n·Σ_k (p+1)^k
// = n·(K−1)/p: each port receives D·n elements in round k, and every rank
// must receive n(K−1) elements through p ports, so C2 is optimal.
// Allgatherv: rank a's run is counts[a] elements; C2 = Σ_k the largest sum
// of counts over an aligned run of D ranks (with irregular counts above the
// receive-volume bound; circulant-allgatherv comes closer to it).
#include "gen/recursive_doubling.h"

#include <algorithm>

#include <fmt/format.h>

#include "gen/dissemination_build.h"
#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

uint32_t run_size(const Spec& s, uint32_t a) { return s.op == OpKind::Allgatherv ? s.counts[a] : s.blocks; }

// Rank r's program: its own elements in place, the others' received into
// new slots, outputs in rank order. O(K + elements gathered).
ir::Program rank_program(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const uint32_t K = ctx.spec.K;
  Program prog;
  prog.rank = r;
  std::vector<SlotRun> runs(K);
  for (uint32_t a = 0; a < K; ++a) runs[a].count = run_size(ctx.spec, a);
  runs[r].first = prog.num_slots;
  prog.num_slots += runs[r].count;
  prog.inputs = runs[r].slots();
  recursive_doubling_phase(ctx, prog, 1, runs);
  for (uint32_t a = 0; a < K; ++a)
    for (uint32_t e = 0; e < runs[a].count; ++e) prog.outputs.push_back(runs[a][e]);
  return prog;
}

const RecursiveAlgorithm kAllgather{"recursive-doubling-allgather", {OpKind::Allgather, OpKind::Allgatherv},
                                    "dissemination-allgather", 1, rank_program};

}  // namespace

int recursive_rounds(uint64_t K, uint64_t p) {
  int m = 0;
  uint64_t D = 1;
  while (D < K) {
    D *= p + 1;
    ++m;
  }
  return D == K ? m : -1;
}

uint32_t recursive_doubling_phase(const ir::Plan& ctx, ir::Program& prog, ir::StepNo first_step,
                                  std::vector<SlotRun>& runs) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, p = ctx.spec.p, lambda = ctx.spec.lambda, r = prog.rank;
  StepNo last = first_step - 1;
  uint64_t D = 1;
  for (uint32_t k = 0; D < K; ++k, D *= p + 1) {
    const StepNo ts = first_step + k * lambda, tr = ts + lambda - 1;
    last = tr;
    const uint64_t held = r - r % D;  // r's run: [held, held + D)
    std::vector<Combo> payload;
    for (uint64_t a = held; a < held + D; ++a)
      for (uint32_t e = 0; e < runs[a].count; ++e) payload.push_back(unit(runs[a][e]));
    const std::vector<RecursivePartner> partners = recursive_partners(r, D, p);
    // Sends first: with λ > 1 the receives are in a later step.
    if (!payload.empty())
      for (const RecursivePartner& q : partners)
        prog.at(ts).sends.push_back(make_send(ctx, prog, q.to_port, q.rank, payload));
    for (const RecursivePartner& q : partners) {
      // The partner's run into new consecutive slots.
      std::vector<SlotId> into;
      for (uint64_t a = q.run; a < q.run + D; ++a) {
        runs[a].first = prog.num_slots;
        prog.num_slots += runs[a].count;
        for (uint32_t e = 0; e < runs[a].count; ++e) into.push_back(runs[a][e]);
      }
      if (!into.empty()) prog.at(tr).recvs.push_back(make_recv(ctx, prog, tr, q.from_port, q.rank, into));
    }
  }
  return last;
}

std::vector<RecursivePartner> recursive_partners(uint32_t r, uint64_t D, uint32_t p) {
  const uint64_t group = r - r % (D * (p + 1));  // p + 1 runs of D ranks
  const uint64_t c = (r / D) % (p + 1);
  std::vector<RecursivePartner> out;
  out.reserve(p);
  for (uint64_t c2 = 0; c2 <= p; ++c2) {
    if (c2 == c) continue;
    out.push_back({static_cast<ir::Rank>(group + c2 * D + r % D), group + c2 * D,
                   static_cast<ir::Port>((c2 + p - c) % (p + 1)), static_cast<ir::Port>((c + p - c2) % (p + 1))});
  }
  return out;
}

namespace {

void validate(const Spec& spec, const RecursiveAlgorithm& alg, uint32_t rank_local_max) {
  validate_dissemination_spec(spec, alg.ops, alg.name, false, rank_local_max);
  if (const std::string why = recursive_doubling_why_not(spec); !why.empty())
    user_error("{}: {}; {} takes any K", alg.name, why, alg.elsewhere);
}

uint32_t num_steps(const Spec& spec, const RecursiveAlgorithm& alg) {
  return alg.phases * static_cast<uint32_t>(recursive_rounds(spec.K, spec.p)) * spec.lambda;
}

}  // namespace

ir::Plan recursive_whole_plan(const Spec& spec, const RecursiveAlgorithm& alg) {
  validate(spec, alg, 0);
  return whole_plan_by_rank(spec, num_steps(spec, alg), alg.rank);
}

ir::RankPlan recursive_rank_plan(const Spec& spec, const RecursiveAlgorithm& alg, uint32_t rank) {
  validate(spec, alg, kMaxPlanRanks);
  return one_rank_plan(spec, num_steps(spec, alg), rank, alg.rank);
}

std::string recursive_doubling_why_not(const Spec& spec) {
  if (spec.K < 2 || recursive_rounds(spec.K, spec.p) < 0)
    return fmt::format("recursive doubling needs K a power of p+1 = {} (K = {})", spec.p + 1, spec.K);
  return {};
}

ir::Plan recursive_doubling_allgather(const Spec& spec) { return recursive_whole_plan(spec, kAllgather); }

ir::RankPlan recursive_doubling_allgather_local(const Spec& spec, uint32_t rank) {
  return recursive_rank_plan(spec, kAllgather, rank);
}

PostalSplitCost recursive_doubling_allgather_cost(const Spec& spec) {
  const int m = recursive_rounds(spec.K, spec.p);
  if (spec.K < 2 || m < 0) return {0, 0, UINT32_MAX, UINT64_MAX};
  const auto C1 = static_cast<uint32_t>(m) * spec.lambda;
  if (spec.op != OpKind::Allgatherv) return {0, 0, C1, uint64_t{spec.blocks} * (spec.K - 1) / spec.p};
  // Round k's messages are the aligned runs of D ranks: the largest sum.
  uint64_t C2 = 0;
  for (uint64_t D = 1; D < spec.K; D *= spec.p + 1) {
    uint64_t largest = 0;
    for (uint64_t g = 0; g < spec.K; g += D) {
      uint64_t sum = 0;
      for (uint64_t a = g; a < g + D; ++a) sum += spec.counts[a];
      largest = std::max(largest, sum);
    }
    C2 += largest;
  }
  return {0, 0, C1, C2};
}

}  // namespace collplan::gen
