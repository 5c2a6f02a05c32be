// Relay-and-combine schedules: the plan class `collplan search` explores
// and the `searched` generator replays (docs/search.md).
//
// A relay-and-combine plan for the universal all-to-all encode (rank k gets
// y_k = Σ_j A[j][k]·x_j for every K×K matrix A) runs T synchronous rounds
// (λ = 1). In round t every port q of every rank u carries at most one
// message, to one rank v (v's receiving port is q, as in the plan IR), of at
// most d_t elements. Each element is one of
//   raw x_j       an input u holds unchanged (its own, or one received raw);
//   partial for k a sum aimed at sink k: Σ A[j][k]·x_j over raw inputs u
//                 holds, plus partials for k that u received earlier.
// Rank k's output is such a sum over what it holds at the end. Prepare-and-
// shoot is one (raw inputs in the prepare rounds, partials in the shoot
// rounds). The class leaves out coded elements (a combination of inputs
// that serves more than one sink or is not yet aimed at a sink).
//
// A schedule says only who sends what kind of element to whom; the
// coefficients come from the matrix when the plan is built (build_relay_plan),
// so one schedule serves every matrix: it is universal.
//
// Coverage. cov(t, v, k) ⊆ {0..K−1}: the inputs a partial for k that v sends
// in round t+1 can include: what v holds raw after round t, plus cov(t−1, u,
// k) of every partial for k that v received from u in rounds ≤ t. A schedule
// is valid when cov(T, k, k) is every input for every k. The plan builder
// picks, for each sink, one path per input (each received partial feeds at
// most one later element), so every input is counted exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/plan.h"

namespace collplan::gen {

struct RelayMessage {
  uint32_t from = 0, port = 0, to = 0;
  std::vector<uint32_t> raws;      // inputs x_j sent unchanged
  std::vector<uint32_t> partials;  // sinks k whose partial sums are sent
};

struct RelaySchedule {
  uint32_t K = 0, p = 0;
  std::vector<uint32_t> sizes;                // d_t, rounds 1..T
  std::vector<std::vector<RelayMessage>> rounds;  // rounds[t−1]
  uint32_t T() const { return static_cast<uint32_t>(sizes.size()); }
  uint64_t C2() const;
};

// The most processors a schedule may have (coverage sets are 64-bit masks).
inline constexpr uint32_t kMaxRelayRanks = 64;

// InternalError-free checks of a schedule read from a table or a solver:
// ports, ranks and sizes in range, one message per port and round at either
// end, raw inputs held by the sender, every sink covered. Returns "" when
// valid, else what is wrong.
std::string relay_schedule_problem(const RelaySchedule& s);

// The plan of a valid schedule for `spec` (op encode, K = s.K, p = s.p,
// λ = 1), coefficients from spec.matrix. Messages and elements that no sink
// needs are left out. InternalError when the schedule is invalid.
ir::Plan build_relay_plan(const RelaySchedule& s, const Spec& spec);

nlohmann::json relay_schedule_json(const RelaySchedule& s);
// UserError naming the key when `j` is not a schedule.
RelaySchedule relay_schedule_from_json(const nlohmann::json& j);

}  // namespace collplan::gen
