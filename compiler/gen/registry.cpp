#include "gen/registry.h"

#include <algorithm>

#include "gen/circulant_plans.h"
#include "gen/postal.h"
#include "gen/prepare_shoot.h"
#include "passes/cost.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// Estimates are of the plan the default pipeline delivers (after
// drop-zeros), so generators are compared on what the user gets.
PostalSplitCost prepare_shoot_estimate(const Spec& s, const CostModel&) {
  const PrepareShootShape sh = prepare_shoot_shape(s.K, s.p);
  return {0, 0, sh.C1() * s.lambda, sh.C2_zero_dropped()};
}

// Both send one message per port and step in steps 1..T−λ+1 (prefix: one
// element; broadcast: the n blocks), T = the postal bound.
PostalSplitCost postal_tree_estimate(const Spec& s, uint64_t nodes, uint64_t elements) {
  const uint32_t T = passes::postal_steps_bound(nodes, s.p, s.lambda);
  return {0, 0, T, elements * (T >= s.lambda ? T - s.lambda + 1 : 0)};
}

}  // namespace

const std::vector<GeneratorInfo>& generators() {
  static const std::vector<GeneratorInfo> g = {
      {"prepare-shoot",
       "universal all-to-all encode of any KxK matrix; C1 = ceil(log_{p+1} K), C2 = (m-1)/p + (n-1)/p (encode paper "
       "§IV); lambda > 1 stretches each round to lambda steps",
       {OpKind::Encode},
       [](const Spec& s, const CostModel&) { return prepare_shoot(s); },
       prepare_shoot_estimate},
      {"postal-allgather",
       "all-to-all encode under postal latency: every input spreads along the postal G-tree, then local combination; "
       "C1 = min{t : G(t) >= K} (optimal)",
       {OpKind::Encode},
       [](const Spec& s, const CostModel&) { return postal_prepare_shoot(s, s.K); },
       [](const Spec& s, const CostModel&) { return postal_split_cost(s.K, s.p, s.lambda, s.K); }},
      {"postal-prepare-shoot",
       "all-to-all encode under postal latency: spread to m ranks, then n-to-one postal reduces; m chosen by the cost "
       "model (C1 = T(m) + T(n))",
       {OpKind::Encode},
       [](const Spec& s, const CostModel& cm) {
         Spec named = s;
         const uint32_t m = choose_postal_split(s.K, s.p, s.lambda, cm);
         named.algorithm = s.algorithm + " m=" + std::to_string(m);
         return postal_prepare_shoot(named, m);
       },
       [](const Spec& s, const CostModel& cm) {
         return postal_split_cost(s.K, s.p, s.lambda, choose_postal_split(s.K, s.p, s.lambda, cm));
       }},
      {"postal-prefix",
       "prefix (scan), inclusive or exclusive, any associative operator (order kept): Algorithm A on K processors, or "
       "Algorithm B on blocks (--counts); exactly min{t : G(t) >= K} steps (postal prefix paper)",
       {OpKind::Prefix},
       [](const Spec& s, const CostModel&) { return postal_prefix(s); },
       [](const Spec& s, const CostModel&) { return postal_tree_estimate(s, s.K, 1); }},
      {"postal-broadcast",
       "broadcast of n blocks from any root on the postal G-tree; exactly min{t : G(t) >= K} steps",
       {OpKind::Broadcast},
       [](const Spec& s, const CostModel&) { return postal_broadcast(s); },
       [](const Spec& s, const CostModel&) { return postal_tree_estimate(s, s.K, s.blocks); }},
      {"circulant-broadcast",
       "broadcast of n blocks from any root on Träff's circulant graph (p = 1, lambda = 1); exactly n-1+ceil(log2 K) "
       "steps, one block per message (optimal); --blocks auto picks n by the cost model",
       {OpKind::Broadcast},
       [](const Spec& s, const CostModel&) { return circulant_broadcast(s); },
       [](const Spec& s, const CostModel&) { return circulant_broadcast_cost(s); }},
      {"circulant-allgather",
       "allgather of n blocks per rank on Träff's circulant graph (p = 1, lambda = 1); C1 = ceil(log2 K), "
       "C2 = n(K-1), both optimal",
       {OpKind::Allgather},
       [](const Spec& s, const CostModel&) { return circulant_allgather(s); },
       [](const Spec& s, const CostModel&) { return circulant_allgather_cost(s); }},
      {"circulant-allreduce",
       "allreduce of n blocks on Träff's circulant graph (p = 1, lambda = 1); C1 = ceil(log2 K), C2 = n ceil(log2 K)",
       {OpKind::Allreduce},
       [](const Spec& s, const CostModel&) { return circulant_allreduce(s); },
       [](const Spec& s, const CostModel&) { return circulant_allreduce_cost(s); }},
      {"circulant-allgatherv",
       "allgatherv (per-rank counts) as K simultaneous circulant broadcasts of n = --blocks pieces each, packed per "
       "step (p = 1, lambda = 1); C1 = n-1+ceil(log2 K)",
       {OpKind::Allgatherv},
       [](const Spec& s, const CostModel&) { return circulant_allgatherv(s); },
       [](const Spec& s, const CostModel&) { return circulant_allgatherv_cost(s); }},
      {"circulant-reduce",
       "reduce of n blocks to any root: the circulant broadcast run backwards (p = 1, lambda = 1); exactly "
       "n-1+ceil(log2 K) steps, one block per message",
       {OpKind::Reduce},
       [](const Spec& s, const CostModel&) { return circulant_reduce(s); },
       [](const Spec& s, const CostModel&) { return circulant_reduce_cost(s); }},
  };
  return g;
}

const GeneratorInfo& find_generator(const std::string& name) {
  std::string names;
  for (const auto& g : generators()) {
    if (g.name == name) return g;
    names += names.empty() ? "" : ", ";
    names += g.name;
  }
  user_error("unknown algorithm '{}' (valid: auto, {})", name, names);
}

const GeneratorInfo& choose_generator(const Spec& spec, const CostModel& cm) {
  const GeneratorInfo* best = nullptr;
  double best_time = 0;
  std::string ops;
  for (const auto& g : generators()) {
    bool computes = false;
    for (OpKind op : g.ops) computes |= op == spec.op;
    if (!computes) continue;
    const PostalSplitCost c = g.estimate(spec, cm);
    const double t = cm.time(c.C1, c.C2);
    if (!best || t < best_time) {
      best = &g;
      best_time = t;
    }
  }
  if (!best) {
    std::string have;
    for (OpKind op : all_ops())
      for (const auto& g : generators())
        if (std::find(g.ops.begin(), g.ops.end(), op) != g.ops.end()) {
          have += std::string(have.empty() ? "" : ", ") + op_name(op);
          break;
        }
    user_error("no generator computes '{}' yet (available operations: {})", op_name(spec.op), have);
  }
  return *best;
}

}  // namespace collplan::gen
