/* collplan.h: the C API of the collplan runtime (C99; callable from C++ and,
 * through bind(C), from Fortran). Library: collplan::runtime.
 *
 * Open a plan file written by `collplan compile` (or the same bytes held in
 * memory, e.g. a plan embedded in the application), ask it what the caller
 * needs to size its buffers, and replay it: on MPI (collplan_mpi.h,
 * collplan::mpi), on TCP (collplan_tcp.h, collplan::tcp), or every rank as a
 * thread of this process (below). docs/c-api.md has the whole story and a
 * complete example.
 *
 * Buffers. A plan gives rank r num_inputs(r) input vectors and
 * num_outputs(r) output vectors of `count` field elements each; the caller
 * passes them one after another in one buffer: sendbuf holds
 * num_inputs(r) * count elements, recvbuf num_outputs(r) * count, each
 * element elem_size bytes (1 for gf256, 2 for gf65536, 4 for prime fields),
 * a canonical field element in host byte order. The caller's buffers must
 * not overlap.
 *
 * Errors. Every function that can fail returns a collplan_status (0 on
 * success). On failure collplan_last_error() returns a message naming the bad
 * value (a path, a rank, a byte offset, a peer); it is per thread and stays
 * valid until the next failing call on that thread. Queries that return a
 * value return -1 (or 0 for sizes) on a bad argument and set the message too.
 * No C++ exception ever leaves this API.
 *
 * Threads. A plan handle is immutable after opening: any number of threads
 * may query it and run it at once (each run builds its own engine and
 * transport). */
#ifndef COLLPLAN_H
#define COLLPLAN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes (return values; plain ints for Fortran). */
typedef enum collplan_status {
  COLLPLAN_OK = 0,
  COLLPLAN_ERR_ARGUMENT = 1,  /* a NULL pointer, a rank, count or peer list out of range,
                                 a communicator of the wrong size or whose ranks hold different plans */
  COLLPLAN_ERR_IO = 2,        /* a plan file that cannot be opened or read */
  COLLPLAN_ERR_PLAN = 3,      /* bytes that are not a valid whole plan (damaged, truncated,
                                 another version, a single-rank file, a program the engine refuses) */
  COLLPLAN_ERR_TRANSPORT = 4, /* the run failed while communicating: a peer that holds another
                                 plan, times out or is lost, an MPI error, ranks disagreeing on count */
  COLLPLAN_ERR_NO_MEMORY = 5, /* an allocation failed: memory ran out (ulimit -v, a full machine) */
  COLLPLAN_ERR_INTERNAL = 6,  /* a bug in collplan */
  COLLPLAN_ERR_RESOURCE = 7   /* another resource of the environment ran out: file descriptors
                                 (ulimit -n), sockets; the message names it and the limit to raise */
} collplan_status;

/* The operation a plan computes (the values of the plan format's op byte, docs/plan-format.md). */
typedef enum collplan_op {
  COLLPLAN_OP_ENCODE = 1,               /* rank k gets (x*A)_k: sum_j x_j * A[j][k] */
  COLLPLAN_OP_DECENTRALIZED_ENCODE = 2, /* [N, K] code: sinks get their code symbols */
  COLLPLAN_OP_BROADCAST = 3,
  COLLPLAN_OP_REDUCE = 4,
  COLLPLAN_OP_ALLGATHER = 5,
  COLLPLAN_OP_ALLGATHERV = 6,
  COLLPLAN_OP_ALLREDUCE = 7,
  COLLPLAN_OP_PREFIX = 8,
  COLLPLAN_OP_REDUCE_SCATTER = 9,
  COLLPLAN_OP_REPAIR = 10,              /* [N, K] code: lost ranks get their symbols back */
  COLLPLAN_OP_DECODE = 11               /* [N, K] code: rank to[j] gets data symbol x_j */
} collplan_op;

/* An opened plan (opaque). */
typedef struct collplan_plan collplan_plan;

/* The message of this thread's last failing call ("" if none has failed).
 * Never NULL. */
const char* collplan_last_error(void);
/* "ok", "bad argument", "I/O error", "bad plan", "transport error",
 * "out of memory", "internal error"; "unknown status" otherwise. */
const char* collplan_status_name(int status);

/* Opens the whole-plan file `path` (.cplan). On success *plan is a handle
 * to release with collplan_close(); on failure *plan is NULL. */
int collplan_open_file(const char* path, collplan_plan** plan);
/* The same from `size` bytes of a .cplan image in memory (copied: the
 * bytes may be freed after the call). */
int collplan_open_bytes(const void* data, size_t size, collplan_plan** plan);
/* Releases a plan (NULL is ignored). */
void collplan_close(collplan_plan* plan);

/* The plan's rank count (K; N for decentralized-encode), or -1. */
int collplan_num_ranks(const collplan_plan* plan);
/* The operation (a collplan_op value), or -1. */
int collplan_operation(const collplan_plan* plan);
/* Its name ("encode", "allreduce", ...), or NULL. */
const char* collplan_operation_name(const collplan_plan* plan);
/* The field's name ("gf256", "gf65536", "prime:65537"), or NULL. */
const char* collplan_field_name(const collplan_plan* plan);
/* Bytes per element (1, 2 or 4), or 0. */
size_t collplan_elem_size(const collplan_plan* plan);
/* Rank `rank`'s input / output vectors (each `count` elements in a run), or
 * -1 for a bad plan or rank. */
int collplan_num_inputs(const collplan_plan* plan, int rank);
int collplan_num_outputs(const collplan_plan* plan, int rank);
/* Elements rank `rank`'s sendbuf / recvbuf hold for vectors of `count`
 * elements: num_inputs(rank) * count, num_outputs(rank) * count; 0 for a bad
 * plan or rank (and on overflow; message set). Multiply by elem_size for
 * bytes. */
size_t collplan_input_count(const collplan_plan* plan, int rank, size_t count);
size_t collplan_output_count(const collplan_plan* plan, int rank, size_t count);
/* The plan's digest (its identity, as `collplan check` prints it): 32 hex
 * digits and a NUL written to out[0..32]. */
int collplan_digest(const collplan_plan* plan, char out[33]);

/* Runs every rank of the plan in this process, one thread per rank (for
 * tests and single-machine use). sendbufs[r] / recvbufs[r]: rank r's
 * buffers (see "Buffers"); a rank without inputs (outputs) may pass NULL.
 * count >= 1 elements per vector. */
int collplan_run_threads(const collplan_plan* plan, const void* const* sendbufs, void* const* recvbufs,
                         size_t count);

#ifdef __cplusplus
}
#endif

#endif /* COLLPLAN_H */
