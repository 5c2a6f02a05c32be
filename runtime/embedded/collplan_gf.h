// collplan_gf.h — the dispatcher of the GF kernel library: which kernel
// files a translation unit compiles, and on x86 which of them the CPU runs.
// Include this file (it includes the others); collplan_gf_base.h describes
// the library and the conventions of its kernels.
//
// COLLPLAN_EMBEDDED_ISA is one of the values below. Left undefined, it is
// the best path the compiler targets (what -march=... enables), and for a
// plain x86-64 build with GCC or Clang, X86_DISPATCH:
//
//   GFNI_AVX512  collplan_gf_gfni.h on 64-byte vectors (AVX-512BW), prime
//                fields by collplan_gf_avx2.h
//   GFNI_AVX2    the same on 32-byte vectors
//   AVX2         collplan_gf_avx2.h: split tables, prime fields
//   X86_DISPATCH all three above, compiled with per-function target
//                attributes, plus the _base kernels, and the best the CPU
//                has picked at run time (x86_level(), asked once): one binary
//                for any x86-64 machine at that machine's speed. The replay
//                engine is built this way.
//   NEON         collplan_gf_neon.h (AArch64); prime fields by _base
//   SCALAR       collplan_gf_base.h only: any C++17 compiler and CPU
//
// Defining COLLPLAN_EMBEDDED_ISA to a path the compiler does not target is
// an #error. Every path gives the same bytes (the tests force each one).
#pragma once

#include "collplan_gf_base.h"

#define COLLPLAN_EMBEDDED_ISA_SCALAR 0
#define COLLPLAN_EMBEDDED_ISA_NEON 1
#define COLLPLAN_EMBEDDED_ISA_AVX2 2
#define COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 3
#define COLLPLAN_EMBEDDED_ISA_GFNI_AVX512 4
#define COLLPLAN_EMBEDDED_ISA_X86_DISPATCH 5

#if defined(__GFNI__) && defined(__AVX512BW__) && defined(__AVX512F__)
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_GFNI_AVX512
#elif defined(__GFNI__) && defined(__AVX2__)
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_GFNI_AVX2
#elif defined(__AVX2__)
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_AVX2
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_NEON
#elif defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
#else
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_SCALAR
#endif

#ifndef COLLPLAN_EMBEDDED_ISA
#define COLLPLAN_EMBEDDED_ISA COLLPLAN_EMBEDDED_BEST_ISA
#endif

#if COLLPLAN_EMBEDDED_ISA < 0 || COLLPLAN_EMBEDDED_ISA > 5
#error "COLLPLAN_EMBEDDED_ISA must be one of COLLPLAN_EMBEDDED_ISA_SCALAR ... _X86_DISPATCH (0..5)"
#endif
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX512 && \
    !(defined(__GFNI__) && defined(__AVX512BW__) && defined(__AVX512F__))
#error "COLLPLAN_EMBEDDED_ISA GFNI_AVX512 needs -mgfni -mavx512f -mavx512bw (or a -march that has them)"
#endif
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 && !(defined(__GFNI__) && defined(__AVX2__))
#error "COLLPLAN_EMBEDDED_ISA GFNI_AVX2 needs -mgfni -mavx2 (or a -march that has them)"
#endif
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_AVX2 && !defined(__AVX2__)
#error "COLLPLAN_EMBEDDED_ISA AVX2 needs -mavx2 (or a -march that has it)"
#endif
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON && !(defined(__aarch64__) && defined(__ARM_NEON))
#error "COLLPLAN_EMBEDDED_ISA NEON needs an AArch64 target with Advanced SIMD"
#endif
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH && !(defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)))
#error "COLLPLAN_EMBEDDED_ISA X86_DISPATCH needs GCC or Clang on x86-64"
#endif

// What the selected path compiles.
#define COLLPLAN_GF_HAS_GFNI512 \
  (COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX512 || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH)
#define COLLPLAN_GF_HAS_GFNI256 \
  (COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH)
#define COLLPLAN_GF_HAS_AVX2 (COLLPLAN_EMBEDDED_ISA >= COLLPLAN_EMBEDDED_ISA_AVX2)  // every x86 path
#define COLLPLAN_GF_HAS_SPLIT_X86 \
  (COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_AVX2 || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH)
#define COLLPLAN_GF_HAS_BASE \
  (COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_SCALAR || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH)
#define COLLPLAN_GF_HAS_GFNI (COLLPLAN_GF_HAS_GFNI512 || COLLPLAN_GF_HAS_GFNI256)

#if COLLPLAN_GF_HAS_AVX2
#include "collplan_gf_avx2.h"
#endif
#if COLLPLAN_GF_HAS_GFNI
#include "collplan_gf_gfni.h"
#endif
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON
#include "collplan_gf_neon.h"
#endif

namespace collplan_gf {

// What the CPU offers, as the paths above: 4 GFNI + AVX-512BW, 3 GFNI +
// AVX2, 2 AVX2, 0 none of them. Without X86_DISPATCH, the compiled path.
// Asked once; the cached value is an int read and written atomically.
inline int x86_level() {
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
  static int level = -1;
  int l = __atomic_load_n(&level, __ATOMIC_RELAXED);
  if (l < 0) {
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2"), gfni = __builtin_cpu_supports("gfni");
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    l = gfni && avx512 ? 4 : gfni && avx2 ? 3 : avx2 ? 2 : 0;
    __atomic_store_n(&level, l, __ATOMIC_RELAXED);
  }
  return l;
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX512
  return 4;
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX2
  return 3;
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_AVX2
  return 2;
#else
  return 0;
#endif
}

}  // namespace collplan_gf
