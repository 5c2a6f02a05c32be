// `collplan calibrate` and `--cost-file` (docs/cost-model.md): a measured
// file over the threads transport, the cost file's errors, the precedence of
// --beta / --tau over the file, and that the file changes what
// `--algorithm auto` and `--blocks auto` choose. (Under MPI:
// tests/mpi/calibrate_mpi.sh.)
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

using collplan::test::read_file;
using collplan::test::run_collplan;
using collplan::test::scratch_dir;
using collplan::test::write_file;

// A hand-written cost file of version 1.
std::string cost_json(double alpha_s, double beta_s_per_byte, const std::string& transport = "mpi") {
  return nlohmann::json{{"format", "collplan-cost"},
                        {"version", 1},
                        {"transport", transport},
                        {"ranks", 4},
                        {"alpha_s", alpha_s},
                        {"beta_s_per_byte", beta_s_per_byte}}
      .dump();
}

// `compile ... --format json` with `args`; the parsed summary.
nlohmann::json compile_json(const std::string& args) {
  const auto r = run_collplan("compile " + args + " --format json -q");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("cli calibrate: the threads transport measures a cost file that compile reads", "[cli][calibrate]") {
  const fs::path dir = scratch_dir("cli-calibrate-threads");
  const std::string file = (dir / "cost.json").string();
  const auto r =
      run_collplan("calibrate --transport threads --reps 8 --passes 2 --max-bytes 262144 -o " + file);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("calibrate: transport threads, 2 ranks; pairs (0,1)") != std::string::npos);
  CHECK(r.out.find("fit (least squares of the relative error): alpha = ") != std::string::npos);
  CHECK(r.out.find("residual ") != std::string::npos);

  const nlohmann::json j = nlohmann::json::parse(read_file(file));
  CHECK(j["format"] == "collplan-cost");
  CHECK(j["version"] == 1);
  CHECK(j["transport"] == "threads");
  CHECK(j["ranks"] == 2);
  const double alpha = j["alpha_s"].get<double>(), beta = j["beta_s_per_byte"].get<double>();
  CHECK(std::isfinite(alpha));
  CHECK(alpha > 0);
  CHECK(std::isfinite(beta));
  CHECK(beta > 0);
  // The ladder 1 B .. 256 KiB: 19 sizes, each with its one-way time.
  REQUIRE(j["samples"].size() == 19);
  CHECK(j["samples"][0]["bytes"] == 1);
  CHECK(j["samples"][18]["bytes"] == 262144);
  CHECK(j["samples"][18]["seconds"].get<double>() > j["samples"][0]["seconds"].get<double>());
  CHECK(j["measured_at"].get<std::string>().size() == 20);  // 2026-11-27T23:00:00Z

  // compile takes it: beta = alpha_s, tau = beta_s_per_byte x 2 bytes (gf65536).
  const nlohmann::json c = compile_json("--op allreduce --K 8 --field gf65536 --cost-file " + file);
  CHECK(c["cost_model"]["beta"].get<double>() == alpha);
  CHECK(c["cost_model"]["tau"].get<double>() == beta * 2);
  CHECK(c["cost_model"]["cost_file"] == file);
  // The text report says where beta and tau came from.
  const auto t = run_collplan("compile --op allreduce --K 8 -q --cost-file " + file);
  REQUIRE(t.status == 0);
  CHECK(t.out.find("cost model: beta = ") != std::string::npos);
  CHECK(t.out.find("(alpha_s of " + file + " (threads, 2 ranks, measured ") != std::string::npos);
  CHECK(t.out.find("beta_s_per_byte x 1 bytes per gf256 element") != std::string::npos);
}

