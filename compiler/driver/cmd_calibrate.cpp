// `collplan calibrate`: measures this machine's start-up time per message
// (alpha, seconds) and time per byte (beta, seconds per byte) on a transport
// and writes them as a cost file (driver/cost_flags.h, docs/cost-model.md),
// which `compile --cost-file` and `check --cost-file` turn into the cost
// model's β and τ.
//
//   --transport threads  two or more ranks as threads of this process
//   --transport mpi      one rank per MPI process (mpirun -np N, N >= 2);
//                        rank 0 writes the file
//
// The measurement goes through the same rt::Transport a plan's replay uses
// (runtime/transport.h), so it includes what the engine pays per message:
// for each message size of a ladder (1 B, 2 B, 4 B, ... --max-bytes) a pair
// of ranks bounces a message back and forth, and the one-way time of a size
// is half the median round trip. Why medians, and pairs one at a time: on an
// oversubscribed machine a few round trips wait a whole scheduler quantum
// for a descheduled peer; the median ignores them, and ranks that are not
// measuring sleep instead of polling, so they do not take the pair's
// processors. Sizes are measured in interleaved passes (every size once per
// pass), so a noisy second spreads over all sizes instead of biasing one.
// Several pairs (--pairs ring: (0,1), (1,2), ..., (N-1,0)) give one median
// per pair and size; the file takes the median over the pairs.
//
// The fit: alpha and beta minimise Σ ((t_i − alpha − beta·s_i) / t_i)², the
// least squares of the relative error, so that the 1-byte latency and the
// 4 MiB bandwidth weigh alike (plain least squares would let the largest
// sizes' absolute noise decide alpha). The residual printed and stored is
// the RMS relative error of that fit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "driver/cli.h"
#include "driver/cost_flags.h"
#include "runtime/transport.h"
#include "runtime/transport/threads.h"
#include "support/error.h"
#include "support/safe_file.h"
#ifdef COLLPLAN_HAVE_MPI
#include "runtime/transport/mpi.h"
#endif

