// Cost of a plan in the p-port postal model of compiler/ir/plan.h (per rank
// and step at most one message sent and one received per port; a message
// sent in step t is usable from step t+λ), and the lower bounds it is judged
// against.
//
//   C1 = number of steps; C2 = Σ_t (largest message, in elements, sent in
//   step t by any port of any rank). Time for vectors of ℓ elements:
//   C1·β + C2·ℓ·τ.
//
// Lower bounds reported:
//   postal   min{t : G(t) >= R}, G(j) = 1 for j < λ, G(j) = G(j−1) + p·G(j−λ)
//            (postal prefix paper, Thm 1): any operation in which some input
//            must reach every rank, or (reduce-scatter) every rank must hear
//            from every rank — the same bound run backwards. For λ = 1 it is
//            ⌈log_{p+1} R⌉, the encode paper's Lemma 1.
//            A systematic decentralized encode (sinks only) uses
//            min{t : G(t) >= max(K, N−K) + 1} instead: x_k must reach the
//            N−K sinks, and a sink must hear from the K sources.
//   lemma2   the least T with p²T² − p(p−2)T + 2(1−K) >= 0 (encode paper,
//            Lemma 2): C2 of any universal encode algorithm (λ = 1).
//   block broadcast / block reduce   ⌈n/p⌉ − 1 + ⌈log_{p+1} K⌉ for
//            broadcast, reduce and allreduce (λ = 1), below.
//   one element per step   lb_C1 for prefix (λ = 1, one item per rank):
//            x_0 must reach every rank, so that many steps carry a message.
//   receive volume   ⌈n(K−1)/p⌉ for allgather and reduce-scatter,
//            ⌈(Σcounts − min counts)/p⌉ for allgatherv (any λ), below.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/plan.h"