TEST_CASE("cli calibrate: bad options are refused by name", "[cli][calibrate]") {
  const std::pair<const char*, const char*> cases[] = {
      {"calibrate --max-bytes 10", "--max-bytes 10 is out of range (valid: 64 .. 1073741824 bytes)"},
      {"calibrate --ranks 1", "--ranks 1: a ping-pong needs at least 2 ranks"},
      {"calibrate --reps 0", "--reps 0 is out of range (valid: 1 .. 65536 round trips per size and pass)"},
      {"calibrate --reps 65537", "--reps 65537 is out of range"},
      {"calibrate --passes 0", "--passes 0 is out of range (valid: 1 .. 256 passes over the sizes)"},
      {"calibrate --transport tcp", "--transport: tcp not in {threads,mpi}"},
      {"calibrate --pairs all", "--pairs: all not in {ring,first}"},
      {"calibrate --max-bytes -5", "'-5' is negative"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_collplan(args);
    INFO(args << "\n" << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(message) != std::string::npos);
  }
  // An output path that cannot be written fails before the measurement.
  const auto r = run_collplan("calibrate -o /nonexistent-dir/cost.json");
  CHECK(r.status == 2);
  CHECK(r.err.find("/nonexistent-dir/cost.json") != std::string::npos);
}

TEST_CASE("cli calibrate: a bad cost file is refused naming the file and the field", "[cli][calibrate]") {
  const fs::path dir = scratch_dir("cli-calibrate-bad");
  const std::string spec = "compile --op allreduce --K 4 -q --cost-file ";
  struct Case {
    const char* name;
    std::string text;
    const char* message;  // after "cost file '<path>'"
  };
  const Case cases[] = {
      {"not-json", "{\"format\": ", "invalid JSON"},
      {"array", "[1, 2]", " must hold a JSON object"},
      {"no-format", R"({"version": 1})", ": \"format\": missing (valid: \"collplan-cost\")"},
      {"plan", R"({"format": "collplan-plan", "version": 1})",
       ": \"format\": \"collplan-plan\" is not a cost file's (valid: \"collplan-cost\")"},
      {"version-2", R"({"format": "collplan-cost", "version": 2})", ": \"version\": 2 is not supported (valid: 1"},
      {"version-text", R"({"format": "collplan-cost", "version": "1"})", ": \"version\": \"1\" is not supported"},
      {"no-alpha", R"({"format": "collplan-cost", "version": 1, "transport": "mpi", "beta_s_per_byte": 1e-9})",
       ": \"alpha_s\": missing"},
      {"no-beta", R"({"format": "collplan-cost", "version": 1, "transport": "mpi", "alpha_s": 1e-6})",
       ": \"beta_s_per_byte\": missing"},
      {"no-transport", R"({"format": "collplan-cost", "version": 1, "alpha_s": 1e-6, "beta_s_per_byte": 1e-9})",
       ": \"transport\": missing (valid: threads | mpi | tcp)"},
      {"negative-alpha", cost_json(-1e-6, 1e-9), ": \"alpha_s\": -1e-06 is invalid (valid: a finite number >= 0)"},
      {"negative-beta", cost_json(1e-6, -2.5), ": \"beta_s_per_byte\": -2.5 is invalid"},
      {"infinite-alpha",
       R"({"format": "collplan-cost", "version": 1, "transport": "mpi", "alpha_s": 1e999, "beta_s_per_byte": 1e-9})",
       "number overflow"},  // JSON has no infinity: the parser refuses it
      {"text-alpha",
       R"({"format": "collplan-cost", "version": 1, "transport": "mpi", "alpha_s": "fast", "beta_s_per_byte": 1e-9})",
       ": \"alpha_s\": expected a number of seconds (finite, >= 0), got string"},
      {"transport", cost_json(1e-6, 1e-9, "infiniband"),
       ": \"transport\": \"infiniband\" is not a transport (valid: threads | mpi | tcp)"},
      {"unknown-key",
       R"({"format": "collplan-cost", "version": 1, "transport": "mpi", "alpha_s": 1e-6, "beta_s_per_byte": 1e-9, "gamma": 1})",
       ": \"gamma\": unknown key"},
      {"ranks", R"({"format": "collplan-cost", "version": 1, "transport": "mpi", "ranks": 1, "alpha_s": 1e-6, "beta_s_per_byte": 1e-9})",
       ": \"ranks\": 1 is invalid (valid: the number of ranks measured, >= 2)"},
      {"sample",
       R"({"format": "collplan-cost", "version": 1, "transport": "mpi", "alpha_s": 1e-6, "beta_s_per_byte": 1e-9, "samples": [{"bytes": 1, "seconds": -1}]})",
       ": \"samples[0].seconds\": -1 is invalid"},
      {"duplicate", R"({"format": "collplan-cost", "version": 1, "version": 1})", "twice"},
  };
  for (const Case& c : cases) {
    const std::string path = (dir / (std::string(c.name) + ".json")).string();
    write_file(path, c.text);
    const auto r = run_collplan(spec + path);
    INFO(c.name << ": " << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("cost file '" + path + "'") != std::string::npos);
    CHECK(r.err.find(c.message) != std::string::npos);
    // check reads the same file the same way.
    const auto k = run_collplan("check " + (dir / "none.cplan").string() + " --cost-file " + path);
    CHECK(k.status == 2);
    CHECK(k.err.find("cost file '" + path + "'") != std::string::npos);
  }
  // A missing file and a directory are named too.
  const std::string missing = (dir / "missing.json").string();
  auto r = run_collplan(spec + missing);
  CHECK(r.status == 2);
  CHECK(r.err.find(missing) != std::string::npos);
  r = run_collplan(spec + dir.string());
  CHECK(r.status == 2);
  CHECK(r.err.find(dir.string()) != std::string::npos);
}

TEST_CASE("cli calibrate: --beta and --tau on the command line win over the cost file", "[cli][calibrate]") {
  const fs::path dir = scratch_dir("cli-calibrate-precedence");
  const std::string file = (dir / "cost.json").string();
  write_file(file, cost_json(2e-6, 5e-10));
  const std::string base = "--op allreduce --K 4 --field prime:65537 --cost-file " + file;
  nlohmann::json c = compile_json(base);
  CHECK(c["cost_model"]["beta"].get<double>() == 2e-6);
  CHECK(c["cost_model"]["tau"].get<double>() == 5e-10 * 4);  // prime fields: 4 bytes per element
  c = compile_json(base + " --beta 7");
  CHECK(c["cost_model"]["beta"].get<double>() == 7);
  CHECK(c["cost_model"]["tau"].get<double>() == 5e-10 * 4);
  c = compile_json(base + " --tau 3");
  CHECK(c["cost_model"]["beta"].get<double>() == 2e-6);
  CHECK(c["cost_model"]["tau"].get<double>() == 3);
  // --cost-len is the application's, never the file's.
  c = compile_json(base + " --cost-len 1000");
  CHECK(c["cost_model"]["len"] == 1000);
  // The file wins over a spec file's beta and tau (command line over spec file).
  const std::string spec = (dir / "spec.json").string();
  write_file(spec, R"({"op": "allreduce", "K": 4, "beta": 9, "tau": 8})");
  c = compile_json("--spec " + spec + " --cost-file " + file);
  CHECK(c["cost_model"]["beta"].get<double>() == 2e-6);
  CHECK(c["cost_model"]["tau"].get<double>() == 5e-10);
  c = compile_json("--spec " + spec);
  CHECK(c["cost_model"]["beta"].get<double>() == 9);
}

TEST_CASE("cli calibrate: a latency- and a bandwidth-dominated cost file make auto choose differently",
          "[cli][calibrate]") {
  const fs::path dir = scratch_dir("cli-calibrate-choice");
  // alpha / beta = 10^7 bytes: a message start costs as much as 10 MB.
  const std::string latency = (dir / "latency.json").string();
  write_file(latency, cost_json(1e-4, 1e-11));
  // alpha / beta = 10^3 bytes.
  const std::string bandwidth = (dir / "bandwidth.json").string();
  write_file(bandwidth, cost_json(1e-6, 1e-9));
  auto algorithm = [](const nlohmann::json& j) {
    const std::string a = j["plan"]["algorithm"];
    return a.substr(0, a.find(' '));  // without the "n=... (blocks auto: ...)" note
  };

  // Allreduce of 64 KiB over 16 ranks: the latency-optimal allreduce keeps
  // the vector whole (4 steps); reduce-scatter-allgather cuts it into 16
  // chunks (8 steps, 30/16 of the vector; for K = 16 by recursive halving
  // and doubling).
  const std::string allreduce = "--op allreduce --K 16 --blocks auto --cost-len 65536 --algorithm auto --cost-file ";
  nlohmann::json lat = compile_json(allreduce + latency), bw = compile_json(allreduce + bandwidth);
  CHECK(algorithm(lat) == "circulant-allreduce");
  CHECK(lat["plan"]["blocks"] == 1);
  CHECK(lat["cost"]["C1"] == 4);
  CHECK(algorithm(bw) == "recursive-halving-doubling");  // K = 16: ties reduce-scatter-allgather
  CHECK(bw["plan"]["blocks"] == 16);
  CHECK(bw["cost"]["C1"] == 8);
  // Modeled times are in seconds: 4 steps x 1e-4 s + 4 x 65536 bytes x 1e-11 s.
  const auto text = run_collplan("compile " + allreduce + latency + " -q");
  CHECK(text.out.find("= 0.000402621") != std::string::npos);

  // Broadcast of 1 MiB over 16 ranks: n* = sqrt((q-1) m tau / beta), 1 block
  // (the postal broadcast) under latency, 56 circulant blocks under bandwidth.
  const std::string broadcast = "--op broadcast --K 16 --blocks auto --cost-len 1048576 --cost-file ";
  lat = compile_json(broadcast + latency), bw = compile_json(broadcast + bandwidth);
  CHECK(algorithm(lat) == "postal-broadcast");
  CHECK(lat["plan"]["blocks"] == 1);
  CHECK(algorithm(bw) == "circulant-broadcast");
  CHECK(bw["plan"]["blocks"] == 56);

  // Encode under postal latency 3: the C1-optimal postal allgather, or
  // prepare-and-shoot with the split m the model picks.
  const std::string encode = "--op encode --K 16 --p 2 --lambda 3 --cost-len 1000 --cost-file ";
  CHECK(algorithm(compile_json(encode + latency)) == "postal-allgather");
  CHECK(algorithm(compile_json(encode + bandwidth)) == "postal-prepare-shoot");

  // check reports the modeled time of a plan in the file's seconds.
  const std::string plan = (dir / "ar.cplan").string();
  REQUIRE(run_collplan("compile " + allreduce + latency + " -q -o " + plan).status == 0);
  const auto k = run_collplan("check " + plan + " --cost-file " + latency);
  CHECK(k.status == 0);
  CHECK(k.out.find("cost model: beta = 0.0001 s (alpha_s of " + latency + " (mpi, 4 ranks)), tau = 1e-11 s") !=
        std::string::npos);
}
