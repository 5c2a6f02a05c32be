// `collplan search` for the universal all-to-all encode: the least C2 of a
// relay-and-combine plan (gen/relay.h) with C1 = ⌈log_{p+1} K⌉, the lower
// bound, found and proven with the SAT encoding of relay_sat.h.
//
// The search walks c upwards from max(C1 bound, Lemma 2) (both hold for every
// universal plan) to the C2 of prepare-and-shoot after drop-zeros (a
// relay-and-combine plan, so the answer is never worse). For each c it asks
// every composition d_1 + … + d_T = c, d_t >= 1 (a plan with smaller sizes
// also fits larger ones, so exactly c suffices): first among circulant
// schedules (fast, finds most plans), then, if none is found, among all. The
// first satisfiable composition gives the plan; c is refuted when every
// composition is unsatisfiable in the unrestricted encoding. A time-out
// leaves c open: later c may still yield a plan, but its optimality is then
// not proven.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gen/relay.h"
#include "search/relay_sat.h"

namespace collplan::search {

struct SearchOptions {
  double time_limit_s = 60;       // per SAT call
  bool circulant_first = true;
  std::string dimacs_dir;         // write every CNF here ("" = no)
  std::string proof_dir;          // write every call's DRAT proof here ("" = no)
};

struct SolveRecord {  // one SAT call
  std::vector<uint32_t> sizes;
  bool circulant = false;
  RelayAnswer answer;  // schedule dropped
};

struct SearchOutcome {
  uint32_t K = 0, p = 0, C1 = 0;
  uint64_t lemma2 = 0;        // Lemma 2 (all universal plans)
  uint64_t start = 0;         // max(C1, Lemma 2): where the search starts
  uint64_t prepare_shoot = 0; // C2 of prepare-and-shoot after drop-zeros
  // The least c not refuted: no relay-and-combine plan with C1 = the bound
  // has C2 < proven_bound (every c below was refuted, or is below `start`).
  uint64_t proven_bound = 0;
  // The best plan: C2 of the schedule found, or prepare_shoot when none.
  uint64_t best = 0;
  std::optional<gen::RelaySchedule> schedule;  // when the search found one
  bool optimal() const { return best == proven_bound; }
  double seconds = 0;
  uint64_t learned = 0;  // learned clauses over every call
  std::vector<SolveRecord> calls;
};

SearchOutcome search_encode(uint32_t K, uint32_t p, const SearchOptions& opt);

// Every composition of c into T parts >= 1, in lexicographic order.
std::vector<std::vector<uint32_t>> compositions(uint64_t c, uint32_t T);

nlohmann::json outcome_json(const SearchOutcome& o);

}  // namespace collplan::search
