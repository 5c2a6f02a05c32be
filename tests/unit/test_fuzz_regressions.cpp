// Regressions for what the fuzz harnesses (fuzz/, docs/fuzzing.md) found:
// one case per finding, on the smallest input that showed it. The inputs
// themselves are also in the seed corpora, which scripts/fuzz.sh --replay
// runs under the sanitizers. Findings in what the CLI reads, run through the
// CLI: tests/cli/test_fuzz_regressions.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/binary.h"
#include "json/json.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using nlohmann::json;

namespace {

// The K = 2 encode plan of docs/plan-format.md, a correct plan.
const char* const kTinyPlan = R"({"format":"collplan-plan","version":1,"num_steps":1,
"spec":{"op":"encode","K":2,"p":1,"lambda":1,"field":{"kind":"gf2m","m":8,"poly":285},
 "matrix":{"family":"explicit","rows":2,"cols":2,"entries":[[1,2],[3,4]]},"algorithm":"hand","blocks":1},
"ranks":[
{"rank":0,"slots":3,"inputs":[0],"outputs":[2],"steps":[{"t":1,"sends":[{"port":0,"to":1,"payload":[[[0,1]]]}],
 "recvs":[{"port":0,"from":1,"sent_at":1,"into":[1]}],"ops":[{"dst":2,"terms":[[0,1],[1,3]],"matrix_col":0}]}]},
{"rank":1,"slots":3,"inputs":[0],"outputs":[2],"steps":[{"t":1,"sends":[{"port":0,"to":0,"payload":[[[0,1]]]}],
 "recvs":[{"port":0,"from":0,"sent_at":1,"into":[1]}],"ops":[{"dst":2,"terms":[[0,4],[1,2]],"matrix_col":1}]}]}]})";

ir::Plan tiny_plan() { return ir::from_json(json::parse(kTinyPlan)); }

}  // namespace

TEST_CASE("fuzz: a slot count the program cannot use is refused by both readers", "[fuzz][formats]") {
  // fuzz_binary: a blob declaring 4294705155 slots loaded fine, and the
  // checker then allocated 5 bytes per slot (20 GB) for a 1 KB file.
  ir::Plan plan = tiny_plan();
  passes::verify(plan);
  plan.ranks[1].num_slots = UINT32_MAX;
  const std::vector<uint8_t> bin = ir::encode_binary(plan);
  CHECK_THROWS_WITH(ir::decode_binary(bin.data(), bin.size()), Catch::Contains("(rank 1): num_slots = 4294967295"));
  CHECK_THROWS_AS(ir::decode_binary(bin.data(), bin.size()), UserError);
  CHECK_THROWS_AS(ir::decode_rank(bin.data(), bin.size(), 1), UserError);
  json j = json::parse(kTinyPlan);
  j["ranks"][1]["slots"] = UINT32_MAX;
  CHECK_THROWS_WITH(ir::from_json(j), Catch::Contains("ranks[1].slots: 4294967295 slots"));
  // Spare slots within the limit still load (and are the checker's business).
  plan.ranks[1].num_slots = static_cast<uint32_t>(ir::slot_limit(plan.ranks[1]));
  const std::vector<uint8_t> spare = ir::encode_binary(plan);
  CHECK(ir::decode_binary(spare.data(), spare.size()) == plan);
}

TEST_CASE("fuzz: a JSON matrix's size is checked before its entries are reserved", "[fuzz][json]") {
  // fuzz_json_plan: rows = 1, cols = 4294967295 and "entries": [[]] made the
  // importer reserve rows x cols entries (16 GB) before it compared the size
  // with its limit of 2^28 entries.
  json j = json::parse(kTinyPlan);
  j["spec"]["matrix"] = json{{"family", "explicit"}, {"rows", 1}, {"cols", UINT32_MAX}, {"entries", json::array({json::array()})}};
  CHECK_THROWS_WITH(ir::from_json(j), Catch::Contains("spec.matrix: a 1 x 4294967295 matrix is too large to rebuild"));
}

TEST_CASE("fuzz: a JSON plan cannot have a matrix larger than its ranks use rebuilt", "[fuzz][json]") {
  // fuzz_json_plan: a 200-byte plan with K = 2, no programs and a random
  // 16384 x 16384 matrix over GF(2^31 - 1) made the importer build and hash
  // 2^28 entries (1 GB, over 10 s) before it counted the programs.
  json j = json::parse(kTinyPlan);
  j["spec"]["field"] = json{{"kind", "prime"}, {"q", 2147483647}};
  j["spec"]["matrix"] = json{{"family", "random"}, {"rows", 16384}, {"cols", 16384}};
  CHECK_THROWS_WITH(ir::from_json(j), Catch::Contains("spec.matrix: a 16384 x 16384 matrix is larger than any "
                                                      "operation on 2 ranks uses"));
  // K = 16385 itself is refused by the spec's size limit, before the matrix
  // is rebuilt or the programs are read.
  j["spec"]["K"] = 16385;
  CHECK_THROWS_WITH(ir::from_json(j), Catch::Contains("K = 16385, blocks = 1: an encode plan is checked against its "
                                                      "dense postcondition"));
}

TEST_CASE("fuzz: the checker's time does not grow with idle steps", "[fuzz][verify]") {
  // fuzz_binary (timeout): a 1 KB plan whose header said num_steps = 2^24
  // took 14 s to check under the sanitizers: the simulation visited every
  // rank in every step, acting or not. It now goes from one step some rank
  // acts in to the next. (The input is in the seed corpus, whose replay runs
  // with a 10 s limit under the sanitizers.)
  ir::Plan plan = tiny_plan();
  plan.num_steps = 1u << 24;  // the largest the checker accepts; steps 2.. are idle
  const auto start = std::chrono::steady_clock::now();
  passes::verify(plan);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("fuzz: a JSON number too large for a double is invalid JSON, not a crash", "[fuzz][json]") {
  // fuzz_json_plan: the document 1E621E62 made nlohmann's parser throw
  // out_of_range (number overflow), which the reader did not catch: it left
  // as a nlohmann exception (the CLI's "internal error") instead of a
  // UserError naming the file.
  const std::string text = "1E621E62";
  CHECK_THROWS_WITH(ir::read_json(text.data(), text.size(), "x.json"),
                    Catch::Contains("x.json: invalid JSON") && Catch::Contains("number overflow"));
  CHECK_THROWS_AS(ir::read_json(text.data(), text.size(), "x.json"), UserError);
}

TEST_CASE("fuzz: a small plan claiming a large operation is refused before its map is built", "[fuzz][verify]") {
  // fuzz_binary: an 826-byte .cplan whose header claims an operation with a
  // 2^27-entry postcondition (inside the limit) made the checker build that
  // map before it looked at the programs (4 s under the sanitizers). The
  // programs' input and output counts come from the spec alone and are
  // compared first.
  ir::Plan plan = tiny_plan();
  plan.spec.op = OpKind::Allgather;
  plan.spec.blocks = 4096;  // K = 2: map of 8192 inputs x 16384 outputs
  plan.spec.matrix = MatrixSpec{};
  CHECK_THROWS_WITH(ir::verify_structure(plan), Catch::Contains("rank 0: has 1 input slots, allgather needs 4096"));
  // The whole check (collplan check, run, import) takes the same path.
  CHECK_THROWS_WITH(passes::verify(plan), Catch::Contains("rank 0: has 1 input slots, allgather needs 4096"));
}
