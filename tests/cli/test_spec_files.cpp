// Spec files and the spec flags of `collplan compile` (docs/spec-files.md):
// both list forms, every key, errors naming the key, a plan's own spec object
// compiled back to the same plan, plan bytes that do not depend on how a
// matrix file is named, options an operation does not use refused, ranges
// and negative numbers. The CLI runs as a subprocess, as a user runs it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_util.h"

namespace fs = std::filesystem;
using collplan::test::CommandResult;
using collplan::test::read_file;
using collplan::test::run_collplan;
using collplan::test::scratch_dir;
using collplan::test::write_file;

namespace {

// The digest `compile -o` prints ("wrote X (digest H)"); fails the test when
// the compile failed.
std::string digest_of(const CommandResult& r) {
  INFO(r.output());
  REQUIRE(r.status == 0);
  const auto at = r.output().find("(digest ");
  REQUIRE(at != std::string::npos);
  return r.output().substr(at + 8, 32);
}

// Compiles `args` into dir/out.cplan and returns the digest.
std::string compile_digest(const std::string& args, const fs::path& dir, const fs::path& cwd = {}) {
  INFO("collplan compile " << args);
  return digest_of(run_collplan("compile " + args + " -q -o '" + (dir / "out.cplan").string() + "'", cwd));
}

void expect_error(const std::string& args, const std::string& needle, const fs::path& cwd = {}) {
  INFO("collplan " << args);
  const CommandResult r = run_collplan(args, cwd);
  INFO(r.output());
  CHECK(r.status == 2);
  CHECK(r.output().find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("spec files: the plan holds a matrix file's entries, never its path", "[spec-files]") {
  const fs::path d = scratch_dir("spec-paths");
  fs::create_directories(d / "sub" / "deeper");
  fs::create_directories(d / "elsewhere");
  const std::string A = "1,2,3\n4,5,6\n7,8,10\n";
  write_file(d / "A.csv", A);
  write_file(d / "elsewhere" / "A.csv", A);
  write_file(d / "elsewhere" / "renamed.csv", A);
  const fs::path out = d / "out.cplan";
  auto plan = [&](const std::string& file, const fs::path& cwd) {
    INFO(file << " from " << cwd);
    const CommandResult r = run_collplan("compile --K 3 --matrix file --matrix-file " + file + " -q -o '" + out.string() + "'", cwd);
    const std::string dg = digest_of(r);
    return std::make_pair(dg, read_file(out));
  };
  const auto ref = plan("A.csv", d);
  CHECK(read_file(out).find("A.csv") == std::string::npos);  // no name in the bytes
  for (const auto& [file, cwd] : std::vector<std::pair<std::string, fs::path>>{
           {"./A.csv", d},
           {"'" + (d / "A.csv").string() + "'", d},
           {"../A.csv", d / "sub"},
           {"../../A.csv", d / "sub" / "deeper"},
           {"'" + (d / "A.csv").string() + "'", d / "sub"},
           {"A.csv", d / "elsewhere"},
           {"renamed.csv", d / "elsewhere"},
           {"elsewhere/./renamed.csv", d},
       }) {
    const auto got = plan(file, cwd);
    CHECK(got.first == ref.first);
    CHECK(got.second == ref.second);  // the same bytes, not only the same digest
  }
  // --matrix-file alone means --matrix file.
  CHECK(compile_digest("--K 3 --matrix-file A.csv", d, d) == ref.first);
  // The JSON plan names no path either.
  REQUIRE(run_collplan("compile --K 3 --matrix-file A.csv -q --json a.json", d).status == 0);
  CHECK(read_file(d / "a.json").find("A.csv") == std::string::npos);
  // A spec file's matrix_file is relative to the spec file's folder.
  write_file(d / "sub" / "spec.json", R"({"K": 3, "matrix": "file", "matrix_file": "../A.csv"})");
  CHECK(compile_digest("--spec sub/spec.json", d, d) == ref.first);
  CHECK(compile_digest("--spec spec.json", d, d / "sub") == ref.first);
  // A decentralized code's generator file: no path either.
  write_file(d / "G.csv", "1,2,3,4,5\n6,7,8,9,10\n");
  write_file(d / "elsewhere" / "G2.csv", "1,2,3,4,5\n6,7,8,9,10\n");
  const std::string g = "--op decentralized-encode --N 5 --K 2 --systematic false --generator ";
  CHECK(compile_digest(g + "G.csv", d, d) == compile_digest(g + "G2.csv", d, d / "elsewhere"));
  fs::remove_all(d);
}

TEST_CASE("spec files: lists as JSON arrays or comma strings, every key as its flag", "[spec-files]") {
  const fs::path d = scratch_dir("spec-keys");
  write_file(d / "A.csv", "1,2\n3,4\n");
  write_file(d / "G.csv", "1,2,3,4,5\n6,7,8,9,10\n");
  struct Case {
    std::string flags, file;
  };
  const std::vector<Case> cases = {
      {"--op encode --K 6 --p 2 --lambda 1 --field prime:257 --matrix random --seed 9",
       R"({"op": "encode", "K": 6, "p": 2, "lambda": 1, "field": "prime:257", "matrix": "random", "seed": 9})"},
      {"--K 4 --matrix vandermonde --points 3,5,7,9", R"({"K": 4, "matrix": "vandermonde", "points": [3, 5, 7, 9]})"},
      {"--K 4 --matrix vandermonde --points 3,5,7,9", R"({"K": 4, "matrix": "vandermonde", "points": "3,5,7,9"})"},
      {"--K 6 --matrix permutation --perm 1,0,3,2,5,4",
       R"({"K": 6, "matrix": "permutation", "perm": [1, 0, 3, 2, 5, 4]})"},
      {"--K 6 --matrix permutation --perm 1,0,3,2,5,4", R"({"K": 6, "matrix": "permutation", "perm": "1,0,3,2,5,4"})"},
      {"--K 2 --matrix file --matrix-file A.csv", R"({"K": 2, "matrix_file": "A.csv"})"},
      {"--K 16 --field prime:257 --matrix dft --radix 4", R"({"K": 16, "field": "prime:257", "matrix": "dft", "radix": 4})"},
      {"--K 24 --field prime:7681 --matrix draw-loose --phi 5,0,7",
       R"({"K": 24, "field": "prime:7681", "matrix": "draw-loose", "phi": [5, 0, 7]})"},
      {"--K 24 --field prime:7681 --matrix draw-loose --phi 5,0,7",
       R"({"K": 24, "field": "prime:7681", "matrix": "draw-loose", "phi": "5,0,7"})"},
      {"--op broadcast --K 12 --root 5 --blocks 4 --lambda 2", R"({"op": "broadcast", "K": 12, "root": 5, "blocks": 4, "lambda": 2})"},
      {"--op broadcast --K 33 --blocks auto --beta 50 --tau 1 --cost-len 20000",
       R"({"op": "broadcast", "K": 33, "blocks": "auto", "beta": 50, "tau": 1, "cost_len": 20000})"},
      {"--op allgatherv --K 6 --counts 3,0,5,1,2,4 --blocks 2",
       R"({"op": "allgatherv", "K": 6, "counts": [3, 0, 5, 1, 2, 4], "blocks": 2})"},
      {"--op prefix --K 10 --counts 8,8,8,8,8,8,8,8,8,8 --exclusive --p 2 --lambda 3",
       R"({"op": "prefix", "K": 10, "counts": "8,8,8,8,8,8,8,8,8,8", "exclusive": true, "p": 2, "lambda": 3})"},
      {"--op decentralized-encode --N 12 --K 4 --code lagrange --systematic false --field prime:65537",
       R"({"op": "decentralized-encode", "N": 12, "K": 4, "code": "lagrange", "systematic": false, "field": "prime:65537"})"},
      {"--op decentralized-encode --N 8 --K 3 --code random --seed 4",
       R"({"op": "decentralized-encode", "N": 8, "K": 3, "code": "random", "seed": 4})"},
      {"--op decentralized-encode --N 5 --K 2 --systematic false --generator G.csv",
       R"({"op": "decentralized-encode", "N": 5, "K": 2, "systematic": false, "generator": "G.csv"})"},
      {"--K 16 --p 2 --algorithm prepare-shoot --passes none", R"({"K": 16, "p": 2, "algorithm": "prepare-shoot", "passes": "none"})"},
      {"--K 16 --p 2 --algorithm prepare-shoot --passes none", R"({"K": 16, "p": 2, "algorithm": "prepare-shoot", "passes": []})"},
      {"--K 16 --p 2 --passes drop-zeros", R"({"K": 16, "p": 2, "passes": ["drop-zeros"]})"},
      // beta, tau and cost_len drive the choices of --algorithm auto.
      {"--op allreduce --K 8 --blocks auto --cost-len 1048576 --beta 4000 --tau 0.07",
       R"({"op": "allreduce", "K": 8, "blocks": "auto", "cost_len": 1048576, "beta": 4000, "tau": 0.07})"},
      {"--K 30 --p 2 --lambda 4 --beta 1 --tau 100", R"({"K": 30, "p": 2, "lambda": 4, "beta": 1, "tau": 100})"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    write_file(d / "spec.json", c.file);
    const std::string want = compile_digest(c.flags, d, d);
    CHECK(compile_digest("--spec spec.json", d, d) == want);
  }
  // The cost model changes what auto picks: the spec file's beta/tau are used.
  write_file(d / "a.json", R"({"op": "allreduce", "K": 8, "blocks": "auto", "cost_len": 16, "beta": 4000, "tau": 0.07})");
  CHECK(run_collplan("compile --spec a.json -q", d).output().find("allreduce n=1 (blocks auto") != std::string::npos);
  write_file(d / "b.json", R"({"op": "allreduce", "K": 8, "blocks": "auto", "cost_len": 1048576, "beta": 4000, "tau": 0.07})");
  CHECK(run_collplan("compile --spec b.json -q", d).output().find("recursive-halving-doubling n=8") != std::string::npos);
  // The command line wins over the file, key by key.
  write_file(d / "spec.json", R"({"K": 6, "matrix": "random", "seed": 9, "beta": 5})");
  CHECK(compile_digest("--spec spec.json --seed 2", d, d) == compile_digest("--K 6 --seed 2", d, d));
  CHECK(run_collplan("compile --spec spec.json --K 7 -q", d).output().find("K=7") != std::string::npos);
  CHECK(run_collplan("compile --spec spec.json -q", d).output().find("beta=5") != std::string::npos);
  CHECK(run_collplan("compile --spec spec.json --beta 3 -q", d).output().find("beta=3") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("spec files: errors name the key and what is valid", "[spec-files][errors]") {
  const fs::path d = scratch_dir("spec-errors");
  auto bad = [&](const std::string& text, const std::string& needle) {
    write_file(d / "s.json", text);
    expect_error("compile -q --spec '" + (d / "s.json").string() + "'", needle);
  };
  bad(R"({"K": 0})", "--K 0 (key \"K\" of spec file");
  bad(R"({"op": "decentralized-encode", "K": 0, "N": 8})", "is out of range (valid: 1 <= K < N sources");
  bad(R"({"K": 4, "ports": 2})", "unknown key \"ports\" (valid: op, K, N, p, lambda, field, matrix");
  bad(R"({"K": "sixteen"})", "key \"K\" has the wrong type: expected an integer");
  bad(R"({"K": 4.5})", "key \"K\" has the wrong type: expected an integer");
  bad(R"({"K": 8, "seed": -1})", "key \"seed\": -1 is negative (valid: 0..18446744073709551615)");
  bad(R"({"K": 8, "p": 4294967296})", "key \"p\": 4294967296 is too large");
  bad(R"({"K": 4, "matrix": "vandermonde", "points": [1, "x", 3, 4]})",
      "key \"points\": entry 1: expected a non-negative integer, got string");
  bad(R"({"K": 4, "matrix": "vandermonde", "points": [1, -2, 3, 4]})", "key \"points\": entry 1 is -2: negative");
  bad(R"({"K": 4, "matrix": "vandermonde", "points": "1,x,3,4"})", "key \"points\": 'x' is not a non-negative integer");
  bad(R"({"K": 4, "matrix": "vandermonde", "points": {"a": 1}})", "key \"points\" has the wrong type: expected an array");
  bad(R"({"op": "prefix", "K": 4, "exclusive": 1})", "key \"exclusive\" has the wrong type: expected true or false");
  bad(R"({"op": "broadcast", "K": 4, "blocks": "many"})", "key \"blocks\": 'many' is not a block count");
  bad(R"({"op": "scatter", "K": 4})", "key \"op\": unknown operation");
  bad(R"({"K": 4, "field": "gf7"})", "key \"field\": ");
  bad(R"({"K": 4, "beta": "fast"})", "key \"beta\" has the wrong type: expected a number");
  bad(R"({"K": 4, "tau": -1})", "key \"tau\": -1 is invalid");
  bad(R"({"K": 4, "cost_len": 0})", "key \"cost_len\": 0 is invalid");
  bad(R"({"K": 4, "passes": [1]})", "key \"passes\": entry 0: expected a pass name, got integer");
  bad(R"({"K": 4, "passes": "fold"})", "fold");
  bad(R"([1, 2])", "must hold a JSON object");
  bad(R"({"format": "other", "spec": {}})", "not \"collplan-plan\"");
  bad(R"({"format": "collplan-plan"})", "without a \"spec\" object");
  bad(R"({"K": 2, "matrix": {"family": "explicit", "rows": 2, "cols": 2}})", "matrix.entries: missing");
  bad(R"({"K": 2, "matrix": {"family": "random", "rows": 2, "cols": 2, "seed": 1, "digest": "00000000000000000000000000000000"}})",
      "matrix.digest: 00000000000000000000000000000000 does not match");
  bad(R"({"K": 2, "matrix": {"family": "random", "rows": 2, "cols": 2, "size": 1}})", "matrix.size: unknown member");
  bad(R"({"K": 3, "matrix": "explicit"})", "--matrix explicit is a matrix given by its entries");
  bad(R"({"K": 2, "seed": 5, "matrix": {"family": "random", "rows": 2, "cols": 2, "seed": 1}})",
      "key \"seed\" and the matrix object's \"seed\" differ");
  fs::remove_all(d);
}

TEST_CASE("spec files: a plan's own spec compiles back to the same plan, every operation and matrix family",
          "[spec-files][round-trip][heavy]") {
  const fs::path d = scratch_dir("spec-round-trip");
  write_file(d / "A.csv", "1,2,3\n4,5,6\n7,8,10\n");
  write_file(d / "G.csv", "1,2,3,4,5\n6,7,8,9,10\n");
  const std::vector<std::string> cases = {
      "--op encode --K 8 --p 2 --matrix random --seed 7",
      "--K 8 --field prime:257 --matrix vandermonde",
      "--K 4 --matrix vandermonde --points 3,5,7,9",
      "--K 6 --matrix identity",
      "--K 6 --matrix permutation --perm 1,0,3,2,5,4",
      "--K 6 --matrix permutation --seed 3",
      "--K 3 --matrix file --matrix-file A.csv",
      "--K 16 --field prime:257 --matrix dft",
      "--K 16 --field prime:257 --matrix inverse-dft",
      "--K 24 --field prime:7681 --matrix draw-loose --phi 5,0,7",
      "--K 24 --field prime:7681 --matrix inverse-draw-loose",
      "--K 8 --field prime:257 --matrix lagrange",
      "--K 8 --field prime:257 --matrix cauchy",
      "--K 8 --field prime:17 --matrix rs-systematic",
      "--K 10 --p 2 --lambda 3",  // postal encode, the split chosen by the cost model
      "--K 8 --p 2 --blocks 3 --field gf65536",
      "--op decentralized-encode --N 24 --K 16 --p 2 --code rs",
      "--op decentralized-encode --N 12 --K 4 --code lagrange --systematic false --field prime:65537",
      "--op decentralized-encode --N 8 --K 3 --code random --seed 4",
      "--op decentralized-encode --N 5 --K 2 --systematic false --generator G.csv",
      "--op decentralized-encode --N 40 --K 4 --blocks auto --beta 100 --tau 1 --cost-len 4096",
      "--op broadcast --K 12 --root 5 --blocks 4 --lambda 2",
      "--op broadcast --K 33 --root 3 --blocks auto --beta 50 --tau 1 --cost-len 20000",
      "--op reduce --K 9 --root 4 --blocks 3",
      "--op allgather --K 7 --blocks 2",
      "--op allgatherv --K 6 --counts 3,0,5,1,2,4 --blocks 2",
      "--op prefix --K 10 --p 2 --lambda 3",
      "--op prefix --K 10 --counts 8,8,8,8,8,8,8,8,8,8 --exclusive --p 2 --lambda 3",
      "--op reduce-scatter --K 10 --p 3 --blocks 2",
      "--op allreduce --K 8 --p 2",
      "--op allreduce --K 8 --blocks auto --cost-len 1048576 --beta 4000 --tau 0.07",
  };
  for (const std::string& c : cases) {
    INFO(c);
    const CommandResult r = run_collplan("compile " + c + " -q -o first.cplan --json first.json", d);
    const std::string want = digest_of(r);
    // The JSON plan itself, and its bare "spec" object.
    CHECK(compile_digest("--spec first.json", d, d) == want);
    const nlohmann::json plan = nlohmann::json::parse(read_file(d / "first.json"));
    write_file(d / "spec.json", plan.at("spec").dump(2));
    CHECK(compile_digest("--spec spec.json", d, d) == want);
    // With the matrix entries written out (export --with-matrix), too.
    if (plan.at("spec").contains("matrix")) {
      REQUIRE(run_collplan("export first.cplan -o full.json --with-matrix", d).status == 0);
      CHECK(compile_digest("--spec full.json", d, d) == want);
    }
  }
  // The command line still wins: another seed, another plan.
  REQUIRE(run_collplan("compile --K 8 --seed 7 -q --json r.json", d).status == 0);
  CHECK(compile_digest("--spec r.json --seed 8", d, d) == compile_digest("--K 8 --seed 8", d, d));
  CHECK(compile_digest("--spec r.json --matrix identity", d, d) == compile_digest("--K 8 --matrix identity", d, d));
  // A decentralized plan's code matrix, replaced by --code on the command line.
  REQUIRE(run_collplan("compile --op decentralized-encode --N 8 --K 3 --code rs -q --json dec.json", d).status == 0);
  CHECK(compile_digest("--spec dec.json --code lagrange", d, d) ==
        compile_digest("--op decentralized-encode --N 8 --K 3 --code lagrange", d, d));
  expect_error("compile --spec dec.json --systematic false -q", "says systematic = false", d);
  // An explicit matrix of another size than K.
  REQUIRE(run_collplan("compile --K 3 --matrix-file A.csv -q --json f.json", d).status == 0);
  expect_error("compile --spec f.json --K 4 -q", "is 3 x 3, but K = 4 needs a 4 x 4 matrix", d);
  fs::remove_all(d);
}

TEST_CASE("spec flags: an option the operation or matrix does not use is refused", "[spec-files][errors]") {
  const fs::path d = scratch_dir("spec-unused");
  write_file(d / "A.csv", "1,2,3\n4,5,6\n7,8,10\n");
  write_file(d / "G.csv", "1,2,3,4,5\n6,7,8,9,10\n");
  auto refused = [&](const std::string& args, const std::vector<std::string>& needles) {
    INFO("collplan compile " << args);
    const CommandResult r = run_collplan("compile " + args + " -q", d);
    INFO(r.output());
    CHECK(r.status == 2);
    for (const auto& n : needles) CHECK(r.output().find(n) != std::string::npos);
  };
  refused("--op allgather --K 4 --root 1", {"--root is not used by --op allgather", "used by: broadcast, reduce"});
  refused("--op allgather --K 4 --root 0", {"--root is not used by --op allgather"});  // given, even at its default
  refused("--op broadcast --K 4 --counts 1,1,1,1", {"--counts is not used by --op broadcast", "allgatherv", "prefix"});
  refused("--op allreduce --K 4 --exclusive", {"--exclusive is not used by --op allreduce", "used by: prefix"});
  refused("--op encode --K 4 --code rs", {"--code is not used by --op encode", "decentralized-encode"});
  refused("--op broadcast --K 4 --N 8", {"--N is not used by --op broadcast", "decentralized-encode"});
  refused("--op broadcast --K 4 --systematic false", {"--systematic is not used by --op broadcast"});
  refused("--op reduce --K 4 --generator G.csv", {"--generator is not used by --op reduce"});
  refused("--op broadcast --K 4 --seed 3", {"--seed is not used by --op broadcast", "encode (random, permutation)"});
  refused("--op broadcast --K 4 --matrix vandermonde", {"--matrix is not used by --op broadcast", "used by: encode"});
  refused("--op prefix --K 3 --matrix-file A.csv", {"--matrix-file is not used by --op prefix"});
  refused("--op allgather --K 4 --points 1,2,3,4", {"--points is not used by --op allgather"});
  refused("--op allgather --K 4 --perm 0,1,2,3", {"--perm is not used by --op allgather"});
  refused("--op allgather --K 4 --radix 2", {"--radix is not used by --op allgather"});
  refused("--op allgather --K 4 --phi 1", {"--phi is not used by --op allgather"});
  refused("--op decentralized-encode --N 8 --K 3 --matrix vandermonde",
          {"--matrix is not used by --op decentralized-encode", "takes --code or --generator"});
  refused("--op decentralized-encode --N 8 --K 3 --code rs --seed 5", {"--seed is not used", "seeds --code random"});
  refused("--op decentralized-encode --N 5 --K 2 --systematic false --generator G.csv --seed 5",
          {"--seed is not used", "read from --generator"});
  refused("--op decentralized-encode --N 5 --K 2 --code rs --generator G.csv", {"--code and --generator both"});
  write_file(d / "code.json", R"({"op": "decentralized-encode", "N": 5, "K": 2, "code": "rs"})");
  refused("--spec code.json --generator G.csv --systematic false",
          {"--code (key \"code\" of spec file 'code.json') and --generator both give the code's matrix"});
  refused("--K 4 --matrix identity --seed 3", {"--seed is not used by --matrix identity", "random, permutation"});
  refused("--K 4 --matrix vandermonde --seed 3", {"--seed is not used by --matrix vandermonde"});
  refused("--K 6 --matrix permutation --perm 1,0,3,2,5,4 --seed 3", {"--perm gives the permutation"});
  refused("--K 4 --matrix random --points 1,2,3,4", {"--points is not used by --matrix random", "vandermonde"});
  refused("--K 4 --matrix identity --perm 0,1,2,3", {"--perm is not used by --matrix identity", "permutation"});
  refused("--K 3 --matrix identity --matrix-file A.csv", {"--matrix-file is not used by --matrix identity", "file"});
  refused("--K 3 --matrix random --matrix-file A.csv", {"--matrix-file is not used by --matrix random"});
  refused("--K 16 --field prime:257 --matrix random --radix 2",
          {"--radix and --phi choose structured points; --matrix random has none", "dft"});
  refused("--K 16 --field prime:257 --matrix dft --phi 1", {"--phi applies to --matrix draw-loose or inverse-draw-loose, not dft"});
  refused("--K 4 --field prime:257 --matrix vandermonde --points 1,2,3,4 --radix 2", {"--radix and --phi choose structured points; --matrix vandermonde has none"});
  refused("--K 24 --field prime:7681 --matrix draw-loose --phi 0,1,2 --points 1", {"--phi chooses points"});
  // From a spec file: a value other than the default is refused, naming the key.
  write_file(d / "root.json", R"({"op": "allgather", "K": 4, "root": 2})");
  refused("--spec root.json", {"--root (key \"root\" of spec file 'root.json') is not used by --op allgather"});
  write_file(d / "seed.json", R"({"K": 4, "matrix": "identity", "seed": 5})");
  refused("--spec seed.json", {"key \"seed\"", "is not used by --matrix identity"});
  // ... and the command line's own value too, over a spec file.
  write_file(d / "ok.json", R"({"op": "allgather", "K": 4})");
  refused("--spec ok.json --root 1", {"--root is not used by --op allgather"});
  // Default values in a spec file are not options given (a plan's own spec
  // object carries defaults).
  write_file(d / "defaults.json",
        R"({"op": "allgather", "K": 4, "root": 0, "exclusive": false, "matrix": "random", "counts": [], "N": 0, "blocks": 1})");
  CHECK(run_collplan("compile --spec defaults.json -q", d).status == 0);
  // A matrix object on an operation without a matrix.
  write_file(d / "obj.json", R"({"op": "broadcast", "K": 2, "matrix": {"family": "identity", "rows": 2, "cols": 2}})");
  refused("--spec obj.json", {"the matrix object of spec file 'obj.json' is not used by --op broadcast"});
  fs::remove_all(d);
}

TEST_CASE("spec flags: K = 0 and negative or too large numbers name the value and the valid range",
          "[spec-files][errors]") {
  expect_error("compile --K 0 -q", "--K 0 is out of range (valid: K >= 2 processors)");
  expect_error("compile --op decentralized-encode --N 8 --K 0 -q", "--K 0 is out of range (valid: 1 <= K < N");
  expect_error("compile --op decentralized-encode --K 3 --N 0 -q", "--N 0 is out of range (valid: N > K = 3");
  expect_error("compile --p 2 -q", "--K is required");
  expect_error("compile --K 8 --seed -1 -q", "--seed: '-1' is negative (valid: 0..18446744073709551615)");
  expect_error("compile --K 8 --seed 18446744073709551616 -q", "--seed: '18446744073709551616' is too large");
  expect_error("compile --K 8 --seed 0x10 -q", "--seed: '0x10' is not a non-negative decimal integer");
  expect_error("compile --K -3 -q", "--K: '-3' is negative");
  expect_error("compile --K 4294967296 -q", "--K: '4294967296' is too large");
  expect_error("compile --K 8 --p -1 -q", "--p: '-1' is negative (valid: 1 <= p <= 1024 ports)");
  expect_error("compile --K 8 --lambda -1 -q", "--lambda: '-1' is negative");
  expect_error("compile --op broadcast --K 8 --root -1 -q", "--root: '-1' is negative (valid: 0..K-1)");
  expect_error("compile --op broadcast --K 8 --blocks -1 -q", "--blocks: '-1' is not a block count");
  expect_error("compile --op decentralized-encode --K 3 --N -1 -q", "--N: '-1' is negative");
  expect_error("compile --K 16 --field prime:257 --matrix dft --radix -2 -q", "--radix: '-2' is negative");
  expect_error("compile --K 16 --field prime:257 --matrix dft --radix 1 -q", "--radix 1 is invalid");
  expect_error("compile --K 8 --beta -5 -q", "--beta -5 is invalid (valid: a finite number >= 0");
  expect_error("compile --K 8 --tau -1 -q", "--tau -1 is invalid");
  expect_error("compile --K 8 --cost-len 0 -q", "--cost-len 0 is invalid");
  // A seed at the top of its range is a seed.
  CHECK(run_collplan("compile --K 4 --seed 18446744073709551615 -q").status == 0);
}

TEST_CASE("spec files: collplan_add_plan's configure-time lists are the CLI's", "[spec-files]") {
  // cmake/collplanFunctions.cmake refuses a bad OP or MATRIX at configure
  // time from its own lists; they must name exactly what the CLI takes
  // (`collplan list --format json` for operations; the --matrix help,
  // driver/cli.h's kMatrixChoices, for the families).
  std::ifstream in(std::string(COLLPLAN_SOURCE_DIR) + "/cmake/collplanFunctions.cmake");
  REQUIRE(in.good());
  const std::string cm((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto cmake_list = [&](const std::string& var) {
    const size_t a = cm.find("set(" + var + " ");
    REQUIRE(a != std::string::npos);
    const size_t b = cm.find(')', a);
    std::istringstream words(cm.substr(a + 5 + var.size(), b - a - 5 - var.size()));
    std::vector<std::string> out;
    for (std::string w; words >> w;) out.push_back(w);
    return out;
  };
  const auto listed = run_collplan("list --format json");
  REQUIRE(listed.status == 0);
  CHECK(cmake_list("ops") == nlohmann::json::parse(listed.out)["operations"].get<std::vector<std::string>>());

  const auto help = run_collplan("compile --help");
  REQUIRE(help.status == 0);
  const size_t a = help.output().find("random | vandermonde");
  REQUIRE(a != std::string::npos);
  std::istringstream names(help.output().substr(a, help.output().find(" (", a) - a));
  std::vector<std::string> cli_families;
  for (std::string w; names >> w;)
    if (w != "|") cli_families.push_back(w);
  CHECK(cmake_list("families") == cli_families);
}
