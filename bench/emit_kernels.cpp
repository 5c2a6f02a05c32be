// Kernel timing for bench_emit: one combination of k sources into one
// destination (what an emitted `r.set(...)` does), over GF(2^8), GF(2^16)
// and GF(65537), regions of 4 KiB and 64 KiB, by
//   perterm  how emitted code combined before dot() fused the terms: a
//            multiply for the first term, then one multiply-add pass over
//            the region per term (the library's own mul()/mad(), so both
//            figures come from the same kernels and only the fusion
//            differs);
//   fused    collplan_kernels.h's dot() on the path this file is compiled
//            for (COLLPLAN_EMBEDDED_ISA / -march: bench_emit builds it
//            several times).
// Both results are compared byte for byte (exit 1 on a mismatch). Prints one
// line per case:
//   field=gf256 bytes=4096 k=8 isa=avx2 perterm=1.23e-06 fused=2.1e-07
// with the median seconds of one combination.
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "aligned.h"
#include "collplan_embedded.h"

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class Fn>
double median_time(Fn&& fn, size_t bytes) {
  // Enough repetitions per sample for about 2 ms, 9 samples.
  const size_t reps = std::max<size_t>(1, (size_t{1} << 22) / bytes);
  std::vector<double> t;
  fn();
  for (int s = 0; s < 9; ++s) {
    const double t0 = now();
    for (size_t r = 0; r < reps; ++r) fn();
    t.push_back((now() - t0) / static_cast<double>(reps));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

uint64_t rnd(uint64_t& s) {
  s += 0x9E3779B97F4A7C15ull;
  uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <class F>
bool run(const char* name, uint32_t q, size_t bytes, uint32_t k) {
  using E = typename F::elem;
  const size_t n = bytes / sizeof(E);
  uint64_t seed = bytes * 131 + k;
  // 64-byte aligned: tests/emit/aligned.h.
  std::vector<collplan_test::AlignedVec<E>> src(k, collplan_test::AlignedVec<E>(n));
  std::vector<E> coef(k);
  std::vector<typename F::Coef> prep(k);
  std::vector<const E*> ptr(k);
  for (uint32_t s = 0; s < k; ++s) {
    for (auto& e : src[s]) e = static_cast<E>(rnd(seed) % q);
    coef[s] = static_cast<E>(2 + rnd(seed) % (q - 2));  // neither 0 nor 1: every term multiplies
    prep[s] = F::prepare(coef[s]);
    ptr[s] = src[s].data();
  }
  collplan_test::AlignedVec<E> a(n), b(n);
  const double perterm = median_time(
      [&] {
        F::mul(a.data(), src[0].data(), coef[0], n);
        for (uint32_t s = 1; s < k; ++s) F::mad(a.data(), src[s].data(), coef[s], n);
      },
      bytes);
  const double fused = median_time([&] { F::dot(b.data(), ptr.data(), prep.data(), k, n, false); }, bytes);
  if (a != b) {
    fprintf(stderr, "emit_kernels: %s bytes=%zu k=%u: fused and per-term results differ\n", name, bytes, k);
    return false;
  }
  printf("field=%s bytes=%zu k=%u isa=%s perterm=%.4e fused=%.4e\n", name, bytes, k, collplan_embedded::kernel_isa(),
         perterm, fused);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t k = argc > 1 ? static_cast<uint32_t>(atoi(argv[1])) : 8;
  bool ok = true;
  for (size_t bytes : {size_t{4096}, size_t{65536}}) {
    ok = run<collplan_embedded::Gf2m<8, 0x11D>>("gf256", 256, bytes, k) && ok;
    ok = run<collplan_embedded::Gf2m<16, 0x1100B>>("gf65536", 65536, bytes, k) && ok;
    ok = run<collplan_embedded::Prime<65537>>("prime:65537", 65537, bytes, k) && ok;
  }
  return ok ? 0 : 1;
}
