// libcollplan_pmpi: the MPI calls that drive the library's non-blocking
// collectives (nbc.h). Each forwards to its PMPI_ function; while a
// replay is pending:
//
// - a call that tests makes one non-blocking pass over the pending
//   replays first;
// - a call that waits (the Wait family, blocking point-to-point) polls
//   instead of blocking: it makes passes over the replays and tests its
//   own requests (the same operation, non-blocking: MPI_Recv as MPI_Irecv
//   and a test loop) until they complete, and blocks in MPI only once no
//   replay is pending;
// - a blocking collective the library does not serve, and communicator
//   construction, first completes every pending replay (a blocking
//   collective cannot be turned into a non-blocking one: MPI does not
//   match the two).
//
// With no replay pending each is its PMPI_ function plus one load.
#include <mpi.h>
#include <sched.h>

#include "runtime/pmpi/nbc.h"

using namespace collplan::pmpi;

namespace {

// PMPI_Waitall over n requests, making progress on the replays meanwhile.
int poll_waitall(int n, MPI_Request* reqs, MPI_Status* statuses) {
  for (;;) {
    if (nbc_idle()) return PMPI_Waitall(n, reqs, statuses);
    nbc_progress();
    int flag = 0;
    const int rc = PMPI_Testall(n, reqs, &flag, statuses);
    if (rc != MPI_SUCCESS || flag) return rc;
    sched_yield();  // ranks may outnumber cores: let the peers run
  }
}

int poll_wait(MPI_Request* req, MPI_Status* status) {
  for (;;) {
    if (nbc_idle()) return PMPI_Wait(req, status);
    nbc_progress();
    int flag = 0;
    const int rc = PMPI_Test(req, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    sched_yield();
  }
}

}  // namespace

extern "C" {

// ─── Calls that test: one pass ──────────────────────────────────────────────

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  nbc_progress();
  return PMPI_Test(request, flag, status);
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int* flag, MPI_Status array_of_statuses[]) {
  nbc_progress();
  return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int* index, int* flag, MPI_Status* status) {
  nbc_progress();
  return PMPI_Testany(count, array_of_requests, index, flag, status);
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int* outcount, int array_of_indices[], MPI_Status array_of_statuses[]) {
  nbc_progress();
  return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  nbc_progress();
  return PMPI_Request_get_status(request, flag, status);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  nbc_progress();
  return PMPI_Iprobe(source, tag, comm, flag, status);
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status) {
  nbc_progress();
  return PMPI_Improbe(source, tag, comm, flag, message, status);
}

// ─── The Wait family: poll ──────────────────────────────────────────────────

int MPI_Wait(MPI_Request* request, MPI_Status* status) { return poll_wait(request, status); }

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status* array_of_statuses) {
  return poll_waitall(count, array_of_requests, array_of_statuses);
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int* index, MPI_Status* status) {
  for (;;) {
    if (nbc_idle()) return PMPI_Waitany(count, array_of_requests, index, status);
    nbc_progress();
    int flag = 0;
    const int rc = PMPI_Testany(count, array_of_requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    sched_yield();
  }
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount, int array_of_indices[],
                 MPI_Status array_of_statuses[]) {
  for (;;) {
    if (nbc_idle()) return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    nbc_progress();
    const int rc = PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;  // MPI_UNDEFINED: no active request
    sched_yield();
  }
}

// A pending replay's request is freed when the replay ends (freeing a
// generalized request before it is complete would lose it).
int MPI_Request_free(MPI_Request* request) {
  if (nbc_free_request(request)) return MPI_SUCCESS;
  return PMPI_Request_free(request);
}

// ─── Blocking point-to-point: the non-blocking call, then poll ─────────────

int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  if (nbc_idle()) return PMPI_Send(buf, count, datatype, dest, tag, comm);
  MPI_Request r;
  const int rc = PMPI_Isend(buf, count, datatype, dest, tag, comm, &r);
  return rc != MPI_SUCCESS ? rc : poll_wait(&r, MPI_STATUS_IGNORE);
}

