// Rank k of an encode plan (K = 8, GF(2^8)) on MPI through the installed C++
// headers (ir/binary.h, runtime/transport/mpi.h), checked against
// Σ_j x_j·A[j][k] computed here from A's CSV with collplan's Field.
//   mpirun -np 8 encode_cpp PLAN.cplan A.csv COUNT
#include <mpi.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "field/field.h"
#include "ir/binary.h"
#include "runtime/transport/mpi.h"
#include "support/error.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, failures = 0, total = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (argc != 4) {
    if (me == 0) std::fprintf(stderr, "usage: encode_cpp PLAN.cplan A.csv COUNT\n");
    MPI_Finalize();
    return 2;
  }
  const size_t count = std::stoul(argv[3]);
  try {
    const collplan::ir::Plan plan = collplan::ir::read_binary(argv[1]);
    const uint32_t K = plan.spec.K;
    std::vector<std::vector<unsigned>> A;
    std::ifstream csv(argv[2]);
    for (std::string line; std::getline(csv, line);) {
      std::vector<unsigned> row;
      std::stringstream ss(line);
      for (std::string cell; std::getline(ss, cell, ',');) row.push_back(static_cast<unsigned>(std::stoul(cell)));
      A.push_back(row);
    }
    if (A.size() != K) throw collplan::UserError("A.csv does not have K rows");
    const collplan::Field f = collplan::Field::gf256();
    auto x_of = [](uint32_t rank, size_t i, unsigned salt) {
      return static_cast<unsigned char>((rank * 57u + i * 3u + (i >> 9) * 5u + salt * 101u) & 0xFF);
    };
    auto check = [&](const std::vector<unsigned char>& y, size_t n, unsigned salt) {
      for (size_t i = 0; i < n; ++i) {
        collplan::Elem want = 0;
        for (uint32_t j = 0; j < K; ++j) want = f.add(want, f.mul(x_of(j, i, salt), A[j][me]));
        if (y[i] != want) {
          std::fprintf(stderr, "rank %d: FAIL: count %zu, element %zu: expected %u, got %u\n", me, n, i,
                       static_cast<unsigned>(want), y[i]);
          ++failures;
          return;
        }
      }
    };
    // One-shot, in the shape of an MPI collective.
    std::vector<unsigned char> x(count), y(count);
    for (size_t i = 0; i < count; ++i) x[i] = x_of(me, i, 0);
    collplan::mpi::run(plan, x.data(), y.data(), count, 1, MPI_COMM_WORLD);
    check(y, count, 0);
    // Persistent: built once, run twice.
    collplan::mpi::Collective coll(plan, MPI_COMM_WORLD);
    for (unsigned salt = 1; salt <= 2; ++salt) {
      for (size_t i = 0; i < count; ++i) x[i] = x_of(me, i, salt);
      coll.run(x.data(), y.data(), count);
      check(y, count, salt);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: FAIL: %s\n", me, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0 && total == 0)
    std::printf("PASS (C++): 8 ranks, count %zu: every rank's output equals x·A column by column\n", count);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
