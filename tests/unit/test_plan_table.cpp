// The plan set's selection table (runtime/pmpi/plan_table.h): what a row
// matches, which plan a call with given needs gets, and one clear error for
// every kind of damage.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "runtime/pmpi/plan_table.h"
#include "runtime/pmpi/plan_table_tune.h"
#include "support/error.h"

using namespace collplan;
using namespace collplan::pmpi;

namespace {

const std::string kDigest = "0123456789abcdef0123456789abcdef";

std::string plan_json(const std::string& op, int K, bool exact, bool ordered, bool consistent) {
  return "{\"file\": \"p.cplan\", \"digest\": \"" + kDigest + "\", \"op\": \"" + op + "\", \"K\": " +
         std::to_string(K) + ", \"blocks\": 2, \"exact\": " + (exact ? "true" : "false") +
         ", \"ordered\": " + (ordered ? "true" : "false") + ", \"consistent\": " + (consistent ? "true" : "false") +
         "}";
}

// Two allreduce plans for K = 8: "fast" (not consistent) first, "same"
// (consistent) second; then MPI above 1 MiB.
const std::string kTable = R"({"format": "collplan-plan-set", "version": 1, "plans": {
  "fast": )" + plan_json("allreduce", 8, true, false, false) + R"(,
  "same": )" + plan_json("allreduce", 8, true, true, true) + R"(,
  "bc": {"file": "b.cplan", "digest": ")" + kDigest + R"(", "op": "broadcast", "K": 4, "blocks": 1}},
  "table": [
  {"op": "allreduce", "K": 8, "bytes": [1, 1048576], "plan": "fast"},
  {"op": "allreduce", "K": 8, "bytes": [1, 1048576], "plan": "same"},
  {"op": "allreduce", "K": 8, "bytes": [1048577, 4194304], "plan": "mpi"},
  {"op": "broadcast", "K": 4, "bytes": [0, 100], "plan": "bc"}]})";

