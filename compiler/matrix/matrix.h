// Dense matrices over a Field and the matrix families of a spec.
//
// Random matrices are reproducible everywhere: entry (i, j) of family
// "random" with seed s is drawn, row-major, from splitmix64 seeded with s,
// reduced to the field by rejection sampling (uniform).
//
// Matrix files: Matrix Market ("%%MatrixMarket matrix array|coordinate
// integer general", 1-based coordinates, missing coordinate entries are 0) or
// CSV (one row per line, comma-separated non-negative integers). Entries must
// be field elements; a wrong size, a bad token or an out-of-field entry is a
// UserError naming the file, line and value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "field/field.h"
#include "ir/spec.h"

namespace collplan {

struct Matrix {
  uint32_t rows = 0, cols = 0;
  std::vector<Elem> a;  // row-major
  Elem& at(uint32_t i, uint32_t j) { return a[static_cast<size_t>(i) * cols + j]; }
  Elem at(uint32_t i, uint32_t j) const { return a[static_cast<size_t>(i) * cols + j]; }
  static Matrix zeros(uint32_t r, uint32_t c) { return Matrix{r, c, std::vector<Elem>(static_cast<size_t>(r) * c, 0)}; }
  friend bool operator==(const Matrix&, const Matrix&) = default;
};

// splitmix64: the project's one source of reproducible randomness.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  Elem uniform(const Field& f);  // uniform element of f
  Elem nonzero(const Field& f);  // uniform non-zero element of f
};

// Uniform elements of one field, exactly SplitMix64::uniform's draws, with
// the field's limit and residue worked out once instead of per draw (a
// randomized check draws trials × inputs of them: 84M for a reduce-scatter
// of 4096 ranks). Rejection sampling keeps the draw exactly uniform for any
// q; for the binary fields (q a power of two) a mask replaces the two
// divisions.
class UniformDraw {
 public:
  explicit UniformDraw(const Field& f)
      : q_(f.size()), pow2_((q_ & (q_ - 1)) == 0), limit_(UINT64_MAX - (pow2_ ? q_ - 1 : UINT64_MAX % q_)) {}
  Elem operator()(SplitMix64& rng) const {
    for (;;) {
      const uint64_t v = rng.next();
      if (v < limit_) return static_cast<Elem>(pow2_ ? v & (q_ - 1) : v % q_);
    }
  }

 private:
  uint64_t q_;
  bool pow2_;
  uint64_t limit_;
};

// Builds the K×K (rows×cols) matrix a MatrixSpec describes, after checking
// its parameters against the field (Vandermonde points distinct and in the
// field, a permutation a bijection, explicit entries in the field).
Matrix materialize(const MatrixSpec& ms, const Field& f);

// XXH3-128 over (rows, cols, elem_bytes, entries little-endian at the field's
// element width).
Digest matrix_digest(const Matrix& m, const Field& f);

// Matrix spec constructors (fill rows/cols/digest).
MatrixSpec matrix_random(uint32_t n, uint64_t seed, const Field& f);
MatrixSpec matrix_identity(uint32_t n, const Field& f);
MatrixSpec matrix_permutation(std::vector<uint32_t> perm, const Field& f);
MatrixSpec matrix_vandermonde(std::vector<Elem> points, const Field& f);
MatrixSpec matrix_explicit(Matrix m, const Field& f, std::string source = {});
// The structured families (matrix/structured.h; their points are stored in
// MatrixSpec::points, layout in ir/spec.h).
MatrixSpec matrix_with_points(std::string family, uint32_t K, std::vector<Elem> points, const Field& f);
MatrixSpec matrix_dft(uint32_t K, uint32_t P, const Field& f, bool inverse = false);
MatrixSpec matrix_draw_loose(uint32_t K, uint32_t P, const std::vector<uint64_t>& phi, const Field& f,
                             bool inverse = false);
MatrixSpec matrix_lagrange(const std::vector<Elem>& omega, const std::vector<Elem>& alpha, const Field& f);
// "cauchy" (x, y, c, d) or "rs-systematic" (x, y, v, v'), K entries each.
MatrixSpec matrix_four_lists(std::string family, const std::vector<std::vector<Elem>>& lists, const Field& f);
// Reads a Matrix Market or CSV file (by content, not name) and checks that it
// is rows×cols with entries in the field. The result is an "explicit" matrix
// with no `source`: a plan holds the entries, never the file's path or name,
// so its bytes and digest do not depend on how or where the file was found.
MatrixSpec matrix_from_file(const std::string& path, uint32_t rows, uint32_t cols, const Field& f);

// y = x·M for a batch: xs holds `batch` input vectors of M.rows elements
// each (vector-major), the result `batch` vectors of M.cols elements.
std::vector<Elem> mul_batch(const Field& f, const Matrix& m, const std::vector<Elem>& xs, uint32_t batch);

}  // namespace collplan