namespace collplan::passes {

uint32_t postal_steps_bound(uint64_t n, uint32_t p, uint32_t lambda);
uint32_t lemma1_bound(uint64_t K, uint32_t p);  // ⌈log_{p+1} K⌉
uint64_t lemma2_bound(uint64_t K, uint32_t p);
// C2 of any broadcast (or reduce) of n blocks among K ranks with p ports,
// λ = 1, is at least ⌈n/p⌉ − 1 + ⌈log_{p+1} K⌉ (in elements = blocks).
// Proof: split every step whose largest message has s elements into s
// sub-steps of one element per message; ports are respected and the
// schedule takes C2 sub-steps. The root emits at most p elements per
// sub-step, so after ⌈n/p⌉ − 1 of them all that left it spans a space W of
// dimension < n. Only a rank whose knowledge leaves W can end up holding
// all n blocks; at that point only the root does, and a rank leaves W only
// by hearing from one that has, so their number grows at most (p+1)-fold
// per sub-step: ⌈log_{p+1} K⌉ more. A reduce is, for linear plans, the
// transpose of a broadcast with the same message sizes, so the bound holds
// for it too. (With one element per message this is the n − 1 + q bound
// of the circulant broadcast, which it meets for p = 1.)
uint64_t block_broadcast_C2_bound(uint64_t K, uint32_t p, uint64_t n);
// C2 of any allgather of n blocks per rank with p ports is at least
// ⌈n(K−1)/p⌉: a rank's outputs hold n(K−1) elements that are linearly
// independent of its own inputs, and in a step whose largest message has s
// elements it receives at most p·s. Allgatherv: ⌈(Σcounts − min counts)/p⌉
// (the rank with the fewest blocks must receive the most). Reduce-scatter:
// the same as allgather, since the transpose of a linear reduce-scatter plan
// (messages reversed, steps in reverse order) is an allgather plan with the
// same message sizes.
uint64_t gather_C2_bound(const Spec& spec);

struct CostReport {
  uint32_t C1 = 0;
  uint64_t C2 = 0;
  std::vector<uint64_t> step_sizes;  // per step 1..C1 (0 = nothing sent)
  uint64_t messages = 0;             // total messages
  uint64_t elements = 0;             // total elements sent
  uint32_t lb_C1 = 0;                // postal bound
  uint64_t lb_C2 = 0;                // 0 = none; see lb_C2_name
  // Which C2 bound: "Lemma 2" (encode, one block, λ = 1), "block
  // broadcast" (broadcast and reduce of n blocks, λ = 1:
  // ⌈n/p⌉ − 1 + ⌈log_{p+1} K⌉, block_broadcast_C2_bound), "block reduce"
  // (allreduce, λ = 1: an allreduce plan is a reduce plan, same bound) or
  // "receive volume" (allgather, allgatherv, reduce-scatter:
  // gather_C2_bound).
  const char* lb_C2_name = "";
  // Encode, λ = 1, when the caller handed a SearchBound (the pipeline does,
  // from the shipped search table): no relay-and-combine plan with
  // C1 = search_C1 has C2 < search_lb_C2 (0 = none given).
  uint64_t search_lb_C2 = 0;
  uint32_t search_C1 = 0;
  // C1 and C2 equal lb_C1 and a non-zero lb_C2: optimal among every plan the
  // bounds cover (for encode, the universal ones).
  bool meets_bounds = false;
  // "" (no C2 bound) or whether the plan is proven optimal and among which
  // plans; printed by cost_text, "optimality" in cost_json.
  std::string optimality;
  double time(double beta, double tau, uint64_t len) const { return C1 * beta + static_cast<double>(C2) * len * tau; }
};

// A bound proven by the plan search (docs/search.md) for an encode of one
// block with λ = 1: no relay-and-combine plan with C1 steps has C2 < lb_C2.
// Data handed in by the caller (pipeline::plan_cost looks it up in the
// shipped table), so that cost needs nothing from the generators.
struct SearchBound {
  uint32_t C1 = 0;
  uint64_t lb_C2 = 0;
};

// `search`: taken only for an encode of one block with λ = 1.
CostReport cost(const ir::Plan& plan, const SearchBound* search = nullptr);
// The same from a plan's figures gathered elsewhere (C1, step_sizes,
// messages, elements; `collplan check --streaming` gathers them rank by
// rank): C2, the bounds and the optimality verdict.
CostReport complete_cost(const Spec& spec, CostReport figures, const SearchBound* search = nullptr);
// The lower bounds of a spec alone (lb_C1, lb_C2 and its name; the plan's
// own figures are zero): what `compile --explain` prints before any plan.
CostReport bounds(const Spec& spec);

// The linear time model C1·β + C2·ℓ·τ, with which `--algorithm auto` and
// cost-driven generator parameters (splits, block counts) choose.
struct CostModel {
  double beta = 1.0;
  double tau = 1.0;
  uint64_t len = 1;
  double time(uint32_t C1, uint64_t C2) const { return C1 * beta + static_cast<double>(C2) * len * tau; }
};

// One rank's part of the cost, all that a single-rank file (`collplan
// extract`) can tell: the plan's C1 (from the header), the steps this rank
// acts in, its own largest message per step and their sum C2_part — a lower
// bound of the plan's C2, since every step's maximum is at least this
// rank's — its messages and elements sent and received, and its terms.
struct RankCostReport {
  uint32_t rank = 0;
  uint32_t C1 = 0;
  uint32_t active_steps = 0;
  std::vector<uint64_t> step_sizes;  // per step 1..C1: this rank's largest message
  uint64_t C2_part = 0;
  uint64_t messages_sent = 0, elements_sent = 0;
  uint64_t messages_received = 0, elements_received = 0;
  uint64_t terms = 0;
};
RankCostReport rank_cost(uint32_t num_steps, const ir::Program& prog);
nlohmann::json rank_cost_json(const RankCostReport& c);
std::string rank_cost_text(const RankCostReport& c);
nlohmann::json cost_json(const CostReport& c);
// Multi-line human summary, with ratios to the bounds and the modeled time.
std::string cost_text(const CostReport& c, double beta, double tau, uint64_t len);

}  // namespace collplan::passes
