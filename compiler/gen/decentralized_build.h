// Assembly of decentralized-encode plans out of placed sub-plans (internal
// to the decentralized generators, gen/decentralized_*.cpp).
//
// Every rank holds n values while the plan is built, one per block
// (passes::Held: a slot times a coefficient, or zero; n = spec.blocks): the
// blocks of x_k at source k, zeros at a sink. A phase
// places sub-plans on disjoint groups of ranks at one step offset and
// replaces the members' values by what the sub-plans deliver; phases run one
// after the other. Each phase is recorded (name, steps) for the plan's
// algorithm string, which is how `show` and the cost report name the phases.
#pragma once

#include <string>
#include <vector>

#include "gen/decentralized.h"
#include "passes/compose.h"

namespace collplan::gen::detail {

struct Assembly {
  ir::Plan plan;
  Matrix M;  // A (systematic, K×R) or G (K×N)
  bool systematic = true;
  uint32_t K = 0, N = 0, R = 0;
  uint32_t n = 1;                                // blocks per vector (spec.blocks)
  std::vector<std::vector<passes::Held>> held;  // per rank, n values
  std::string layout;              // one line on the grid, for the algorithm string
  std::vector<std::string> phases;
};

// Validates the spec (op, shape, digest), materialises the matrix, gives
// each source its input slot.
Assembly start(const Spec& spec, const char* generator);

// Encodes: group g's local rank i (rank groups[g][i]) gets Σ_i' v_i' B_g[i'][i]
// where v_i' is what groups[g][i'] holds, block by block (n > 1: the block
// encoder's plan widened, every message carrying the n blocks,
// passes/widen.h). A group of one is a local scaling (no steps). Returns the
// phase's steps.
uint32_t encode_blocks(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups, const std::vector<Matrix>& blocks,
                       const passes::CostModel& cm, const std::string& what);
// The same with each block given as a matrix spec (e.g. the "cauchy" family
// for a Reed-Solomon block, so that block_encode can choose the structured
// generator). The phase names every block generator used.
uint32_t encode_blocks(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups,
                       const std::vector<MatrixSpec>& blocks, const passes::CostModel& cm, const std::string& what);
// Broadcasts: every member of groups[g] gets what groups[g][0] holds.
// One block (n = 1): the (p+1)-nomial tree. n > 1 blocks: per group, the
// cheapest by the cost model of the tree (all n blocks in every message),
// the circulant n-block broadcast (p = 1, λ = 1: n − 1 + ⌈log₂ g⌉ steps for
// a group of g) and the pipelined p-ary chain (n − 1 + D·λ steps): the
// block-pipelined schedules stream long vectors.
uint32_t broadcast_groups(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups, const passes::CostModel& cm,
                          const std::string& what);
// Reduces: groups[g][0] gets the sum of what the members hold; the same
// choice among the reversed schedules (tree, circulant, pipelined chain).
uint32_t reduce_groups(Assembly& a, const std::vector<std::vector<ir::Rank>>& groups, const passes::CostModel& cm,
                       const std::string& what);

// Every rank that has an output (sinks; every rank when non-systematic)
// writes what it holds into its output slot; the algorithm string gets the
// layout and the phases.
ir::Plan finish(Assembly& a);

// What `--algorithm auto` compares: the cost of the plan after drop-zeros,
// measured on the built plan. A closed form would over-estimate the padded
// and borrowed-cell plans, whose zero inputs drop-zeros removes from the
// messages.
PostalSplitCost delivered_cost(ir::Plan plan);
// The estimate of a generator that does not apply to the spec's form.
inline PostalSplitCost not_applicable() { return {0, 0, UINT32_MAX, UINT64_MAX}; }

}  // namespace collplan::gen::detail
