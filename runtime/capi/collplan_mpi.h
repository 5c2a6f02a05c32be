/* collplan_mpi.h: replaying a plan on an MPI communicator from C (library
 * collplan::mpi). See collplan.h for plans, buffers and errors, docs/c-api.md
 * for an example, runtime/transport/mpi.h for the transport.
 *
 * Plan rank r runs on communicator rank r; the communicator must have exactly
 * collplan_num_ranks() ranks. Setup (size and plan checks) is collective and
 * fails the same way on every rank. MPI has no timeouts: when a run fails on
 * one rank (COLLPLAN_ERR_TRANSPORT), its peers may be left waiting, so the
 * application must end the job (MPI_Abort), as after any MPI error. */
#ifndef COLLPLAN_MPI_H
#define COLLPLAN_MPI_H

#include <mpi.h>

#include "collplan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One run, in the shape of an MPI collective: collective over comm, every
 * rank with the same plan and count. */
int collplan_run_mpi(const collplan_plan* plan, const void* sendbuf, void* recvbuf, size_t count, MPI_Comm comm);
/* The same with a Fortran communicator handle (MPI_Comm_f2c), for
 * bind(C) callers using the mpi or mpi_f08 module (comm%MPI_VAL). */
int collplan_run_mpi_f(const collplan_plan* plan, const void* sendbuf, void* recvbuf, size_t count, MPI_Fint comm);

/* A plan bound to a communicator for repeated runs (like a persistent MPI
 * collective): the engine is built and the communicator duplicated once.
 * Collective over comm. The plan handle must outlive it. */
typedef struct collplan_mpi_collective collplan_mpi_collective;
int collplan_mpi_init(const collplan_plan* plan, MPI_Comm comm, collplan_mpi_collective** coll);
/* Collective over the bound communicator; one thread at a time per handle. */
int collplan_mpi_run(collplan_mpi_collective* coll, const void* sendbuf, void* recvbuf, size_t count);
/* Collective too (frees the duplicated communicator). NULL is ignored. */
void collplan_mpi_free(collplan_mpi_collective* coll);

#ifdef __cplusplus
}
#endif

#endif /* COLLPLAN_MPI_H */
