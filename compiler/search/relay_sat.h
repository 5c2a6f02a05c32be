// The relay-and-combine search: is there a relay-and-combine schedule
// (gen/relay.h) for the universal all-to-all encode of K processors with p
// ports in T rounds of message sizes d_1..d_T? Asked of a SAT solver
// (CaDiCaL); the encoding, its symmetry breaking and what an answer proves
// are in docs/search.md. Every schedule found is re-checked by
// gen::relay_schedule_problem and, as a plan, by the checker; an UNSAT answer
// is the solver's word, summarised in RelayAnswer (and written as a DRAT
// proof on request, for an independent checker).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gen/relay.h"

namespace collplan::search {

// The largest K the encoding is built for: its size grows as T·p·K⁴.
inline constexpr uint32_t kMaxSearchRanks = 32;

struct RelayQuery {
  uint32_t K = 0, p = 1;
  std::vector<uint32_t> sizes;  // d_t >= 1, t = 1..T
  // Restrict to circulant schedules (rank u+1 does what rank u does, every
  // index shifted by one): much smaller, finds plans sooner, proves nothing
  // about other schedules. Symmetry breaking is off in this mode.
  bool circulant = false;
  double time_limit_s = 0;  // 0 = none
  std::string dimacs_path;  // write the CNF here ("" = no)
  std::string proof_path;   // write a DRAT proof here ("" = no)
};

enum class SatResult { Sat, Unsat, Unknown };

struct RelayAnswer {
  SatResult result = SatResult::Unknown;
  std::optional<gen::RelaySchedule> schedule;  // when Sat
  uint64_t variables = 0, clauses = 0;
  uint64_t learned = 0;  // clauses the solver learned (one per conflict)
  double seconds = 0;
};

// UserError for K, p, T or a size out of range.
RelayAnswer solve_relay(const RelayQuery& q);

const char* sat_result_name(SatResult r);
std::string solver_name();  // "CaDiCaL <version>"

}  // namespace collplan::search