std::string error_of(const std::string& text) {
  try {
    parse_plan_table(text, "set/index.json", "set");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string with(const std::string& from, const std::string& to) {
  std::string t = kTable;
  const size_t at = t.find(from);
  REQUIRE(at != std::string::npos);
  return t.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("plan table: rows select plans by operation, size, bytes and needs", "[pmpi]") {
  const PlanTable t = parse_plan_table(kTable, "set/index.json", "set");
  REQUIRE(t.plans.size() == 3);
  REQUIRE(t.rows.size() == 4);
  const Needs copy{};
  const Needs integer{true, false, false};
  const Needs floating{true, false, true};
  const Needs noncommutative{true, true, true};
  auto plan_of = [&](const TableRow* r) { return r == nullptr ? std::string("none") : r->plan < 0 ? std::string("mpi") : t.plans[r->plan].name; };
  CHECK(plan_of(t.select(CallOp::allreduce, 8, 100, integer)) == "fast");
  int skipped = -1;
  CHECK(plan_of(t.select(CallOp::allreduce, 8, 100, floating, &skipped)) == "same");
  CHECK(skipped == 1);
  CHECK(plan_of(t.select(CallOp::allreduce, 8, 1048576, noncommutative)) == "same");
  CHECK(plan_of(t.select(CallOp::allreduce, 8, 1048577, floating)) == "mpi");
  CHECK(plan_of(t.select(CallOp::allreduce, 8, 4194305, integer)) == "none");
  CHECK(plan_of(t.select(CallOp::allreduce, 4, 100, integer)) == "none");
  CHECK(plan_of(t.select(CallOp::reduce, 8, 100, integer)) == "none");
  CHECK(plan_of(t.select(CallOp::broadcast, 4, 0, copy)) == "bc");
  CHECK(plan_of(t.select(CallOp::broadcast, 4, 101, copy)) == "none");
  CHECK(plan_of(t.find(CallOp::allreduce, 8, 5)) == "fast");
  // Rows changed after parsing: the selection still sees every row (the
  // per-(op, K) index is not used once it no longer covers the rows).
  PlanTable u = t;
  u.rows.insert(u.rows.begin(), TableRow{CallOp::allreduce, 8, 1, 50, -1});
  u.rows.push_back(TableRow{CallOp::reduce, 8, 1, 50, -1});
  CHECK(u.select(CallOp::allreduce, 8, 10, integer)->plan == -1);
  CHECK(u.select(CallOp::reduce, 8, 10, integer) != nullptr);
  CHECK(u.find(CallOp::allreduce, 8, 100)->plan == t.find(CallOp::allreduce, 8, 100)->plan);
}

// The library sends a call to MPI on mpi_only's word before it analyses
// the datatype and operator: that word must be select's for every Needs.
TEST_CASE("plan table: mpi_only agrees with select for every need, on random overlapping tables", "[pmpi]") {
  std::mt19937_64 rng(20261128);
  const Needs needs[] = {Needs{}, Needs{true, false, false}, Needs{true, false, true}, Needs{true, true, false},
                         Needs{true, true, true}};
  size_t to_mpi = 0, maybe_plan = 0;
  for (int trial = 0; trial < 300; ++trial) {
    PlanTable t;
    for (int p = 0; p < 4; ++p) {
      PlanEntry e;
      e.name = "p" + std::to_string(p);
      e.op = CallOp::allreduce;
      e.exact = rng() % 4 != 0, e.ordered = rng() % 2, e.consistent = rng() % 2;
      t.plans.push_back(e);
    }
    // Rows over a small byte axis, overlapping, some at K >= kDirectK and
    // some reaching the top of the axis.
    const uint32_t Ks[] = {2, 8, PlanTable::kDirectK, PlanTable::kDirectK + 5};
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      TableRow r;
      r.op = rng() % 4 ? CallOp::allreduce : CallOp::reduce;
      r.K = Ks[rng() % 4];
      r.lo = rng() % 40;
      r.hi = rng() % 8 == 0 ? UINT64_MAX : r.lo + rng() % 30;
      r.plan = static_cast<int>(rng() % 5) - 1;
      t.rows.push_back(r);
    }
    t.index();
    for (const CallOp op : {CallOp::allreduce, CallOp::reduce, CallOp::broadcast})
      for (const uint32_t K : {2u, 3u, 8u, PlanTable::kDirectK, PlanTable::kDirectK + 5, PlanTable::kDirectK + 6})
        for (const uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{17}, uint64_t{39}, uint64_t{45}, uint64_t{70},
                                     UINT64_MAX - 1, UINT64_MAX}) {
          const char* why = t.mpi_only(op, K, bytes);
          (why ? to_mpi : maybe_plan) += 1;
          INFO("trial " << trial << " op " << call_op_name(op) << " K " << K << " bytes " << bytes);
          for (const Needs& nd : needs) {
            if (!why) break;
            const TableRow* r = t.select(op, K, bytes, nd);
            CHECK((r == nullptr || r->plan < 0));
            CHECK(std::string(why) == (r == nullptr ? kWhyNoRow : kWhyRowSaysMpi));
          }
          // It leaves to select exactly the calls whose first row has a plan.
          const TableRow* first = t.find(op, K, bytes);
          CHECK((why == nullptr) == (first != nullptr && first->plan >= 0));
        }
  }
  CHECK(to_mpi > 1000);
  CHECK(maybe_plan > 1000);
  // Rows changed after index(): no shortcut, select decides.
  PlanTable u = parse_plan_table(kTable, "set/index.json", "set");
  CHECK(u.mpi_only(CallOp::allreduce, 8, 4194304) == std::string(kWhyRowSaysMpi));
  CHECK(u.mpi_only(CallOp::allreduce, 8, 4194305) == std::string(kWhyNoRow));
  CHECK(u.mpi_only(CallOp::allreduce, 8, 100) == nullptr);
  CHECK(u.mpi_only(CallOp::allreduce, 16, 100) == std::string(kWhyNoRow));
  u.rows.push_back(TableRow{CallOp::allreduce, 8, 4194305, 4194400, 0});
  CHECK(u.mpi_only(CallOp::allreduce, 8, 4194305) == nullptr);
}

TEST_CASE("plan table: every kind of damage is one clear error", "[pmpi]") {
  CHECK_THAT(error_of("{"), Catch::Contains("set/index.json: not JSON"));
  CHECK_THAT(error_of("[]"), Catch::Contains("a plan set index is a JSON object, this is array"));
  CHECK_THAT(error_of(with("collplan-plan-set", "collplan-cost")),
             Catch::Contains("\"format\" is \"collplan-cost\", a plan set index has \"collplan-plan-set\""));
  CHECK_THAT(error_of(with("\"version\": 1", "\"version\": 2")), Catch::Contains("version 2 is not supported"));
  CHECK_THAT(error_of(with("\"plan\": \"fast\"", "\"plan\": \"slow\"")),
             Catch::Contains("table row 0: plan \"slow\" is not in \"plans\""));
  CHECK_THAT(error_of(with("\"bytes\": [1, 1048576], \"plan\": \"fast\"", "\"bytes\": [9, 3], \"plan\": \"fast\"")),
             Catch::Contains("table row 0: \"bytes\" must be [lo, hi] with integers 0 <= lo <= hi, it is [9,3]"));
  CHECK_THAT(error_of(with("\"K\": 4, \"bytes\"", "\"K\": 5, \"bytes\"")),
             Catch::Contains("plan \"bc\" is a broadcast plan for K = 4, the row is for broadcast at K = 5"));
  CHECK_THAT(error_of(with("\"op\": \"broadcast\", \"K\": 4, \"bytes\"", "\"op\": \"gather\", \"K\": 4, \"bytes\"")),
             Catch::Contains("unknown operation \"gather\""));
  CHECK_THAT(error_of(with("\"file\": \"b.cplan\"", "\"file\": \"../b.cplan\"")),
             Catch::Contains("plan \"bc\": \"file\" \"../b.cplan\" must be a relative path inside the set's directory"));
  CHECK_THAT(error_of(with("\"file\": \"b.cplan\", \"digest\": \"" + kDigest, "\"file\": \"b.cplan\", \"digest\": \"XY")),
             Catch::Contains("\"digest\" must be 32 lowercase hex digits"));
  CHECK_THAT(error_of(with("\"K\": 4, \"blocks\": 1", "\"K\": 1, \"blocks\": 1")),
             Catch::Contains("plan \"bc\": \"K\" must be an integer in 2..1048576, it is 1"));
  CHECK_THAT(error_of(with("\"exact\": true, \"ordered\": false", "\"exact\": 1, \"ordered\": false")),
             Catch::Contains("plan \"fast\": \"exact\" must be true or false, it is 1"));
  CHECK_THAT(error_of(with("\"table\": [", "\"tables\": [")), Catch::Contains("\"table\" is missing"));
  CHECK_THAT(error_of(R"({"format": "collplan-plan-set", "version": 1, "plans": {}, "table": [7]})"),
             Catch::Contains("table row 0 must be an object, it is number"));
}

TEST_CASE("plan table: a missing index is named", "[pmpi]") {
  try {
    read_plan_table("no/such/set");
    FAIL("accepted");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("no/such/set/index.json: cannot read the plan set index (no such file)"));
  }
}

