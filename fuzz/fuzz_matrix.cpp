// Harness: the matrix file readers (Matrix Market and CSV), through
// read_matrix on a stream, then matrix_explicit (the digest) and
// materialize, which must rebuild the same entries.
//
// Input: byte 0 picks rows (1..8), byte 1 cols (1..8), byte 2 the field
// (gf256, gf65536, prime:7, prime:65537, prime:2147483647); the rest is the
// file's text.
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "fuzz_util.h"
#include "matrix/matrix_read.h"

using namespace collplan;
using collplan::fuzz::clean;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static const Field fields[] = {Field::gf256(), Field::gf65536(), Field::prime(7), Field::prime(65537),
                                 Field::prime(2147483647)};
  const uint32_t rows = 1 + data[0] % 8, cols = 1 + data[1] % 8;
  const Field& f = fields[data[2] % (sizeof fields / sizeof fields[0])];
  std::istringstream in(std::string(reinterpret_cast<const char*>(data + 3), size - 3));
  std::optional<Matrix> m;
  if (!clean([&] { m = read_matrix(in, "fuzz.mtx", rows, cols, f); })) return 0;
  COLLPLAN_FUZZ_REQUIRE(m->rows == rows && m->cols == cols && m->a.size() == size_t{rows} * cols);
  for (Elem e : m->a) COLLPLAN_FUZZ_REQUIRE(f.valid(e));
  std::optional<MatrixSpec> ms;
  COLLPLAN_FUZZ_REQUIRE(clean([&] { ms = matrix_explicit(*m, f, "fuzz.mtx"); }));
  std::optional<Matrix> again;
  COLLPLAN_FUZZ_REQUIRE(clean([&] { again = materialize(*ms, f); }));
  COLLPLAN_FUZZ_REQUIRE(*again == *m);
  return 0;
}