namespace collplan::cli {

namespace {

// Sizes up to this many bytes get --reps round trips per pass; larger ones
// proportionally fewer (at least kMinRepsLarge), so that every size costs
// about the same time.
constexpr uint64_t kFullRepsBytes = uint64_t{64} << 10;
constexpr uint32_t kMinRepsLarge = 4;
// --max-bytes: at least 64 B (a ladder of 7 sizes for a 2-parameter fit), at
// most 1 GiB (MPI counts are int; the buffers are allocated once).
constexpr uint64_t kMinMaxBytes = 64;
constexpr uint64_t kMaxMaxBytes = uint64_t{1} << 30;
// Every message of a pair's run has its own step number (round_trips): at
// most 2 · 31 sizes · (1 + passes · reps) < 2^32 of them.
constexpr uint32_t kMaxReps = 65536;
constexpr uint32_t kMaxPasses = 256;

struct CalibrateOptions {
  std::string transport = "threads";
  std::string out;
  uint32_t ranks = 2;  // threads only; MPI: the communicator's size
  bool ranks_given = false;
  uint64_t max_bytes = uint64_t{4} << 20;
  uint32_t reps = 64;
  uint32_t passes = 3;
  std::string pairs = "ring";
};

using Clock = std::chrono::steady_clock;

std::vector<uint64_t> ladder(uint64_t max_bytes) {
  std::vector<uint64_t> sizes;
  for (uint64_t s = 1; s < max_bytes; s *= 2) sizes.push_back(s);
  sizes.push_back(max_bytes);
  return sizes;
}

uint32_t reps_for(const CalibrateOptions& o, uint64_t bytes) {
  if (bytes <= kFullRepsBytes) return o.reps;
  return std::max<uint32_t>(std::min(o.reps, kMinRepsLarge), static_cast<uint32_t>(o.reps * kFullRepsBytes / bytes));
}

// The pairs measured, initiator first: (0,1) alone, or the ring (r, r+1 mod N).
std::vector<std::pair<uint32_t, uint32_t>> pairs_of(const std::string& mode, uint32_t n) {
  std::vector<std::pair<uint32_t, uint32_t>> p{{0, 1}};
  if (mode == "ring")
    for (uint32_t r = 1; r < n && n > 2; ++r) p.push_back({r, (r + 1) % n});
  return p;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void check_status(rt::Transport& tr, rt::Status s, const char* what, uint64_t bytes) {
  if (s == rt::Status::ok) return;
  const std::string detail = tr.error_detail();
  tr.abandon();
  user_error("calibrate: rank {}: {} of a {}-byte message failed: {}{}", tr.rank(), what, bytes, rt::status_name(s),
             detail.empty() ? std::string() : " (" + detail + ")");
}

// `count` round trips of `bytes` between this endpoint and `peer`, within
// the pair's one transport run. Every message takes the next step number
// (`*step`): a key is never used twice in a run, and a pair's two sides need
// no synchronisation between sizes (a reused key could meet the previous
// message's entry that the other side has not yet seen complete). The
// initiator appends each round trip's seconds to *rtt.
void round_trips(rt::Transport& tr, ir::Rank peer, bool initiator, uint64_t bytes, uint32_t count,
                 unsigned char* send_buf, unsigned char* recv_buf, ir::StepNo* step, std::vector<double>* rtt) {
  for (uint32_t i = 0; i < count; ++i, *step += 2) {
    const ir::StepNo out_step = *step + (initiator ? 1 : 2), in_step = *step + (initiator ? 2 : 1);
    rt::SendDesc sd;
    sd.to = peer, sd.step = out_step, sd.data = send_buf, sd.bytes = bytes;
    rt::RecvDesc rd;
    rd.from = peer, rd.sent_at = in_step, rd.data = recv_buf, rd.bytes = bytes;
    const rt::ReqId both[2] = {0, 1};
    size_t failed = 0;
    if (initiator) {
      const Clock::time_point t0 = Clock::now();
      check_status(tr, tr.post_recv(1, rd), "receive", bytes);
      check_status(tr, tr.post_send(0, sd), "send", bytes);
      check_status(tr, tr.wait(both, 2, &failed), "round trip", bytes);
      rtt->push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    } else {
      check_status(tr, tr.post_recv(1, rd), "receive", bytes);
      check_status(tr, tr.wait(&both[1], 1, &failed), "receive", bytes);
      check_status(tr, tr.post_send(0, sd), "send", bytes);
      check_status(tr, tr.wait(&both[0], 1, &failed), "send", bytes);
    }
  }
}

// One side of a pair's whole measurement, as one transport run (begin ..
// end): a warm-up round trip per size (connections, page faults), then
// --passes passes over the ladder. Returns, for the initiator, every round
// trip's seconds per size.
std::vector<std::vector<double>> measure_pair(rt::Transport& tr, ir::Rank peer, bool initiator,
                                              const CalibrateOptions& o, const std::vector<uint64_t>& sizes) {
  std::vector<unsigned char> send_buf(sizes.back(), 0x5A), recv_buf(sizes.back());
  std::vector<std::vector<double>> rtt(sizes.size());
  std::vector<double> discard;
  ir::StepNo step = 0;
  check_status(tr, tr.begin(2), "begin", 0);
  for (uint64_t s : sizes) round_trips(tr, peer, initiator, s, 1, send_buf.data(), recv_buf.data(), &step, &discard);
  for (uint32_t pass = 0; pass < o.passes; ++pass)
    for (size_t i = 0; i < sizes.size(); ++i)
      round_trips(tr, peer, initiator, sizes[i], reps_for(o, sizes[i]), send_buf.data(), recv_buf.data(), &step,
                  &rtt[i]);
  check_status(tr, tr.end(), "end", 0);
  return rtt;
}

// Per size: half the median round trip of one pair.
std::vector<double> one_way(const std::vector<std::vector<double>>& rtt) {
  std::vector<double> t;
  for (const auto& v : rtt) t.push_back(median(v) / 2);
  return t;
}

struct Fit {
  double alpha = 0, beta = 0, residual = 0;
  bool alpha_pinned = false;  // the free fit's alpha was <= 0: pinned to the smallest size's time
};

// Least squares of the relative error (see the file comment).
Fit fit(const std::vector<uint64_t>& sizes, const std::vector<double>& t) {
  double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double w = 1 / (t[i] * t[i]), s = static_cast<double>(sizes[i]);
    s0 += w, s1 += w * s, s2 += w * s * s, t0 += w * t[i], t1 += w * s * t[i];
  }
  Fit f;
  const double det = s0 * s2 - s1 * s1;
  f.alpha = (s2 * t0 - s1 * t1) / det;
  f.beta = (s0 * t1 - s1 * t0) / det;
  if (!(f.alpha > 0)) {
    // Only noise makes a free fit's intercept negative: take the smallest
    // message's time as alpha and fit beta alone.
    f.alpha_pinned = true;
    f.alpha = t[0];
    double num = 0, den = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const double w = 1 / (t[i] * t[i]), s = static_cast<double>(sizes[i]);
      num += w * s * (t[i] - f.alpha), den += w * s * s;
    }
    f.beta = num / den;
  }
  double r = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double e = (t[i] - f.alpha - f.beta * static_cast<double>(sizes[i])) / t[i];
    r += e * e;
  }
  f.residual = std::sqrt(r / static_cast<double>(sizes.size()));
  return f;
}