TEST_CASE("plan table: tuned sets and measured rows are read and checked", "[pmpi]") {
  const std::string tuned =
      with("\"plan\": \"fast\"}", "\"plan\": \"fast\", \"measured\": [{\"bytes\": 8, \"mpi_us\": 3.5, \"plan_us\": 2, "
                                  "\"type\": \"int64\"}]}");
  const std::string text = tuned.substr(0, tuned.rfind('}')) + ", \"tuned\": [{\"op\": \"allreduce\", \"K\": 8}]}";
  const PlanTable t = parse_plan_table(text, "set/index.json", "set");
  REQUIRE(t.measured.size() == t.rows.size());
  REQUIRE(t.measured[0].size() == 1);
  CHECK(t.measured[0][0].bytes == 8);
  CHECK(t.measured[0][0].mpi_us == 3.5);
  CHECK(t.measured[0][0].plan_us == 2);
  CHECK(t.measured[0][0].type == "int64");
  CHECK(t.measured[1].empty());
  CHECK(t.is_tuned(CallOp::allreduce, 8));
  CHECK_FALSE(t.is_tuned(CallOp::allreduce, 4));
  CHECK_FALSE(parse_plan_table(kTable, "set/index.json", "set").is_tuned(CallOp::allreduce, 8));
  // plan-set's "tuned": false is an untuned set.
  const std::string untuned = kTable.substr(0, kTable.rfind('}')) + ", \"tuned\": false}";
  CHECK(parse_plan_table(untuned, "set/index.json", "set").tuned.empty());

  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = text;
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  CHECK_THAT(error_of(replace("\"bytes\": 8,", "\"bytes\": 2000000,")),
             Catch::Contains("table row 0: measured[0]: \"bytes\" must be an integer in 1..1048576, it is 2000000"));
  CHECK_THAT(error_of(replace("\"mpi_us\": 3.5", "\"mpi_us\": -1")),
             Catch::Contains("measured[0]: \"mpi_us\" must be a time in microseconds (a number >= 0), it is -1"));
  CHECK_THAT(error_of(replace("\"mpi_us\": 3.5, ", "")), Catch::Contains("measured[0]: \"mpi_us\" is missing"));
  CHECK_THAT(error_of(replace("\"measured\": [", "\"measured\": 5, \"x\": [")),
             Catch::Contains("table row 0: \"measured\" must be an array of sizes, it is number"));
  CHECK_THAT(error_of(replace("\"measured\": [", "\"measured\": [7, ")),
             Catch::Contains("table row 0: measured[0] must be an object, it is number"));
  CHECK_THAT(error_of(replace("\"tuned\": [{\"op\": \"allreduce\"", "\"tuned\": [{\"op\": \"gather\"")),
             Catch::Contains("tuned[0]: unknown operation \"gather\""));
  CHECK_THAT(error_of(replace("\"tuned\": [{\"op\": \"allreduce\", \"K\": 8}]", "\"tuned\": true")),
             Catch::Contains("\"tuned\" must be false or a list"));
}

