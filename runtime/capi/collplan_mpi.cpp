// The MPI part of the C API (collplan_mpi.h).
#include "collplan_mpi.h"

#include <memory>

#include "capi_internal.h"
#include "runtime/transport/mpi.h"

using namespace collplan;

struct collplan_mpi_collective {
  const collplan_plan* plan = nullptr;
  std::unique_ptr<mpi::Collective> coll;
};

namespace {

void check_mpi(MPI_Comm comm) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) capi::arg_error("MPI is not initialized (call MPI_Init first) or already finalized");
  if (comm == MPI_COMM_NULL) capi::arg_error("comm is MPI_COMM_NULL");
}

}  // namespace

extern "C" {

int collplan_mpi_init(const collplan_plan* plan, MPI_Comm comm, collplan_mpi_collective** coll) {
  const char* what = "collplan_mpi_init";
  if (coll == nullptr)
    return capi::fail(COLLPLAN_ERR_ARGUMENT, fmt::format("{}: coll (the result pointer) is NULL", what));
  *coll = nullptr;
  int st = capi::guard(what, COLLPLAN_ERR_ARGUMENT, [&] {
    capi::plan_of(plan);
    check_mpi(comm);
    // Not collective: the same answer on every rank, before any communication.
    mpi::check_comm_size(plan->plan, comm);
  });
  if (st != COLLPLAN_OK) return st;
  // Collective: ranks holding different plans fail alike on every rank.
  return capi::guard(what, COLLPLAN_ERR_ARGUMENT, [&] {
    auto c = std::make_unique<collplan_mpi_collective>();
    c->plan = plan;
    c->coll = std::make_unique<mpi::Collective>(plan->plan, comm);
    *coll = c.release();
  });
}

int collplan_mpi_run(collplan_mpi_collective* coll, const void* sendbuf, void* recvbuf, size_t count) {
  const char* what = "collplan_mpi_run";
  const int st = capi::guard(what, COLLPLAN_ERR_ARGUMENT, [&] {
    if (coll == nullptr) capi::arg_error("coll is NULL (make one with collplan_mpi_init)");
    const ir::Plan& p = coll->plan->plan;
    capi::check_buffers(p, coll->coll->transport().rank(), sendbuf, recvbuf, count);
  });
  if (st != COLLPLAN_OK) return st;
  return capi::guard(what, COLLPLAN_ERR_TRANSPORT, [&] { coll->coll->run(sendbuf, recvbuf, count); });
}

void collplan_mpi_free(collplan_mpi_collective* coll) {
  try {
    delete coll;
  } catch (...) {
  }
}

int collplan_run_mpi(const collplan_plan* plan, const void* sendbuf, void* recvbuf, size_t count, MPI_Comm comm) {
  // Argument checks every rank can make alone come first, so that a bad
  // buffer fails before any collective step.
  int st = capi::guard("collplan_run_mpi", COLLPLAN_ERR_ARGUMENT, [&] {
    const ir::Plan& p = capi::plan_of(plan);
    check_mpi(comm);
    mpi::check_comm_size(p, comm);
    int me = 0;
    MPI_Comm_rank(comm, &me);
    capi::check_buffers(p, static_cast<ir::Rank>(me), sendbuf, recvbuf, count);
  });
  if (st != COLLPLAN_OK) return st;
  collplan_mpi_collective* c = nullptr;
  st = collplan_mpi_init(plan, comm, &c);
  if (st != COLLPLAN_OK) return st;
  st = collplan_mpi_run(c, sendbuf, recvbuf, count);
  collplan_mpi_free(c);
  return st;
}

int collplan_run_mpi_f(const collplan_plan* plan, const void* sendbuf, void* recvbuf, size_t count, MPI_Fint comm) {
  return collplan_run_mpi(plan, sendbuf, recvbuf, count, MPI_Comm_f2c(comm));
}

}  // extern "C"
