// bench_pmpi: each collective libcollplan_pmpi intercepts, through the
// library (MPI_*) against the MPI library itself (PMPI_*) in the same run,
// on a ladder of message sizes (an OSU-style ladder, 8 B .. 4 MiB).
//
//   mpirun -np K -x LD_PRELOAD=.../libcollplan_pmpi.so -x COLLPLAN_PLANS=DIR
//          bench_pmpi [REPS] [MAX_BYTES] [OPS]
//
// OPS: comma-separated among allreduce, bcast, reduce, allgather,
// reduce_scatter, scan, exscan, allgatherv (default all: every call the
// library intercepts; allgatherv with equal counts). Per size, REPS (default 21) rounds,
// each timing one call of each side, the side that goes first alternating
// from round to round (so noise and the order hit both
// alike); a call's time is the slowest rank's (MPI_Reduce of MAX over the
// ranks, outside the timed region); the medians and their ratio
// library / MPI are printed, with, when the library is loaded, how many of
// the library side's calls a plan served (its collplan_pmpi_counts, found
// with dlsym: "plan" all, "mpi" none). Without the library preloaded, both
// sides are MPI (a ratio of ~1 shows the method's noise). Doubles with
// MPI_SUM. The last lines summarize: the worst ratio where the library fell
// back to MPI, the worst where a plan served, and the sizes a plan served.
#include <mpi.h>

#include <dlfcn.h>

#include <algorithm>
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

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, K = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 21;
  const long max_bytes = argc > 2 ? std::atol(argv[2]) : 4L << 20;
  const std::string ops =
      argc > 3 ? argv[3] : "allreduce,bcast,reduce,allgather,reduce_scatter,scan,exscan,allgatherv";
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
  double worst_mpi = 0, worst_plan = 0;
  std::string worst_mpi_at, worst_plan_at, plan_sizes;
  if (rank == 0)
    std::printf("bench_pmpi: K = %d, %d rounds per size; time = median of the slowest rank's; ratio = library / MPI; "
                "served = the library side's calls a plan served%s\n",
                K, reps, counts ? "" : " (library not loaded)");
  for (const Op& op : all) {
    if (("," + ops + ",").find("," + std::string(op.name) + ",") == std::string::npos) continue;
    if (rank == 0)
      std::printf("%-15s %10s %12s %12s %7s %7s\n", op.name, "bytes", "library us", "MPI us", "ratio", "served");
    for (long bytes = 8; bytes <= max_bytes; bytes *= 4) {
      const int n = static_cast<int>(bytes / 8);
      std::vector<double> in(static_cast<size_t>(n) * op.in_factor, 1.0 + rank), out(static_cast<size_t>(n) * op.out_factor);
      std::vector<double> t[2];
      for (int warm = 0; warm < 2; ++warm) op.fn(true, in, out, n), op.fn(false, in, out, n);
      unsigned long long served = 0;
      for (int r = 0; r < reps; ++r)
        for (int k = 0; k < 2; ++k) {
          const int side = (r + k) % 2;  // which goes first alternates: no order bias
          const unsigned long long before = served_now();
          PMPI_Barrier(MPI_COMM_WORLD);
          const double t0 = MPI_Wtime();
          op.fn(side == 0, in, out, n);
          double dt = MPI_Wtime() - t0, worst = 0;
          served += served_now() - before;
          PMPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
          t[side].push_back(worst);
        }
      if (rank == 0) {
        const double a = median(t[0]) * 1e6, b = median(t[1]) * 1e6;
        const std::string by = !counts ? "-" : served == 0 ? "mpi" : served == static_cast<unsigned long long>(reps)
                                                                       ? "plan"
                                                                       : std::to_string(served) + "/" + std::to_string(reps);
        std::printf("%-15s %10ld %12.2f %12.2f %7.3f %7s\n", op.name, bytes, a, b, a / b, by.c_str());
        const std::string at = std::string(op.name) + " " + std::to_string(bytes) + " B";
        if (served == 0) {
          if (a / b > worst_mpi) worst_mpi = a / b, worst_mpi_at = at;
        } else {
          if (a / b > worst_plan) worst_plan = a / b, worst_plan_at = at;
          char buf[64];
          std::snprintf(buf, sizeof buf, " %s:%.2f", at.c_str(), a / b);
          plan_sizes += buf;
        }
      }
    }
  }
  if (rank == 0) {
    if (!worst_mpi_at.empty()) std::printf("worst ratio, library fell back to MPI: %.3f (%s)\n", worst_mpi, worst_mpi_at.c_str());
    if (!worst_plan_at.empty()) std::printf("worst ratio, a plan served: %.3f (%s)\n", worst_plan, worst_plan_at.c_str());
    if (counts) std::printf("served by a plan:%s\n", plan_sizes.empty() ? " none" : plan_sizes.c_str());
  }
  MPI_Finalize();
  return 0;
}
