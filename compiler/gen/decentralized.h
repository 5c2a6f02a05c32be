// Decentralized encoding of an [N, K] code (docs/decentralized.md; journal
// paper §III, §VI, Appendices A and B; encode paper Remark 1).
//
// N processors; sources 0..K−1 hold x_0..x_{K−1}; R = N − K sinks. The
// spec's matrix is either A (K×R, systematic G = [I | A]: sink K+j gets
// Σ_k x_k A[k][j]) or G (K×N, non-systematic: every rank j gets
// Σ_k x_k G[k][j]); matrix/postcondition.h checks the plans against it.
//
// Generators (each in its own file; docs/decentralized.md has the details):
//   decentralized-grid     systematic: the journal's framework, K >= R
//                          (column encodes of R×R blocks, row reduces) and
//                          K < R (row broadcasts, column encodes of K×K
//                          blocks). C1 = ⌈log_b R⌉ + ⌈log_b(⌈K/R⌉+1)⌉ or
//                          ⌈log_b(⌈R/K⌉+1)⌉ + ⌈log_b K⌉, b = p+1 (λ = 1).
//   decentralized-grouped  non-systematic: broadcast x_i to the ⌊N/K⌋
//                          groups, each group encodes its block of G.
//   decentralized-padded   either form: G padded to N×N (sinks hold 0), one
//                          encode among all N. C1 = ⌈log_b N⌉.
//   decentralized-naive    systematic: every source sends x_k to every sink,
//                          p at a time. The benchmark's baseline.
// The cost model picks among them (gen/registry.cpp).
//
// Block encodes (the K×K or R×R sub-encodes) are built by `block_encode`,
// which asks the registry for the best all-to-all encode generator for the
// block's spec (prepare-and-shoot at λ = 1 on the default model): a new
// encode generator is used by the decentralized plans as soon as it is
// registered. The grid gives the full blocks of an RS code (matrix/codes.h)
// as "cauchy" specs, so the cauchy generator encodes them when cheaper.
#pragma once

#include <cstdint>
#include <string>

#include "gen/postal_encode.h"
#include "ir/plan.h"
#include "matrix/matrix.h"

namespace collplan::gen {

// True when spec.matrix is A (K×(N−K)), false when it is G (K×N).
bool decentralized_systematic(const Spec& spec);

// The encode plan for a block: spec = an encode spec (K >= 2) whose matrix
// is the block. Chosen by choose_generator among the registered encode
// generators.
ir::Plan block_encode(const Spec& block, const passes::CostModel& cm);
// The name of the generator block_encode uses for K ranks.
std::string block_encode_name(uint32_t K, uint32_t p, uint32_t lambda, const passes::CostModel& cm);

ir::Plan decentralized_grid(const Spec& spec, const passes::CostModel& cm);
ir::Plan decentralized_grouped(const Spec& spec, const passes::CostModel& cm);
ir::Plan decentralized_padded(const Spec& spec, const passes::CostModel& cm);
ir::Plan decentralized_naive(const Spec& spec);

// `--blocks auto` for decentralized-encode, a vector of m elements per
// source: the n in [1, min(m, 4096)] that minimises the modeled time of the
// streamed row phase (decentralized_build.h's choice of tree, pipelined
// chain or circulant, in closed form) on the plan's longest row: d + 1 or
// c + 1 ranks for the grid (systematic), ⌊N/K⌋ for the grouped plan
// (non-systematic). The encode phases cost n·C2·⌈m/n⌉·τ ≈ C2·m·τ for every
// n and do not enter. n is also capped so that the dense postcondition
// stays within what the checker takes (K·n × outputs·n <= 2^26 entries,
// kMaxPostconditionEntries).
uint32_t decentralized_auto_blocks(const Spec& spec, uint64_t m, double beta, double tau);
// The line the plan's algorithm name gets when n was chosen so.
std::string decentralized_auto_blocks_note(const Spec& spec, uint64_t m, double beta, double tau, uint32_t n);

// Costs for `--algorithm auto`: of the plan after drop-zeros, measured on
// the built plan (the naive plan's closed form is exact); a generator that
// does not apply to the spec's form reports C1 = UINT32_MAX so that auto
// never picks it.
PostalSplitCost decentralized_grid_estimate(const Spec& spec, const passes::CostModel& cm);
PostalSplitCost decentralized_grouped_estimate(const Spec& spec, const passes::CostModel& cm);
PostalSplitCost decentralized_padded_estimate(const Spec& spec, const passes::CostModel& cm);
PostalSplitCost decentralized_naive_estimate(const Spec& spec);

}  // namespace collplan::gen
