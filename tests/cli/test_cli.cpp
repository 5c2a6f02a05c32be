// The collplan CLI end to end: the main job works, and bad input gets a clear
// message naming the bad value and a non-zero exit status, never a crash.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "ir/binary.h"
#include "matrix/codes.h"
#include "test_util.h"

using collplan::Field;
using collplan::Matrix;
using collplan::rs_code;
using collplan::test::CommandResult;
using collplan::test::run_collplan;
using collplan::test::scratch_dir;
using collplan::test::write_file;

namespace {

void expect_error(const std::string& args, int status, const std::string& needle) {
  INFO("collplan " << args);
  const CommandResult r = run_collplan(args);
  INFO(r.output());
  CHECK(r.status == status);
  CHECK(r.output().find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("cli: compile, check, show, run, recode, export/import round trip", "[cli]") {
  const auto d = scratch_dir("cli");
  const std::string plan = (d / "a.cplan").string(), json = (d / "a.json").string();
  CommandResult r = run_collplan("compile --op encode --K 16 --p 2 --field gf256 --matrix random --seed 7 -q -o " + plan + " --json " + json);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("C1 = 3") != std::string::npos);
  CHECK(r.output().find("C2 = 4") != std::string::npos);  // searched; prepare-and-shoot: 5
  r = run_collplan("check " + plan);
  REQUIRE(r.status == 0);
  CHECK(r.output().find("OK") != std::string::npos);
  r = run_collplan("check " + json + " --mode randomized --seed 5");
  REQUIRE(r.status == 0);
  CHECK(r.output().find("randomized") != std::string::npos);
  r = run_collplan("show " + plan + " --rank 3");
  REQUIRE(r.status == 0);
  CHECK(r.output().find("rank 3") != std::string::npos);
  CHECK(r.output().find("rank 4") == std::string::npos);
  r = run_collplan("run " + plan + " --len 4099 --reps 2");
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("every byte equals") != std::string::npos);
  // --stats: one line per rank, and the same figures in JSON.
  r = run_collplan("run " + plan + " --len 100 --reps 1 --stats");
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("rank 0: engine copies: ") != std::string::npos);
  CHECK(r.output().find("bytes staged, ") != std::string::npos);
  CHECK(r.output().find("bytes delivered (") != std::string::npos);
  r = run_collplan("run " + plan + " --len 100 --reps 1 --stats --format json");
  REQUIRE(r.status == 0);
  {
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j.at("engine_copies").is_array());
    CHECK(j.at("engine_copies").size() == j.at("ranks").get<size_t>());
    CHECK(j.at("engine_copies").at(0).contains("staged_bytes"));
    CHECK(j.at("engine_copies").at(0).at("delivered_bytes").get<uint64_t>() > 0);
  }
  r = run_collplan("run " + plan + " --len 100 --reps 1 --format json");
  REQUIRE(r.status == 0);
  CHECK(!nlohmann::json::parse(r.out).contains("engine_copies"));
  const std::string re = (d / "b.cplan").string();
  r = run_collplan("recode " + plan + " --matrix random --seed 99 -o " + re);
  REQUIRE(r.status == 0);
  REQUIRE(run_collplan("check " + re).status == 0);
  REQUIRE(run_collplan("run " + re + " --len 7 --reps 1").status == 0);
  const std::string j2 = (d / "b.json").string(), c2 = (d / "c.cplan").string();
  REQUIRE(run_collplan("export " + re + " -o " + j2 + " --with-matrix").status == 0);
  REQUIRE(run_collplan("import " + j2 + " -o " + c2).status == 0);
  REQUIRE(run_collplan("check " + c2).status == 0);
  REQUIRE(run_collplan("list").status == 0);
  r = run_collplan("bound --K 4096 --p 2");
  REQUIRE(r.status == 0);
  CHECK(r.output().find("C1 = 8, C2 = 80") != std::string::npos);
  std::filesystem::remove_all(d);
}

