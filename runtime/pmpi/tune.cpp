// collplan-tune (run as `mpirun -np K collplan tune --plans DIR ...`): a
// plan set's table for communicator size K chosen by measurement on this
// machine (docs/pmpi.md, "Tuning").
//
// The program is linked with libcollplan_pmpi, so its MPI_ calls go
// through the library exactly as an application's do (shim overhead
// included), and it points the library at DIR itself. For each operation
// and each message size of the ladder (powers of two, --min-bytes ..
// --max-bytes), every candidate plan of the set for (operation, K) and the
// MPI library's own call are timed: collplan_pmpi_force sends the calls to
// one side at a time (control.h). All ranks run the same sequence; a rep
// times one call of every side, in an order rotated from rep to rep so
// noise hits all sides alike; a call's time is the slowest rank's; medians
// over --reps reps. A call's time is that of a batch of back-to-back calls
// (about --batch-us long, sized from MPI's own single-call time at that
// message size) divided by its length, as bench_pmpi and the Intel MPI
// Benchmarks time collectives: an application's calls follow each other,
// and one call between barriers mostly times how the ranks leave the
// barrier (a small broadcast's root returns before its data arrived
// anywhere). Reductions use MPI_SUM on doubles, except that a plan
// without identical bits on every rank (which the library gives integer
// calls only) is timed on 64-bit integers, against MPI timed on those too.
// A plan whose calls the library did not actually serve (collplan_pmpi_counts)
// is not a candidate at that size. Where a plan wins, the winners and MPI
// are timed again, three times as many reps, and the plan is kept only if
// it wins that round too.
// Rank 0 then rewrites DIR/index.json (atomically) by plan_table_tune.h's
// rule: a plan only where its median is at most (1 − margin) of MPI's.
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/pmpi/control.h"
#include "runtime/pmpi/plan_table.h"
#include "runtime/pmpi/plan_table_tune.h"
#include "support/error.h"
#include "support/safe_file.h"

using namespace collplan;
using namespace collplan::pmpi;

namespace {

constexpr const char* kUsage =
    "usage: mpirun -np K collplan tune --plans DIR [--ops LIST] [--min-bytes B] [--max-bytes B] [--reps R]\n"
    "                                  [--margin M] [--batch-us T] [--dry-run] [--quiet]\n"
    "\n"
    "Times every candidate plan of the set DIR for communicator size K (the number of ranks) against the MPI\n"
    "library's own call, through libcollplan_pmpi, at message sizes B = --min-bytes, 2*B, 4*B .. --max-bytes, and\n"
    "rewrites DIR/index.json so that a call goes to a plan only where the plan's median time is at most\n"
    "(1 - margin) of MPI's. Rows of other communicator sizes and operations are kept.\n"
    "\n"
    "  --plans DIR      the plan set (from `collplan plan-set`; --candidates N gives tune alternatives)\n"
    "  --ops LIST       comma-separated among broadcast, reduce, allgather, allreduce, reduce-scatter, scan,\n"
    "                   exscan (prefix: scan and exscan); default: every operation with plans for K\n"
    "  --min-bytes B    smallest message size timed (default 8)\n"
    "  --max-bytes B    largest message size timed; larger calls go to MPI (default 4194304)\n"
    "  --reps R         timed calls per side and size, the median is kept (default 15, 3..1001)\n"
    "  --margin M       a plan must beat MPI by this fraction (default 0.05, 0..0.9)\n"
    "  --batch-us T     a timed sample is a batch of back-to-back calls about T microseconds long, its time\n"
    "                   divided by its length (default 500, 0..100000; 0: one call between barriers)\n"
    "  --dry-run        measure and print, do not write the index\n"
    "  --quiet          print the summary only\n";

struct Flags {
  std::string dir;
  std::vector<CallOp> ops;
  uint64_t min_bytes = 8, max_bytes = uint64_t{4} << 20;
  int reps = 15;
  double margin = 0.05;
  double batch_us = 500;
  bool dry_run = false, quiet = false, help = false;
};

// Rank 0 of the job, known before MPI_Init from the launcher's environment
// (so only one rank reports a bad argument).
bool first_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* s = std::getenv(v)) return std::strcmp(s, "0") == 0;
  return true;
}
bool under_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

