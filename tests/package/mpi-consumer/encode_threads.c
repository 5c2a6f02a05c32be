/* The same encode plan with every rank on a thread of this process, through
 * collplan.h alone (collplan::runtime: no MPI header, no MPI library),
 * checked against Σ_j x_j·A[j][k] computed here from A's CSV.
 *   encode_threads PLAN.cplan A.csv COUNT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collplan.h"

#define K 8

static unsigned gf_mul(unsigned a, unsigned b) {
  unsigned r = 0;
  while (b) {
    if (b & 1) r ^= a;
    a <<= 1;
    if (a & 0x100) a ^= 0x11D;
    b >>= 1;
  }
  return r;
}

static unsigned char input_byte(int rank, size_t i) { return (unsigned char)((rank * 89u + i * 5u + 17u) & 0xFF); }

int main(int argc, char** argv) {
  unsigned A[K][K];
  collplan_plan* plan = NULL;
  unsigned char* x[K];
  unsigned char* y[K];
  const void* sp[K];
  void* rp[K];
  size_t count, i;
  int j, k, st, failures = 0;
  FILE* f;

  if (argc != 4) {
    fprintf(stderr, "usage: encode_threads PLAN.cplan A.csv COUNT\n");
    return 2;
  }
  count = (size_t)strtoul(argv[3], NULL, 10);
  f = fopen(argv[2], "r");
  if (!f) return 2;
  for (j = 0; j < K; ++j)
    for (k = 0; k < K; ++k)
      if (fscanf(f, k ? ",%u" : "%u", &A[j][k]) != 1) return 2;
  fclose(f);
  st = collplan_open_file(argv[1], &plan);
  if (st != COLLPLAN_OK) {
    fprintf(stderr, "FAIL: %s: %s\n", collplan_status_name(st), collplan_last_error());
    return 1;
  }
  for (k = 0; k < K; ++k) {
    x[k] = malloc(collplan_input_count(plan, k, count) * collplan_elem_size(plan));
    y[k] = malloc(collplan_output_count(plan, k, count) * collplan_elem_size(plan));
    for (i = 0; i < count; ++i) x[k][i] = input_byte(k, i);
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
      unsigned want = 0;
      for (j = 0; j < K; ++j) want ^= gf_mul(input_byte(j, i), A[j][k]);
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