TEST_CASE("cli: matrix files and spec files", "[cli]") {
  const auto d = scratch_dir("cli");
  write_file(d / "a.csv", "1,2,3\n4,5,6\n7,8,9\n");
  write_file(d / "a.mtx", "%%MatrixMarket matrix coordinate integer general\n% comment\n3 3 2\n1 1 5\n3 2 7\n");
  write_file(d / "b.mtx", "%%MatrixMarket matrix array integer general\n2 2\n1\n2\n3\n4\n");
  write_file(d / "spec.json", R"({"op": "encode", "K": 6, "p": 1, "field": "prime:257", "matrix": "identity"})");
  CHECK(run_collplan("compile --K 3 --matrix file --matrix-file " + (d / "a.csv").string() + " -q").status == 0);
  CHECK(run_collplan("compile --K 3 --matrix file --matrix-file " + (d / "a.mtx").string() + " -q").status == 0);
  CHECK(run_collplan("compile --K 2 --matrix file --matrix-file " + (d / "b.mtx").string() + " -q").status == 0);
  const CommandResult r = run_collplan("compile --spec " + (d / "spec.json").string() + " -q");
  CHECK(r.status == 0);
  CHECK(r.output().find("field=prime:257") != std::string::npos);
  // Flags override the spec file.
  CHECK(run_collplan("compile --spec " + (d / "spec.json").string() + " --K 7 -q").output().find("K=7") != std::string::npos);
  std::filesystem::remove_all(d);
}

