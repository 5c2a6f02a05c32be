// Bad input, table-driven: every row runs the built collplan as a subprocess
// and asserts the exit status (2 bad input, 1 a readable plan that is wrong;
// never 3, an internal error), a fragment of the message, and that stderr
// starts with the one error prefix "collplan: error:" (docs/cli.md). Then
// the JSON outputs (--format json), parsed and checked field by field.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "ir/binary.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using collplan::test::CommandResult;
using collplan::test::read_file;
using collplan::test::run_collplan;
using collplan::test::scratch_dir;
using collplan::test::write_file;

// Replaces the first `key` value (a number) in a JSON plan's text.
std::string set_first_number(std::string text, const std::string& key, const std::string& value) {
  const auto at = text.find("\"" + key + "\":");
  REQUIRE(at != std::string::npos);
  const auto b = at + key.size() + 3, e = text.find_first_not_of("0123456789", b);
  text.replace(b, e - b, value);
  return text;
}

struct Fixtures {
  fs::path dir;
  std::string plan, json, truncated, bad_magic, bad_version, flipped, empty, text, bad_port, bad_sent_at, bad_to,
      algebra, bad_port_bin;
};

const Fixtures& fixtures() {
  static const Fixtures fx = [] {
    Fixtures f;
    f.dir = scratch_dir("bad-input");
    auto p = [&](const char* name) { return (f.dir / name).string(); };
    f.plan = p("a.cplan");
    f.json = p("a.json");
    REQUIRE(run_collplan("compile --op encode --K 4 --p 2 --field gf256 -q -o " + f.plan + " --json " + f.json)
                .status == 0);
    const std::string bin = read_file(f.plan), js = read_file(f.json);
    REQUIRE(bin.size() > 120);
    f.truncated = p("truncated.cplan");
    write_file(f.truncated, bin.substr(0, bin.size() / 2));
    f.bad_magic = p("magic.cplan");
    std::string m = bin;
    m[1] ^= 0x20;
    write_file(f.bad_magic, m);
    f.bad_version = p("version.cplan");
    std::string v = bin;
    v[8] = 99;  // the u32 after the 8-byte magic (docs/plan-format.md)
    write_file(f.bad_version, v);
    f.flipped = p("flipped.cplan");
    std::string x = bin;
    x[x.size() - 3] ^= 0x5A;  // inside the last rank's blob
    write_file(f.flipped, x);
    f.empty = p("empty.cplan");
    write_file(f.empty, "");
    f.text = p("notes.txt");
    write_file(f.text, "this is not a plan\n");
    f.bad_port = p("port.json");
    write_file(f.bad_port, set_first_number(js, "port", "7"));  // p = 2
    f.bad_sent_at = p("sent_at.json");
    write_file(f.bad_sent_at, set_first_number(js, "sent_at", "99"));
    f.bad_to = p("to.json");
    {
      std::string t = js;
      const auto at = t.find("\"to\":");
      const auto digit = t.find_first_of("0123456789", at);
      t[digit] = t[digit] == '2' ? '3' : '2';  // the message goes to another rank
      write_file(f.bad_to, t);
    }
    // Another matrix (seed 2, no digest to contradict it) for the same
    // schedule: readable, structurally right, algebraically wrong.
    f.algebra = p("algebra.json");
    {
      std::string a = set_first_number(js, "seed", "2");
      const auto d0 = a.find(",\"digest\":\"");
      REQUIRE(d0 != std::string::npos);
      a.erase(d0, a.find('"', d0 + 11) + 1 - d0);
      write_file(f.algebra, a);
    }
    // A binary plan whose hashes are right but whose first send uses a port
    // that does not exist: the file is intact, the plan is wrong.
    f.bad_port_bin = p("port.cplan");
    collplan::ir::Plan plan = collplan::ir::read_binary(f.plan);
    bool done = false;
    for (auto& st : plan.ranks[0].steps)
      if (!done && !st.sends.empty()) st.sends[0].port = plan.spec.p + 3, done = true;
    REQUIRE(done);
    collplan::ir::write_binary(plan, f.bad_port_bin);
    return f;
  }();
  return fx;
}

struct Row {
  std::string args;
  int status;
  std::string fragment;
};

}  // namespace

