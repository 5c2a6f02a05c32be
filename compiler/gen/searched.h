// The `searched` generator and the table of search results collplan ships
// (gen/searched_table.inc: `collplan search --Kmax … --pmax … --write-table`
// outputs merged by scripts/search_table.py; docs/search.md).
//
// For each (K, p) of the table: C1 (= ⌈log_{p+1} K⌉), Lemma 2, the C2 of
// prepare-and-shoot after drop-zeros, the least C2 the search found among
// relay-and-combine plans with that C1, the bound it proved (no such plan has
// a smaller C2), the solver and its effort. Where the search beat
// prepare-and-shoot the table holds the schedule, and `searched` builds its
// plan for any matrix (universal encode, λ = 1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gen/relay.h"
#include "ir/plan.h"

namespace collplan::gen {

struct SearchedEntry {
  uint32_t K = 0, p = 0, C1 = 0;
  uint64_t lemma2 = 0, prepare_shoot = 0, searched = 0, proven_bound = 0;
  double seconds = 0;
  uint64_t learned = 0, calls = 0;
  std::string solver;
  std::optional<RelaySchedule> schedule;  // when searched < prepare_shoot
  bool optimal() const { return searched == proven_bound; }
};

// The shipped table, parsed once (InternalError if it is malformed: it is
// part of collplan).
const std::vector<SearchedEntry>& searched_table();
const SearchedEntry* find_searched(uint32_t K, uint32_t p);

// "" when `searched` computes the spec, else why not.
std::string searched_why_not(const Spec& spec);
ir::Plan searched_plan(const Spec& spec);

}  // namespace collplan::gen