TEST_CASE("cli: bad input gets a clear error and exit status 2", "[cli][errors]") {
  const auto d = scratch_dir("cli");
  expect_error("compile --K 1", 2, "K = 1");
  expect_error("compile --K 0", 2, "K");
  expect_error("compile --K 8 --p 0", 2, "p = 0");
  expect_error("compile --K 8 --lambda 0", 2, "lambda = 0");
  expect_error("compile --K 8 --field prime:65536", 2, "65536");
  expect_error("compile --K 8 --field prime:1", 2, "prime:1");
  expect_error("compile --K 8 --field prime:4294967311", 2, "4294967311");
  expect_error("compile --K 8 --field gf7", 2, "gf7");
  expect_error("compile --K 8 --op scatter", 2, "scatter");
  expect_error("compile --K 8 --op allgather --p 2 --algorithm circulant-allgather", 2, "cannot compute this spec: circulant schedules use one port per processor (p = 1), got p = 2");
  expect_error("compile --K 8 --matrix hilbert", 2, "hilbert");
  expect_error("compile --K 8 --algorithm magic", 2, "magic");
  expect_error("compile --K 8 --passes fold", 2, "fold");
  expect_error("compile --K abc", 2, "abc");
  expect_error("compile --K -3", 2, "-3");
  expect_error("compile --p 2", 2, "--K");
  expect_error("compile --K 3 --matrix vandermonde --points 1,2,2", 2, "distinct");
  expect_error("compile --K 3 --matrix vandermonde --points 1,2,300", 2, "300");
  expect_error("compile --K 3 --matrix vandermonde --points 1,x,3", 2, "'x'");
  expect_error("compile --K 3 --matrix permutation --perm 0,1,1", 2, "bijection");
  expect_error("compile --K 3 --matrix permutation --perm 0,1", 2, "--perm");
  expect_error("compile --K 300 --matrix vandermonde", 2, "K <= q-1");
  expect_error("compile --K 3 --matrix file", 2, "--matrix-file");
  expect_error("compile --K 3 --matrix file --matrix-file " + (d / "missing.csv").string(), 2, "missing.csv");
  write_file(d / "small.csv", "1,2\n3,4\n");
  expect_error("compile --K 3 --matrix file --matrix-file " + (d / "small.csv").string(), 2, "2 columns");
  write_file(d / "big.csv", "1,2,300\n3,4,5\n6,7,8\n");
  expect_error("compile --K 3 --matrix file --matrix-file " + (d / "big.csv").string(), 2, "300");
  write_file(d / "neg.csv", "1,2,-3\n3,4,5\n6,7,8\n");
  expect_error("compile --K 3 --matrix file --matrix-file " + (d / "neg.csv").string(), 2, "-3");
  write_file(d / "wrong.mtx", "%%MatrixMarket matrix coordinate integer general\n4 4 1\n1 1 1\n");
  expect_error("compile --K 3 --matrix file --matrix-file " + (d / "wrong.mtx").string(), 2, "4x4");
  write_file(d / "real.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1.5\n");
  expect_error("compile --K 3 --matrix file --matrix-file " + (d / "real.mtx").string(), 2, "real");
  write_file(d / "oob.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n4 1 1\n");
  expect_error("compile --K 3 --matrix file --matrix-file " + (d / "oob.mtx").string(), 2, "(4, 1)");
  write_file(d / "bad.json", "{\"K\": \"sixteen\"}");
  expect_error("compile --spec " + (d / "bad.json").string(), 2, "wrong type");
  write_file(d / "unk.json", "{\"K\": 4, \"ports\": 2}");
  expect_error("compile --spec " + (d / "unk.json").string(), 2, "ports");
  expect_error("check " + (d / "nothing.cplan").string(), 2, "nothing.cplan");
  write_file(d / "garbage.cplan", "this is not a plan");
  expect_error("check " + (d / "garbage.cplan").string(), 2, "garbage.cplan");
  // A valid plan file with one bit flipped is refused (content hash).
  const std::string plan = (d / "a.cplan").string();
  REQUIRE(run_collplan("compile --K 8 --p 1 -q -o " + plan).status == 0);
  {
    std::fstream f(plan, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    char c;
    f.read(&c, 1);
    c ^= 0x10;
    f.seekp(200);
    f.write(&c, 1);
  }
  expect_error("check " + plan, 2, "hash");
  REQUIRE(run_collplan("compile --K 8 --p 1 -q -o " + plan).status == 0);
  expect_error("show " + plan + " --rank 99", 2, "99");
  expect_error("run " + plan + " --len 0", 2, "--len");
  expect_error("recode " + plan + " --matrix identity --seed 1", 2, "-o");
  std::filesystem::remove_all(d);
}

TEST_CASE("cli: a wrong JSON plan is rejected with exit status 1 and the place named", "[cli][errors]") {
  const auto d = scratch_dir("cli");
  const std::string json = (d / "p.json").string();
  REQUIRE(run_collplan("compile --K 4 --p 1 -q --json " + json).status == 0);
  std::ifstream in(json);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Redirect rank 0's first message to a different rank.
  const auto pos = text.find("\"to\":");
  REQUIRE(pos != std::string::npos);
  const auto digit = text.find_first_of("0123456789", pos);
  text[digit] = text[digit] == '2' ? '3' : '2';
  write_file(d / "bad.json", text);
  expect_error("check " + (d / "bad.json").string(), 1, "rank ");
  expect_error("import " + (d / "bad.json").string() + " -o " + (d / "x.cplan").string(), 1, "rank ");
  CHECK_FALSE(std::filesystem::exists(d / "x.cplan"));
  std::filesystem::remove_all(d);
}

TEST_CASE("cli: prefix and broadcast under postal latency, the order check", "[cli][postal]") {
  const auto d = scratch_dir("cli");
  const std::string pf = (d / "pf.cplan").string(), js = (d / "pf.json").string();
  CommandResult r = run_collplan("compile --op prefix --K 10 --p 2 --lambda 3 -q -o " + pf + " --json " + js);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("C1 = 6 steps   (lower bound 6") != std::string::npos);  // the paper's example: 6 steps
  r = run_collplan("check " + pf);
  REQUIRE(r.status == 0);
  CHECK(r.output().find("order:     OK") != std::string::npos);
  REQUIRE(run_collplan("run " + pf + " --len 33 --reps 1").status == 0);
  REQUIRE(run_collplan("compile --op prefix --K 10 --counts 8,8,8,8,8,8,8,8,8,8 --exclusive --p 2 --lambda 3 -q -o " + pf).status == 0);
  REQUIRE(run_collplan("run " + pf + " --len 5 --reps 1").status == 0);
  REQUIRE(run_collplan("compile --op broadcast --K 50 --root 7 --blocks 4 --p 3 --lambda 2 -q -o " + pf).status == 0);
  REQUIRE(run_collplan("run " + pf + " --len 100 --reps 1").status == 0);
  expect_error("compile --op broadcast --K 50 --root 50", 2, "root = 50");
  expect_error("compile --op prefix --K 4 --counts 1,2", 2, "2 counts");
  expect_error("compile --op encode --K 4 --exclusive", 2, "exclusive");
  // Swap the operands of one op in the JSON form: still right over the
  // field (addition commutes), but not for a non-commutative operator.
  std::ifstream in(js);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto key = text.find("\"terms\":[[");
  REQUIRE(key != std::string::npos);
  const auto a0 = key + 9, a1 = text.find(']', a0) + 1, b0 = a1 + 1, b1 = text.find(']', b0) + 1;
  const std::string first = text.substr(a0, a1 - a0), second = text.substr(b0, b1 - b0);
  text.replace(a0, b1 - a0, second + "," + first);
  write_file(d / "bad.json", text);
  expect_error("check " + (d / "bad.json").string(), 1, "out of order");
  CHECK(run_collplan("check " + (d / "bad.json").string() + " --field-only").status == 0);
  std::filesystem::remove_all(d);
}