std::string bytes_text(uint64_t b) {
  if (b >= (uint64_t{1} << 20) && b % (uint64_t{1} << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

// The per-pair one-way times (pair × size; NaN where a pair has none) into
// the file's figures, the fit printed, the file written. Rank 0 / the
// threads run only.
int report_and_write(const CalibrateOptions& o, uint32_t ranks, uint32_t ranks_here,
                     const std::vector<std::pair<uint32_t, uint32_t>>& pairs, const std::vector<uint64_t>& sizes,
                     const std::vector<std::vector<double>>& per_pair, const std::vector<uint64_t>& trips) {
  std::vector<double> t(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<double> v;
    for (const auto& p : per_pair)
      if (std::isfinite(p[i])) v.push_back(p[i]);
    t[i] = median(v);
    COLLPLAN_ASSERT(t[i] > 0 && std::isfinite(t[i]), fmt::format("calibrate: no positive time for {} bytes", sizes[i]));
  }
  const Fit f = fit(sizes, t);
  if (!(f.beta > 0))
    user_error("calibrate: the times did not grow with the message size (fitted beta = {} s per byte): the "
               "measurement is all noise; try --max-bytes larger, or more --reps and --passes",
               f.beta);

  std::string pair_list;
  for (const auto& [a, b] : pairs) pair_list += fmt::format(" ({},{})", a, b);
  std::cout << fmt::format("calibrate: transport {}, {} ranks; pairs{}, one at a time; {} passes over {} sizes, "
                           "1 B .. {}\n",
                           o.transport, ranks, pair_list, o.passes, sizes.size(), bytes_text(sizes.back()));
  const unsigned hw = std::thread::hardware_concurrency();
  if (hw > 0 && ranks_here > hw)
    std::cout << fmt::format("note: {} ranks on {} hardware threads here: oversubscribed; medians drop most round "
                             "trips that waited for a descheduled peer, the figures still include some scheduling\n",
                             ranks_here, hw);
  std::cout << fmt::format("{:>10}  {:>13}  {:>13}  {:>9}  {:>11}\n", "bytes", "one-way (s)", "fit (s)", "error",
                           "round trips");
  CostFile file;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double model = f.alpha + f.beta * static_cast<double>(sizes[i]);
    std::cout << fmt::format("{:>10}  {:>13.6e}  {:>13.6e}  {:>+8.1f}%  {:>11}\n", sizes[i], t[i], model,
                             100 * (t[i] - model) / t[i], trips[i]);
    file.samples.push_back({sizes[i], t[i], trips[i]});
  }
  std::cout << fmt::format("fit (least squares of the relative error): alpha = {:.4g} us per message, beta = {:.4g} "
                           "ns per byte ({:.3g} GB/s); residual {:.1f}% RMS{}\n",
                           f.alpha * 1e6, f.beta * 1e9, 1e-9 / f.beta, 100 * f.residual,
                           f.alpha_pinned ? " (the free fit's alpha was <= 0: alpha is the 1-byte time)" : "");
  file.transport = o.transport;
  file.ranks = ranks;
  file.alpha_s = f.alpha;
  file.beta_s_per_byte = f.beta;
  file.residual = f.residual;
  file.measured_at = utc_now();
  file.host = host_name();
  if (!o.out.empty()) {
    files::write_file(o.out, "cost file", cost_file_json(file));
    std::cout << fmt::format("wrote {} (compile --cost-file {}: beta = alpha, tau = beta x the field's element "
                             "bytes)\n",
                             o.out, o.out);
  }
  return 0;
}

void check_options(const CalibrateOptions& o) {
  if (o.max_bytes < kMinMaxBytes || o.max_bytes > kMaxMaxBytes)
    user_error("--max-bytes {} is out of range (valid: {} .. {} bytes)", o.max_bytes, kMinMaxBytes, kMaxMaxBytes);
  if (o.reps == 0 || o.reps > kMaxReps)
    user_error("--reps {} is out of range (valid: 1 .. {} round trips per size and pass)", o.reps, kMaxReps);
  if (o.passes == 0 || o.passes > kMaxPasses)
    user_error("--passes {} is out of range (valid: 1 .. {} passes over the sizes)", o.passes, kMaxPasses);
  if (o.transport == "threads" && o.ranks < 2) user_error("--ranks {}: a ping-pong needs at least 2 ranks", o.ranks);
  if (o.transport != "threads" && o.ranks_given)
    user_error("--ranks is for --transport threads; under MPI the ranks are mpirun's -np");
}

int calibrate_threads(const CalibrateOptions& o) {
  check_options(o);
  if (!o.out.empty()) files::check_writable(o.out, "cost file");
  const std::vector<uint64_t> sizes = ladder(o.max_bytes);
  const auto pairs = pairs_of(o.pairs, o.ranks);
  rt::ThreadsWorld world(o.ranks);
  std::vector<std::vector<double>> per_pair;
  std::vector<uint64_t> trips(sizes.size(), 0);
  for (const auto& [a, b] : pairs) {
    std::vector<std::vector<double>> rtt;
    std::exception_ptr err;
    std::thread responder([&, b = b, a = a] {
      try {
        measure_pair(world.endpoint(b), a, false, o, sizes);
      } catch (...) {
        err = std::current_exception();
        world.abort();  // wakes the initiator
      }
    });
    std::exception_ptr own;
    try {
      rtt = measure_pair(world.endpoint(a), b, true, o, sizes);
    } catch (...) {
      own = std::current_exception();
      world.abort();
    }
    responder.join();
    // The side that failed first is the one to report; the other only saw
    // the abort.
    if (err) std::rethrow_exception(err);
    if (own) std::rethrow_exception(own);
    world.reset();
    per_pair.push_back(one_way(rtt));
    for (size_t i = 0; i < sizes.size(); ++i) trips[i] += rtt[i].size();
  }
  // Only the pair's two threads run at a time: that is what the processors hold.
  return report_and_write(o, o.ranks, 2, pairs, sizes, per_pair, trips);
}

#ifdef COLLPLAN_HAVE_MPI
// Waits for every rank without polling the processor away from a pair that
// is still measuring: a non-blocking barrier, tested every 100 µs.
void quiet_barrier(MPI_Comm comm) {
  MPI_Request req;
  MPI_Ibarrier(comm, &req);
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Errors before any measurement are every rank's alike (options) or rank 0's
// (the output path): they are agreed on, printed once by rank 0, and every
// rank exits 2. A transport failure in the measurement ends the job
// (MPI_Abort), since the peer may be blocked waiting for this rank.
int calibrate_mpi(const CalibrateOptions& o) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string error;
  try {
    check_options(o);
    if (size < 2) user_error("calibrate --transport mpi needs at least 2 ranks (start it with mpirun -np 2 or more)");
    if (rank == 0 && !o.out.empty()) files::check_writable(o.out, "cost file");
  } catch (const UserError& e) {
    error = e.what();
  }
  int bad = error.empty() ? 0 : 1, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_bad) {
    if (rank == 0) std::cerr << fmt::format("collplan: error: {}\n", error.empty() ? "another rank failed" : error);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 2;
  }
  // Ranks sharing this node, for the oversubscription note.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);

  const std::vector<uint64_t> sizes = ladder(o.max_bytes);
  const auto pairs = pairs_of(o.pairs, static_cast<uint32_t>(size));
  const int n = static_cast<int>(sizes.size());
  // This rank's row: the one-way times of the pair it starts (NaN if none),
  // then the round trips per size.
  std::vector<double> mine(2 * sizes.size(), std::numeric_limits<double>::quiet_NaN());
  try {
    rt::MpiTransport tr(MPI_COMM_WORLD);
    for (const auto& [a, b] : pairs) {
      if (static_cast<uint32_t>(rank) == a || static_cast<uint32_t>(rank) == b) {
        const bool initiator = static_cast<uint32_t>(rank) == a;
        const auto rtt = measure_pair(tr, initiator ? b : a, initiator, o, sizes);
        if (initiator) {
          const std::vector<double> t = one_way(rtt);
          for (size_t i = 0; i < sizes.size(); ++i) mine[i] = t[i], mine[n + i] = static_cast<double>(rtt[i].size());
        }
      }
      quiet_barrier(MPI_COMM_WORLD);
    }
  } catch (const UserError& e) {
    std::cerr << fmt::format("collplan: error: MPI rank {}: {}\n", rank, e.what()) << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  std::vector<double> all(rank == 0 ? mine.size() * size : 0);
  MPI_Gather(mine.data(), 2 * n, MPI_DOUBLE, all.data(), 2 * n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int code = 0;
  if (rank == 0) {
    std::vector<std::vector<double>> per_pair;
    std::vector<uint64_t> trips(sizes.size(), 0);
    for (int r = 0; r < size; ++r) {
      const double* row = all.data() + static_cast<size_t>(r) * 2 * n;
      if (!std::isfinite(row[0])) continue;  // started no pair
      per_pair.emplace_back(row, row + n);
      for (int i = 0; i < n; ++i) trips[i] += static_cast<uint64_t>(row[n + i]);
    }
    try {
      code = report_and_write(o, static_cast<uint32_t>(size), static_cast<uint32_t>(node_size), pairs, sizes,
                              per_pair, trips);
    } catch (const UserError& e) {
      std::cerr << fmt::format("collplan: error: {}\n", e.what()) << std::flush;
      code = 2;
    } catch (const std::exception& e) {  // the other ranks wait in MPI_Bcast: never leave them there
      std::cerr << fmt::format("collplan: error: {}\n", e.what()) << std::flush;
      code = 3;
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
#endif

int calibrate_command(const CalibrateOptions& o) {
  if (o.transport == "mpi") {
#ifdef COLLPLAN_HAVE_MPI
    return calibrate_mpi(o);
#else
    user_error("--transport mpi: this collplan was built without MPI (install MPI and rebuild)");
#endif
  }
  return calibrate_threads(o);
}

}  // namespace

void add_calibrate_command(CLI::App& app, CommandList& cmds) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* c = app.add_subcommand("calibrate",
                               "measure this machine's time per message (alpha) and per byte (beta) on a transport "
                               "and write a cost file for compile/check --cost-file");
  c->add_option("--transport", o->transport,
                "threads: ranks as threads of this process; mpi: one rank per process under mpirun -np N (N >= 2), "
                "rank 0 writes the file")
      ->check(CLI::IsMember({"threads", "mpi"}))
      ->capture_default_str();
  c->add_option("-o,--output", o->out, "write the cost file here (JSON, docs/cost-model.md); without it only print");
  add_uint_option(c, "--ranks", o->ranks, "threads: ranks (threads) to measure between", "2..4294967295");
  add_uint_option(c, "--max-bytes", o->max_bytes, "largest message: the sizes are 1, 2, 4, ... bytes up to it",
                  "64 .. 1073741824 bytes");
  add_uint_option(c, "--reps", o->reps,
                  "round trips per size and pass (sizes over 64 KiB proportionally fewer, at least 4)", "1..65536");
  add_uint_option(c, "--passes", o->passes, "passes over all sizes (interleaved, so noise spreads over all sizes)",
                  "1..256");
  c->add_option("--pairs", o->pairs,
                "ring: every neighbour pair (0,1), (1,2), ..., (N-1,0), one at a time, median over the pairs; "
                "first: the pair (0,1) only")
      ->check(CLI::IsMember({"ring", "first"}))
      ->capture_default_str();
  c->footer("Examples:\n"
            "  mpirun -np 4 collplan calibrate --transport mpi -o cost.json\n"
            "  collplan calibrate --transport threads -o cost-threads.json\n"
            "  collplan compile --op allreduce --K 16 --blocks auto --cost-len 131072 --cost-file cost.json --explain\n"
            "Prints the one-way time per size, the fit alpha + beta*bytes and its residual.\n"
            "Exit status: 0 ok; 2 bad input (under mpirun the error is printed once); 3 internal error.");
  cmds.push_back({c, [o, c] {
                    o->ranks_given = c->count("--ranks") > 0;
                    return calibrate_command(*o);
                  }});
}

}  // namespace collplan::cli
