// Checks the kernels of collplan_kernels.h, on whatever path this file is
// compiled for (the tests build it once per path: COLLPLAN_EMBEDDED_ISA,
// -march flags, a cross compiler), against shift-and-add GF(2^m) products
// and 64-bit prime-field sums: dot() with and without accumulation for
// region lengths around every vector width and source counts around the
// tail's chunk, with coefficients 0, 1 and random ones; dot_rows() over three
// outputs with a padded coefficient matrix; mul() in place and
// out of place; add() and mad(). Prints the path and the number of
// mismatching cases; exit 0 when there are none.
#include <stdio.h>

#include <vector>

#include "collplan_embedded.h"

using namespace collplan_embedded;

namespace {

uint64_t rnd(uint64_t& s) {
  s += 0x9E3779B97F4A7C15ull;
  uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The reference product: shift-and-add for GF(2^m), % q for primes.
uint64_t mul_ref(uint64_t a, uint64_t b, uint32_t m, uint32_t poly, uint64_t q) {
  return m != 0 ? gf2m_mul_scalar(static_cast<uint32_t>(a), static_cast<uint32_t>(b), m, poly) : a * b % q;
}
uint64_t add_ref(uint64_t a, uint64_t b, uint32_t m, uint64_t q) { return m != 0 ? (a ^ b) : (a + b) % q; }

template <class F>
int check(const char* name, uint64_t q, uint32_t m, uint32_t poly, size_t n, uint32_t k, bool accumulate) {
  using E = typename F::elem;
  uint64_t seed = n * 1000003u + k * 7u + accumulate;
  std::vector<std::vector<E>> src(k, std::vector<E>(n));
  std::vector<typename F::Coef> co(k);
  std::vector<E> c(k);
  std::vector<const E*> ptr(k);
  for (uint32_t s = 0; s < k; ++s) {
    for (auto& e : src[s]) e = static_cast<E>(rnd(seed) % q);
    c[s] = static_cast<E>(s == 1 ? 1 : s == 2 ? 0 : s == 3 ? q - 1 : rnd(seed) % q);
    co[s] = F::prepare(c[s]);
    ptr[s] = src[s].data();
  }
  std::vector<E> d(n), ref(n);
  for (size_t i = 0; i < n; ++i) d[i] = ref[i] = accumulate ? static_cast<E>(rnd(seed) % q) : E(0);
  for (uint32_t s = 0; s < k; ++s)
    for (size_t i = 0; i < n; ++i) ref[i] = static_cast<E>(add_ref(ref[i], mul_ref(c[s], src[s][i], m, poly, q), m, q));
  if (!accumulate)
    for (auto& e : d) e = static_cast<E>(rnd(seed) % q);  // overwritten, whatever it held
  F::dot(d.data(), ptr.data(), co.data(), k, n, accumulate);
  int bad = d != ref;
  // dot_rows: three outputs over the same sources, their coefficients rows
  // of a matrix with stride k + 1 (the padding column is never read), row 0
  // the coefficients above (0, 1 and q - 1 among them).
  {
    constexpr uint32_t kRows = 3;
    const uint32_t stride = k + 1;
    std::vector<typename F::Coef> mco(kRows * stride, F::prepare(static_cast<E>(rnd(seed) % q)));
    std::vector<std::vector<E>> rows(kRows, std::vector<E>(n)), rref(kRows, std::vector<E>(n));
    std::vector<E*> dptr(kRows);
    for (uint32_t j = 0; j < kRows; ++j) {
      for (size_t i = 0; i < n; ++i) {
        rows[j][i] = static_cast<E>(rnd(seed) % q);
        rref[j][i] = accumulate ? rows[j][i] : E(0);
      }
      for (uint32_t s = 0; s < k; ++s) {
        const E cs = j == 0 ? c[s] : static_cast<E>(rnd(seed) % q);
        mco[j * stride + s] = F::prepare(cs);
        for (size_t i = 0; i < n; ++i)
          rref[j][i] = static_cast<E>(add_ref(rref[j][i], mul_ref(cs, src[s][i], m, poly, q), m, q));
      }
      dptr[j] = rows[j].data();
    }
    F::dot_rows(dptr.data(), kRows, ptr.data(), mco.data(), stride, k, n, accumulate);
    for (uint32_t j = 0; j < kRows; ++j) bad += rows[j] != rref[j];
  }
  // The single-term forms, on the first source and a coefficient.
  if (k > 0) {
    const E cc = c[0];
    std::vector<E> a = src[0], r1(n), r2(n);
    for (size_t i = 0; i < n; ++i) r1[i] = static_cast<E>(mul_ref(cc, src[0][i], m, poly, q));
    F::mul(a.data(), a.data(), cc, n);  // in place
    bad += a != r1;
    std::vector<E> b(n);
    F::mul(b.data(), src[0].data(), cc, n);
    bad += b != r1;
    for (size_t i = 0; i < n; ++i) r2[i] = static_cast<E>(add_ref(r1[i], mul_ref(cc, src[0][i], m, poly, q), m, q));
    F::mad(b.data(), src[0].data(), cc, n);
    bad += b != r2;
    for (size_t i = 0; i < n; ++i) r2[i] = static_cast<E>(add_ref(r2[i], src[0][i], m, q));
    F::add(b.data(), src[0].data(), n);
    bad += b != r2;
  }
  if (bad) printf("mismatch: %s n=%zu k=%u accumulate=%d\n", name, n, k, accumulate);
  return bad;
}

}  // namespace

int main() {
  int bad = 0, cases = 0;
  for (size_t n : {0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 1000, 4099})
    for (uint32_t k : {0u, 1u, 2u, 4u, 5u, 8u, 9u, 17u, 40u})
      for (bool a : {false, true}) {
        bad += check<Gf2m<8, 0x11D>>("gf256", 256, 8, 0x11D, n, k, a);
        bad += check<Gf2m<16, 0x1100B>>("gf65536", 65536, 16, 0x1100B, n, k, a);
        bad += check<Prime<65537>>("prime:65537", 65537, 0, 0, n, k, a);
        bad += check<Prime<2147483647>>("prime:2147483647", 2147483647, 0, 0, n, k, a);
        bad += check<Prime<7681>>("prime:7681", 7681, 0, 0, n, k, a);
        bad += check<Prime<2>>("prime:2", 2, 0, 0, n, k, a);
        cases += 6;
      }
  printf("kernel path %s: %d cases, %d mismatches\n", kernel_isa(), cases, bad);
  return bad == 0 ? 0 : 1;
}