TEST_CASE("bad input: every row exits 1 or 2 with the message and the one error prefix", "[cli][bad-input]") {
  const Fixtures& f = fixtures();
  const std::string d = f.dir.string(), o = " -q -o " + (f.dir / "out.cplan").string();
  const std::vector<Row> rows = {
      // ---- commands and options: suggestions, CLI11's parse errors ----
      {"compil", 2, "unknown command 'compil'; did you mean 'compile'?"},
      {"chek " + f.plan, 2, "did you mean 'check'?"},
      {"expotr " + f.plan + " -o x.json", 2, "did you mean 'export'?"},
      {"frobnicate", 2, "unknown command 'frobnicate'"},
      {"compile --Kk 4", 2, "unknown option '--Kk' for 'collplan compile'; did you mean '--K'?"},
      {"compile --K 4 --lamda 2", 2, "did you mean '--lambda'?"},
      {"check " + f.plan + " --mdoe exact", 2, "did you mean '--mode'?"},
      {"run " + f.plan + " --lenn 4", 2, "did you mean '--len'?"},
      {"compile --K abc", 2, "--K"},
      {"check", 2, "plan is required"},
      {"check " + f.plan + " --mode fast", 2, "fast not in"},
      {"list --format yaml", 2, "yaml"},
      {"bound --K 1", 2, "K = 1 is too small"},
      {"bound --K 16777217", 2, "K = 16777217 is too large"},
      {"bound --K 8 --p 0", 2, "p = 0"},
      {"bound --K 8 --lambda 2000", 2, "lambda = 2000"},
      // ---- size limits, checked before anything is allocated ----
      {"compile --op encode --K 100000" + o, 2, "(K*n)^2 = 10000000000 coefficients, over the 2^28"},
      {"compile --op encode --K 16385" + o, 2, "use K*n <= 16384"},
      {"compile --op encode --K 64 --blocks 1000000" + o, 2, "K = 64, blocks = 1000000"},
      {"compile --op broadcast --K 1000 --blocks 1000000" + o, 2, "1000009000 received elements"},
      {"compile --op allgather --K 12000" + o, 2, "143988000 received elements"},
      {"compile --op reduce-scatter --K 16777216" + o, 2, "281474976710656 inputs in all, over the 2147483648"},
      {"compile --op reduce-scatter --K 50000" + o, 2, "2500000000 inputs in all"},
      {"compile --op allreduce --K 64 --blocks 16777216" + o, 2, "over the 2^26 = 67108864 collplan builds"},
      {"compile --op allgatherv --K 4 --counts 16777216,1,1,1" + o, 2, "134217732 received elements"},
      {"compile --op decentralized-encode --N 100001 --K 100000 --systematic false" + o, 2,
       "100000 x 100001 matrix has 10000100000 entries"},
      {"compile --op decentralized-encode --N 2000000 --K 1000" + o, 2, "K*(N-K)*n^2"},
      {"compile --op broadcast --K 16777217" + o, 2, "K = 16777217 is too large"},
      {"compile --op broadcast --K 16777216" + o, 2, "received elements in its rank programs"},
      {"compile --op reduce --K 8000000" + o, 2, "over the 2^26 = 67108864 collplan builds in one plan"},
      {"compile --op broadcast --K 1000 --blocks 4000000000 --rank 3" + o, 2, "blocks = 4000000000 is too large"},
      {"compile --op decentralized-encode --N 9000 --K 60 --algorithm decentralized-padded" + o, 2,
       "decentralized-padded: N = 9000"},
      {"compile --op broadcast --K 8 --p 2000" + o, 2, "p = 2000 is too large"},
      {"compile --op broadcast --K 8 --lambda 5000" + o, 2, "lambda = 5000 is too large"},
      {"compile --op broadcast --K 2147483649 --rank 3" + o, 2, "K = 2147483649 is too large"},
      {"compile --op broadcast --K 8 --rank 2 --format json" + o, 2, "compile --rank prints text only"},
      {"run " + f.plan + " --len 100000000000", 2, "over the limit 2^32"},
      // ---- every unsigned flag refuses a negative number, none wraps ----
      {"run " + f.plan + " --seed -1", 2, "--seed: '-1' is negative"},
      {"run " + f.plan + " --len -1", 2, "--len: '-1' is negative"},
      {"check " + f.plan + " --seed -1", 2, "--seed: '-1' is negative"},
      {"compile --K 4 --cost-len -1" + o, 2, "--cost-len: '-1' is negative"},
      {"verify-circulant --K 8 --sample-ranks 3 --seed -1", 2, "--seed: '-1' is negative"},
      {"verify-circulant --Kmax -1", 2, "--Kmax: '-1' is negative"},
      {"check " + f.plan + " --mode randomized --trials 4000000000", 2, "--trials 4000000000"},
      {"verify-circulant --K 1000 --sample-ranks 100000000", 2, "--sample-ranks 100000000 is too many"},
      {"verify-circulant --Kmax 20000000", 2, "too large for the whole-K sweep"},
      {"verify-circulant --K 100 --sample-ranks 3 --threads 100000", 2, "--threads 100000 is too many"},
      {"verify-circulant --p 100 --sample-ranks 3", 2, "give the processor count as --K"},
      // ---- files that are not (whole) plans: bad input ----
      {"check " + f.truncated, 2, "truncated"},
      {"show " + f.truncated, 2, "truncated"},
      {"check " + f.bad_magic, 2, "invalid JSON"},
      {"check " + f.bad_version, 2, "unsupported format version 99"},
      {"check " + f.flipped, 2, "does not match its hash"},
      {"run " + f.flipped + " --len 4", 2, "does not match its hash"},
      {"check " + f.empty, 2, "invalid JSON"},
      {"check " + f.text, 2, "invalid JSON"},
      {"check " + d, 2, "it is a directory"},
      {"check " + d + "/missing.cplan", 2, "cannot open plan file"},
      {"emit-cpp " + d + "/missing.cplan -o " + d + "/gen", 2, "cannot open plan file"},
      // ---- readable plans that are wrong: exit 1, whatever the kind ----
      {"check " + f.bad_port, 1, "plan rejected (structure)"},
      {"check " + f.bad_port, 1, "7 is not a port (valid: 0..1, p = 2)"},
      {"check " + f.bad_sent_at, 1, "sent_at"},
      {"check " + f.bad_to, 1, "plan rejected (structure)"},
      {"check " + f.algebra, 1, "plan rejected (algebra)"},
      {"import " + f.bad_port + " -o " + d + "/imported.cplan", 1, "is not a port"},
      {"run " + f.algebra + " --len 4 --reps 1", 1, "plan rejected (algebra)"},
      {"show " + f.bad_sent_at, 1, "plan rejected (structure)"},
      {"check " + f.bad_port_bin, 1, "send port 5 (step 1) is not a port"},
      {"export " + f.bad_port_bin + " -o " + d + "/x.json", 1, "plan rejected (structure)"},
  };
  REQUIRE(rows.size() >= 40);
  for (const Row& row : rows) {
    INFO("collplan " << row.args);
    const CommandResult r = run_collplan(row.args);
    INFO("stdout: " << r.out);
    INFO("stderr: " << r.err);
    CHECK(r.status == row.status);
    CHECK(r.status != 3);
    CHECK(r.err.rfind("collplan: error: ", 0) == 0);
    CHECK(r.err.find(row.fragment) != std::string::npos);
    // One error line, however many things were wrong.
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("bad input: check --format json gives a verdict object on every outcome", "[cli][bad-input][json]") {
  const Fixtures& f = fixtures();
  struct Case {
    std::string file;
    int status;
    bool ok;
    std::string kind;
  };
  for (const Case& c : std::vector<Case>{{f.plan, 0, true, ""},
                                         {f.bad_port, 1, false, "structure"},
                                         {f.bad_port_bin, 1, false, "structure"},
                                         {f.algebra, 1, false, "algebra"},
                                         {f.truncated, 2, false, "input"},
                                         {f.text, 2, false, "input"}}) {
    for (const char* flag : {" --format json", " --json"}) {
      INFO("check " << c.file << flag);
      const CommandResult r = run_collplan("check " + c.file + flag);
      INFO(r.out << r.err);
      CHECK(r.status == c.status);
      const auto j = nlohmann::json::parse(r.out);
      CHECK(j.at("ok").get<bool>() == c.ok);
      if (c.ok) {
        CHECK(j.at("cost").at("C1").get<int>() == 2);
        CHECK(j.at("digest").get<std::string>().size() == 32);
      } else {
        CHECK(j.at("kind").get<std::string>() == c.kind);
        CHECK(j.at("exit_code").get<int>() == c.status);
        CHECK(!j.at("error").get<std::string>().empty());
      }
    }
  }
}

TEST_CASE("cli: --format json of compile, --explain, list, bound, run and verify-circulant", "[cli][json]") {
  const Fixtures& f = fixtures();
  CommandResult r =
      run_collplan("compile --op encode --K 16 --p 2 --seed 7 -q --format json -o " + (f.dir / "c.cplan").string());
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("ok") == true);
  CHECK(j.at("plan").at("op") == "encode");
  CHECK(j.at("plan").at("K") == 16);
  CHECK(j.at("plan").at("N").is_null());
  CHECK(j.at("plan").at("matrix") == "random");
  CHECK(j.at("cost").at("C1") == 3);
  CHECK(j.at("cost").at("C2") == 4);  // searched (docs/search.md); prepare-and-shoot: 5
  CHECK(j.at("files").at("binary") == (f.dir / "c.cplan").string());
  CHECK(j.at("files").at("json").is_null());
  CHECK(j.at("digest").get<std::string>().size() == 32);
  CHECK(j.contains("explain") == false);

  // --explain: a systematic code has no estimate from the grouped
  // (non-systematic) generator: null, not 4294967295.
  r = run_collplan("compile --op decentralized-encode --N 24 --K 16 --explain -q --format json");
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  const auto& ex = j.at("explain");
  CHECK(ex.at("chosen") == j.at("plan").at("algorithm").get<std::string>().substr(0, ex.at("chosen").get<std::string>().size()));
  bool saw_null = false, saw_number = false;
  for (const auto& c : ex.at("candidates")) {
    if (c.at("generator") == "decentralized-grouped") {
      CHECK(c.at("C1").is_null());
      saw_null = true;
    }
    if (c.at("applicable") == true && c.at("C1").is_number()) saw_number = true;
  }
  CHECK(saw_null);
  CHECK(saw_number);
  r = run_collplan("compile --op decentralized-encode --N 24 --K 16 --explain -q");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("4294967295") == std::string::npos);
  CHECK(r.out.find("no cost estimate") != std::string::npos);

  r = run_collplan("list --format json");
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j.at("generators").size() >= 20);
  CHECK(j.at("generators").at(0).at("name") == "prepare-shoot");
  CHECK(j.at("generators").at(0).at("ops").at(0) == "encode");
  CHECK(j.at("operations").size() == collplan::all_ops().size());
  CHECK(j.at("operations").size() == 11);
  CHECK(j.at("fields").at(0).at("name") == "gf256");
  CHECK(j.at("passes").at(0).contains("default"));

  r = run_collplan("bound --K 4096 --p 2 --format json");
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j.at("K") == 4096);
  CHECK(j.at("encode_C1") == 8);  // ceil(log_3 4096)
  CHECK(j.at("prepare_shoot").at("C1") == 8);

  r = run_collplan("run " + f.plan + " --len 64 --reps 1 --format json");
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j.at("ok") == true);
  CHECK(j.at("transport") == "threads");
  CHECK(j.at("ranks") == 4);
  CHECK(j.at("len") == 64);
  CHECK(j.at("mismatch").is_null());
  CHECK(j.at("time_median_s").get<double>() >= 0);

  r = run_collplan("verify-circulant --K 1000 --sample-ranks 5 --threads 1 --format json");
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j.at("mode") == "sample");
  CHECK(j.at("K") == 1000);
  CHECK(j.at("ranks_checked") == 5);

  // Errors of a JSON-printing command: the verdict object on stdout too.
  r = run_collplan("bound --K 1 --format json");
  CHECK(r.status == 2);
  j = nlohmann::json::parse(r.out);
  CHECK(j.at("ok") == false);
  CHECK(j.at("kind") == "input");
}

TEST_CASE("cli: --help and --version exit 0, --help shows examples and the exit codes", "[cli]") {
  CommandResult r = run_collplan("--help");
  CHECK(r.status == 0);
  CHECK(r.out.find("Exit status:") != std::string::npos);
  CHECK(r.out.find("Examples:") != std::string::npos);
  r = run_collplan("compile --help");
  CHECK(r.status == 0);
  CHECK(r.out.find("--format") != std::string::npos);
  CHECK(r.out.find("Examples:") != std::string::npos);
  r = run_collplan("--version");
  CHECK(r.status == 0);
  CHECK(r.out.find("collplan") != std::string::npos);
}
