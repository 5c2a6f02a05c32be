// The plan set's selection table (runtime/pmpi/plan_table.h): what a row
// matches, which plan a call with given needs gets, and one clear error for
// every kind of damage.
#include <catch2/catch.hpp>

#include <string>

#include "runtime/pmpi/plan_table.h"
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