uint64_t parse_u64(const std::string& flag, const std::string& v, uint64_t lo, uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end || errno || x < lo || x > hi)
    user_error("{} \"{}\" is not an integer in {}..{}", flag, v, lo, hi);
  return x;
}

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) user_error("{} needs a value (see collplan tune --help)", a);
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      f.help = true;
    } else if (a == "--plans") {
      f.dir = value();
    } else if (a == "--ops") {
      const std::string list = value();
      for (size_t pos = 0; pos <= list.size();) {
        const size_t comma = std::min(list.find(',', pos), list.size());
        const std::string name = list.substr(pos, comma - pos);
        std::vector<CallOp> these;
        if (name == "prefix") {
          these = {CallOp::scan, CallOp::exscan};
        } else {
          try {
            these = {parse_call_op(name)};
          } catch (const UserError& e) {
            user_error("--ops: {}", e.what());
          }
        }
        for (CallOp o : these)
          if (std::find(f.ops.begin(), f.ops.end(), o) == f.ops.end()) f.ops.push_back(o);
        pos = comma + 1;
      }
    } else if (a == "--min-bytes") {
      f.min_bytes = parse_u64(a, value(), 1, uint64_t{1} << 30);
    } else if (a == "--max-bytes") {
      f.max_bytes = parse_u64(a, value(), 1, uint64_t{1} << 30);
    } else if (a == "--reps") {
      f.reps = static_cast<int>(parse_u64(a, value(), 3, 1001));
    } else if (a == "--margin") {
      const std::string v = value();
      char* end = nullptr;
      f.margin = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(f.margin >= 0 && f.margin <= 0.9))
        user_error("--margin \"{}\" is not a fraction in 0..0.9 (0.05: a plan must be 5% faster than MPI)", v);
    } else if (a == "--batch-us") {
      f.batch_us = static_cast<double>(parse_u64(a, value(), 0, 100000));
    } else if (a == "--dry-run") {
      f.dry_run = true;
    } else if (a == "--quiet") {
      f.quiet = true;
    } else {
      user_error("unknown argument \"{}\" (see collplan tune --help)", a);
    }
  }
  if (f.help) return f;
  if (f.dir.empty()) user_error("--plans DIR is required (the plan set to tune)");
  if (f.min_bytes > f.max_bytes)
    user_error("--min-bytes {} is larger than --max-bytes {}", f.min_bytes, f.max_bytes);
  return f;
}

// One side of the comparison: the MPI library on one datatype, or a plan.
struct Side {
  int cand = -1;     // index into the candidates, −1: MPI
  bool ints = false;  // timed on int64 (else double)
  std::string force;  // the name given to collplan_pmpi_force
};