TEST_CASE("cli: decentralized encode with codes, generator files, JSON round trip", "[cli][decentralized]") {
  const auto d = scratch_dir("cli");
  const std::string plan = (d / "rs.cplan").string(), json = (d / "rs.json").string();
  CommandResult r = run_collplan("compile --op decentralized-encode --N 24 --K 16 --p 2 --code rs --field gf256 -q -o " + plan +
                 " --json " + json);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("sources: ranks 0..15") != std::string::npos);
  CHECK(r.output().find("sinks: ranks 16..23; sink 16+j receives") != std::string::npos);
  CHECK(r.output().find("Reed-Solomon [24, 16], systematic") != std::string::npos);
  CHECK(r.output().find("phase 2 (step 3: row reduces") != std::string::npos);
  CHECK(r.output().find("C1 = 3") != std::string::npos);
  r = run_collplan("check " + plan);
  CHECK(r.status == 0);
  r = run_collplan("import " + json + " -o " + (d / "back.cplan").string());
  CHECK(r.status == 0);
  r = run_collplan("run " + plan + " --len 100 --reps 1");
  CHECK(r.status == 0);
  CHECK(r.output().find("every byte equals") != std::string::npos);
  r = run_collplan("show " + plan);
  CHECK(r.output().find("sink 16+j receives") != std::string::npos);
  r = run_collplan("show " + plan + " --rank 20");
  CHECK(r.status == 0);
  // Non-systematic Lagrange code, and a generator matrix from a file.
  r = run_collplan("compile --op decentralized-encode --N 12 --K 4 --p 1 --code lagrange --systematic false --field prime:65537 -q");
  INFO(r.output());
  CHECK(r.status == 0);
  CHECK(r.output().find("every rank j in 0..11 receives") != std::string::npos);
  write_file(d / "G.csv", "1,2,3,4,5\n6,7,8,9,10\n");
  r = run_collplan("compile --op decentralized-encode --N 5 --K 2 --systematic false --generator " + (d / "G.csv").string() + " -q");
  INFO(r.output());
  CHECK(r.status == 0);
  write_file(d / "spec.json", R"({"op": "decentralized-encode", "K": 3, "N": 8, "p": 2, "code": "random", "seed": 4})");
  r = run_collplan("compile --spec " + (d / "spec.json").string() + " --algorithm decentralized-naive -q");
  INFO(r.output());
  CHECK(r.status == 0);
  CHECK(r.output().find("algorithm=decentralized-naive") != std::string::npos);
  // Long vectors: x_k in 8 blocks, the rows streamed by the circulant schedule under a bandwidth-bound model.
  const std::string blocked = (d / "blocked.cplan").string();
  r = run_collplan("compile --op decentralized-encode --N 40 --K 4 --code rs --blocks 8 --beta 1 --tau 1 --cost-len 4096 -q -o " +
          blocked);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("each in 8 blocks") != std::string::npos);
  CHECK(r.output().find("row broadcasts of x_i from the sources by circulant-broadcast") != std::string::npos);
  r = run_collplan("run " + blocked + " --len 64 --reps 1");
  CHECK(r.status == 0);
  CHECK(r.output().find("every byte equals") != std::string::npos);
  r = run_collplan("show " + blocked);
  CHECK(r.output().find("each in 8 blocks") != std::string::npos);
  r = run_collplan("compile --op decentralized-encode --N 64 --K 4 --blocks auto --beta 100 --tau 1 --cost-len 4096 -q");
  INFO(r.output());
  CHECK(r.status == 0);
  CHECK(r.output().find("blocks auto: the streamed row phase on rows of 16 ranks") != std::string::npos);
  r = run_collplan("compile --op reduce --K 100 --blocks auto --beta 100 --tau 1 --cost-len 100000 -q");
  CHECK(r.status == 0);
  CHECK(r.output().find("algorithm=circulant-reduce n=80 (blocks auto") != std::string::npos);
  r = run_collplan("list");
  CHECK(r.output().find("(compile --rank: one rank alone)") != std::string::npos);
  expect_error("compile --op decentralized-encode --N 40 --K 4 --blocks 100000", 2, "blocks = 100000");
  expect_error("compile --op allgather --K 4 --blocks auto", 2, "allreduce, allgatherv, decentralized-encode, repair and decode");
  expect_error("compile --op prefix --K 4 --blocks 3", 2, "blocks = 3");
  expect_error("compile --op decentralized-encode --K 4 --p 1", 2, "--N is required");
  expect_error("compile --op decentralized-encode --N 4 --K 4", 2, "N = 4");
  expect_error("compile --op decentralized-encode --N 300 --K 10 --code rs", 2, "N = 300");
  expect_error("compile --op decentralized-encode --N 8 --K 3 --code bch", 2, "'bch'");
  expect_error("compile --op decentralized-encode --N 5 --K 2 --generator " + (d / "G.csv").string(), 2, "G.csv");
  expect_error("compile --op decentralized-encode --N 8 --K 3 --systematic false --algorithm decentralized-grid", 2,
               "decentralized-grouped");
}

