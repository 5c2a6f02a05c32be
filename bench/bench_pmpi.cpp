// bench_pmpi: each collective libcollplan_pmpi intercepts, through the
// library (MPI_*) against the MPI library itself (PMPI_*) in the same run,
// on a ladder of message sizes (8 B .. MAX_BYTES, factors of 4).
//
//   mpirun -np K -x LD_PRELOAD=.../libcollplan_pmpi.so -x COLLPLAN_PLANS=DIR
//          bench_pmpi [REPS] [MAX_BYTES] [OPS] [BATCH_US]
//
// OPS: comma-separated among allreduce, bcast, reduce, allgather,
// reduce_scatter, scan, exscan, allgatherv (default all: every call the
// library intercepts; allgatherv with equal counts). Doubles with MPI_SUM.
//
// The method. A sample of a side is a batch of B calls back to back
// between two barriers (as the Intel MPI Benchmarks time collectives), its
// time divided by B, the slowest rank's. B is chosen per size so that a
// batch takes about BATCH_US microseconds (default 500; 0: B = 1, one call
// between barriers, as the OSU benchmarks do, whose small-message figures
// on oversubscribed ranks mostly measure how the ranks leave the barrier).
// Per size, REPS rounds (default 101; fewer for sizes whose rounds would
// take over 3 s), each timing one sample of three sides in an order
// rotated from round to round: the library, MPI, and MPI again. The ratio
// printed is the median over rounds of library / MPI within a round, with
// its 95% confidence interval (order statistics of the median), and
// "MPI/MPI", the same for the third side, is the method's noise floor in
// this very run. With the library, "served" says how many of its side's
// calls a plan served (collplan_pmpi_counts, found with dlsym: "plan" all,
// "mpi" none); without it, the library side is MPI too.
// The last lines summarize: the worst ratio where the library fell back to
// MPI, the worst where a plan served, the sizes a plan served, how many
// sizes were above 1.02 (and how many surely so: their whole interval),
// and the noise floor.
#include <mpi.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Fn = void (*)(bool lib, std::vector<double>& in, std::vector<double>& out, int count);

