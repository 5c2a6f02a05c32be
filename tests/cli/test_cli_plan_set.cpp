// `collplan plan-set`: the index it writes is one the library reads, every
// plan it names is there with its digest and proven properties, the rows
// cover the byte ladder once per pass, and bad options are refused by name.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "ir/binary.h"
#include "passes/verify_reduction.h"
#include "runtime/pmpi/plan_table.h"
#include "test_util.h"

namespace fs = std::filesystem;
using collplan::test::read_file;
using collplan::test::run_collplan;
using collplan::test::scratch_dir;

TEST_CASE("cli plan-set: a readable index, every plan verified, its digest and properties", "[cli][pmpi]") {
  const fs::path dir = scratch_dir("cli-plan-set");
  const auto r = run_collplan("plan-set --K 3,4 --max-bytes 65536 --max-blocks 8 --quiet -o " + (dir / "set").string());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("wrote ") != std::string::npos);
  const auto table = collplan::pmpi::read_plan_table((dir / "set").string());
  REQUIRE(!table.plans.empty());
  for (const auto& p : table.plans) {
    INFO(p.name);
    const collplan::ir::Plan plan = collplan::ir::read_binary((dir / "set" / p.file).string());
    CHECK(collplan::ir::plan_digest(plan).hex() == p.digest);
    CHECK(plan.spec.K == p.K);
    CHECK(plan.spec.blocks == p.blocks);
    CHECK(plan.spec.root == 0);
    if (collplan::passes::is_reduction_op(plan.spec.op)) {
      const auto props = collplan::passes::reduction_properties(plan);
      CHECK(p.exact);
      CHECK(props.exact == p.exact);
      CHECK(props.ordered == p.ordered);
      CHECK(props.consistent == p.consistent);
    }
  }
  // Every (operation, K) has its first pass of rows covering 1 .. 65536
  // without a gap, and every call that may use any exact plan gets one.
  using collplan::pmpi::CallOp;
  for (CallOp op : {CallOp::broadcast, CallOp::reduce, CallOp::allgather, CallOp::allreduce, CallOp::reduce_scatter,
                    CallOp::scan, CallOp::exscan})
    for (uint32_t K : {3u, 4u})
      for (uint64_t b : {uint64_t{1}, uint64_t{1000}, uint64_t{65536}}) {
        INFO(collplan::pmpi::call_op_name(op) << " K=" << K << " bytes=" << b);
        const collplan::pmpi::Needs any{op != CallOp::broadcast && op != CallOp::allgather, false, false};
        const auto* row = table.select(op, K, b, any);
        REQUIRE(row != nullptr);
        CHECK(row->plan >= 0);
        // Floating point finds a plan that gives the same bits everywhere.
        if (any.reduction) {
          const auto* f = table.select(op, K, b, {true, false, true});
          REQUIRE(f != nullptr);
          CHECK(table.plans[f->plan].consistent);
        }
      }
  CHECK(table.select(CallOp::allreduce, 4, 65537, {true, false, false}) == nullptr);
  // The table in the file says it is untuned and where the cost model came from.
  const auto j = nlohmann::json::parse(read_file((dir / "set" / "index.json").string()));
  CHECK(j["tuned"] == false);
  CHECK(j["cost"]["from"] == "defaults (one node, shared memory)");
}

TEST_CASE("cli plan-set: bad options are refused by name", "[cli][pmpi]") {
  const fs::path dir = scratch_dir("cli-plan-set-bad");
  const std::string out = " -o " + (dir / "x").string();
  struct Bad {
    std::string args, message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"--ops gather", "--ops: \"gather\" is not an operation MPI programs call (valid: broadcast, reduce, "
                            "allgather, allreduce, reduce-scatter, prefix)"},
           {"--ops allgatherv", "allgatherv calls are served by the allgather plans"},
           {"--K 1-3", "--K: \"1\" in \"1-3\" is not a communicator size in 2..4096"},
           {"--K 9-4", "--K: range \"9-4\" is empty (write low-high)"},
           {"--K 4,x", "--K: \"x\" in \"4,x\" is not a communicator size"},
           {"--max-bytes 0", "--max-bytes 0 is out of range (valid: 1..2^40)"},
           {"--max-blocks 5000", "--max-blocks 5000 is out of range (valid: 1..4096)"},
           {"--candidates x", "--candidates \"x\" is not a count in 0..64 or \"all\""},
           {"--candidates 65", "--candidates \"65\" is not a count in 0..64 or \"all\""},
           {"--lambdas 0", "--lambdas: \"0\" in \"0\" is not a postal latency (valid: 1..4096 or K-1"},
           {"--lambdas 1,K", "--lambdas: \"K\" in \"1,K\" is not a postal latency"},
       }) {
    const auto r = run_collplan("plan-set " + b.args + out);
    INFO(b.args << ": " << r.out << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(b.message) != std::string::npos);
  }
}

