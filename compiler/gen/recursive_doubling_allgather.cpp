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
#include "gen/recursive_doubling.h"

#include <fmt/format.h>

#include "gen/dissemination_build.h"
#include "gen/rank_local.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

constexpr const char* kName = "recursive-doubling-allgather";

// m with (p+1)^m = K, or -1 when K is not a power of p + 1.
int rounds_of(uint64_t K, uint64_t p) {
  int m = 0;
  uint64_t D = 1;
  while (D < K) {
    D *= p + 1;
    ++m;
  }
  return D == K ? m : -1;
}

void validate(const Spec& spec, uint32_t rank_local_max) {
  validate_dissemination_spec(spec, {OpKind::Allgather}, kName, false, rank_local_max);
  if (const std::string why = recursive_doubling_why_not(spec); !why.empty()) user_error("{}: {}", kName, why);
}

// Rank r's program: its own blocks in place, the others' received into new
// slots, outputs in rank order. O(K·n).
ir::Program rank_program(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint32_t K = spec.K, p = spec.p, lambda = spec.lambda, n = spec.blocks;
  Program prog;
  prog.rank = r;
  // first[a]: the slot of rank a's block 0 (its n blocks are consecutive).
  std::vector<SlotId> first(K, SlotRun::kUnset);
  first[r] = prog.num_slots;
  prog.num_slots += n;
  for (uint32_t b = 0; b < n; ++b) prog.inputs.push_back(first[r] + b);
  uint64_t D = 1;
  for (uint32_t k = 0; D < K; ++k, D *= p + 1) {
    const StepNo ts = 1 + k * lambda, tr = ts + lambda - 1;
    const uint64_t held = r - r % D;                  // r's group: [held, held + D)
    const uint64_t base = r - r % (D * (p + 1));      // the round's group of p + 1 groups
    const uint64_t c = (r / D) % (p + 1);
    std::vector<Combo> payload;
    payload.reserve(D * n);
    for (uint64_t a = held; a < held + D; ++a)
      for (uint32_t b = 0; b < n; ++b) payload.push_back(unit(first[a] + b));
    // Sends first: with λ > 1 the receives are in a later step.
    for (uint64_t c2 = 0; c2 <= p; ++c2) {
      if (c2 == c) continue;
      const auto partner = static_cast<Rank>(base + c2 * D + r % D);
      const auto port = static_cast<Port>((c2 + p - c) % (p + 1));  // (c2 − c − 1) mod (p+1)
      prog.at(ts).sends.push_back(make_send(ctx, prog, port, partner, payload));
    }
    for (uint64_t c2 = 0; c2 <= p; ++c2) {
      if (c2 == c) continue;
      const auto partner = static_cast<Rank>(base + c2 * D + r % D);
      const auto port = static_cast<Port>((c + p - c2) % (p + 1));  // the partner's port to r
      // The partner's group, [base + c2·D, +D), into new consecutive slots.
      const uint64_t theirs = base + c2 * D;
      std::vector<SlotId> into;
      into.reserve(D * n);
      for (uint64_t a = theirs; a < theirs + D; ++a) {
        first[a] = prog.num_slots;
        prog.num_slots += n;
        for (uint32_t b = 0; b < n; ++b) into.push_back(first[a] + b);
      }
      prog.at(tr).recvs.push_back(make_recv(ctx, prog, tr, port, partner, into));
    }
  }
  for (uint32_t a = 0; a < K; ++a)
    for (uint32_t b = 0; b < n; ++b) prog.outputs.push_back(first[a] + b);
  return prog;
}

uint32_t num_steps(const Spec& spec) {
  return static_cast<uint32_t>(rounds_of(spec.K, spec.p)) * spec.lambda;
}

}  // namespace

std::string recursive_doubling_why_not(const Spec& spec) {
  if (spec.K < 2 || rounds_of(spec.K, spec.p) < 0)
    return fmt::format("recursive doubling needs K a power of p+1 = {} (K = {}); dissemination-allgather takes any K",
                       spec.p + 1, spec.K);
  return {};
}

ir::Plan recursive_doubling_allgather(const Spec& spec) {
  validate(spec, 0);
  return whole_plan_by_rank(spec, num_steps(spec), rank_program);
}

ir::RankPlan recursive_doubling_allgather_local(const Spec& spec, uint32_t rank) {
  // Every rank lists all K ranks' blocks as outputs: one rank is as large
  // as K, so a rank-local compile keeps the whole-plan limit on K.
  validate(spec, kMaxPlanRanks);
  return one_rank_plan(spec, num_steps(spec), rank, rank_program);
}

PostalSplitCost recursive_doubling_allgather_cost(const Spec& spec) {
  const int m = rounds_of(spec.K, spec.p);
  if (m < 0) return {0, 0, UINT32_MAX, UINT64_MAX};
  return {0, 0, static_cast<uint32_t>(m) * spec.lambda, uint64_t{spec.blocks} * (spec.K - 1) / spec.p};
}

}  // namespace collplan::gen
