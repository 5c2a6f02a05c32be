// Shared pieces of the dissemination generators (gen/dissemination.h): the
// spec check and the allgather and reduce-scatter phases over positions.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "gen/dissemination.h"
#include "ir/plan.h"

namespace collplan::gen {

// UserError unless spec.op is one of `ops`, the basics hold and, when
// `circulant`, p = 1 and λ = 1. rank_local_max = 0: a whole plan
// (validate_spec_basics, with the dense postcondition's limit); else a
// rank-local compile of K <= rank_local_max (validate_spec_ranges: no map is
// built for one rank).
void validate_dissemination_spec(const Spec& spec, const std::vector<OpKind>& ops, const char* generator,
                                 bool circulant = false, uint32_t rank_local_max = 0);
// "" when a dissemination generator for `ops` can compute spec, else why.
std::string dissemination_why_not(const Spec& spec, bool circulant);

// The slots of one position (element order): first, first + 1, ...,
// first + count − 1. Every position a phase handles is such a run (a rank's
// own blocks, a chunk of its input, a piece received into new slots), so K
// positions cost two words each, not a vector each (K² vectors over a plan).
struct SlotRun {
  static constexpr ir::SlotId kUnset = UINT32_MAX;  // a position not filled yet
  ir::SlotId first = kUnset;
  uint32_t count = 0;
  bool set() const { return first != kUnset; }
  ir::SlotId operator[](uint32_t e) const { return first + e; }
  std::vector<ir::SlotId> slots() const;
};
// Slots of each position, relative to the rank building.
using PositionSlots = std::vector<SlotRun>;

// Appends an allgather phase to `prog` (rank prog.rank of K): round k sends
// in step first_step + kλ and receives λ − 1 steps later. On entry pos[0]
// holds the rank's own elements and the others are unset; on exit pos[j]
// holds position j's, received into new slots. size(a) is the element count of absolute rank a's
// position; a piece of no elements is neither sent nor received. Returns the
// last step used.
uint32_t allgather_phase(const ir::Plan& ctx, ir::Program& prog, const std::vector<DisseminationRound>& rounds,
                         uint32_t first_step, PositionSlots& pos, const std::function<uint32_t(uint32_t)>& size);

// Appends a reduce-scatter phase: the rounds backwards, each piece reversed.
// On entry partial[j] holds this rank's contribution to position j (all K
// positions); on exit partial[0] holds the sum over all ranks (the slots are
// updated in place: partial[i] := partial[i] + what arrived for it; the
// default alloc-slots pass would reuse dead slots for the sums anyway).
uint32_t reduce_scatter_phase(const ir::Plan& ctx, ir::Program& prog, const std::vector<DisseminationRound>& rounds,
                              uint32_t first_step, PositionSlots& partial);

// Rank r's program of a reduce-scatter over `rounds`: its inputs are its
// K·n blocks, block b for rank a in slot a·n + b, and its outputs the n sums
// of position 0. O(K·n), its inputs.
ir::Program reduce_scatter_rank(const ir::Plan& ctx, const std::vector<DisseminationRound>& rounds, uint32_t r);

// A generator over dissemination rounds as a per-rank builder
// (gen/rank_local.h): the whole plan and a rank compiled alone both come
// from `rank`, so they cannot diverge. Computing the rounds is O(log K); the
// rest is the builder's.
struct DisseminationAlgorithm {
  const char* name;
  std::vector<OpKind> ops;  // the operations it computes
  bool circulant;           // Träff's rounds (p = 1, λ = 1), else the (p+1)-ary ones
  uint32_t phases;          // passes over the rounds (2: reduce-scatter, then allgather)
  uint32_t rank_local_max;  // the most ranks of a rank-local compile
  ir::Program (*rank)(const ir::Plan& ctx, const std::vector<DisseminationRound>& rounds, uint32_t r);
};
// The spec checked and the whole plan built.
ir::Plan dissemination_whole_plan(const Spec& spec, const DisseminationAlgorithm& alg);
// The spec checked against alg.rank_local_max and rank `rank` built alone.
ir::RankPlan dissemination_rank_plan(const Spec& spec, const DisseminationAlgorithm& alg, uint32_t rank);

// C2 of one phase over `rounds` when position a (absolute) has size(a)
// elements: Σ_rounds max over ranks and pieces of the piece's elements.
// Exact; O(K·pieces).
uint64_t phase_C2(uint32_t K, const std::vector<DisseminationRound>& rounds,
                  const std::function<uint32_t(uint32_t)>& size);

}  // namespace collplan::gen
