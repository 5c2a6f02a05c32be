// MPI baselines of bench_sim, run by SimGrid's SMPI (smpirun) on the same
// simulated platform as the plans (runtime/sim/sim_replay.h). Built as an
// SMPI program (a shared object smpirun loads), not as a native MPI program.
//
//   baselines METHOD LEN
// METHOD: rs    x_k times row k of A (K products), MPI_Reduce_scatter_block(BXOR)
//         a2a   the same products, MPI_Alltoall, XOR of the K received blocks
//         bcast MPI_Bcast of LEN bytes from rank 0
//         allgather  MPI_Allgather of LEN bytes per rank
//         allreduce  MPI_Allreduce(BXOR) of LEN bytes
//         redscat    MPI_Reduce_scatter_block(BXOR), K blocks of LEN bytes per
//                    rank, LEN bytes out
// Rank 0 prints "SMPI METHOD K LEN SECONDS": the simulated time from the
// start until the last rank finished (all ranks start at time 0, as in the
// plan's replay). Local computation is charged with the replay's model
// (smpi_execute_flops: one flop per byte of multiply-accumulate or XOR per
// term); SMPI itself does not time the code (smpi/simulate-computation:no),
// so the XOR inside rs's reduce-scatter is charged after it, K·LEN·(K−1)/K
// ≈ the bytes that recursive halving (or a ring) reduces per rank.
// allreduce and redscat charge their reductions, after the call, with the
// replay's model: MPI reduces two buffers at a time (op(in, inout)), a sum of
// 2 terms, 2 flops per byte. Any such algorithm does, over all ranks, at
// least K−1 of them for each byte of the result, so on average per rank at
// least 2·(K−1)/K·LEN flops for allreduce (what Rabenseifner's and the ring
// algorithm do; recursive doubling does 2·LEN·log2 K) and 2·(K−1)·LEN for
// redscat (what recursive halving and the ring do). Charging that least
// amount whatever algorithm the selector picks never charges MPI more than
// its algorithm would be charged as a plan. allgather combines nothing and is
// charged nothing, as the replay charges a plan's copies nothing.
// Buffers come from SMPI_SHARED_MALLOC: their contents are meaningless, only
// the sizes matter (data correctness is tested on real MPI by bench_mpi).
#include <mpi.h>
#include <smpi/smpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, K = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  if (argc != 3) {
    if (rank == 0) std::fprintf(stderr, "usage: baselines rs|a2a|bcast|allgather|allreduce|redscat LEN\n");
    MPI_Finalize();
    return 2;
  }
  const char* method = argv[1];
  const long len = std::atol(argv[2]);
  const double t0 = MPI_Wtime();
  const double row = static_cast<double>(len);
  if (std::strcmp(method, "bcast") == 0) {
    char* b = static_cast<char*>(SMPI_SHARED_MALLOC(static_cast<size_t>(len)));
    MPI_Bcast(b, static_cast<int>(len), MPI_BYTE, 0, MPI_COMM_WORLD);
    SMPI_SHARED_FREE(b);
  } else if (std::strcmp(method, "allgather") == 0) {
    char* in = static_cast<char*>(SMPI_SHARED_MALLOC(static_cast<size_t>(len)));
    char* out = static_cast<char*>(SMPI_SHARED_MALLOC(static_cast<size_t>(len) * static_cast<size_t>(K)));
    MPI_Allgather(in, static_cast<int>(len), MPI_BYTE, out, static_cast<int>(len), MPI_BYTE, MPI_COMM_WORLD);
    SMPI_SHARED_FREE(out);
    SMPI_SHARED_FREE(in);
  } else if (std::strcmp(method, "allreduce") == 0) {
    char* in = static_cast<char*>(SMPI_SHARED_MALLOC(static_cast<size_t>(len)));
    char* out = static_cast<char*>(SMPI_SHARED_MALLOC(static_cast<size_t>(len)));
    MPI_Allreduce(in, out, static_cast<int>(len), MPI_BYTE, MPI_BXOR, MPI_COMM_WORLD);
    smpi_execute_flops(2.0 * (K - 1) / K * row);
    SMPI_SHARED_FREE(out);
    SMPI_SHARED_FREE(in);
  } else if (std::strcmp(method, "redscat") == 0) {
    char* in = static_cast<char*>(SMPI_SHARED_MALLOC(static_cast<size_t>(len) * static_cast<size_t>(K)));
    char* out = static_cast<char*>(SMPI_SHARED_MALLOC(static_cast<size_t>(len)));
    MPI_Reduce_scatter_block(in, out, static_cast<int>(len), MPI_BYTE, MPI_BXOR, MPI_COMM_WORLD);
    smpi_execute_flops(2.0 * (K - 1) * row);
    SMPI_SHARED_FREE(out);
    SMPI_SHARED_FREE(in);
  } else {
    const size_t all = static_cast<size_t>(len) * static_cast<size_t>(K);
    char* prod = static_cast<char*>(SMPI_SHARED_MALLOC(all));
    smpi_execute_flops(K * row);  // x_k times each entry of row k
    if (std::strcmp(method, "rs") == 0) {
      char* y = static_cast<char*>(SMPI_SHARED_MALLOC(static_cast<size_t>(len)));
      MPI_Reduce_scatter_block(prod, y, static_cast<int>(len), MPI_BYTE, MPI_BXOR, MPI_COMM_WORLD);
      smpi_execute_flops((K - 1) * row);
      SMPI_SHARED_FREE(y);
    } else {
      char* recv = static_cast<char*>(SMPI_SHARED_MALLOC(all));
      MPI_Alltoall(prod, static_cast<int>(len), MPI_BYTE, recv, static_cast<int>(len), MPI_BYTE, MPI_COMM_WORLD);
      smpi_execute_flops(K * row);  // XOR of the K blocks
      SMPI_SHARED_FREE(recv);
    }
    SMPI_SHARED_FREE(prod);
  }
  double dt = MPI_Wtime() - t0, slowest = 0;
  MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf("SMPI %s %d %ld %.12g\n", method, K, len, slowest);
  MPI_Finalize();
  return 0;
}
