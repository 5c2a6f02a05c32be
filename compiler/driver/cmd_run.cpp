// `collplan run`: replay a plan on a transport with random inputs and compare
// every output byte with the direct computation of the spec's postcondition.
//
//   --transport threads  every rank as a thread of this process (default)
//   --transport mpi      one rank per MPI process (start under mpirun -np K)
//   --transport tcp      one rank per process, connected by TCP (--peers, --rank)
//
// Every transport draws the same inputs from --seed (rt::replay_inputs), so
// the runs are differential: the same seed gives the same outputs everywhere.
//
// --trace FILE records every timed run through a TracingTransport around the
// transport (runtime/trace.h) and writes one Chrome trace of all ranks:
// threads: all ranks' tracers are in this process; mpi: rank 0 gathers the
// other ranks' events (MPI_Gatherv) and writes the file; tcp: rank 0 gathers
// them over the plan's own connections (rt::gather_trace) and writes the file,
// the other processes write nothing (their --trace value is ignored, so every
// process can be started with the same command line).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "passes/verify.h"
#include "ir/binary.h"
#include "runtime/engine.h"
#include "runtime/check/replay.h"
#include "runtime/trace.h"
#include "runtime/transport/tcp.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/safe_file.h"
#ifdef COLLPLAN_HAVE_MPI
#include "runtime/transport/mpi.h"
#endif

namespace collplan::cli {

namespace {

struct RunOptions {
  std::string path;
  uint64_t len = 4096, seed = 1;
  uint32_t reps = 5;
  std::string transport = "threads";
  std::string peers;
  uint32_t rank = 0;
  bool rank_given = false;
  uint32_t timeout_ms = 10'000, connect_timeout_ms = 10'000;
  std::string key_file;  // tcp: the job key (else $COLLPLAN_TCP_KEY_FILE)
  std::string trace;  // --trace FILE ("" = none)
  bool stats = false;  // --stats: per rank, the engine's own copies and the bytes delivered
  std::string format = "text";  // --format text | json
  bool json() const { return format == "json"; }
};

// `run --format json` (docs/cli.md): one object on stdout.
nlohmann::json run_json(const RunOptions& o, const ir::Plan& plan, uint32_t ranks, double median_s, double min_s,
                        const std::string& mismatch) {
  nlohmann::json j{{"ok", mismatch.empty()},
                   {"plan", {{"file", o.path},
                             {"op", op_name(plan.spec.op)},
                             {"K", plan.spec.K},
                             {"p", plan.spec.p},
                             {"lambda", plan.spec.lambda},
                             {"field", plan.spec.field.name()},
                             {"digest", ir::plan_digest(plan).hex()}}},
                   {"transport", o.transport},
                   {"ranks", ranks},
                   {"len", o.len},
                   {"reps", o.reps},
                   {"seed", o.seed},
                   {"time_median_s", median_s},
                   {"time_min_s", min_s}};
  j["mismatch"] = mismatch.empty() ? nlohmann::json(nullptr) : nlohmann::json(mismatch);
  j["trace"] = o.trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.trace);
  return j;
}

// `--stats`: per rank, what the engine copied itself (staging), what the
// transport delivered, and the copies the plan itself needs.
using Copies = rt::ReplayReport::Copies;
Copies engine_copies(const rt::Engine& eng) {
  const rt::Engine::Stats& st = eng.stats();
  return {st.staged_bytes, st.delivered_bytes, st.op_copy_bytes};
}
std::string copies_text(uint32_t rank, const Copies& c) {
  return fmt::format("rank {}: engine copies: {} bytes staged, {} bytes delivered ({} bytes of copies the plan needs)\n",
                     rank, c.staged, c.delivered, c.op_copied);
}
nlohmann::json copies_json(uint32_t first_rank, const std::vector<Copies>& cs) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t i = 0; i < cs.size(); ++i)
    a.push_back({{"rank", first_rank + i},
                 {"staged_bytes", cs[i].staged},
                 {"delivered_bytes", cs[i].delivered},
                 {"op_copy_bytes", cs[i].op_copied}});
  return a;
}

// A replay whose outputs differ: the one error line (exit status 1).
int replay_mismatch(const std::string& what) {
  std::cerr << "collplan: error: plan rejected (replay): the outputs differ from the direct computation: " << what
            << "\n";
  return 1;
}