// One call of `op` with `bytes` of data (the table's message size) through
// the library's MPI_ entry points.
void call(CallOp op, bool ints, uint64_t bytes, std::vector<std::byte>& in, std::vector<std::byte>& out) {
  const MPI_Datatype t = ints ? MPI_INT64_T : MPI_DOUBLE;
  const int n = static_cast<int>(std::max<uint64_t>(1, bytes / 8));
  switch (op) {
    case CallOp::broadcast: MPI_Bcast(in.data(), n, t, 0, MPI_COMM_WORLD); break;
    case CallOp::reduce: MPI_Reduce(in.data(), out.data(), n, t, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case CallOp::allgather: MPI_Allgather(in.data(), n, t, out.data(), n, t, MPI_COMM_WORLD); break;
    case CallOp::allreduce: MPI_Allreduce(in.data(), out.data(), n, t, MPI_SUM, MPI_COMM_WORLD); break;
    case CallOp::reduce_scatter: MPI_Reduce_scatter_block(in.data(), out.data(), n, t, MPI_SUM, MPI_COMM_WORLD); break;
    case CallOp::scan: MPI_Scan(in.data(), out.data(), n, t, MPI_SUM, MPI_COMM_WORLD); break;
    case CallOp::exscan: MPI_Exscan(in.data(), out.data(), n, t, MPI_SUM, MPI_COMM_WORLD); break;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

// Times every side of (op, K) at every size; collective.
TuneResult measure(const PlanTable& table, CallOp op, int K, const std::vector<int>& cands, const Flags& f,
                   int rank) {
  TuneResult r;
  r.op = op;
  r.K = static_cast<uint32_t>(K);
  r.cands = cands;
  r.reps = f.reps;
  r.margin = f.margin;
  r.batch_us = f.batch_us;
  std::vector<Side> sides;
  sides.push_back({-1, false, "mpi"});
  bool any_int = false;
  for (size_t c = 0; c < cands.size(); ++c) {
    const PlanEntry& p = table.plans[static_cast<size_t>(cands[c])];
    const bool ints = timed_on_integers(p);
    any_int |= ints;
    sides.push_back({static_cast<int>(c), ints, p.name});
  }
  if (any_int) sides.push_back({-1, true, "mpi"});
  // Every message size: the count is bytes / 8 elements of 8 bytes.
  std::vector<uint64_t> sizes;
  for (uint64_t s = std::max<uint64_t>(8, f.min_bytes); s <= f.max_bytes; s *= 2) sizes.push_back(s);
  const uint64_t top = sizes.empty() ? 8 : sizes.back();
  const size_t in_factor = op == CallOp::reduce_scatter ? static_cast<size_t>(K) : 1;
  const size_t out_factor = op == CallOp::allgather ? static_cast<size_t>(K) : 1;
  std::vector<std::byte> in(top * in_factor), out(top * out_factor);
  for (size_t i = 0; i + 8 <= in.size(); i += 8) {  // 1 + rank as a double, or as an int64
    const double d = 1.0 + rank;
    std::memcpy(in.data() + i, &d, 8);
  }
  std::vector<std::byte> in_int(in.size());
  for (size_t i = 0; i + 8 <= in_int.size(); i += 8) {
    const int64_t v = 1 + rank;
    std::memcpy(in_int.data() + i, &v, 8);
  }
  // Times the sides `which` (indices into sides) at `bytes`: a TuneSize
  // with the medians of those sides, −1 elsewhere.
  auto time_size = [&](uint64_t bytes, const std::vector<size_t>& which, int reps) {
    std::vector<std::vector<double>> times(sides.size());
    std::vector<bool> unserved(sides.size(), false);
    int batch = 1;  // calls per timed sample
    auto one = [&](size_t s, bool timed) {
      const Side& side = sides[s];
      if (collplan_pmpi_force(call_op_name(op), side.force.c_str()) != 0)
        internal_error(__FILE__, __LINE__, fmt::format("collplan_pmpi_force({}, {}) refused", call_op_name(op),
                                                       side.force));
      unsigned long long served0 = 0, served1 = 0;
      collplan_pmpi_counts(&served0, nullptr);
      PMPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int b = 0; b < batch; ++b) call(op, side.ints, bytes, side.ints ? in_int : in, out);
      const double dt = (MPI_Wtime() - t0) / batch;
      collplan_pmpi_counts(&served1, nullptr);
      // Served by the plan on every rank (or, for MPI, on none)?
      const int wrong = (side.cand >= 0) != (served1 == served0 + static_cast<unsigned long long>(batch)) ? 1 : 0;
      double worst = 0;
      int any_wrong = 0;
      PMPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      PMPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (any_wrong) unserved[s] = true;
      if (timed) times[s].push_back(worst * 1e6);
    };
    for (size_t s : which)
      for (int w = 0; w < 2; ++w) one(s, false);  // loads the plan (a collective agreement) and warms caches
    // The batch from MPI's single-call time (sides[0]; every rank computes
    // the same: each time is the maximum over the ranks).
    if (f.batch_us > 0) {
      for (int i = 0; i < 5; ++i) one(0, true);
      const double t1 = std::max(median(times[0]), 0.1);
      times[0].clear();
      batch = static_cast<int>(std::clamp(std::ceil(f.batch_us / t1), 1.0, 1000.0));
    }
    for (int rep = 0; rep < reps; ++rep)
      for (size_t k = 0; k < which.size(); ++k) one(which[(k + static_cast<size_t>(rep)) % which.size()], true);
    TuneSize ts;
    ts.bytes = bytes;
    ts.plan_us.assign(cands.size(), -1);
    ts.ratio_hi.assign(cands.size(), -1);
    for (size_t s : which) {
      const double m = median(times[s]);
      if (sides[s].cand < 0) {
        if (unserved[s]) internal_error(__FILE__, __LINE__, "a call forced to MPI was served by a plan");
        (sides[s].ints ? ts.mpi_int_us : ts.mpi_double_us) = m;
      } else if (!unserved[s]) {
        ts.plan_us[static_cast<size_t>(sides[s].cand)] = m;
        // Within each round, against MPI on the same datatype (every side
        // of `which` has one time per round, in round order).
        for (size_t q : which)
          if (sides[q].cand < 0 && sides[q].ints == sides[s].ints && times[q].size() == times[s].size()) {
            std::vector<double> ratio;
            for (size_t i = 0; i < times[s].size(); ++i) ratio.push_back(times[s][i] / times[q][i]);
            ts.ratio_hi[static_cast<size_t>(sides[s].cand)] = median_upper_95(ratio);
          }
      } else if (rank == 0 && !f.quiet) {
        std::printf("  %s: not served by the library at %llu bytes (see the library's message); not a candidate\n",
                    sides[s].force.c_str(), static_cast<unsigned long long>(bytes));
      }
    }
    return ts;
  };
  auto show = [&](const TuneSize& ts, const char* what) {
    if (rank != 0 || f.quiet) return;
    std::string line = fmt::format("{:<15} K={:<3} {:>8} B {} mpi {:9.1f} us", call_op_name(op), K, ts.bytes, what,
                                   ts.mpi_double_us);
    if (any_int) line += fmt::format(" (int64 {:.1f})", ts.mpi_int_us);
    for (size_t c = 0; c < cands.size(); ++c) {
      const double m = ts.plan_us[c];
      const double base =
          timed_on_integers(table.plans[static_cast<size_t>(cands[c])]) ? ts.mpi_int_us : ts.mpi_double_us;
      if (m >= 0) line += fmt::format("  p{} {:.2f}", c, m / base);
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  std::vector<size_t> everyone(sides.size());
  for (size_t s = 0; s < sides.size(); ++s) everyone[s] = s;
  const std::vector<Needs> classes = call_classes(op);
  for (uint64_t bytes : sizes) {
    r.sizes.push_back(time_size(bytes, everyone, f.reps));
    show(r.sizes.back(), "      ");
    // A plan that won must win again in a second, independent round of
    // timing, three times as long (the MPI sides and the winners only): one
    // lucky median on a noisy machine does not make a row. The second round's medians are
    // the ones kept; the losers of the first are no longer candidates at
    // this size.
    std::set<int> won;
    for (const Needs& cls : classes)
      if (const int w = tuned_choice(table, r, r.sizes.size() - 1, cls); w >= 0) won.insert(w);
    if (won.empty()) continue;
    std::vector<size_t> again;
    for (size_t s = 0; s < sides.size(); ++s)
      if (sides[s].cand < 0 || won.count(cands[static_cast<size_t>(sides[s].cand)])) again.push_back(s);
    r.sizes.back() = time_size(bytes, again, std::min(3 * f.reps, 1001));
    show(r.sizes.back(), "again:");
  }
  collplan_pmpi_force(call_op_name(op), nullptr);
  return r;
}

// What was chosen, one line per (op, K) and class: the sizes where a plan
// won, with plan / MPI.
void summarize(const PlanTable& table, const TuneResult& r) {
  const std::vector<Needs> classes = call_classes(r.op);
  const char* names[] = {"", "consistent ", "ordered "};
  for (size_t k = 0; k < classes.size(); ++k) {
    std::string wins;
    for (size_t i = 0; i < r.sizes.size(); ++i) {
      double ratio = 0;
      int best = -1;
      const int w = tuned_choice(table, r, i, classes[k], &best, &ratio);
      if (w >= 0) wins += fmt::format(" {}:{:.2f}", r.sizes[i].bytes, ratio);
    }
    const char* cls = r.op == CallOp::scan || r.op == CallOp::exscan ? (k ? "ordered " : "") : names[k];
    std::printf("tune: %s K=%u %scalls: %s\n", call_op_name(r.op), r.K, cls,
                wins.empty() ? "MPI at every size" : ("a plan at (bytes:plan/MPI)" + wins).c_str());
  }
}

int run(int argc, char** argv) {
  const Flags f = parse(argc, argv);
  if (f.help) {
    if (first_rank()) std::fputs(kUsage, stdout);
    return 0;
  }
  if (!under_launcher())
    user_error("collplan tune must run under mpirun, one process per rank of the communicator size to tune: "
               "mpirun -np K collplan tune --plans {}",
               f.dir);
  const PlanTable table = read_plan_table(f.dir);
  std::string text;
  {
    std::ifstream in(f.dir + "/index.json", std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // The library reads the set at MPI_Init.
  setenv("COLLPLAN_PLANS", f.dir.c_str(), 1);
  MPI_Init(&argc, &argv);
  int rank = 0, K = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  // From here on every rank decides alike (same arguments, same table), so
  // an error ends every rank with the same status; rank 0 says why.
  int status = 0;
  try {
    if (K < 2) user_error("collplan tune runs on one rank: start it with mpirun -np K, K >= 2");
    if (collplan_pmpi_force("allreduce", nullptr) == -1)
      user_error("libcollplan_pmpi did not load {}/index.json (its message above says why)", f.dir);
    std::vector<std::pair<CallOp, std::vector<int>>> work;
    std::set<uint32_t> Ks;
    for (const PlanEntry& p : table.plans) Ks.insert(p.K);
    std::string have;
    for (uint32_t k : Ks) have += (have.empty() ? "" : ", ") + std::to_string(k);
    std::vector<CallOp> ops = f.ops;
    const bool all = ops.empty();
    if (all)
      for (int o = 0; o < kNumCallOps; ++o) ops.push_back(static_cast<CallOp>(o));
    for (CallOp op : ops) {
      std::vector<int> cands;
      for (size_t i = 0; i < table.plans.size(); ++i)
        if (table.plans[i].op == op && table.plans[i].K == static_cast<uint32_t>(K)) cands.push_back(static_cast<int>(i));
      if (cands.empty() && !all)
        user_error("{} has no {} plans for K = {} (the number of ranks; its plans are for K = {}): build them with "
                   "collplan plan-set --K {} --ops ...",
                   f.dir, call_op_name(op), K, have.empty() ? "none" : have, K);
      if (!cands.empty()) work.emplace_back(op, std::move(cands));
    }
    if (work.empty())
      user_error("{} has no plans for K = {} (the number of ranks; its plans are for K = {}): build them with "
                 "collplan plan-set --K {}",
                 f.dir, K, have.empty() ? "none" : have, K);
    std::vector<TuneResult> results;
    for (const auto& [op, cands] : work) {
      if (rank == 0 && !f.quiet)
        std::printf("tune: %s K=%d: %zu candidate(s) against MPI, %d reps per size (p<i>: plan / MPI)\n",
                    call_op_name(op), K, cands.size(), f.reps);
      results.push_back(measure(table, op, K, cands, f, rank));
    }
    if (rank == 0) {
      for (const TuneResult& r : results) summarize(table, r);
      if (!f.dry_run) {
        const std::string out = retune_index(text, f.dir + "/index.json", table, results);
        files::write_file(f.dir + "/index.json", "plan set index", out);
        std::printf("tune: wrote %s/index.json (K = %d tuned; margin %.2f)\n", f.dir.c_str(), K, f.margin);
      }
    }
  } catch (const UserError& e) {
    if (rank == 0) std::fprintf(stderr, "collplan tune: error: %s\n", e.what());
    status = 2;
  }
  // Rank 0's write may fail: every rank leaves with its status.
  PMPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    if (first_rank()) std::fprintf(stderr, "collplan tune: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collplan tune: internal error: %s (this is a bug in collplan)\n", e.what());
    return 3;
  }
}
