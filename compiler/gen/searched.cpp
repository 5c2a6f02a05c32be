// `searched` — universal all-to-all encode from a schedule found by the
// relay-and-combine search (docs/search.md) and shipped in
// gen/searched_table.inc.
//
// Algorithm: replay the table's schedule for (K, p): T = ⌈log_{p+1} K⌉
// rounds; in round t each port carries at most d_t elements, raw inputs or
// partial sums aimed at one sink (gen/relay.h); coefficients A[j][k] come
// from the spec's matrix (build_relay_plan), one path per input and sink.
// C1 = T, the lower bound; C2 = Σ d_t (the table's "searched"), below
// prepare-and-shoot's wherever the table has a schedule.
#include "gen/searched.h"

#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/error.h"

namespace collplan::gen {

namespace {

// The table as scripts/search_table.py merges it from `collplan search
// --write-table` outputs: a JSON document inside a C++ raw string literal.
const char* const kTable =
#include "gen/searched_table.inc"
    ;

std::vector<SearchedEntry> parse_table() {
  std::vector<SearchedEntry> out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(kTable);
    for (const auto& e : j.at("entries")) {
      SearchedEntry s;
      s.K = e.at("K").get<uint32_t>();
      s.p = e.at("p").get<uint32_t>();
      s.C1 = e.at("C1").get<uint32_t>();
      s.lemma2 = e.at("lemma2").get<uint64_t>();
      s.prepare_shoot = e.at("prepare_shoot_C2").get<uint64_t>();
      s.searched = e.at("searched_C2").get<uint64_t>();
      s.proven_bound = e.at("proven_bound").get<uint64_t>();
      s.seconds = e.at("seconds").get<double>();
      s.learned = e.at("learned").get<uint64_t>();
      s.calls = e.at("calls").size();
      s.solver = j.at("solver").get<std::string>();
      if (!e.at("schedule").is_null()) s.schedule = relay_schedule_from_json(e.at("schedule"));
      out.push_back(std::move(s));
    }
  } catch (const std::exception& ex) {
    internal_error(__FILE__, __LINE__, std::string("searched_table.json is malformed: ") + ex.what());
  }
  for (const SearchedEntry& s : out)
    if (s.schedule) {
      const std::string problem = relay_schedule_problem(*s.schedule);
      COLLPLAN_ASSERT(problem.empty() && s.schedule->K == s.K && s.schedule->p == s.p &&
                          s.schedule->C2() == s.searched && s.schedule->T() == s.C1,
                      fmt::format("searched_table.json: the schedule for K = {}, p = {} is invalid: {}", s.K, s.p,
                                  problem));
    }
  return out;
}

}  // namespace

const std::vector<SearchedEntry>& searched_table() {
  static const std::vector<SearchedEntry> table = parse_table();
  return table;
}

const SearchedEntry* find_searched(uint32_t K, uint32_t p) {
  for (const SearchedEntry& e : searched_table())
    if (e.K == K && e.p == p) return &e;
  return nullptr;
}

std::string searched_why_not(const Spec& spec) {
  if (spec.op != OpKind::Encode) return fmt::format("searched computes encode, not {}", op_name(spec.op));
  if (spec.lambda != 1) return fmt::format("searched plans are for lambda = 1 (got {})", spec.lambda);
  const SearchedEntry* e = find_searched(spec.K, spec.p);
  if (!e || !e->schedule) {
    std::vector<std::string> have;
    for (const SearchedEntry& s : searched_table())
      if (s.schedule) have.push_back(fmt::format("K={} p={}", s.K, s.p));
    return fmt::format("no searched schedule for K = {}, p = {} (the table has: {})", spec.K, spec.p,
                       fmt::join(have, ", "));
  }
  return "";
}

ir::Plan searched_plan(const Spec& spec) {
  const std::string why = searched_why_not(spec);
  if (!why.empty()) user_error("{}", why);
  return build_relay_plan(*find_searched(spec.K, spec.p)->schedule, spec);
}

}  // namespace collplan::gen
