#include "passes/cost.h"


#include <algorithm>

#include <fmt/format.h>

#include "matrix/repair.h"
#include "support/error.h"

namespace collplan::passes {

uint32_t postal_steps_bound(uint64_t n, uint32_t p, uint32_t lambda) {
  if (n <= 1) return 0;
  // G(j) grows at least by one per step once j >= λ, so the loop ends; values
  // are capped to avoid overflow (only the comparison with n matters).
  std::vector<uint64_t> G;
  for (uint32_t j = 0;; ++j) {
    uint64_t g = j < lambda ? 1 : std::min<uint64_t>(G[j - 1] + static_cast<uint64_t>(p) * G[j - lambda], n);
    G.push_back(g);
    if (g >= n) return j;
  }
}

uint32_t lemma1_bound(uint64_t K, uint32_t p) {
  uint32_t t = 0;
  for (uint64_t reach = 1; reach < K; reach *= (p + 1)) ++t;
  return t;
}

uint64_t lemma2_bound(uint64_t K, uint32_t p) {
  // Least integer T >= 0 with p²T² − p(p−2)T + 2(1−K) >= 0, in exact integers.
  const __int128 pp = p;
  for (uint64_t T = 0;; ++T) {
    const __int128 t = T;
    if (pp * pp * t * t - pp * (pp - 2) * t + 2 * (1 - static_cast<__int128>(K)) >= 0) return T;
  }
}

uint64_t gather_C2_bound(const Spec& spec) {
  const uint64_t p = spec.p;
  if (spec.op == OpKind::Allgatherv) {
    uint64_t total = 0, least = UINT64_MAX;
    for (uint32_t c : spec.counts) {
      total += c;
      least = std::min<uint64_t>(least, c);
    }
    if (spec.counts.empty()) return 0;
    return (total - least + p - 1) / p;
  }
  const uint64_t need = uint64_t{spec.blocks} * (spec.K - 1);
  return (need + p - 1) / p;
}

uint64_t block_broadcast_C2_bound(uint64_t K, uint32_t p, uint64_t n) {
  return (n + p - 1) / p - 1 + lemma1_bound(K, p);
}

CostReport cost(const ir::Plan& plan, const SearchBound* search) {
  CostReport c;
  c.C1 = plan.num_steps;
  c.step_sizes.assign(plan.num_steps, 0);
  for (const ir::Program& prog : plan.ranks)
    for (const ir::Step& st : prog.steps)
      for (const ir::Send& s : st.sends) {
        COLLPLAN_ASSERT(st.t >= 1 && st.t <= plan.num_steps, "cost: step out of range (verify first)");
        auto& sz = c.step_sizes[st.t - 1];
        sz = std::max<uint64_t>(sz, s.payload.size());
        ++c.messages;
        c.elements += s.payload.size();
      }
  return complete_cost(plan.spec, std::move(c), search);
}

CostReport complete_cost(const Spec& spec, CostReport c, const SearchBound* search) {
  c.C2 = 0;
  for (uint64_t s : c.step_sizes) c.C2 += s;
  c.lb_C1 = postal_steps_bound(num_ranks(spec), spec.p, spec.lambda);
  if (spec.op == OpKind::DecentralizedEncode && spec.N > spec.K && spec.matrix.cols == spec.N - spec.K) {
    // Systematic: no input has to reach every rank. x_k must reach the R
    // sinks (R+1 ranks with k), and sink j must hear from the K sources
    // (K+1 ranks with j, the same bound run backwards).
    c.lb_C1 = postal_steps_bound(uint64_t{std::max(spec.K, spec.N - spec.K)} + 1, spec.p, spec.lambda);
  }
  if (spec.op == OpKind::Repair || spec.op == OpKind::Decode) {
    // An output symbol that depends on d other ranks' symbols (non-zero F
    // entries, matrix/repair.h) must hear from d ranks: the postal bound on
    // d + 1 ranks. Its n blocks are n independent combinations, so its rank
    // receives at least n elements, at most p·(largest message) per step.
    const RepairMap m = repair_map(spec);
    uint64_t d = 0;
    for (uint32_t o = 0; o < m.out_rank.size(); ++o) {
      uint64_t deps = 0;
      for (uint32_t i = 0; i < spec.helpers.size(); ++i) deps += m.F.at(i, o) != 0 && spec.helpers[i] != m.out_rank[o];
      d = std::max(d, deps);
    }
    c.lb_C1 = d == 0 ? 0 : postal_steps_bound(d + 1, spec.p, spec.lambda);
    if (d > 0) {
      c.lb_C2 = (uint64_t{spec.blocks} + spec.p - 1) / spec.p;
      c.lb_C2_name = "one chunk to each receiver";
    }
  }
  if (spec.op == OpKind::Encode && spec.lambda == 1 && spec.blocks == 1) {
    c.lb_C2 = lemma2_bound(spec.K, spec.p);
    c.lb_C2_name = "Lemma 2";
  }
  if ((spec.op == OpKind::Broadcast || spec.op == OpKind::Reduce) && spec.lambda == 1) {
    c.lb_C2 = block_broadcast_C2_bound(spec.K, spec.p, spec.blocks);
    c.lb_C2_name = "block broadcast";
  }
  if (spec.op == OpKind::Allreduce && spec.lambda == 1) {
    // An allreduce plan is also a reduce plan into any root.
    c.lb_C2 = block_broadcast_C2_bound(spec.K, spec.p, spec.blocks);
    c.lb_C2_name = "block reduce";
  }
  if (spec.op == OpKind::Allgather || spec.op == OpKind::ReduceScatter || spec.op == OpKind::Allgatherv) {
    c.lb_C2 = gather_C2_bound(spec);
    c.lb_C2_name = "receive volume";
  }
  if (spec.op == OpKind::Prefix && spec.lambda == 1 && spec.counts.empty()) {
    // x_0 must reach every other rank (ranks 1..K−1 all need it, inclusive or
    // exclusive): at least lb_C1 steps carry a message, each of at least one
    // element.
    c.lb_C2 = c.lb_C1;
    c.lb_C2_name = "one element per step";
  }
  if (search && spec.op == OpKind::Encode && spec.lambda == 1 && spec.blocks == 1) {
    c.search_lb_C2 = search->lb_C2;
    c.search_C1 = search->C1;
  }
  // Optimality: a plan meeting both bounds is optimal among every plan the
  // bounds cover (for encode: the universal ones); the search's bound
  // covers relay-and-combine plans with C1 at its bound.
  c.meets_bounds = c.lb_C2 && c.C1 == c.lb_C1 && c.C2 == c.lb_C2;
  if (c.meets_bounds)
    c.optimality = spec.op == OpKind::Encode ? "optimal among universal plans (C1 and C2 meet their bounds)"
                                             : "optimal (C1 and C2 meet their bounds)";
  else if (c.lb_C2 && c.C2 < c.lb_C2)
    c.optimality = "below the universal bound: a plan for this matrix only";
  else if (c.search_lb_C2 && c.C1 == c.search_C1 && c.C2 == c.search_lb_C2)
    c.optimality = "optimal among relay-and-combine plans with this C1 (proven by search, docs/search.md)";
  else if (c.lb_C2 || c.search_lb_C2)
    c.optimality = "not proven optimal";
  return c;
}

CostReport bounds(const Spec& spec) { return cost(ir::make_plan(spec, 0)); }

RankCostReport rank_cost(uint32_t num_steps, const ir::Program& prog) {
  RankCostReport c;
  c.rank = prog.rank;
  c.C1 = num_steps;
  c.step_sizes.assign(num_steps, 0);
  c.active_steps = static_cast<uint32_t>(prog.steps.size());
  for (const ir::Step& st : prog.steps) {
    COLLPLAN_ASSERT(st.t >= 1 && st.t <= num_steps, "rank_cost: step out of range (verify first)");
    for (const ir::Send& s : st.sends) {
      c.step_sizes[st.t - 1] = std::max<uint64_t>(c.step_sizes[st.t - 1], s.payload.size());
      ++c.messages_sent;
      c.elements_sent += s.payload.size();
    }
    for (const ir::Recv& r : st.recvs) {
      ++c.messages_received;
      c.elements_received += r.into.size();
    }
  }
  for (uint64_t s : c.step_sizes) c.C2_part += s;
  c.terms = ir::count_terms(prog);
  return c;
}

nlohmann::json rank_cost_json(const RankCostReport& c) {
  nlohmann::json j;
  j["rank"] = c.rank;
  j["C1"] = c.C1;
  j["active_steps"] = c.active_steps;
  j["step_sizes"] = c.step_sizes;
  j["C2_part"] = c.C2_part;
  j["messages_sent"] = c.messages_sent;
  j["elements_sent"] = c.elements_sent;
  j["messages_received"] = c.messages_received;
  j["elements_received"] = c.elements_received;
  j["terms"] = c.terms;
  return j;
}

std::string rank_cost_text(const RankCostReport& c) {
  std::string s;
  s += fmt::format("C1 = {} steps (the plan's), rank {} acts in {} of them\n", c.C1, c.rank, c.active_steps);
  s += fmt::format("C2 >= {} elements: this rank's largest message per step, summed (the plan's C2 needs every rank)\n",
                   c.C2_part);
  s += "this rank's step sizes:";
  for (uint64_t x : c.step_sizes) s += fmt::format(" {}", x);
  s += fmt::format("\nsent {} messages ({} elements), received {} messages ({} elements), {} terms\n", c.messages_sent,
                   c.elements_sent, c.messages_received, c.elements_received, c.terms);
  return s;
}

nlohmann::json cost_json(const CostReport& c) {
  nlohmann::json j;
  j["C1"] = c.C1;
  j["C2"] = c.C2;
  j["step_sizes"] = c.step_sizes;
  j["lower_bound_C1"] = c.lb_C1;
  if (c.lb_C2) j["lower_bound_C2"] = c.lb_C2;
  if (c.search_lb_C2) j["search_bound_C2"] = c.search_lb_C2;
  if (!c.optimality.empty()) j["optimality"] = c.optimality;
  j["messages"] = c.messages;
  j["elements"] = c.elements;
  return j;
}

std::string cost_text(const CostReport& c, double beta, double tau, uint64_t len) {
  std::string s;
  s += fmt::format("C1 = {} steps   (lower bound {}{})\n", c.C1, c.lb_C1,
                   c.lb_C1 ? fmt::format(", ratio {:.3f}", double(c.C1) / c.lb_C1) : "");
  s += fmt::format("C2 = {} elements (", c.C2);
  if (c.lb_C2)
    s += fmt::format("{} bound {}, ratio {:.3f})\n", c.lb_C2_name, c.lb_C2, double(c.C2) / c.lb_C2);
  else
    s += "no C2 bound for this operation)\n";
  if (c.search_lb_C2)
    s += fmt::format("search: no relay-and-combine plan with C1 = {} has C2 < {} (docs/search.md)\n", c.search_C1,
                     c.search_lb_C2);
  if (!c.optimality.empty()) s += "optimality: " + c.optimality + "\n";
  s += "step sizes:";
  for (uint64_t z : c.step_sizes) s += fmt::format(" {}", z);
  s += fmt::format("\nmessages = {}, elements sent = {}\n", c.messages, c.elements);
  if (beta != 0 || tau != 0)
    s += fmt::format("modeled time C1*beta + C2*len*tau (beta={}, tau={}, len={}) = {:.6g}\n", beta, tau, len,
                     c.time(beta, tau, len));
  return s;
}

}  // namespace collplan::passes
