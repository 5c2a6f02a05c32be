#include "gen/registry.h"

#include <algorithm>

#include <fmt/format.h>

#include "gen/decentralized.h"
#include "gen/direct.h"
#include "gen/dissemination_build.h"
#include "gen/circulant_plans.h"
#include "gen/postal.h"
#include "gen/prepare_shoot.h"
#include "gen/recursive_doubling.h"
#include "gen/repair.h"
#include "gen/searched.h"
#include "gen/trees.h"
#include "gen/vandermonde_plans.h"
#include "passes/cost.h"
#include "passes/widen.h"
#include "support/error.h"

namespace collplan::gen {

namespace {

// Estimates are of the plan the default pipeline delivers (after
// drop-zeros), so generators are compared on what the user gets.
PostalSplitCost prepare_shoot_estimate(const Spec& s, const passes::CostModel&) {
  const PrepareShootShape sh = prepare_shoot_shape(s.K, s.p);
  return {0, 0, sh.C1() * s.lambda, sh.C2_zero_dropped()};
}

// Both send one message per port and step in steps 1..T−λ+1 (prefix: one
// element; broadcast: the n blocks), T = the postal bound.
PostalSplitCost postal_tree_estimate(const Spec& s, uint64_t nodes, uint64_t elements) {
  const uint32_t T = passes::postal_steps_bound(nodes, s.p, s.lambda);
  return {0, 0, T, elements * (T >= s.lambda ? T - s.lambda + 1 : 0)};
}

// The (p+1)-nomial tree: T rounds of λ steps, each sending the n blocks.
PostalSplitCost nomial_tree_estimate(const Spec& s) {
  const uint32_t T = nomial_rounds(s.K, s.p);
  return {0, 0, T * s.lambda, uint64_t{s.blocks} * T};
}

// The pipelined p-ary tree: n − 1 + Dλ steps, one element in each sending step.
PostalSplitCost pipelined_tree_estimate(const Spec& s) {
  const uint32_t D = pary_depth(s.K, s.p);
  const uint64_t n = s.blocks;
  // Saturated: a chain of 2^31 ranks with λ > 1 has more steps than a step
  // number counts (the generator refuses it), so auto must not pick it.
  const uint64_t C1 = std::min<uint64_t>(n - 1 + uint64_t{D} * s.lambda, UINT32_MAX);
  return {0, 0, static_cast<uint32_t>(C1), D == 0 ? 0 : n + uint64_t{D - 1} * std::min<uint64_t>(n, s.lambda)};
}

// A structured-matrix generator as a registry entry; its estimate is the
// C2 after drop-zeros, like prepare-shoot's.
GeneratorInfo structured_entry(std::string name, std::string description, const StructuredGenerator& g) {
  return {std::move(name),
          std::move(description),
          {OpKind::Encode},
          g.build,
          [&g](const Spec& s, const passes::CostModel& cm) {
            const StructuredCost c = g.cost(s, cm);
            return PostalSplitCost{0, 0, c.C1, c.C2_dropped};
          },
          g.why_not};
}

// An encode of n-block vectors is n independent encodes of the same
// matrix: the encode generators build the one-block plan and widen it
// (passes/widen.h; C1 unchanged, C2 n-fold). Blocks gain nothing for an
// encode alone, whose messages already carry whole vectors; they exist so
// that encodes compose with block-pipelined broadcasts and reduces in the
// decentralized plans.
std::vector<GeneratorInfo> with_encode_blocks(std::vector<GeneratorInfo> gens) {
  for (GeneratorInfo& g : gens) {
    if (g.ops != std::vector<OpKind>{OpKind::Encode}) continue;
    g.build = [inner = std::move(g.build)](const Spec& s, const passes::CostModel& cm) {
      if (s.blocks == 1) return inner(s, cm);
      Spec one = s;
      one.blocks = 1;
      return passes::widen(inner(one, cm), s.blocks);
    };
    g.estimate = [inner = std::move(g.estimate)](const Spec& s, const passes::CostModel& cm) {
      if (s.blocks == 1) return inner(s, cm);
      Spec one = s;
      one.blocks = 1;
      PostalSplitCost c = inner(one, cm);
      c.C2 *= s.blocks;
      return c;
    };
    if (g.why_not)
      g.why_not = [inner = std::move(g.why_not)](const Spec& s, const passes::CostModel& cm) {
        Spec one = s;
        one.blocks = 1;
        return inner(one, cm);
      };
  }
  return gens;
}

}  // namespace

const std::vector<GeneratorInfo>& generators() {
  static const std::vector<GeneratorInfo> g = with_encode_blocks({
      {"prepare-shoot",
       "universal all-to-all encode of any KxK matrix; C1 = ceil(log_{p+1} K), C2 = (m-1)/p + (n-1)/p (encode paper "
       "§IV); lambda > 1 stretches each round to lambda steps",
       {OpKind::Encode},
       [](const Spec& s, const passes::CostModel&) { return prepare_shoot(s); },
       prepare_shoot_estimate},
      {"searched",
       "universal all-to-all encode from a schedule found by `collplan search` and shipped with collplan "
       "(relay-and-combine plans, lambda = 1, the (K, p) of the table in docs/search.md); C1 = ceil(log_{p+1} K), "
       "C2 below prepare-and-shoot's",
       {OpKind::Encode},
       [](const Spec& s, const passes::CostModel&) { return searched_plan(s); },
       [](const Spec& s, const passes::CostModel&) {
         const SearchedEntry* e = find_searched(s.K, s.p);
         return PostalSplitCost{0, 0, e ? e->C1 : 0, e ? e->searched : 0};
       },
       [](const Spec& s, const passes::CostModel&) { return searched_why_not(s); }},
      {"postal-allgather",
       "all-to-all encode under postal latency: every input spreads along the postal G-tree, then local combination; "
       "C1 = min{t : G(t) >= K} (optimal)",
       {OpKind::Encode},
       [](const Spec& s, const passes::CostModel&) { return postal_prepare_shoot(s, s.K); },
       [](const Spec& s, const passes::CostModel&) { return postal_split_cost(s.K, s.p, s.lambda, s.K); }},
      {"postal-prepare-shoot",
       "all-to-all encode under postal latency: spread to m ranks, then n-to-one postal reduces; m chosen by the cost "
       "model (C1 = T(m) + T(n))",
       {OpKind::Encode},
       [](const Spec& s, const passes::CostModel& cm) {
         Spec named = s;
         const uint32_t m = choose_postal_split(s.K, s.p, s.lambda, cm);
         named.algorithm = s.algorithm + " m=" + std::to_string(m);
         return postal_prepare_shoot(named, m);
       },
       [](const Spec& s, const passes::CostModel& cm) {
         return postal_split_cost(s.K, s.p, s.lambda, choose_postal_split(s.K, s.p, s.lambda, cm));
       }},
      {"postal-prefix",
       "prefix (scan), inclusive or exclusive, any associative operator (order kept): Algorithm A on K processors, or "
       "Algorithm B on blocks (--counts); exactly min{t : G(t) >= K} steps (postal prefix paper)",
       {OpKind::Prefix},
       [](const Spec& s, const passes::CostModel&) { return postal_prefix(s); },
       [](const Spec& s, const passes::CostModel&) { return postal_tree_estimate(s, s.K, 1); },
       {},
       postal_prefix_local},
      {"postal-broadcast",
       "broadcast of n blocks from any root on the postal G-tree; exactly min{t : G(t) >= K} steps",
       {OpKind::Broadcast},
       [](const Spec& s, const passes::CostModel&) { return postal_broadcast(s); },
       [](const Spec& s, const passes::CostModel&) { return postal_tree_estimate(s, s.K, s.blocks); },
       {},
       postal_broadcast_local},
      {"tree-broadcast",
       "broadcast of n blocks from any root on the (p+1)-nomial tree, whole buffer per message; C1 = "
       "lambda*ceil(log_{p+1} K), C2 = n*ceil(log_{p+1} K)",
       {OpKind::Broadcast},
       [](const Spec& s, const passes::CostModel&) { return tree_broadcast(s); },
       [](const Spec& s, const passes::CostModel&) { return nomial_tree_estimate(s); },
       {},
       tree_broadcast_local},
      {"tree-reduce",
       "reduce (block-wise sum) of n blocks into any root: the (p+1)-nomial broadcast reversed; C1 = "
       "lambda*ceil(log_{p+1} K), C2 = n*ceil(log_{p+1} K)",
       {OpKind::Reduce},
       [](const Spec& s, const passes::CostModel&) { return tree_reduce(s); },
       [](const Spec& s, const passes::CostModel&) { return nomial_tree_estimate(s); },
       {},
       tree_reduce_local},
      // After tree-reduce: for λ = 1 the same tree and cost (auto keeps
      // tree-reduce on the tie); for λ > 1 fewer steps.
      {"postal-reduce",
       "reduce (block-wise sum) of n blocks into any root on the postal G-tree, the postal broadcast reversed; exactly "
       "min{t : G(t) >= K} steps (a star for p = 1, lambda >= K-1)",
       {OpKind::Reduce},
       [](const Spec& s, const passes::CostModel&) { return postal_reduce(s); },
       [](const Spec& s, const passes::CostModel&) { return postal_tree_estimate(s, s.K, s.blocks); },
       {},
       postal_reduce_local},
      {"pipelined-broadcast",
       "broadcast of n blocks streamed one block per message down the p-ary tree (a chain for p = 1); C1 = n-1+D*lambda "
       "for tree depth D: for long buffers",
       {OpKind::Broadcast},
       [](const Spec& s, const passes::CostModel&) { return pipelined_broadcast(s); },
       [](const Spec& s, const passes::CostModel&) { return pipelined_tree_estimate(s); },
       {},
       pipelined_broadcast_local},
      {"pipelined-reduce",
       "reduce of n blocks streamed one block per message up the p-ary tree (a chain for p = 1); C1 = n-1+D*lambda: "
       "for long buffers",
       {OpKind::Reduce},
       [](const Spec& s, const passes::CostModel&) { return pipelined_reduce(s); },
       [](const Spec& s, const passes::CostModel&) { return pipelined_tree_estimate(s); },
       {},
       pipelined_reduce_local},
      {"decentralized-grid",
       "systematic [N, K] code: K >= R column encodes of RxR blocks + row reduces, K < R row broadcasts + column "
       "encodes of KxK blocks (journal framework); C1 = ceil(log_b R) + ceil(log_b(ceil(K/R)+1)) or "
       "ceil(log_b(ceil(R/K)+1)) + ceil(log_b K)",
       {OpKind::DecentralizedEncode},
       decentralized_grid,
       decentralized_grid_estimate},
      {"decentralized-grouped",
       "non-systematic [N, K] code: broadcast x_i to the g = floor(N/K) groups, each group encodes its block of G; C1 "
       "= ceil(log_b g) + ceil(log_b(K + ceil((N mod K)/g)))",
       {OpKind::DecentralizedEncode},
       decentralized_grouped,
       decentralized_grouped_estimate},
      {"decentralized-padded",
       "[N, K] code, either form: the matrix padded to NxN (sinks hold 0) and one all-to-all encode among all N; C1 = "
       "ceil(log_b N)",
       {OpKind::DecentralizedEncode},
       decentralized_padded,
       decentralized_padded_estimate},
      {"decentralized-naive",
       "systematic [N, K] code: every source sends its data to every sink, p at a time (baseline); C1 = "
       "ceil(max(K, R)/p)",
       {OpKind::DecentralizedEncode},
       [](const Spec& s, const passes::CostModel&) { return decentralized_naive(s); },
       [](const Spec& s, const passes::CostModel&) { return decentralized_naive_estimate(s); }},
      {"repair-decentralized",
       "repair / decode: the decentralized encode of the repair matrix F, helpers as sources and receivers as sinks, "
       "by the best decentralized-encode generator; one symbol per receiver, receivers not helpers",
       {OpKind::Repair, OpKind::Decode},
       repair_decentralized,
       repair_decentralized_estimate,
       [](const Spec& s, const passes::CostModel&) { return repair_decentralized_why_not(s); }},
      {"repair-lagrange",
       "repair / decode of a Reed-Solomon code (--code rs): one KxK encode among the K helpers of the Lagrange matrix "
       "V(alpha_H)^-1 V(alpha_T) (or V(alpha_H)^-1), by the structured generators where the points allow it, then "
       "each symbol sent to its receiver",
       {OpKind::Repair, OpKind::Decode},
       repair_lagrange,
       repair_lagrange_estimate,
       [](const Spec& s, const passes::CostModel&) { return repair_lagrange_why_not(s); }},
      {"repair-tree",
       "repair / decode, partial-parallel: per output symbol the helpers' scaled chunks summed up the (p+1)-nomial "
       "tree into the receiver, symbols one after another; C1 = m*lambda*ceil(log_{p+1}(h+1))",
       {OpKind::Repair, OpKind::Decode},
       [](const Spec& s, const passes::CostModel& cm) { return repair_reduce(s, false, cm); },
       [](const Spec& s, const passes::CostModel&) { return repair_reduce_estimate(s, false); }},
      {"repair-pipelined",
       "repair / decode, pipelined: per output symbol the n blocks streamed along the helpers' p-ary chain into the "
       "receiver, each helper adding its scaled block; C1 = m*(n-1+D*lambda): one chunk's time for long chunks",
       {OpKind::Repair, OpKind::Decode},
       [](const Spec& s, const passes::CostModel& cm) { return repair_reduce(s, true, cm); },
       [](const Spec& s, const passes::CostModel&) { return repair_reduce_estimate(s, true); }},
      {"repair-central",
       "repair / decode as storage systems do it: each receiver reads the whole chunks of its helpers and decodes "
       "locally (the baseline); C1 = ceil(max(h, m)/p) + lambda - 1, C2 = n*ceil(max(h, m)/p)",
       {OpKind::Repair, OpKind::Decode},
       [](const Spec& s, const passes::CostModel&) { return repair_central(s); },
       [](const Spec& s, const passes::CostModel&) { return repair_central_estimate(s); }},
      structured_entry("dft",
                       "column-permuted DFT (K = P^H | q-1; rank k gets f(beta^rev(k))): C1 = H*ceil(log_{p+1} P), "
                       "C2 = H*Psi(P); P = p+1: C1 = C2 = H",
                       dft_generator()),
      structured_entry("draw-loose",
                       "Vandermonde on draw-and-loose points alpha_i*beta^rev(j) (or a column permutation of them, "
                       "+1 step): C1 = ceil(log_{p+1} M) + H*ceil(log_{p+1} P), C2 = Psi(M) + H*Psi(P)",
                       draw_loose_generator()),
      structured_entry("inverse-dft", "inverse of the column-permuted DFT: the DFT's stages backwards, same C1, C2",
                       inverse_dft_generator()),
      structured_entry("inverse-draw-loose",
                       "inverse Vandermonde on draw-and-loose points: loose backwards, unscale, inverse draw; same "
                       "C1, C2",
                       inverse_draw_loose_generator()),
      structured_entry("lagrange",
                       "Lagrange matrix V(omega)^-1 V(alpha): inverse draw-and-loose then draw-and-loose; "
                       "C = C(omega) + C(alpha)",
                       lagrange_generator()),
      structured_entry("cauchy",
                       "Cauchy-like matrix or systematic GRS part: scale, inverse draw-and-loose, draw-and-loose, "
                       "scale; C = C(x) + C(y)",
                       cauchy_generator()),
      {"circulant-broadcast",
       "broadcast of n blocks from any root on Träff's circulant graph (p = 1, lambda = 1); exactly n-1+ceil(log2 K) "
       "steps, one block per message (optimal); --blocks auto picks n by the cost model",
       {OpKind::Broadcast},
       [](const Spec& s, const passes::CostModel&) { return circulant_broadcast(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_broadcast_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_why_not(s); },
       circulant_broadcast_local},
      // Before the circulant and dissemination allgathers: where it applies
      // its C1, C2 tie theirs, and auto takes the first of equal costs; its
      // messages are single runs of the caller's buffers (no wrapped pieces).
      {"recursive-doubling-allgather",
       "allgather / allgatherv by recursive doubling (recursive multiplying with p ports), K a power of p+1, any "
       "lambda; every message consecutive ranks' blocks (one piece in rank-ordered buffers); C1 = lambda*log_{p+1} K, "
       "C2 = n*(K-1)/p (allgather), both optimal",
       {OpKind::Allgather, OpKind::Allgatherv},
       [](const Spec& s, const passes::CostModel&) { return recursive_doubling_allgather(s); },
       [](const Spec& s, const passes::CostModel&) { return recursive_doubling_allgather_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return recursive_doubling_why_not(s); },
       recursive_doubling_allgather_local},
      {"circulant-allgather",
       "allgather of n blocks per rank on Träff's circulant graph (p = 1, lambda = 1); C1 = ceil(log2 K), "
       "C2 = n(K-1), both optimal",
       {OpKind::Allgather},
       [](const Spec& s, const passes::CostModel&) { return circulant_allgather(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_allgather_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_why_not(s); },
       circulant_allgather_local},
      {"circulant-allreduce",
       "allreduce of n blocks on Träff's circulant graph (p = 1, lambda = 1); C1 = ceil(log2 K), C2 = n ceil(log2 K)",
       {OpKind::Allreduce},
       [](const Spec& s, const passes::CostModel&) { return circulant_allreduce(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_allreduce_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_why_not(s); },
       circulant_allreduce_local},
      {"circulant-allgatherv",
       "allgatherv (per-rank counts) as K simultaneous circulant broadcasts of n = --blocks pieces each, packed per "
       "step (p = 1, lambda = 1); C1 = n-1+ceil(log2 K)",
       {OpKind::Allgatherv},
       [](const Spec& s, const passes::CostModel&) { return circulant_allgatherv(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_allgatherv_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_why_not(s); },
       circulant_allgatherv_local},
      {"circulant-reduce",
       "reduce of n blocks to any root: the circulant broadcast run backwards (p = 1, lambda = 1); exactly "
       "n-1+ceil(log2 K) steps, one block per message",
       {OpKind::Reduce},
       [](const Spec& s, const passes::CostModel&) { return circulant_reduce(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_reduce_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_why_not(s); },
       circulant_reduce_local},
      {"dissemination-allgather",
       "allgather / allgatherv with p ports: the (p+1)-ary dissemination (Bruck's k-port allgather, no final "
       "rotation), any K, p, lambda; C1 = lambda*ceil(log_{p+1} K), C2 = n*ceil((K-1)/p)",
       {OpKind::Allgather, OpKind::Allgatherv},
       [](const Spec& s, const passes::CostModel&) { return dissemination_allgather(s); },
       [](const Spec& s, const passes::CostModel&) { return dissemination_allgather_cost(s); },
       {},
       dissemination_allgather_local},
      // After the dissemination allgather: for small lambda more steps, the
      // same C2; auto takes it where a large lambda makes it the fewer.
      {"direct-allgather",
       "allgather / allgatherv by direct exchange: in step t every rank sends its own blocks to the p ranks "
       "(t-1)p+1.. (t-1)p+p ahead; C1 = ceil((K-1)/p)+lambda-1, C2 = n*ceil((K-1)/p): for large lambda",
       {OpKind::Allgather, OpKind::Allgatherv},
       [](const Spec& s, const passes::CostModel&) { return direct_allgather(s); },
       [](const Spec& s, const passes::CostModel&) { return direct_allgather_cost(s); },
       {},
       direct_allgather_local},
      // Before the circulant and dissemination reduce-scatters: where it
      // applies, the same C1 and C2 (or less), and every message one run of
      // the caller's buffer, so auto takes it on the tie.
      {"recursive-halving",
       "reduce-scatter by recursive halving (recursive multiplying with p ports), K a power of p+1, any lambda; "
       "every message consecutive ranks' blocks; C1 = lambda*log_{p+1} K, C2 = n(K-1)/p, both optimal",
       {OpKind::ReduceScatter},
       [](const Spec& s, const passes::CostModel&) { return recursive_halving(s); },
       [](const Spec& s, const passes::CostModel&) { return recursive_halving_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return recursive_doubling_why_not(s); },
       recursive_halving_local},
      {"circulant-reduce-scatter",
       "reduce-scatter (rank k gets block k of the sum): Träff's circulant allgather run backwards (p = 1, lambda = "
       "1); C1 = ceil(log2 K), C2 = n(K-1), both optimal",
       {OpKind::ReduceScatter},
       [](const Spec& s, const passes::CostModel&) { return circulant_reduce_scatter(s); },
       [](const Spec& s, const passes::CostModel&) { return circulant_reduce_scatter_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return dissemination_why_not(s, true); },
       circulant_reduce_scatter_local},
      {"dissemination-reduce-scatter",
       "reduce-scatter with p ports: the dissemination allgather run backwards, any K, p, lambda; C1 = "
       "lambda*ceil(log_{p+1} K), C2 = n*ceil((K-1)/p)",
       {OpKind::ReduceScatter},
       [](const Spec& s, const passes::CostModel&) { return dissemination_reduce_scatter(s); },
       [](const Spec& s, const passes::CostModel&) { return dissemination_reduce_scatter_cost(s); },
       {},
       dissemination_reduce_scatter_local},
      {"direct-reduce-scatter",
       "reduce-scatter by direct exchange: in step t every rank sends its blocks for the p ranks (t-1)p+1.. "
       "(t-1)p+p ahead straight to them; C1 = ceil((K-1)/p)+lambda-1, C2 = n*ceil((K-1)/p): for large lambda",
       {OpKind::ReduceScatter},
       [](const Spec& s, const passes::CostModel&) { return direct_reduce_scatter(s); },
       [](const Spec& s, const passes::CostModel&) { return direct_reduce_scatter_cost(s); },
       {},
       direct_reduce_scatter_local},
      {"dissemination-allreduce",
       "latency-optimal allreduce with p ports (Träff's circulant allreduce generalised), any K, p, lambda; C1 = "
       "lambda*ceil(log_{p+1} K), C2 = n*ceil(log_{p+1} K)",
       {OpKind::Allreduce},
       [](const Spec& s, const passes::CostModel&) { return dissemination_allreduce(s); },
       [](const Spec& s, const passes::CostModel&) { return dissemination_allreduce_cost(s); },
       {},
       dissemination_allreduce_local},
      // Before reduce-scatter-allgather: where it applies, the same or a
      // smaller C2 in as many steps, and every message one run of the
      // caller's buffer.
      {"recursive-halving-doubling",
       "bandwidth-optimal allreduce by recursive halving then doubling (Rabenseifner; recursive multiplying with p "
       "ports), K a power of p+1, any lambda; every message consecutive chunks; C1 = 2*lambda*log_{p+1} K, "
       "C2 = 2(K-1)/p*n/K when K | n; use n >= K (--blocks auto)",
       {OpKind::Allreduce},
       [](const Spec& s, const passes::CostModel&) { return recursive_halving_doubling(s); },
       [](const Spec& s, const passes::CostModel&) { return recursive_halving_doubling_cost(s); },
       [](const Spec& s, const passes::CostModel&) { return recursive_doubling_why_not(s); },
       recursive_halving_doubling_local},
      {"reduce-scatter-allgather",
       "bandwidth-optimal allreduce: the n blocks in K chunks, dissemination reduce-scatter then allgather, any K, p, "
       "lambda; C1 = 2*lambda*ceil(log_{p+1} K), C2 = 2*ceil(n/K)*ceil((K-1)/p) (2(K-1)/K*n for p = 1, K | n); "
       "use n >= K (--blocks auto)",
       {OpKind::Allreduce},
       [](const Spec& s, const passes::CostModel&) { return reduce_scatter_allgather(s); },
       [](const Spec& s, const passes::CostModel&) { return reduce_scatter_allgather_cost(s); },
       {},
       reduce_scatter_allgather_local},
      {"postal-allreduce",
       "allreduce as a postal reduce into rank 0 then a postal broadcast from it; C1 = 2*min{t : G(t) >= K}, "
       "C2 = 2n*(C1/2-lambda+1): for large lambda, where both trees are stars",
       {OpKind::Allreduce},
       [](const Spec& s, const passes::CostModel&) { return postal_allreduce(s); },
       [](const Spec& s, const passes::CostModel&) {
         const PostalSplitCost one = postal_tree_estimate(s, s.K, s.blocks);
         return PostalSplitCost{0, 0, static_cast<uint32_t>(std::min<uint64_t>(2 * uint64_t{one.C1}, UINT32_MAX)),
                                2 * one.C2};
       },
       {},
       postal_allreduce_local},
  });
  return g;
}

std::string rank_local_generator_names() {
  std::string names;
  for (const auto& g : generators())
    if (g.build_rank) names += (names.empty() ? "" : ", ") + g.name;
  return names;
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

std::vector<Candidate> candidates(const Spec& spec, const passes::CostModel& cm,
                                  const std::function<bool(const GeneratorInfo&)>& admit) {
  std::vector<Candidate> out;
  for (const auto& g : generators()) {
    if (!g.computes(spec.op)) continue;
    if (admit && !admit(g)) continue;
    Candidate c;
    c.generator = &g;
    if (g.why_not) c.why_not = g.why_not(spec, cm);
    if (c.why_not.empty()) {
      const PostalSplitCost e = g.estimate(spec, cm);
      c.C1 = e.C1;
      c.C2 = e.C2;
      c.time = cm.time(e.C1, e.C2);
    }
    out.push_back(std::move(c));
  }
  return out;
}

void require_applicable(const GeneratorInfo& g, const Spec& spec, const passes::CostModel& cm) {
  if (!g.why_not) return;
  if (std::string why = g.why_not(spec, cm); !why.empty())
    user_error("algorithm '{}' cannot compute this spec: {}", g.name, why);
}

const GeneratorInfo& choose_generator(const Spec& spec, const passes::CostModel& cm,
                                      const std::function<bool(const GeneratorInfo&)>& admit) {
  const GeneratorInfo* best = nullptr;
  double best_time = 0;
  for (const Candidate& c : candidates(spec, cm, admit)) {
    if (!c.why_not.empty()) continue;
    if (!best || c.time < best_time) {
      best = c.generator;
      best_time = c.time;
    }
  }
  if (!best) {
    std::string why;
    for (const Candidate& c : candidates(spec, cm, admit))
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", c.generator->name, c.why_not);
    if (!why.empty()) user_error("no generator applies to this '{}' spec ({})", op_name(spec.op), why);
    std::string have;
    for (OpKind op : all_ops())
      for (const auto& g : generators())
        if (g.computes(op)) {
          have += std::string(have.empty() ? "" : ", ") + op_name(op);
          break;
        }
    user_error("no generator computes '{}' yet (available operations: {})", op_name(spec.op), have);
  }
  return *best;
}

}  // namespace collplan::gen