int MPI_Ssend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  if (nbc_idle()) return PMPI_Ssend(buf, count, datatype, dest, tag, comm);
  MPI_Request r;
  const int rc = PMPI_Issend(buf, count, datatype, dest, tag, comm, &r);
  return rc != MPI_SUCCESS ? rc : poll_wait(&r, MPI_STATUS_IGNORE);
}

int MPI_Rsend(const void* ibuf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  if (nbc_idle()) return PMPI_Rsend(ibuf, count, datatype, dest, tag, comm);
  MPI_Request r;
  const int rc = PMPI_Irsend(ibuf, count, datatype, dest, tag, comm, &r);
  return rc != MPI_SUCCESS ? rc : poll_wait(&r, MPI_STATUS_IGNORE);
}

int MPI_Bsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  if (nbc_idle()) return PMPI_Bsend(buf, count, datatype, dest, tag, comm);
  MPI_Request r;
  const int rc = PMPI_Ibsend(buf, count, datatype, dest, tag, comm, &r);
  return rc != MPI_SUCCESS ? rc : poll_wait(&r, MPI_STATUS_IGNORE);
}

int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (nbc_idle()) return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
  MPI_Request r;
  const int rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, &r);
  return rc != MPI_SUCCESS ? rc : poll_wait(&r, status);
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (nbc_idle())
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                         comm, status);
  MPI_Request r[2];
  int rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &r[0]);
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &r[1]);
  if (rc != MPI_SUCCESS) {
    PMPI_Cancel(&r[0]);
    PMPI_Request_free(&r[0]);
    return rc;
  }
  MPI_Status st[2];
  rc = poll_waitall(2, r, st);
  if (status != MPI_STATUS_IGNORE) *status = st[0];
  if (rc == MPI_ERR_IN_STATUS) rc = st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR;
  return rc;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  for (;;) {
    if (nbc_idle()) return PMPI_Probe(source, tag, comm, status);
    nbc_progress();
    int flag = 0;
    const int rc = PMPI_Iprobe(source, tag, comm, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    sched_yield();
  }
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  for (;;) {
    if (nbc_idle()) return PMPI_Mprobe(source, tag, comm, message, status);
    nbc_progress();
    int flag = 0;
    const int rc = PMPI_Improbe(source, tag, comm, &flag, message, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    sched_yield();
  }
}

int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  if (nbc_idle()) return PMPI_Mrecv(buf, count, type, message, status);
  MPI_Request r;
  const int rc = PMPI_Imrecv(buf, count, type, message, &r);
  return rc != MPI_SUCCESS ? rc : poll_wait(&r, status);
}

// MPI_Sendrecv_replace has no non-blocking form: the replays are completed
// first, as for a blocking collective.
int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag,
                         MPI_Comm comm, MPI_Status* status) {
  nbc_drain();
  return PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
}

// ─── Blocking collectives the library does not serve ────────────────────────

int MPI_Barrier(MPI_Comm comm) {
  nbc_drain();
  return PMPI_Barrier(comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  nbc_drain();
  return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  nbc_drain();
  return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int MPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  nbc_drain();
  return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  nbc_drain();
  return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  nbc_drain();
  return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  nbc_drain();
  return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  nbc_drain();
  return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  nbc_drain();
  return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
}

// ─── Communicator construction and release (collective) ─────────────────────

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  nbc_drain();
  return PMPI_Comm_dup(comm, newcomm);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  nbc_drain();
  return PMPI_Comm_split(comm, color, key, newcomm);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  nbc_drain();
  return PMPI_Comm_create(comm, group, newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  nbc_drain();
  return PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
}

int MPI_Comm_free(MPI_Comm* comm) {
  nbc_drain();
  return PMPI_Comm_free(comm);
}

}  // extern "C"