TEST_CASE("tune: a plan only where it beats MPI by the margin, each property class its own", "[pmpi]") {
  // fast: exact only (timed on int64); same: exact, ordered and consistent (timed on doubles).
  const PlanTable t = parse_plan_table(kTable, "set/index.json", "set");
  TuneResult r;
  r.op = CallOp::allreduce;
  r.K = 8;
  auto index_of = [&](const std::string& name) {
    for (size_t i = 0; i < t.plans.size(); ++i)
      if (t.plans[i].name == name) return static_cast<int>(i);
    FAIL("no plan " << name);
    return -1;
  };
  const int fast = index_of("fast"), same = index_of("same");
  r.cands = {fast, same};
  r.margin = 0.05;
  r.reps = 5;
  // bytes, MPI on doubles, MPI on int64, fast, same (timed on int64 and doubles)
  const double rows[][5] = {{8, 10, 10, 5, 9.6},   // fast wins integers; same is within the margin: MPI for doubles
                            {16, 10, 10, 5, 6},    // fast for integers, same for doubles
                            {32, 10, 10, 9, 9},    // both within 10%: fast (0.9) for ints, same (0.9) for doubles
                            {64, 10, 20, 19.5, 5},  // same wins everywhere (0.5 beats fast's 0.975)
                            {128, 10, 10, 11, 12}};  // MPI everywhere
  for (const auto& x : rows) {
    TuneSize s;
    s.bytes = static_cast<uint64_t>(x[0]);
    s.mpi_double_us = x[1];
    s.mpi_int_us = x[2];
    s.plan_us = {x[3], x[4]};
    r.sizes.push_back(s);
  }
  const Needs integer{true, false, false}, floating{true, false, true}, noncomm{true, true, true};
  CHECK(tuned_choice(t, r, 0, integer) == fast);
  CHECK(tuned_choice(t, r, 0, floating) == -1);
  CHECK(tuned_choice(t, r, 1, integer) == fast);
  CHECK(tuned_choice(t, r, 1, floating) == same);
  CHECK(tuned_choice(t, r, 2, integer) == fast);
  CHECK(tuned_choice(t, r, 2, noncomm) == same);
  CHECK(tuned_choice(t, r, 3, integer) == same);
  CHECK(tuned_choice(t, r, 4, integer) == -1);
  int best = -1;
  double ratio = 0;
  CHECK(tuned_choice(t, r, 4, noncomm, &best, &ratio) == -1);
  CHECK(best == same);
  CHECK(ratio == Approx(1.2));

  // A median win the rounds do not agree on (the upper end of the paired
  // ratios' interval at 1 or above) is not a win; below 1 it stands.
  TuneResult split = r;
  split.sizes[1].ratio_hi = {1.02, 0.7};
  CHECK(tuned_choice(t, split, 1, integer) == same);  // fast's win is noise; same (0.6) still wins
  CHECK(tuned_choice(t, split, 1, floating) == same);
  split.sizes[1].ratio_hi = {1.02, 1.0};
  CHECK(tuned_choice(t, split, 1, integer) == -1);
  split.sizes[1].ratio_hi = {0.99, -1};  // -1: not known, the median decides
  CHECK(tuned_choice(t, split, 1, integer) == fast);
  CHECK(median_upper_95({}) == -1);
  CHECK(median_upper_95({3}) == 3);
  // n = 100: the 95% interval's upper end is the 60th smallest (index 60).
  std::vector<double> hundred;
  for (int i = 0; i < 100; ++i) hundred.push_back(99 - i);
  CHECK(median_upper_95(hundred) == 60);

  // A plan the library did not serve (< 0) is never chosen.
  TuneResult unserved = r;
  unserved.sizes[0].plan_us = {-1, -1};
  CHECK(tuned_choice(t, unserved, 0, integer) == -1);

  // The rewritten index: every class gets its choice from the first row that fits it.
  const std::string text = retune_index(kTable, "set/index.json", t, {r});
  const PlanTable u = parse_plan_table(text, "set/index.json", "set");
  CHECK(u.is_tuned(CallOp::allreduce, 8));
  auto plan_of = [&](CallOp op, uint32_t K, uint64_t bytes, const Needs& n) {
    const TableRow* row = u.select(op, K, bytes, n);
    return row == nullptr ? std::string("none") : row->plan < 0 ? std::string("mpi") : u.plans[row->plan].name;
  };
  for (size_t i = 0; i < r.sizes.size(); ++i)
    for (const Needs& n : {integer, floating, noncomm}) {
      const int want = tuned_choice(t, r, i, n);
      const std::string name = want < 0 ? "mpi" : t.plans[want].name;
      for (uint64_t b : {r.sizes[i].bytes, i ? r.sizes[i - 1].bytes + 1 : uint64_t{1}}) {
        INFO("bytes " << b);
        CHECK(plan_of(CallOp::allreduce, 8, b, n) == name);
      }
    }
  CHECK(plan_of(CallOp::allreduce, 8, 129, integer) == "none");  // beyond the ladder: MPI
  CHECK(plan_of(CallOp::broadcast, 4, 50, Needs{}) == "bc");     // another (op, K): kept
  // Every row names what was measured; a plan row's plan median is below MPI's.
  for (size_t i = 0; i < u.rows.size(); ++i) {
    if (u.rows[i].op != CallOp::allreduce) continue;
    REQUIRE_FALSE(u.measured[i].empty());
    for (const Measured& m : u.measured[i])
      if (u.rows[i].plan >= 0) CHECK(m.plan_us <= 0.95 * m.mpi_us);
  }
  // Tuning again replaces the rows of (op, K), it does not add to them.
  const std::string again = retune_index(text, "set/index.json", u, {r});
  CHECK(parse_plan_table(again, "set/index.json", "set").rows.size() == u.rows.size());
  CHECK(parse_plan_table(again, "set/index.json", "set").tuned.size() == 1);
}
