// The search loop of search.h.
#include "search/search.h"

#include <chrono>

#include <fmt/format.h>

#include "gen/prepare_shoot.h"
#include "passes/cost.h"
#include "support/error.h"

namespace collplan::search {

std::vector<std::vector<uint32_t>> compositions(uint64_t c, uint32_t T) {
  std::vector<std::vector<uint32_t>> out;
  if (T == 0 || c < T) return out;
  std::vector<uint32_t> cur;
  auto rec = [&](auto&& self, uint64_t left, uint32_t parts) -> void {
    if (parts == 1) {
      cur.push_back(static_cast<uint32_t>(left));
      out.push_back(cur);
      cur.pop_back();
      return;
    }
    for (uint64_t d = 1; d + (parts - 1) <= left; ++d) {
      cur.push_back(static_cast<uint32_t>(d));
      self(self, left - d, parts - 1);
      cur.pop_back();
    }
  };
  rec(rec, c, T);
  return out;
}

SearchOutcome search_encode(uint32_t K, uint32_t p, const SearchOptions& opt) {
  if (K < 2 || K > kMaxSearchRanks)
    user_error("search: K = {} is out of range (valid: 2 <= K <= {}; the encoding grows as K^4)", K, kMaxSearchRanks);
  if (p < 1 || p > 8) user_error("search: p = {} is out of range (valid: 1 <= p <= 8)", p);
  const auto t0 = std::chrono::steady_clock::now();
  SearchOutcome o;
  o.K = K;
  o.p = p;
  o.C1 = passes::lemma1_bound(K, p);
  o.lemma2 = passes::lemma2_bound(K, p);
  o.start = std::max<uint64_t>(o.C1, o.lemma2);
  o.prepare_shoot = gen::prepare_shoot_shape(K, p).C2_zero_dropped();
  o.proven_bound = o.start;
  o.best = o.prepare_shoot;
  bool refuted_so_far = true;  // every c below the current one refuted
  for (uint64_t c = o.start; c < o.prepare_shoot; ++c) {
    bool all_unsat = true;
    for (const auto& sizes : compositions(c, o.C1)) {
      for (int mode = opt.circulant_first ? 0 : 1; mode < 2; ++mode) {
        RelayQuery q;
        q.K = K;
        q.p = p;
        q.sizes = sizes;
        q.circulant = mode == 0;
        q.time_limit_s = opt.time_limit_s;
        if (!opt.dimacs_dir.empty())
          q.dimacs_path = fmt::format("{}/relay-K{}-p{}-{}{}.cnf", opt.dimacs_dir, K, p, fmt::join(sizes, "-"),
                                      q.circulant ? "-circulant" : "");
        if (!opt.proof_dir.empty())
          q.proof_path = fmt::format("{}/relay-K{}-p{}-{}{}.drat", opt.proof_dir, K, p, fmt::join(sizes, "-"),
                                     q.circulant ? "-circulant" : "");
        RelayAnswer a = solve_relay(q);
        o.learned += a.learned;
        std::optional<gen::RelaySchedule> s = std::move(a.schedule);
        a.schedule.reset();
        o.calls.push_back({sizes, q.circulant, a});
        if (a.result == SatResult::Sat) {
          o.schedule = std::move(s);
          o.best = c;
          if (refuted_so_far) o.proven_bound = c;
          o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          return o;
        }
        if (mode == 1 && a.result != SatResult::Unsat) all_unsat = false;
      }
    }
    if (all_unsat && refuted_so_far) o.proven_bound = c + 1;
    else refuted_so_far = false;
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

nlohmann::json outcome_json(const SearchOutcome& o) {
  nlohmann::json calls = nlohmann::json::array();
  for (const auto& c : o.calls)
    calls.push_back({{"sizes", c.sizes},
                     {"circulant", c.circulant},
                     {"result", sat_result_name(c.answer.result)},
                     {"variables", c.answer.variables},
                     {"clauses", c.answer.clauses},
                     {"learned", c.answer.learned},
                     {"seconds", c.answer.seconds}});
  return {{"K", o.K},
          {"p", o.p},
          {"C1", o.C1},
          {"lemma2", o.lemma2},
          {"prepare_shoot_C2", o.prepare_shoot},
          {"searched_C2", o.best},
          {"proven_bound", o.proven_bound},
          {"optimal", o.optimal()},
          {"improves_prepare_shoot", o.best < o.prepare_shoot},
          {"seconds", o.seconds},
          {"learned", o.learned},
          {"solver", solver_name()},
          {"calls", std::move(calls)},
          {"schedule", o.schedule ? gen::relay_schedule_json(*o.schedule) : nlohmann::json(nullptr)}};
}

}  // namespace collplan::search
