// Shared pieces of the circulant plan generators: the spec check and the
// `--blocks auto` choice (gen/circulant_plans.h).
#include "gen/circulant_plans.h"

#include <algorithm>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::gen {

namespace {

// `whole`: the spec also meets the dense postcondition's limit, which only a
// whole plan is checked against (one rank alone builds no map).
void check_circulant_spec(const Spec& spec, OpKind op, const char* generator, uint32_t max_ranks, bool whole) {
  if (whole) validate_spec_basics(spec, max_ranks);
  else validate_spec_ranges(spec, max_ranks);
  if (spec.op != op) user_error("the {} generator computes '{}', not '{}'", generator, op_name(op), op_name(spec.op));
  // Allgatherv stripes each step's one message over the p ports
  // (gen/circulant_allgatherv.cpp); the others are Träff's one-port plans.
  if (spec.p != 1 && op != OpKind::Allgatherv)
    user_error("{}: p = {} ports; circulant schedules use one port per processor (p = 1; postal generators cover p > 1)",
               generator, spec.p);
  if (spec.lambda != 1)
    user_error("{}: lambda = {}; circulant schedules assume synchronous rounds (lambda = 1; postal generators cover "
               "lambda > 1)",
               generator, spec.lambda);
}

}  // namespace

void validate_circulant_spec(const Spec& spec, OpKind op, const char* generator, uint32_t max_ranks) {
  check_circulant_spec(spec, op, generator, max_ranks, true);
}

std::string circulant_why_not(const Spec& spec) {
  if (spec.p != 1 && spec.op != OpKind::Allgatherv) return fmt::format("circulant schedules use one port per processor (p = 1), got p = {}", spec.p);
  if (spec.lambda != 1)
    return fmt::format("circulant schedules assume synchronous rounds (lambda = 1), got lambda = {}", spec.lambda);
  return {};
}

namespace {
uint32_t circulant_steps(const Spec& spec, const CirculantAlgorithm& alg, const Circulant& c) {
  return (alg.pipelined ? spec.blocks - 1 : 0) + c.q();
}
}  // namespace

ir::Plan circulant_whole_plan(const Spec& spec, const CirculantAlgorithm& alg) {
  validate_circulant_spec(spec, alg.op, alg.name);
  const Circulant c(spec.K);
  return whole_plan_by_rank(spec, circulant_steps(spec, alg, c),
                            [&](const ir::Plan& ctx, uint32_t r) { return alg.rank(ctx, c, r); });
}

ir::RankPlan circulant_rank_plan(const Spec& spec, const CirculantAlgorithm& alg, uint32_t rank, uint32_t max_ranks) {
  check_circulant_spec(spec, alg.op, alg.name, max_ranks, false);
  const Circulant c(spec.K);
  return one_rank_plan(spec, circulant_steps(spec, alg, c), rank,
                       [&](const ir::Plan& ctx, uint32_t r) { return alg.rank(ctx, c, r); });
}

namespace {
double bcast_time(uint32_t q, uint64_t m, double beta, double tau, uint64_t n) {
  const uint64_t len = (m + n - 1) / n;
  return static_cast<double>(n - 1 + q) * (beta + static_cast<double>(len) * tau);
}
}  // namespace

uint32_t circulant_auto_blocks(uint64_t K, uint64_t m, double beta, double tau) {
  if (m == 0) user_error("--blocks auto: the message length (--cost-len) must be >= 1 element");
  if (!(beta >= 0) || !(tau >= 0)) user_error("--blocks auto: beta = {} and tau = {} must be >= 0", beta, tau);
  const uint32_t q = Circulant(K).q();
  // Exhaustive over the (at most 4096) candidates: exact despite the
  // ceiling, which makes T non-convex near n*.
  uint64_t best = 1;
  for (uint64_t n = 2; n <= std::min<uint64_t>(m, kCirculantMaxAutoBlocks); ++n)
    if (bcast_time(q, m, beta, tau, n) < bcast_time(q, m, beta, tau, best)) best = n;
  return static_cast<uint32_t>(best);
}

std::string circulant_auto_blocks_note(uint64_t K, uint64_t m, double beta, double tau, uint32_t n) {
  const uint32_t q = Circulant(K).q();
  return fmt::format(" n={} (blocks auto: argmin (n-1+q)(beta+ceil(m/n)tau), q={}, m={}, beta={}, tau={}; "
                     "n*=sqrt((q-1)m tau/beta))",
                     n, q, m, beta, tau);
}

}  // namespace collplan::gen