// The replay's buffers are allocated in proportion to --len: refuse, before
// allocating, more than kMaxReplayBytes (support/limits.h) in this process.
void check_replay_size(const RunOptions& o, const ir::Plan& plan, bool all_ranks, ir::Rank rank) {
  uint64_t rows = 0;
  for (ir::Rank r = 0; r < plan.ranks.size(); ++r)
    if (all_ranks || r == rank)
      rows += uint64_t{plan.ranks[r].num_slots} + plan.ranks[r].inputs.size() + 2 * plan.ranks[r].outputs.size();
  const uint64_t bytes = mul_sat(mul_sat(rows, o.len), plan.spec.field.elem_bytes());
  if (bytes > kMaxReplayBytes)
    user_error("--len {}: the replay would hold {} vectors of {} elements ({} bytes each; inputs, outputs and the "
               "expected outputs{}) = {} bytes, over the limit 2^32 = {} bytes; use a smaller --len",
               o.len, rows, o.len, plan.spec.field.elem_bytes(), all_ranks ? " of every rank" : " of this rank",
               bytes == UINT64_MAX ? std::string("more than 2^64") : std::to_string(bytes), kMaxReplayBytes);
}

// What a trace says about its run (otherData).
nlohmann::json trace_meta(const RunOptions& o, const ir::Plan& plan, uint32_t ranks) {
  return {{"tool", "collplan run"},
          {"plan", std::filesystem::path(o.path).filename().string()},
          {"digest", ir::plan_digest(plan).hex()},
          {"op", op_name(plan.spec.op)},
          {"K", plan.spec.K},
          {"ranks", ranks},
          {"p", plan.spec.p},
          {"lambda", plan.spec.lambda},
          {"field", plan.spec.field.name()},
          {"transport", o.transport},
          {"len", o.len},
          {"reps", o.reps}};
}