TEST_CASE("cli plan-set: --lambdas adds the stars and direct exchanges as alternatives only", "[cli][pmpi]") {
  const fs::path dir = scratch_dir("cli-plan-set-lambdas");
  const std::string out = (dir / "set").string();
  const auto r = run_collplan("plan-set --K 4 --ops broadcast,allreduce,allgather,reduce --max-bytes 4096 "
                              "--max-blocks 2 --quiet --candidates 1 --lambdas 1,K-1 -o " + out);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto t = collplan::pmpi::read_plan_table(out);
  std::set<std::string> named, starred;
  for (const auto& row : t.rows) named.insert(t.plans[row.plan].name);
  for (const auto& p : t.plans)
    if (p.name.size() > 3 && p.name.substr(p.name.size() - 3) == "-l3") starred.insert(p.name);
  // λ = K − 1 = 3 where it reshapes the schedule; not the trees and
  // dissemination schedules it only stretches.
  CHECK(starred == std::set<std::string>{"broadcast-K4-n1-postal-broadcast-l3", "allreduce-K4-n1-postal-allreduce-l3",
                                         "allgather-K4-n1-direct-allgather-l3", "reduce-K4-n1-postal-reduce-l3"});
  for (const auto& n : starred) CHECK(named.count(n) == 0);
  // Without --candidates no alternative is written; λ = 1 is always
  // compiled, so the rows are those of the plain set.
  const std::string out0 = (dir / "set0").string(), plain = (dir / "plain").string();
  REQUIRE(run_collplan("plan-set --K 4 --ops broadcast --max-bytes 4096 --quiet --lambdas K-1 -o " + out0).status == 0);
  REQUIRE(run_collplan("plan-set --K 4 --ops broadcast --max-bytes 4096 --quiet -o " + plain).status == 0);
  const auto t0 = collplan::pmpi::read_plan_table(out0), tp = collplan::pmpi::read_plan_table(plain);
  REQUIRE(!t0.rows.empty());
  CHECK(t0.rows.size() == tp.rows.size());
  for (const auto& p : t0.plans) CHECK(p.name.find("-l3") == std::string::npos);
}

TEST_CASE("cli plan-set: --candidates lists alternatives no row names, for tune", "[cli][pmpi]") {
  const fs::path dir = scratch_dir("cli-plan-set-candidates");
  auto plans_of = [&](const std::string& candidates) {
    const std::string out = (dir / candidates).string();
    const auto r = run_collplan("plan-set --K 4 --ops allreduce --max-bytes 4096 --max-blocks 4 --quiet --candidates " +
                                candidates + " -o " + out);
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    const auto t = collplan::pmpi::read_plan_table(out);
    std::set<std::string> named, all;
    for (const auto& row : t.rows) named.insert(t.plans[row.plan].name);
    for (const auto& p : t.plans) {
      all.insert(p.name);
      CHECK(fs::exists(fs::path(out) / p.file));
    }
    return std::pair{named, all};
  };
  const auto [named0, all0] = plans_of("0");
  const auto [named2, all2] = plans_of("2");
  const auto [named_all, all_all] = plans_of("all");
  CHECK(named0 == all0);  // by default only the plans rows name
  CHECK(named2 == named0);  // the rows do not change
  CHECK(named_all == named0);
  CHECK(all2.size() > all0.size());
  CHECK(all_all.size() >= all2.size());
  for (const auto& n : all2) CHECK(all_all.count(n) == 1);
}
