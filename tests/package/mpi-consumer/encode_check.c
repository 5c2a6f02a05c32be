/* Rank k of an encode plan (K = 8, GF(2^8)) on MPI through the C API,
 * checked against Σ_j x_j·A[j][k] computed from A's CSV (encode_reference.h).
 *   mpirun -np 8 encode_c PLAN.cplan A.csv COUNT
 * Exit status 0 when every rank's bytes are right. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "collplan_mpi.h"
#include "encode_reference.h"

static int me = 0;
static int failures = 0;

static void fail(const char* what, int status) {
  fprintf(stderr, "rank %d: FAIL: %s: %s (%s)\n", me, what, collplan_status_name(status), collplan_last_error());
  ++failures;
}

/* Runs one replay (persistent handle when coll != NULL) and checks it. */
static void check_run(const collplan_plan* plan, collplan_mpi_collective* coll, unsigned A[K][K], size_t count,
                      unsigned salt) {
  size_t nin = collplan_input_count(plan, me, count), nout = collplan_output_count(plan, me, count), i;
  unsigned char* x = malloc(nin);
  unsigned char* y = malloc(nout);
  int st;
  if (nin != count || nout != count || !x || !y) {
    fprintf(stderr, "rank %d: FAIL: encode rank has %zu input and %zu output elements, expected %zu each\n", me, nin,
            nout, count);
    ++failures;
    free(x);
    free(y);
    return;
  }
  for (i = 0; i < count; ++i) x[i] = input_byte(me, i, salt);
  memset(y, 0xA5, nout);
  st = coll ? collplan_mpi_run(coll, x, y, count) : collplan_run_mpi(plan, x, y, count, MPI_COMM_WORLD);
  if (st != COLLPLAN_OK) {
    fail("run", st);
    MPI_Abort(MPI_COMM_WORLD, 1); /* peers may be waiting: end the job */
  }
  for (i = 0; i < count; ++i) {
    const unsigned want = expected_byte(A, me, i, salt);
    if (y[i] != want) {
      fprintf(stderr, "rank %d: FAIL: count %zu, element %zu: expected %u, got %u\n", me, count, i, want, y[i]);
      ++failures;
      break;
    }
  }
  free(x);
  free(y);
}

int main(int argc, char** argv) {
  unsigned A[K][K];
  collplan_plan *plan = NULL, *plan2 = NULL;
  collplan_mpi_collective* coll = NULL;
  char d1[33], d2[33];
  size_t count, size;
  int st, np, bad, total = 0;
  FILE* f;
  unsigned char* bytes;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc != 4) {
    if (me == 0) fprintf(stderr, "usage: encode_c PLAN.cplan A.csv COUNT\n");
    MPI_Finalize();
    return 2;
  }
  count = (size_t)strtoul(argv[3], NULL, 10);

  if ((bad = read_matrix_csv(argv[2], A)) != 0) {
    fprintf(stderr, "rank %d: %s: cannot read entry %d\n", me, argv[2], bad);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  /* The plan from its file, and again from its bytes in memory. */
  st = collplan_open_file(argv[1], &plan);
  if (st != COLLPLAN_OK) {
    fail("collplan_open_file", st);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  f = fopen(argv[1], "rb");
  fseek(f, 0, SEEK_END);
  size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  bytes = malloc(size);
  if (fread(bytes, 1, size, f) != size) {
    fprintf(stderr, "rank %d: cannot read %s\n", me, argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  fclose(f);
  st = collplan_open_bytes(bytes, size, &plan2);
  free(bytes);
  if (st != COLLPLAN_OK) fail("collplan_open_bytes", st);
  if (collplan_digest(plan, d1) != COLLPLAN_OK || collplan_digest(plan2, d2) != COLLPLAN_OK || strcmp(d1, d2) != 0) {
    fprintf(stderr, "rank %d: FAIL: the plan's digest from the file and from its bytes differ\n", me);
    ++failures;
  }
  collplan_close(plan2);

  if (collplan_num_ranks(plan) != K || np != K || collplan_operation(plan) != COLLPLAN_OP_ENCODE ||
      collplan_elem_size(plan) != 1 || strcmp(collplan_field_name(plan), "gf256") != 0 ||
      collplan_num_inputs(plan, me) != 1 || collplan_num_outputs(plan, me) != 1) {
    fprintf(stderr, "rank %d: FAIL: plan %s: %d ranks (np %d), %s over %s, %zu-byte elements, %d in, %d out\n", me,
            d1, collplan_num_ranks(plan), np, collplan_operation_name(plan), collplan_field_name(plan),
            collplan_elem_size(plan), collplan_num_inputs(plan, me), collplan_num_outputs(plan, me));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  /* Bad arguments fail on every rank before any communication. */
  st = collplan_run_mpi(plan, NULL, NULL, count, MPI_COMM_WORLD);
  if (st != COLLPLAN_ERR_ARGUMENT || !strstr(collplan_last_error(), "sendbuf is NULL")) {
    fprintf(stderr, "rank %d: FAIL: NULL sendbuf gave %s: %s\n", me, collplan_status_name(st), collplan_last_error());
    ++failures;
  }

  check_run(plan, NULL, A, count, 0);   /* one-shot */
  check_run(plan, NULL, A, 1, 1);
  st = collplan_mpi_init(plan, MPI_COMM_WORLD, &coll);
  if (st != COLLPLAN_OK) {
    fail("collplan_mpi_init", st);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  check_run(plan, coll, A, count, 2);   /* persistent, twice */
  check_run(plan, coll, A, count + 7, 3);
  collplan_mpi_free(coll);
  collplan_close(plan);

  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0 && total == 0)
    printf("PASS (C): plan %s, %d ranks, count %zu: every rank's output equals x·A column by column\n", d1, K, count);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
