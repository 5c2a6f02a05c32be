// libcollplan_pmpi's non-blocking collectives: how they make progress.
//
// A served MPI_Iallreduce (and kin) starts the plan's replay (OpProgram::start)
// and hands the application a generalized request (MPI_Grequest_start),
// completed (MPI_Grequest_complete) once the replay is over. The plan's
// rounds advance only inside the library's MPI calls, LibNBC-style, never
// from a thread (progress.cpp has the list):
//
// - a call that tests (MPI_Test and kin, MPI_Request_get_status,
//   MPI_Iprobe, every non-blocking collective the library intercepts) makes
//   one non-blocking pass over every pending replay (nbc_progress);
// - a call that waits (the Wait family, blocking point-to-point) polls: its
//   own requests and the replays in turn, until its requests complete;
// - a blocking collective (served or not), communicator construction and
//   MPI_Finalize first complete every pending replay (nbc_drain): MPI does
//   not let a blocking collective match a non-blocking one, so it cannot
//   be polled.
//
// So a process blocks inside the MPI library only when no replay of its
// own is pending, and a peer's replay never waits forever for a process
// that sits in one of these calls. What remains: a process blocked in an
// MPI call the library does not intercept (one-sided synchronization, file
// I/O, MPI_Comm_idup, neighbourhood collectives...) does not advance the
// replays (docs/pmpi.md, "Non-blocking collectives").
#pragma once

#include <mpi.h>

namespace collplan::pmpi {

// No replay is pending, or the caller is the library itself (its own MPI
// calls must not re-enter the progress engine).
bool nbc_idle();
// One non-blocking pass over every pending replay; completes those that end.
void nbc_progress();
// Completes every pending replay (blocks until peers have taken part).
void nbc_drain();
// If *req is a pending replay's request: it is freed when the replay ends,
// *req becomes MPI_REQUEST_NULL, and the result is true (MPI_Request_free).
bool nbc_free_request(MPI_Request* req);

}  // namespace collplan::pmpi