TEST_CASE("cli: structured matrices, --explain, evaluation points, the RS generator matrix", "[cli][structured]") {
  const auto d = scratch_dir("cli");
  const std::string plan = (d / "dft.cplan").string(), gen = (d / "g.csv").string();
  CommandResult r = run_collplan("compile --K 16 --p 1 --field prime:257 --matrix dft --explain -q -o " + plan);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("prepare-shoot                C1 = 4    C2 = 6") != std::string::npos);
  CHECK(r.output().find("dft                          C1 = 4    C2 = 4") != std::string::npos);
  CHECK(r.output().find("lagrange                     not applicable: lagrange needs a matrix of family lagrange, got dft") !=
        std::string::npos);
  CHECK(r.output().find("chosen: dft, the least modeled time 8") != std::string::npos);
  CHECK(r.output().find("algorithm=dft P=2") != std::string::npos);
  r = run_collplan("show " + plan + " --rank 8");
  REQUIRE(r.status == 0);
  // Each rank line names the evaluation point the rank gets.
  CHECK(r.output().find("rank 8: ") != std::string::npos);
  CHECK(r.output().find("gets f(") != std::string::npos);
  r = run_collplan("run " + plan + " --len 100 --reps 1");
  CHECK(r.status == 0);
  r = run_collplan("compile --K 8 --p 1 --field prime:17 --matrix rs-systematic -q --write-generator " + gen);
  INFO(r.output());
  REQUIRE(r.status == 0);
  std::ifstream in(gen);
  std::string line;
  std::getline(in, line);  // comment
  std::getline(in, line);
  CHECK(line.rfind("1,0,0,0,0,0,0,0,", 0) == 0);
  // A decentralized RS spec writes [I | A] of the same RS definition the
  // plan encodes (matrix/codes.h).
  r = run_collplan("compile --op decentralized-encode --N 12 --K 4 --code rs --field prime:257 -q --write-generator " + gen);
  INFO(r.output());
  REQUIRE(r.status == 0);
  {
    std::ifstream g(gen);
    std::getline(g, line);
    CHECK(line.find("systematic generator of the [12, 4] code over") != std::string::npos);
    const Matrix want = rs_code(12, 4, Field::prime(257)).generator();
    for (uint32_t i = 0; i < 4; ++i) {
      std::getline(g, line);
      std::string row;
      for (uint32_t j = 0; j < 12; ++j) row += (j ? "," : "") + std::to_string(want.at(i, j));
      CHECK(line == row);
    }
  }
  // Bad requests name the condition.
  std::string pts;
  for (int i = 1; i <= 12; ++i) pts += (i > 1 ? "," : "") + std::to_string(i);
  expect_error("compile --K 12 --matrix vandermonde --points " + pts + " --algorithm dft", 2,
               "algorithm 'dft' cannot compute this spec: dft needs K | q-1: K = 12, q-1 = 255");
  expect_error("compile --K 16 --matrix dft", 2, "dft needs K | q-1: K = 16, q-1 = 255");
  expect_error("compile --K 24 --field prime:7681 --matrix draw-loose --phi 0,1,960", 2,
               "phi[2] = 960 is out of range (valid: 0..(q-1)/Z-1 = 959)");
  expect_error("compile --K 16 --field prime:257 --matrix dft --phi 1", 2, "--phi applies to --matrix draw-loose");
  expect_error("compile --K 16 --field prime:257 --matrix random --radix 2", 2,
               "--radix and --phi choose structured points; --matrix random has none");
  expect_error("compile --K 16 --field prime:257 --matrix random --write-generator " + gen, 2,
               "--write-generator needs --matrix rs-systematic or --op decentralized-encode");
}

