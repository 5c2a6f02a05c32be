/* The same encode plan with every rank on a thread of this process, through
 * collplan.h alone (collplan::runtime: no MPI header, no MPI library),
 * checked against Σ_j x_j·A[j][k] computed from A's CSV (encode_reference.h).
 *   encode_threads PLAN.cplan A.csv COUNT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collplan.h"
#include "encode_reference.h"

int main(int argc, char** argv) {
  unsigned A[K][K];
  collplan_plan* plan = NULL;
  unsigned char* x[K];
  unsigned char* y[K];
  const void* sp[K];
  void* rp[K];
  size_t count, i;
  int k, st, failures = 0;

  if (argc != 4) {
    fprintf(stderr, "usage: encode_threads PLAN.cplan A.csv COUNT\n");
    return 2;
  }
  count = (size_t)strtoul(argv[3], NULL, 10);
  if (read_matrix_csv(argv[2], A) != 0) {
    fprintf(stderr, "FAIL: cannot read the matrix %s\n", argv[2]);
    return 2;
  }
  st = collplan_open_file(argv[1], &plan);
  if (st != COLLPLAN_OK) {
    fprintf(stderr, "FAIL: %s: %s\n", collplan_status_name(st), collplan_last_error());
    return 1;
  }
  for (k = 0; k < K; ++k) {
    x[k] = malloc(collplan_input_count(plan, k, count) * collplan_elem_size(plan));
    y[k] = malloc(collplan_output_count(plan, k, count) * collplan_elem_size(plan));
    for (i = 0; i < count; ++i) x[k][i] = input_byte(k, i, 0);
    sp[k] = x[k];
    rp[k] = y[k];
  }
  st = collplan_run_threads(plan, sp, rp, count);
  if (st != COLLPLAN_OK) {
    fprintf(stderr, "FAIL: %s: %s\n", collplan_status_name(st), collplan_last_error());
    return 1;
  }
  for (k = 0; k < K; ++k)
    for (i = 0; i < count; ++i) {
      const unsigned want = expected_byte(A, k, i, 0);
      if (y[k][i] != want) {
        fprintf(stderr, "FAIL: rank %d, element %zu: expected %u, got %u\n", k, i, want, y[k][i]);
        ++failures;
        break;
      }
    }
  for (k = 0; k < K; ++k) {
    free(x[k]);
    free(y[k]);
  }
  collplan_close(plan);
  if (failures == 0) printf("PASS (C, threads): %d ranks, count %zu: every rank's output equals x·A column by column\n", K, count);
  return failures ? 1 : 0;
}