void allreduce(bool lib, std::vector<double>& in, std::vector<double>& out, int n) {
  (lib ? MPI_Allreduce : PMPI_Allreduce)(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
void bcast(bool lib, std::vector<double>& in, std::vector<double>&, int n) {
  (lib ? MPI_Bcast : PMPI_Bcast)(in.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}
void reduce(bool lib, std::vector<double>& in, std::vector<double>& out, int n) {
  (lib ? MPI_Reduce : PMPI_Reduce)(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
}
void allgather(bool lib, std::vector<double>& in, std::vector<double>& out, int n) {
  (lib ? MPI_Allgather : PMPI_Allgather)(in.data(), n, MPI_DOUBLE, out.data(), n, MPI_DOUBLE, MPI_COMM_WORLD);
}
void reduce_scatter(bool lib, std::vector<double>& in, std::vector<double>& out, int n) {
  (lib ? MPI_Reduce_scatter_block : PMPI_Reduce_scatter_block)(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM,
                                                               MPI_COMM_WORLD);
}
void scan(bool lib, std::vector<double>& in, std::vector<double>& out, int n) {
  (lib ? MPI_Scan : PMPI_Scan)(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
void exscan(bool lib, std::vector<double>& in, std::vector<double>& out, int n) {
  (lib ? MPI_Exscan : PMPI_Exscan)(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
// Every rank the same count: the library serves it as an allgather.
void allgatherv(bool lib, std::vector<double>& in, std::vector<double>& out, int n) {
  int K = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  std::vector<int> counts(static_cast<size_t>(K), n), displs(static_cast<size_t>(K));
  for (int r = 0; r < K; ++r) displs[static_cast<size_t>(r)] = r * n;
  (lib ? MPI_Allgatherv : PMPI_Allgatherv)(in.data(), n, MPI_DOUBLE, out.data(), counts.data(), displs.data(),
                                           MPI_DOUBLE, MPI_COMM_WORLD);
}

using Counts = void (*)(unsigned long long*, unsigned long long*);

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median of v and a 95% confidence interval for it, distribution-free:
// the order statistics n/2 -+ 1.96 sqrt(n)/2.
struct Estimate {
  double mid, lo, hi;
};
Estimate estimate(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size()), half = 1.96 * std::sqrt(n) / 2;
  const auto at = [&](double k) {
    return v[static_cast<size_t>(std::clamp(k, 0.0, n - 1))];
  };
  return {v[v.size() / 2], at(std::floor(n / 2 - half)), at(std::ceil(n / 2 + half))};
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, K = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  const int reps = argc > 1 ? std::max(3, std::atoi(argv[1])) : 101;
  const long max_bytes = argc > 2 ? std::atol(argv[2]) : 4L << 20;
  const std::string ops =
      argc > 3 ? argv[3] : "allreduce,bcast,reduce,allgather,reduce_scatter,scan,exscan,allgatherv";
  const double batch_us = argc > 4 ? std::max(0.0, std::atof(argv[4])) : 500;
  constexpr double kSizeBudget = 3.0;  // seconds of timed rounds per size at most
  struct Op {
    const char* name;
    Fn fn;
    int in_factor, out_factor;  // buffer sizes in units of the count
  };
  const Op all[] = {{"allreduce", allreduce, 1, 1},           {"bcast", bcast, 1, 1},
                    {"reduce", reduce, 1, 1},                 {"allgather", allgather, 1, K},
                    {"reduce_scatter", reduce_scatter, K, 1}, {"scan", scan, 1, 1},
                    {"exscan", exscan, 1, 1},                 {"allgatherv", allgatherv, 1, K}};
  // The library's call counts, when it is loaded (preloaded or linked).
  const auto counts = reinterpret_cast<Counts>(dlsym(RTLD_DEFAULT, "collplan_pmpi_counts"));
  auto served_now = [&] {
    unsigned long long served = 0;
    if (counts) counts(&served, nullptr);
    return served;
  };
  // One sample: B calls of one side, the slowest rank's time per call (on
  // every rank).
  auto sample = [&](const Op& op, bool lib, std::vector<double>& in, std::vector<double>& out, int n, int B) {
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int b = 0; b < B; ++b) op.fn(lib, in, out, n);
    const double dt = (MPI_Wtime() - t0) / B;
    double worst = 0;
    PMPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
  };
  double worst_mpi = 0, worst_plan = 0, worst_floor = 0;
  std::string worst_mpi_at, worst_plan_at, plan_sizes;
  int cells = 0, above = 0, surely_above = 0, floor_above = 0;
  if (rank == 0)
    std::printf("bench_pmpi: K = %d; a sample = a batch of B calls (about %.0f us) between barriers, per call, "
                "the slowest rank's; up to %d rounds per size; ratio = median of library / MPI within a round, "
                "[95%% interval]; MPI/MPI = the same for MPI against itself (noise floor); served = the library "
                "side's calls a plan served%s\n",
                K, batch_us, reps, counts ? "" : " (library not loaded: both sides are MPI)");
  for (const Op& op : all) {
    if (("," + ops + ",").find("," + std::string(op.name) + ",") == std::string::npos) continue;
    if (rank == 0)
      std::printf("%-15s %10s %5s %6s %12s %12s %7s %17s %8s %7s\n", op.name, "bytes", "B", "rounds", "library us",
                  "MPI us", "ratio", "[95% interval]", "MPI/MPI", "served");
    for (long bytes = 8; bytes <= max_bytes; bytes *= 4) {
      const int n = static_cast<int>(bytes / 8);
      std::vector<double> in(static_cast<size_t>(n) * op.in_factor, 1.0 + rank), out(static_cast<size_t>(n) * op.out_factor);
      for (int warm = 0; warm < 2; ++warm) op.fn(true, in, out, n), op.fn(false, in, out, n);
      // The batch size and the rounds from MPI's own single-call time (the
      // same on every rank: each sample is the maximum over ranks).
      std::vector<double> single;
      for (int i = 0; i < 5; ++i) single.push_back(sample(op, false, in, out, n, 1));
      const double t1 = std::max(median(single), 1e-7);
      const int B = batch_us > 0 ? static_cast<int>(std::clamp(std::ceil(batch_us * 1e-6 / t1), 1.0, 1000.0)) : 1;
      const int rounds = static_cast<int>(std::clamp(kSizeBudget / (3 * B * t1), 11.0, static_cast<double>(reps)));
      std::vector<double> t[3], ratio, floor_ratio;
      unsigned long long served = 0;
      for (int r = 0; r < rounds; ++r) {
        double got[3] = {0, 0, 0};
        for (int k = 0; k < 3; ++k) {
          const int side = (r + k) % 3;  // 0 library, 1 MPI, 2 MPI again; the order rotates
          const unsigned long long before = served_now();
          got[side] = sample(op, side == 0, in, out, n, B);
          served += served_now() - before;
        }
        for (int k = 0; k < 3; ++k) t[k].push_back(got[k]);
        ratio.push_back(got[0] / got[1]);
        floor_ratio.push_back(got[2] / got[1]);
      }
      if (rank == 0) {
        const double a = median(t[0]) * 1e6, b = median(t[1]) * 1e6;
        const Estimate e = estimate(ratio), f = estimate(floor_ratio);
        const unsigned long long calls = static_cast<unsigned long long>(rounds) * static_cast<unsigned long long>(B);
        const std::string by = !counts ? "-" : served == 0 ? "mpi" : served == calls ? "plan"
                                                                      : std::to_string(served) + "/" + std::to_string(calls);
        char interval[40];
        std::snprintf(interval, sizeof interval, "[%.3f, %.3f]", e.lo, e.hi);
        std::printf("%-15s %10ld %5d %6d %12.2f %12.2f %7.3f %17s %8.3f %7s\n", op.name, bytes, B, rounds, a, b,
                    e.mid, interval, f.mid, by.c_str());
        const std::string at = std::string(op.name) + " " + std::to_string(bytes) + " B";
        ++cells;
        above += e.mid > 1.02;
        surely_above += e.lo > 1.02;
        floor_above += std::abs(f.mid - 1) > 0.02;
        worst_floor = std::max(worst_floor, std::abs(f.mid - 1));
        if (served == 0) {
          if (e.mid > worst_mpi) worst_mpi = e.mid, worst_mpi_at = at;
        } else {
          if (e.mid > worst_plan) worst_plan = e.mid, worst_plan_at = at;
          char buf[64];
          std::snprintf(buf, sizeof buf, " %s:%.2f", at.c_str(), e.mid);
          plan_sizes += buf;
        }
      }
    }
  }
  if (rank == 0) {
    if (!worst_mpi_at.empty()) std::printf("worst ratio, library fell back to MPI: %.3f (%s)\n", worst_mpi, worst_mpi_at.c_str());
    if (!worst_plan_at.empty()) std::printf("worst ratio, a plan served: %.3f (%s)\n", worst_plan, worst_plan_at.c_str());
    if (counts) std::printf("served by a plan:%s\n", plan_sizes.empty() ? " none" : plan_sizes.c_str());
    std::printf("sizes above 1.02: %d of %d, with the whole 95%% interval above 1.02: %d; noise floor: MPI/MPI "
                "off 1 by at most %.3f (%d sizes beyond 0.02)\n",
                above, cells, surely_above, worst_floor, floor_above);
  }
  MPI_Finalize();
  return 0;
}