// Fails before the run, not after it, when the trace cannot be written.
void check_trace_path(const std::string& path) {
  if (path.empty()) return;
  files::check_writable(path, "--trace file");  // creates nothing: a failed run leaves no empty trace
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string describe(const ir::Plan& plan) {
  return fmt::format("{} K={} p={} lambda={} field={}", op_name(plan.spec.op), plan.spec.K, plan.spec.p,
                     plan.spec.lambda, plan.spec.field.name());
}

int run_threads(const RunOptions& o, const ir::Plan& plan) {
  check_trace_path(o.trace);
  rt::ThreadsOptions topt;
  std::vector<std::unique_ptr<rt::TracingTransport>> tracers;
  if (!o.trace.empty()) {
    tracers.resize(plan.ranks.size());
    topt.wrap = [&](ir::Rank r, rt::Transport& endpoint) {
      tracers[r] = std::make_unique<rt::TracingTransport>(endpoint, plan.spec.lambda);
      return tracers[r].get();
    };
  }
  check_replay_size(o, plan, true, 0);
  const auto rep = rt::replay_and_compare(plan, o.len, o.seed, o.reps, topt);
  if (!o.trace.empty()) {
    std::vector<rt::TraceEvent> events;
    for (const auto& t : tracers) events.insert(events.end(), t->events().begin(), t->events().end());
    rt::write_trace(o.trace, events, trace_meta(o, plan, static_cast<uint32_t>(plan.ranks.size())));
    if (!o.json())
      std::cout << fmt::format("trace: wrote {} ({} events, {} ranks)\n", o.trace, events.size(), plan.ranks.size());
  }
  if (o.json()) {
    nlohmann::json j = run_json(o, plan, static_cast<uint32_t>(plan.ranks.size()), rep.seconds_median,
                                rep.seconds_min, rep.equal ? std::string() : rep.first_mismatch);
    if (o.stats) j["engine_copies"] = copies_json(0, rep.copies);
    std::cout << j.dump(2) << "\n";
    return rep.equal ? 0 : replay_mismatch(rep.first_mismatch);
  }
  std::cout << fmt::format("replayed {} on {} in-process ranks, len = {} elements\n", describe(plan),
                           plan.ranks.size(), o.len);
  std::cout << fmt::format("time: median {:.6f} s, min {:.6f} s over {} runs; throughput {:.3f} GB/s of input\n",
                           rep.seconds_median, rep.seconds_min, rep.reps, rep.throughput_gbps);
  if (o.stats)
    for (uint32_t r = 0; r < rep.copies.size(); ++r) std::cout << copies_text(r, rep.copies[r]);
  if (!rep.equal) {
    std::cout << "MISMATCH against the direct computation: " << rep.first_mismatch << "\n";
    return replay_mismatch(rep.first_mismatch);
  }
  std::cout << "output: every byte equals the direct computation of the postcondition\n";
  return 0;
}

#ifdef COLLPLAN_HAVE_MPI
// Ends MPI however the run ends: MPI_Finalize after a success or after an
// error every rank raised alike (setup: plan file, communicator size, plan
// digests), MPI_Abort after an error of this rank alone (its peers may be
// blocked waiting for it). Exit status as main's: 0, 1 mismatch, 2 bad input.
int run_mpi(const RunOptions& o) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Local setup first; then every rank learns whether all succeeded before
  // any collective call, so a failure on some ranks cannot leave the others
  // waiting in one.
  ir::Plan plan;
  rt::RankReplayData d;
  int code = 0;
  std::string error;
  try {
    plan = load_plan(o.path);
    passes::verify(plan);  // never replay an unchecked plan
    mpi::check_comm_size(plan, MPI_COMM_WORLD);
    check_replay_size(o, plan, false, static_cast<ir::Rank>(rank));
    d = rt::rank_replay_data(plan, static_cast<ir::Rank>(rank), o.len, o.seed);
    if (rank == 0) check_trace_path(o.trace);
  } catch (const VerifyError& e) {
    code = 1;
    error = fmt::format("plan rejected: {}", e.what());
  } catch (const UserError& e) {
    code = 2;
    error = e.what();
  }
  int worst = 0, best = 0;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&code, &best, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  bool collective_phase = true;
  try {
    if (worst != 0) {
      // Every rank failed alike (a wrong -np, a missing plan file): rank 0
      // says it once. Otherwise each failing rank names itself.
      if (best == worst) {
        if (rank == 0) std::cerr << fmt::format("collplan: error: {}\n", error) << std::flush;
      } else if (code != 0) {
        std::cerr << fmt::format("collplan: error: MPI rank {}: {}\n", rank, error) << std::flush;
      } else if (rank == 0) {
        std::cerr << "collplan: error: stopped: another rank failed to set up\n" << std::flush;
      }
      if (o.json() && rank == 0)
        std::cout << nlohmann::json{{"ok", false},
                                    {"kind", worst == 1 ? "structure" : "input"},
                                    {"error", error.empty() ? std::string("another rank failed to set up") : error},
                                    {"exit_code", worst}}
                         .dump(2)
                  << "\n"
                  << std::flush;
      MPI_Barrier(MPI_COMM_WORLD);  // mpirun kills the job once one process exits non-zero
      MPI_Finalize();
      return worst;
    }
    mpi::Collective coll(plan, MPI_COMM_WORLD);
    // Traced: this rank's own engine runs on a TracingTransport around the
    // collective's transport (the collective still checked sizes and digests).
    std::unique_ptr<rt::Engine> traced_engine;
    std::unique_ptr<rt::TracingTransport> tracer;
    if (!o.trace.empty()) {
      traced_engine = std::make_unique<rt::Engine>(plan, static_cast<ir::Rank>(rank));
      tracer = std::make_unique<rt::TracingTransport>(coll.transport(), plan.spec.lambda);
    }
    collective_phase = false;
    const size_t row = o.len * coll.elem_size();
    std::vector<unsigned char> send(d.inputs.size() * row), recv(d.expected.size() * row);
    for (size_t i = 0; i < d.inputs.size(); ++i) std::copy(d.inputs[i].begin(), d.inputs[i].end(), send.begin() + i * row);
    std::vector<double> times;
    for (uint32_t r = 0; r < o.reps; ++r) {
      std::fill(recv.begin(), recv.end(), 0xA5);  // poison: every run must write every output
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      if (tracer) {
        std::vector<const void*> in_ptr(d.inputs.size());
        std::vector<void*> out_ptr(d.expected.size());
        for (size_t i = 0; i < in_ptr.size(); ++i) in_ptr[i] = send.data() + i * row;
        for (size_t j = 0; j < out_ptr.size(); ++j) out_ptr[j] = recv.data() + j * row;
        traced_engine->run(*tracer, in_ptr.data(), out_ptr.data(), o.len);
      } else {
        coll.run(send.data(), recv.data(), o.len);
      }
      double t = MPI_Wtime() - t0, slowest = 0;
      MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      times.push_back(slowest);
    }
    std::vector<std::vector<unsigned char>> out(d.expected.size());
    for (size_t j = 0; j < out.size(); ++j) out[j].assign(recv.begin() + j * row, recv.begin() + (j + 1) * row);
    const std::string mismatch = rt::first_mismatch(plan.spec.field, static_cast<ir::Rank>(rank), d.expected, out);
    int bad = mismatch.empty() ? 0 : 1, bad_ranks = 0;
    MPI_Allreduce(&bad, &bad_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (bad) std::cout << fmt::format("MISMATCH against the direct computation: {}\n", mismatch) << std::flush;
    // --stats: rank 0 gathers every rank's copy figures (three uint64 each).
    std::vector<Copies> all_copies;
    if (o.stats) {
      const Copies mine = engine_copies(tracer ? *traced_engine : coll.engine());
      const uint64_t v[3] = {mine.staged, mine.delivered, mine.op_copied};
      std::vector<uint64_t> all(rank == 0 ? 3 * static_cast<size_t>(size) : 0);
      MPI_Gather(v, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
      for (size_t i = 0; i + 2 < all.size(); i += 3) all_copies.push_back({all[i], all[i + 1], all[i + 2]});
    }
    std::vector<rt::TraceEvent> all_events;
    if (tracer) {
      // Rank 0 gathers every rank's events as bytes (TraceEvent is plain data).
      const auto& mine = tracer->events();
      const int bytes = static_cast<int>(mine.size() * sizeof(rt::TraceEvent));
      std::vector<int> counts(rank == 0 ? size : 0), displs(rank == 0 ? size : 0);
      MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
      size_t total = 0;
      for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
        displs[r] = static_cast<int>(total);
        total += static_cast<size_t>(counts[r]);
      }
      all_events.resize(total / sizeof(rt::TraceEvent));
      MPI_Gatherv(mine.data(), bytes, MPI_BYTE, all_events.data(), counts.data(), displs.data(), MPI_BYTE, 0,
                  MPI_COMM_WORLD);
    }
    if (rank == 0 && o.json()) {
      if (tracer) rt::write_trace(o.trace, all_events, trace_meta(o, plan, static_cast<uint32_t>(size)));
      nlohmann::json j = run_json(o, plan, static_cast<uint32_t>(size), median(times),
                                  *std::min_element(times.begin(), times.end()),
                                  bad_ranks == 0 ? std::string() : fmt::format("{} of {} ranks differ", bad_ranks, size));
      if (o.stats) j["engine_copies"] = copies_json(0, all_copies);
      std::cout << j.dump(2) << "\n" << std::flush;
    } else if (rank == 0) {
      if (tracer) {
        rt::write_trace(o.trace, all_events, trace_meta(o, plan, static_cast<uint32_t>(size)));
        std::cout << fmt::format("trace: wrote {} ({} events, {} ranks)\n", o.trace, all_events.size(), size);
      }
      std::cout << fmt::format("replayed {} on {} MPI ranks, len = {} elements\n", describe(plan), size, o.len);
      std::cout << fmt::format("time (slowest rank): median {:.6f} s, min {:.6f} s over {} runs\n", median(times),
                               *std::min_element(times.begin(), times.end()), times.size());
      for (uint32_t r = 0; r < all_copies.size(); ++r) std::cout << copies_text(r, all_copies[r]);
      if (bad_ranks == 0)
        std::cout << "output: every byte on every rank equals the direct computation of the postcondition\n";
      else
        std::cout << fmt::format("output: {} of {} ranks differ from the direct computation\n", bad_ranks, size);
    }
    if (bad_ranks != 0 && rank == 0) replay_mismatch(fmt::format("{} of {} ranks differ", bad_ranks, size));
    MPI_Finalize();
    return bad_ranks == 0 ? 0 : 1;
  } catch (const UserError& e) {
    if (!collective_phase) {
      std::cerr << fmt::format("collplan: error: MPI rank {}: {}\n", rank, e.what()) << std::flush;
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    // Every rank raised this error alike: rank 0 prints it, then every rank
    // waits for the others (mpirun kills the job once one process exits
    // non-zero).
    if (rank == 0) std::cerr << fmt::format("collplan: error: {}\n", e.what()) << std::flush;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 2;
  } catch (...) {
    if (!collective_phase) MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Finalize();
    throw;
  }
}
#endif

// One rank of a TCP run: this process replays rank --rank and checks its own
// outputs; the others run the same command with their own --rank.
int run_tcp(const RunOptions& o, const ir::Plan& plan) {
  if (o.peers.empty()) user_error("--transport tcp needs --peers (a file or host:port,host:port,...)");
  if (!o.rank_given) user_error("--transport tcp needs --rank (this process's rank, 0..K-1)");
  const std::vector<std::string> peers = rt::parse_peers(o.peers, plan.ranks.size());
  if (peers.size() != plan.ranks.size())
    user_error("--peers lists {} addresses but the plan has {} ranks", peers.size(), plan.ranks.size());
  if (o.rank >= peers.size()) user_error("--rank {} does not exist (valid: 0..{})", o.rank, peers.size() - 1);
  rt::TcpOptions topt;
  topt.timeout = std::chrono::milliseconds(o.timeout_ms);
  topt.connect_timeout = std::chrono::milliseconds(o.connect_timeout_ms);
  topt.key = rt::job_key(o.key_file);
  check_replay_size(o, plan, false, o.rank);
  const rt::RankReplayData d = rt::rank_replay_data(plan, o.rank, o.len, o.seed);
  rt::Engine eng(plan, o.rank);
  if (o.rank == 0) check_trace_path(o.trace);
  rt::TcpTransport tr(peers, o.rank, ir::plan_digest(plan), topt);
  std::unique_ptr<rt::TracingTransport> tracer;
  if (!o.trace.empty()) tracer = std::make_unique<rt::TracingTransport>(tr, plan.spec.lambda);
  rt::Transport& run_tr = tracer ? static_cast<rt::Transport&>(*tracer) : tr;
  std::vector<std::vector<unsigned char>> out(d.expected.size(), std::vector<unsigned char>(o.len * eng.elem_bytes()));
  std::vector<const void*> in_ptr;
  std::vector<void*> out_ptr;
  for (const auto& v : d.inputs) in_ptr.push_back(v.data());
  for (auto& v : out) out_ptr.push_back(v.data());
  std::vector<double> times;
  for (uint32_t r = 0; r < o.reps; ++r) {
    for (auto& v : out) std::fill(v.begin(), v.end(), 0xA5);  // poison: every run must write every output
    const auto t0 = std::chrono::steady_clock::now();
    eng.run(run_tr, in_ptr.data(), out_ptr.data(), o.len);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (tracer) {
    std::vector<rt::TraceEvent> events = tracer->events();
    rt::gather_trace(tr, events);
    if (o.rank == 0) {
      rt::write_trace(o.trace, events, trace_meta(o, plan, static_cast<uint32_t>(peers.size())));
      if (!o.json())
        std::cout << fmt::format("trace: wrote {} ({} events, {} ranks)\n", o.trace, events.size(), peers.size());
    }
  }
  if (o.json()) {
    const std::string mismatch = rt::first_mismatch(plan.spec.field, o.rank, d.expected, out);
    nlohmann::json j = run_json(o, plan, static_cast<uint32_t>(peers.size()), median(times),
                                *std::min_element(times.begin(), times.end()), mismatch);
    j["rank"] = o.rank;
    if (o.stats) j["engine_copies"] = copies_json(o.rank, {engine_copies(eng)});
    std::cout << j.dump(2) << "\n";
    return mismatch.empty() ? 0 : replay_mismatch(mismatch);
  }
  std::cout << fmt::format("replayed rank {} of {} over TCP ({} peers), len = {} elements\n", o.rank, describe(plan),
                           peers.size(), o.len);
  std::cout << fmt::format("time (this rank): median {:.6f} s, min {:.6f} s over {} runs\n", median(times),
                           *std::min_element(times.begin(), times.end()), times.size());
  if (o.stats) std::cout << copies_text(o.rank, engine_copies(eng));
  const std::string mismatch = rt::first_mismatch(plan.spec.field, o.rank, d.expected, out);
  if (!mismatch.empty()) {
    std::cout << "MISMATCH against the direct computation: " << mismatch << "\n";
    return replay_mismatch(mismatch);
  }
  std::cout << fmt::format("output: every byte of rank {} equals the direct computation of the postcondition\n",
                           o.rank);
  return 0;
}

int run_command(const RunOptions& o) {
  g_json_errors = o.json();
  if (o.len == 0) user_error("--len 0: vectors need at least one element");
  if (o.reps == 0) user_error("--reps 0: at least one repetition");
  if (o.transport == "mpi") {
#ifdef COLLPLAN_HAVE_MPI
    return run_mpi(o);
#else
    user_error("--transport mpi: this collplan was built without MPI (install MPI and rebuild)");
#endif
  }
  const ir::Plan plan = load_plan(o.path);
  passes::verify(plan);  // never replay an unchecked plan
  if (o.transport == "tcp") return run_tcp(o, plan);
  return run_threads(o, plan);
}

}  // namespace

void add_run_command(CLI::App& app, CommandList& cmds) {
  auto o = std::make_shared<RunOptions>();
  auto* run = app.add_subcommand("run", "replay a plan (in-process, MPI or TCP) and compare with a direct computation");
  run->add_option("plan", o->path, "plan file (.cplan or .json)")->required();
  add_uint_option(run, "--len", o->len, "elements per plan input and output (chosen at run time; a plan of n blocks per vector moves n*len elements per vector)", "len >= 1 elements");
  add_uint_option(run, "--seed", o->seed, "seed of the random inputs", "0..18446744073709551615");
  add_uint_option(run, "--reps", o->reps, "timed repetitions", "0..4294967295");
  run->add_option("--transport", o->transport,
                  "threads: all ranks in this process; mpi: one rank per process under mpirun -np K; tcp: this "
                  "process is rank --rank of the --peers list")
      ->check(CLI::IsMember({"threads", "mpi", "tcp"}))
      ->capture_default_str();
  run->add_option("--peers", o->peers,
                  "tcp: the peer list, a file with one host:port per line (line r = rank r) or host:port,host:port,...");
  run->add_option_function<uint32_t>(
      "--rank",
      [o](uint32_t r) {
        o->rank = r;
        o->rank_given = true;
      },
      "tcp: this process's rank");
  // CLI::Range, not CLI::PositiveNumber: its message prints the range of a
  // double (300 digits).
  const CLI::Range positive_ms(uint32_t{1}, std::numeric_limits<uint32_t>::max());
  run->add_option("--timeout", o->timeout_ms, "tcp: ms a step may wait for a peer before failing")
      ->check(positive_ms)
      ->capture_default_str();
  run->add_option("--connect-timeout", o->connect_timeout_ms, "tcp: ms to connect to every peer and handshake")
      ->check(positive_ms)
      ->capture_default_str();
  run->add_option("--key-file", o->key_file,
                  "tcp: the job key (`collplan keygen`); every rank must give the same one. Default: the file "
                  "$COLLPLAN_TCP_KEY_FILE names; none: no authentication, for trusted networks only");
  run->add_option("--trace", o->trace,
                  "write a Chrome trace (Perfetto, chrome://tracing) of the timed runs here: per rank, post, wait and "
                  "combine spans per step (mpi, tcp: rank 0 gathers all ranks' events and writes it)");
  run->add_flag("--stats", o->stats,
                "print, per rank, the bytes the engine copied itself in the last run (staging: inputs or outputs "
                "copied aside, messages gathered or scattered, slot-to-slot copies), the bytes the transport "
                "delivered, and the copies the plan itself needs (an input into its output, an op dst = src; docs/runtime.md)");
  add_format_option(run, o->format);
  run->footer("Examples:\n"
              "  collplan run a.cplan --len 65536\n"
              "  collplan run a.cplan --stats\n"
              "  collplan run a.cplan --format json\n"
              "  mpirun -np 64 collplan run a.cplan --transport mpi --len 65536\n"
              "  collplan run a.cplan --transport tcp --peers peers.txt --rank 0\n"
              "Exit status: 0 every output byte is right; 1 the plan is rejected or a replay differs;\n"
              "2 bad input (under mpirun every rank exits 2, the error is printed once); 3 internal error, 4 out of memory or descriptors.");
  cmds.push_back({run, [o] { return run_command(*o); }});
}

}  // namespace collplan::cli