TEST_CASE("cli: circulant broadcast with --blocks auto, and its errors", "[cli][circulant-plans]") {
  const auto d = scratch_dir("cli");
  const std::string plan = (d / "bcast.cplan").string();
  const CommandResult r = run_collplan("compile --op broadcast --K 100 --root 7 --blocks auto --beta 100 --tau 1 --cost-len 100000 -q -o " +
                       plan);
  INFO(r.output());
  REQUIRE(r.status == 0);
  // n* = sqrt((q−1)·m·τ/β) = sqrt(6·100000/100) ≈ 77.5; the integer argmin is 80.
  CHECK(r.output().find("algorithm=circulant-broadcast n=80 (blocks auto") != std::string::npos);
  CHECK(r.output().find("C1 = 86 steps") != std::string::npos);
  const CommandResult c = run_collplan("check " + plan);
  INFO(c.output());
  CHECK(c.status == 0);
  write_file(d / "auto.json", R"({"op": "broadcast", "K": 33, "blocks": "auto"})");
  const CommandResult sf = run_collplan("compile --spec " + (d / "auto.json").string() + " --beta 50 --tau 1 --cost-len 20000 -q");
  INFO(sf.output());
  CHECK(sf.status == 0);
  CHECK(sf.output().find("(blocks auto") != std::string::npos);
  // Allgatherv with p = 2: n for the pipelined, striped circulant plan; the
  // file checks, and the cost report gives the receive-volume ratio.
  const std::string agv = (d / "agv.cplan").string();
  const CommandResult v = run_collplan("compile --op allgatherv --K 12 --p 2 --counts 40,3,0,17,25,9,31,0,12,8,44,6 "
                                       "--blocks auto --beta 0 -o " + agv);
  INFO(v.output());
  REQUIRE(v.status == 0);
  CHECK(v.output().find("algorithm=circulant-allgatherv n=") != std::string::npos);
  CHECK(v.output().find("(blocks auto: argmin (n-1+q)beta + C2(n) m tau of circulant-allgatherv, q=4, p=2") !=
        std::string::npos);
  CHECK(v.output().find("receive volume bound 98, ratio 1.1") != std::string::npos);
  const CommandResult vc = run_collplan("check " + agv);
  INFO(vc.output());
  CHECK(vc.status == 0);
  expect_error("compile --op allgather --K 8 --blocks auto -q", 2, "--blocks auto is supported for broadcast, reduce, allreduce, allgatherv, decentralized-encode, repair and decode");
  expect_error("compile --op broadcast --K 8 --blocks many -q", 2, "'many'");
  expect_error("compile --op broadcast --K 8 --p 2 --blocks 4 --algorithm circulant-broadcast -q", 2,
               "algorithm 'circulant-broadcast' cannot compute this spec: circulant schedules use one port per processor (p = 1), got p = 2");
  std::filesystem::remove_all(d);
}

TEST_CASE("cli: verify-circulant sweeps, spot checks and its errors", "[cli][circulant]") {
  CommandResult r = run_collplan("verify-circulant --pmax 600 --threads 2");
  INFO(r.output());
  CHECK(r.status == 0);
  CHECK(r.output().find("verified every rank of every p in [1, 600]") != std::string::npos);
  CHECK(r.output().find("180300 ranks") != std::string::npos);  // 600·601/2
  r = run_collplan("verify-circulant --pmin 100 --pmax 140 --reference --threads 1");
  CHECK(r.status == 0);
  CHECK(r.output().find("per-rank reference") != std::string::npos);
  r = run_collplan("verify-circulant --K 2147483648 --sample-ranks 40 --threads 2");
  CHECK(r.status == 0);
  CHECK(r.output().find("verified 40 sampled ranks of p = 2147483648") != std::string::npos);
  expect_error("verify-circulant", 2, "give either --Kmax N, or --K K with --sample-ranks S");
  expect_error("verify-circulant --K 100", 2, "needs both --K K and --sample-ranks S");
  expect_error("verify-circulant --K 2147483649 --sample-ranks 3", 2, "--K 2147483649 is out of range");
  expect_error("verify-circulant --pmin 50 --pmax 10", 2, "--Kmax 10 is below --Kmin 50");
  expect_error("verify-circulant --Kmin 50 --Kmax 10", 2, "--Kmax 10 is below --Kmin 50");
  // --p means ports everywhere else: refused here with a pointer to --K.
  expect_error("verify-circulant --p 100 --sample-ranks 3", 2, "give the processor count as --K");
}

