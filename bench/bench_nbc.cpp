// bench_nbc: how much computation a non-blocking allreduce hides, through
// libcollplan_pmpi (MPI_Iallreduce, its replay advanced by MPI_Test) against
// the MPI library's own (PMPI_Iallreduce, advanced by PMPI_Test), in the
// same run. OSU-style (osu_iallreduce):
//
//   mpirun -np K -x LD_PRELOAD=.../libcollplan_pmpi.so -x COLLPLAN_PLANS=DIR
//          bench_nbc [REPS] [MAX_BYTES] [TEST_US]
//
// Per message size (doubles, MPI_SUM; 64 KiB, 256 KiB, ... MAX_BYTES) and
// side, the median over REPS (default 11) of the slowest rank's time of
//   comm:  Iallreduce; Wait                                (no computation)
//   total: Iallreduce; compute for c seconds; Wait
// where c is the MPI side's comm time (the same c for both sides, so the
// totals compare directly) and the computation calls Test on the request
// every TEST_US microseconds (default 50; 0: never — then neither side
// advances until Wait). overlap = 1 − (total − c) / comm, clamped to
// [0, 1]: the share of the collective hidden behind the computation. The
// sides alternate within each rep, so noise hits both alike. Without the
// library preloaded both sides are MPI.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

volatile double sink = 0;

// Busy work for `seconds`, testing `req` every test_us microseconds.
void compute(double seconds, MPI_Request* req, bool lib, double test_us) {
  const double t0 = MPI_Wtime();
  double next = t0 + test_us * 1e-6, x = 1.0;
  for (;;) {
    for (int i = 0; i < 200; ++i) x = x * 1.0000001 + 1e-9;
    const double now = MPI_Wtime();
    if (now - t0 >= seconds) break;
    if (test_us > 0 && now >= next && *req != MPI_REQUEST_NULL) {
      int flag = 0;
      (lib ? MPI_Test : PMPI_Test)(req, &flag, MPI_STATUS_IGNORE);
      next = now + test_us * 1e-6;
    }
  }
  sink = x;
}

double slowest(double dt) {
  double worst = 0;
  PMPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

// One timed Iallreduce (+ compute) + Wait on one side.
double once(bool lib, std::vector<double>& in, std::vector<double>& out, double c, double test_us) {
  const int n = static_cast<int>(in.size());
  MPI_Request req;
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  (lib ? MPI_Iallreduce : PMPI_Iallreduce)(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
  if (c > 0) compute(c, &req, lib, test_us);
  (lib ? MPI_Wait : PMPI_Wait)(&req, MPI_STATUS_IGNORE);
  return slowest(MPI_Wtime() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, K = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 11;
  const long max_bytes = argc > 2 ? std::atol(argv[2]) : 4L << 20;
  const double test_us = argc > 3 ? std::atof(argv[3]) : 50;
  if (rank == 0) {
    std::printf("bench_nbc: K = %d, %d reps, Test every %.0f us; times in us, medians of the slowest rank's\n", K,
                reps, test_us);
    std::printf("%10s | %10s %10s %8s | %10s %10s %8s | %11s\n", "bytes", "lib comm", "lib total", "overlap",
                "MPI comm", "MPI total", "overlap", "total ratio");
  }
  for (long bytes = 64 << 10; bytes <= max_bytes; bytes *= 4) {
    const size_t n = static_cast<size_t>(bytes / 8);
    std::vector<double> in(n, 1.0 + rank), out(n);
    for (int warm = 0; warm < 2; ++warm) once(true, in, out, 0, 0), once(false, in, out, 0, 0);
    std::vector<double> comm[2], total[2];
    for (int r = 0; r < reps; ++r)
      for (int side = 0; side < 2; ++side) comm[side].push_back(once(side == 0, in, out, 0, 0));
    // Every rank computes for the same time: broadcast rank 0's median.
    double c = median(comm[1]);
    PMPI_Bcast(&c, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int r = 0; r < reps; ++r)
      for (int side = 0; side < 2; ++side) total[side].push_back(once(side == 0, in, out, c, test_us));
    if (rank == 0) {
      double ov[2], cm[2], tt[2];
      for (int side = 0; side < 2; ++side) {
        cm[side] = median(comm[side]);
        tt[side] = median(total[side]);
        ov[side] = std::clamp(1.0 - (tt[side] - c) / cm[side], 0.0, 1.0);
      }
      std::printf("%10ld | %10.1f %10.1f %7.0f%% | %10.1f %10.1f %7.0f%% | %11.2f\n", bytes, cm[0] * 1e6,
                  tt[0] * 1e6, ov[0] * 100, cm[1] * 1e6, tt[1] * 1e6, ov[1] * 100, tt[0] / tt[1]);
    }
  }
  MPI_Finalize();
  return 0;
}
