/* The direct computation the C consumers check a K = 8 GF(2^8) encode
 * plan's outputs against: rank k gets y_k = Σ_j x_j·A[j][k] (column k of A),
 * with A read from the CSV the project writes and x_j's bytes from
 * input_byte(). */
#ifndef ENCODE_REFERENCE_H
#define ENCODE_REFERENCE_H

#include <stddef.h>
#include <stdio.h>

#define K 8

/* GF(2^8) with the polynomial 0x11D, as the plan's field gf256. */
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

/* Byte i of rank `rank`'s input; `salt` varies it from run to run. */
static unsigned char input_byte(int rank, size_t i, unsigned salt) {
  return (unsigned char)((rank * 131u + i * 7u + (i >> 8) * 13u + salt * 29u + 1u) & 0xFF);
}

/* Byte i of rank k's output. */
static unsigned expected_byte(unsigned A[K][K], int k, size_t i, unsigned salt) {
  unsigned want = 0;
  int j;
  for (j = 0; j < K; ++j) want ^= gf_mul(input_byte(j, i, salt), A[j][k]);
  return want;
}

/* Reads the K x K CSV at `path` into A; 0 on success, else the 1-based
 * number of the entry that could not be read (K*K + 1: no file). */
static int read_matrix_csv(const char* path, unsigned A[K][K]) {
  FILE* f = fopen(path, "r");
  int j, k;
  if (!f) return K * K + 1;
  for (j = 0; j < K; ++j)
    for (k = 0; k < K; ++k)
      if (fscanf(f, k ? ",%u" : "%u", &A[j][k]) != 1) {
        fclose(f);
        return j * K + k + 1;
      }
  fclose(f);
  return 0;
}

#endif