TEST_CASE("cli: compile --rank writes a rank-local file equal to the extracted rank", "[cli][rank-local]") {
  const auto d = scratch_dir("cli");
  struct Case {
    std::string op, algorithm, extra;
  };
  const std::vector<Case> cases = {
      {"broadcast", "circulant-broadcast", "--blocks 3 --root 5"},
      {"reduce", "circulant-reduce", "--blocks 4 --root 19"},
      {"allgather", "circulant-allgather", "--blocks 2"},
      {"allreduce", "circulant-allreduce", "--blocks 3"},
      {"allgatherv", "circulant-allgatherv",
       "--blocks 2 --counts 1,0,2,3,1,0,0,4,1,2,1,1,0,3,2,1,0,1,2,5"},
      {"allgatherv", "dissemination-allgather",
       "--blocks 2 --p 2 --lambda 2 --counts 1,0,2,3,1,0,0,4,1,2,1,1,0,3,2,1,0,1,2,5"},
      {"reduce-scatter", "circulant-reduce-scatter", "--blocks 2"},
      {"reduce-scatter", "dissemination-reduce-scatter", "--blocks 2 --p 3"},
      {"allreduce", "dissemination-allreduce", "--blocks 3 --p 2 --lambda 3"},
      {"allreduce", "reduce-scatter-allgather", "--blocks 30 --p 2"},
      {"broadcast", "tree-broadcast", "--blocks 3 --root 5 --p 2 --lambda 2"},
      {"reduce", "pipelined-reduce", "--blocks 4 --root 11 --lambda 2"},
      {"broadcast", "postal-broadcast", "--blocks 2 --root 9 --p 2 --lambda 3"},
      {"prefix", "postal-prefix", "--p 2 --lambda 2 --counts 1,0,2,3,1,0,0,4,1,2,1,1,0,3,2,1,0,1,2,5 --exclusive"},
  };
  for (const Case& c : cases) {
    const std::string spec = "--op " + c.op + " --K 20 " + c.extra + " --algorithm " + c.algorithm + " -q";
    const std::string full = (d / (c.algorithm + "-full.cplan")).string(),
                      one = (d / (c.algorithm + "-7.cplan")).string(), ext = (d / (c.algorithm + "-7x.cplan")).string();
    INFO(spec);
    CommandResult r = run_collplan("compile " + spec + " -o " + full);
    INFO(r.output());
    REQUIRE(r.status == 0);
    REQUIRE(run_collplan("extract " + full + " --rank 7 -o " + ext).status == 0);
    r = run_collplan("compile " + spec + " --rank 7 -o " + one);
    REQUIRE(r.status == 0);
    CHECK(r.output().find("rank 7 compiled alone") != std::string::npos);
    CHECK(r.output().find("does not prove the whole-plan postcondition") != std::string::npos);
    // The same program as the whole plan's rank 7 (default passes there,
    // the per-rank ones here), under the same spec.
    collplan::ir::PlanHeader h1, h2;
    CHECK(collplan::ir::read_rank(one, 7, &h1) == collplan::ir::read_rank(ext, 7, &h2));
    CHECK(h1.spec == h2.spec);
    CHECK(h1.compiled_alone);
    CHECK_FALSE(h2.compiled_alone);
    r = run_collplan("check " + one);
    INFO(r.output());
    CHECK(r.status == 0);
    CHECK(r.output().find("rank-local file, compiled alone") != std::string::npos);
    CHECK(r.output().find("does not prove the whole-plan postcondition") != std::string::npos);
    CHECK(r.output().find("compile the whole plan") != std::string::npos);
    r = run_collplan("check --json " + one);
    CHECK(r.status == 0);
    CHECK(r.output().find("\"compiled_alone\": true") != std::string::npos);
    // show prints it as the whole plan's rank 7 prints.
    const CommandResult s1 = run_collplan("show " + one), s2 = run_collplan("show " + full + " --rank 7");
    CHECK(s1.status == 0);
    CHECK(s1.output() == s2.output());
    r = run_collplan("emit-cpp " + one + " -o " + (d / (c.algorithm + "-emit")).string());
    CHECK(r.status == 0);
    CHECK(r.output().find("rank-local file") != std::string::npos);
    expect_error("run " + one, 2, "compiled alone");
  }
}

TEST_CASE("cli: compile --rank at K = 2^31, and its errors", "[cli][rank-local][errors]") {
  const auto d = scratch_dir("cli");
  const std::string big = (d / "big.cplan").string();
  CommandResult r = run_collplan("compile --op broadcast --K 2147483648 --blocks 8 --rank 2147483000 -q -o " + big);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("algorithm=circulant-broadcast") != std::string::npos);  // auto, among the rank-local ones
  r = run_collplan("check " + big);
  CHECK(r.status == 0);
  CHECK(r.output().find("above the whole-plan limit") != std::string::npos);
  CHECK(run_collplan("show " + big).output().find("rank 2147483000:") != std::string::npos);
  expect_error("emit-cpp " + big + " -o " + (d / "big-emit").string(), 2, "emit-cpp reads plans of K <= 16777216 ranks");
  const std::string out = " -q -o " + (d / "x.cplan").string();
  expect_error("compile --op broadcast --K 20 --rank 20" + out, 2, "--rank 20 is not a processor");
  expect_error("compile --op encode --K 20 --algorithm prepare-shoot --rank 1" + out, 2,
               "algorithm 'prepare-shoot' cannot compile one rank alone (generators that can: postal-prefix, "
               "postal-broadcast");
  // auto picks among all generators, here one of the p-port ones.
  r = run_collplan("compile --op broadcast --K 20 --p 2 --rank 1" + out);
  CHECK(r.status == 0);
  CHECK(r.output().find("algorithm=postal-broadcast, rank 1 compiled alone") != std::string::npos);
  expect_error("compile --op encode --K 20 --rank 1" + out, 2, "no generator that compiles one rank alone computes");
  expect_error("compile --op broadcast --K 16777217 --algorithm circulant-broadcast" + out, 2,
               "K = 16777217 is too large");
  expect_error("compile --op broadcast --K 16777217 --algorithm circulant-broadcast" + out, 2, "compile --rank");
  expect_error("compile --op allgather --K 16777217 --algorithm circulant-allgather --rank 3" + out, 2,
               "K*n = 16777217*1 = 16777217 elements per rank is too large");
  expect_error("compile --op broadcast --K 2147483649 --rank 3" + out, 2, "K = 2147483649 is too large");
  expect_error("compile --op broadcast --K 20 --algorithm circulant-broadcast --rank 3 --passes drop-zeros" + out, 2,
               "needs every rank");
  expect_error("compile --op broadcast --K 20 --rank 3 -q", 2, "give -o FILE");
  expect_error("compile --op broadcast --K 20 --rank 3 --json x.json" + out, 2, "--json writes a whole plan");
}

TEST_CASE("cli: reduce-scatter, p-port allgather and the two allreduces, with --explain and --blocks auto",
          "[cli][dissemination]") {
  const auto d = scratch_dir("cli");
  const std::string plan = (d / "rs.cplan").string();
  CommandResult r = run_collplan("compile --op reduce-scatter --K 10 --p 3 --blocks 2 -q -o " + plan);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("algorithm=dissemination-reduce-scatter") != std::string::npos);
  // n⌈(K−1)/p⌉ = 6 against the receive-volume bound ⌈n(K−1)/p⌉ = 6.
  CHECK(r.output().find("C2 = 6 elements (receive volume bound 6, ratio 1.000)") != std::string::npos);
  r = run_collplan("run " + plan + " --len 100 --reps 1");
  INFO(r.output());
  CHECK(r.status == 0);
  CHECK(r.output().find("every byte equals the direct computation") != std::string::npos);
  // A long vector: --blocks auto cuts it into K chunks and auto picks
  // reduce-scatter then allgather (for K = 8 by recursive halving and
  // doubling, which ties the dissemination one); --explain lists the
  // latency-optimal ones.
  r = run_collplan("compile --op allreduce --K 8 --blocks auto --cost-len 1048576 --beta 4000 --tau 0.07 --explain -q -o " +
          plan);
  INFO(r.output());
  REQUIRE(r.status == 0);
  CHECK(r.output().find("dissemination-allreduce      C1 = 3    C2 = 24") != std::string::npos);
  CHECK(r.output().find("reduce-scatter-allgather     C1 = 6    C2 = 14") != std::string::npos);
  CHECK(r.output().find("chosen: recursive-halving-doubling") != std::string::npos);
  CHECK(r.output().find("algorithm=recursive-halving-doubling n=8 (blocks auto") != std::string::npos);
  CHECK(r.output().find("C2 = 14 elements") != std::string::npos);
  // A short one keeps the whole vector per message.
  r = run_collplan("compile --op allreduce --K 8 --p 2 --blocks auto --cost-len 16 --beta 4000 --tau 0.07 -q");
  INFO(r.output());
  CHECK(r.status == 0);
  CHECK(r.output().find("algorithm=dissemination-allreduce n=1 (blocks auto") != std::string::npos);
  expect_error("compile --op reduce-scatter --K 8 --p 2 --algorithm circulant-reduce-scatter -q", 2,
               "circulant schedules use one port per processor (p = 1), got p = 2");
  expect_error("compile --op reduce-scatter --K 5000 --blocks 4000 -q", 2, "K*n = 5000*4000");
  expect_error("compile --op allgather --K 12000 -q", 2, "over the 2^26 = 67108864 collplan builds in one plan");
  expect_error("compile --op reduce-scater --K 8 -q", 2, "reduce-scatter");
  std::filesystem::remove_all(d);
}
