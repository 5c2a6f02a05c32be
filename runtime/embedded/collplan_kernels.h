// collplan_kernels.h — the GF region kernels of collplan_embedded.h.
// Header-only, C++17, freestanding-friendly: no heap, no exceptions, no
// RTTI, no library beyond <stdint.h>, <stddef.h> and <string.h> (and the
// target's intrinsics header on the SIMD paths).
//
// ─── What a field offers ────────────────────────────────────────────────────
//
//   F::elem                 storage type (uint8_t, uint16_t, uint32_t), host
//                           byte order: the runtime's buffer format
//   F::Coef                 a coefficient prepared for the selected kernel
//   constexpr F::prepare(c) builds it (usable in constant expressions: the
//                           emitted code prepares every coefficient of a plan
//                           at compile time, into read-only tables)
//   F::dot(dst, src, co, k, n, accumulate)
//                           dst[i] (+)= Σ_{s<k} co[s].c · src[s][i], i < n;
//                           on the vector paths and for prime fields one pass
//                           over dst (each block built from all k sources
//                           before it is stored), on SCALAR GF(2^m) one pass
//                           per term. dst may not overlap a source, except
//                           that it may be one (the same pointer) when k = 1
//                           or F::dot_in_place(); k = 0 zeroes dst (or
//                           leaves it when accumulating).
//   F::add, F::mul, F::mad  single-term region forms (tests, applications)
//
// ─── Kernel selection ───────────────────────────────────────────────────────
//
// COLLPLAN_EMBEDDED_ISA is one of the values below. Left undefined, it is
// the best path the compiler targets (what -march=... enables), and for a
// plain x86-64 build with GCC or Clang, X86_DISPATCH:
//
//   GFNI_AVX512  x86 GFNI + AVX-512BW: GF(2^8) and GF(2^16) multiplication by
//                a constant as GF2P8AFFINEQB bit-matrix products (one 8x8
//                matrix per byte; GF(2^16) is four 8x8 blocks), 64 bytes per
//                instruction; prime fields as AVX2.
//   GFNI_AVX2    the same on 256-bit vectors.
//   AVX2         split tables with VPSHUFB: GF(2^8) two 16-entry tables
//                (low and high nibble), GF(2^16) eight; prime fields by
//                delayed reduction (64-bit products summed unreduced, folded
//                by two Shoup products when the sum could overflow, and at
//                the end); GF(65537) by 2^16 ≡ −1 with lazy 32-bit sums.
//   X86_DISPATCH all three above compiled with per-function target
//                attributes, plus SCALAR, and the best the CPU has picked at
//                run time (once, by __builtin_cpu_supports): one binary for
//                any x86-64 machine at that machine's speed.
//   NEON         AArch64 Advanced SIMD: the split tables with TBL (GF(2^8),
//                GF(2^16) de-interleaved by LD2/ST2); prime fields as SCALAR.
//   SCALAR       any C++17 compiler and CPU (microcontrollers): GF(2^8) and
//                GF(2^16) through 256-entry tables expanded per call and
//                term from the prepared 16-entry nibble tables (one lookup
//                per byte) for regions of at least 256 elements, the nibble
//                tables themselves below; prime fields fused: 64-bit
//                products summed unreduced and reduced (Q is a compile-time
//                constant, so % Q is a multiply) only when the next term
//                could overflow, and at the end.
//
// Defining COLLPLAN_EMBEDDED_ISA to a path the compiler does not target is
// an #error. Every path gives the same bytes (the tests force each one).
// The vector paths process whole vectors and finish a region through a
// zero-padded copy of its last partial vector.

// ─── Kernel hook ────────────────────────────────────────────────────────────
//
// An application may route combinations through its own kernels (ISA-L's
// ec_encode_data, a DMA engine's GF unit, ...): set_kernel_hook<F>(fn, ctx)
// installs `bool fn(void* ctx, elem* dst, const elem* const* src,
// const elem* coef, uint32_t k, size_t n, bool accumulate)`, called for every
// combination with the contract of F::dot above (coef[s] the plain
// coefficient). It returns true when it did the work, false to fall back to
// the built-in kernel (say, for regions too short to be worth it). Install it
// before any rank runs; the hook is per field type and process-wide.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

// What the selected path compiles: the x86 vector bodies, the GFNI
// matrices, the split tables, the scalar kernels.
#define COLLPLAN_EMBEDDED_HAS_GFNI512 \
  (COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX512 || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH)
#define COLLPLAN_EMBEDDED_HAS_GFNI256 \
  (COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH)
#define COLLPLAN_EMBEDDED_HAS_AVX2 \
  (COLLPLAN_EMBEDDED_ISA >= COLLPLAN_EMBEDDED_ISA_AVX2)  // every x86 path: the prime kernels
#define COLLPLAN_EMBEDDED_HAS_SPLIT_X86 \
  (COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_AVX2 || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH)
#define COLLPLAN_EMBEDDED_HAS_SCALAR \
  (COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_SCALAR || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH)
#define COLLPLAN_EMBEDDED_COEF_GFNI (COLLPLAN_EMBEDDED_HAS_GFNI512 || COLLPLAN_EMBEDDED_HAS_GFNI256)
#define COLLPLAN_EMBEDDED_COEF_SPLIT \
  (COLLPLAN_EMBEDDED_ISA != COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 && COLLPLAN_EMBEDDED_ISA != COLLPLAN_EMBEDDED_ISA_GFNI_AVX512)

#if COLLPLAN_EMBEDDED_HAS_AVX2
#include <immintrin.h>
#define COLLPLAN_EMBEDDED_TARGET(t) __attribute__((target(t)))
#define COLLPLAN_EMBEDDED_VECOP(t) __attribute__((target(t), always_inline)) static inline
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON
#include <arm_neon.h>
#endif

namespace collplan_embedded {

// ─── scalar arithmetic ──────────────────────────────────────────────────────

// a·b in GF(2^m) modulo `poly` (shift-and-add; a, b < 2^m).
constexpr uint32_t gf2m_mul_scalar(uint32_t a, uint32_t b, uint32_t m, uint32_t poly) {
  uint32_t r = 0;
  const uint32_t top = 1u << m;
  while (b != 0) {
    if (b & 1u) r ^= a;
    b >>= 1;
    a <<= 1;
    if (a & top) a ^= poly;
  }
  return r;
}

// The GF2P8AFFINEQB matrix of the 8x8 block of "multiply by c" in GF(2^m)
// that maps input byte `in_byte` of x to output byte `out_byte` of c·x.
// Result bit i = parity(matrix byte 7−i & x): row i holds, in bit j, bit
// (8·out_byte + i) of c·x^(8·in_byte + j).
constexpr uint64_t gfni_block(uint32_t c, uint32_t m, uint32_t poly, uint32_t out_byte, uint32_t in_byte) {
  uint64_t a = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    uint64_t row = 0;
    for (uint32_t j = 0; j < 8; ++j) {
      const uint32_t col = gf2m_mul_scalar(c, 1u << (8 * in_byte + j), m, poly);
      row |= static_cast<uint64_t>((col >> (8 * out_byte + i)) & 1u) << j;
    }
    a |= row << (8 * (7 - i));
  }
  return a;
}

// ─── kernel hook ────────────────────────────────────────────────────────────

template <class F>
struct KernelHook {
  using elem = typename F::elem;
  using Fn = bool (*)(void* ctx, elem* dst, const elem* const* src, const elem* coef, uint32_t k, size_t n,
                      bool accumulate);
  Fn fn = nullptr;
  void* ctx = nullptr;
};
template <class F>
inline KernelHook<F> kernel_hook{};

// Installs (or, with nullptr, removes) the application's combination kernel
// for field F; see "Kernel hook" above.
template <class F>
void set_kernel_hook(typename KernelHook<F>::Fn fn, void* ctx = nullptr) {
  kernel_hook<F>.fn = fn;
  kernel_hook<F>.ctx = ctx;
}

namespace detail {

template <class T, uint32_t>
struct Dependent {
  using type = T;
};

// The last partial vector of a region: the sources copied into zero-padded
// buffers (kChunk at a time), one whole vector computed by `fn`, the valid
// bytes written back. STEP is the vector block in bytes.
template <size_t STEP, class Coef>
void tail(void (*fn)(unsigned char*, const unsigned char* const*, const Coef*, uint32_t, size_t, bool),
          unsigned char* dst, const unsigned char* const* src, size_t off, const Coef* co, uint32_t k, size_t rest,
          bool accumulate) {
  constexpr uint32_t kChunk = 8;
  alignas(64) unsigned char buf[kChunk][STEP];
  alignas(64) unsigned char out[STEP] = {};
  const unsigned char* ptr[kChunk];
  if (accumulate) memcpy(out, dst, rest);
  for (uint32_t s0 = 0; s0 < k; s0 += kChunk) {
    const uint32_t c = k - s0 < kChunk ? k - s0 : kChunk;
    for (uint32_t s = 0; s < c; ++s) {
      memset(buf[s], 0, STEP);
      memcpy(buf[s], src[s0 + s] + off, rest);
      ptr[s] = buf[s];
    }
    fn(out, ptr, co + s0, c, STEP, accumulate || s0 > 0);
  }
  memcpy(dst, out, rest);
}

#if COLLPLAN_EMBEDDED_HAS_AVX2
#define COLLPLAN_EMBEDDED_T512 "gfni,avx512f,avx512bw"
#define COLLPLAN_EMBEDDED_T256G "gfni,avx2"
#define COLLPLAN_EMBEDDED_TAVX2 "avx2"

// Clang (seen with 14) folds a broadcast matrix operand of GF2P8AFFINEQB
// into a memory operand with a wrongly scaled 8-bit displacement, so the
// instruction reads the wrong matrix; keeping the matrix in a register
// avoids the memory form. GCC needs nothing.
inline uint64_t opaque(uint64_t a) {
#if defined(__clang__)
  __asm__("" : "+r"(a));
#endif
  return a;
}

// The vector operations of each x86 path (collplan_kernels_x86.inc).
struct OpsGfni512 {
  using V = __m512i;
  static constexpr size_t kW = 64;
  static constexpr bool kGfni = true;
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V load(const unsigned char* p) { return _mm512_loadu_si512(p); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) void store(unsigned char* p, V v) { _mm512_storeu_si512(p, v); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V zero() { return _mm512_setzero_si512(); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V bxor(V a, V b) { return _mm512_xor_si512(a, b); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V aff(V x, uint64_t a) {
    return _mm512_gf2p8affine_epi64_epi8(x, _mm512_set1_epi64(static_cast<long long>(opaque(a))), 0);
  }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V low8(V x) { return _mm512_and_si512(x, _mm512_set1_epi16(0x00FF)); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V high8(V x) { return _mm512_srli_epi16(x, 8); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V pack(V a, V b) { return _mm512_packus_epi16(a, b); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V unlo(V a, V b) { return _mm512_unpacklo_epi8(a, b); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T512) V unhi(V a, V b) { return _mm512_unpackhi_epi8(a, b); }
};

#define COLLPLAN_EMBEDDED_OPS256(T)                                                                              \
  using V = __m256i;                                                                                             \
  static constexpr size_t kW = 32;                                                                               \
  COLLPLAN_EMBEDDED_VECOP(T) V load(const unsigned char* p) {                                                    \
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));                                              \
  }                                                                                                              \
  COLLPLAN_EMBEDDED_VECOP(T) void store(unsigned char* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); } \
  COLLPLAN_EMBEDDED_VECOP(T) V zero() { return _mm256_setzero_si256(); }                                         \
  COLLPLAN_EMBEDDED_VECOP(T) V bxor(V a, V b) { return _mm256_xor_si256(a, b); }                                 \
  COLLPLAN_EMBEDDED_VECOP(T) V low8(V x) { return _mm256_and_si256(x, _mm256_set1_epi16(0x00FF)); }              \
  COLLPLAN_EMBEDDED_VECOP(T) V high8(V x) { return _mm256_srli_epi16(x, 8); }                                    \
  COLLPLAN_EMBEDDED_VECOP(T) V pack(V a, V b) { return _mm256_packus_epi16(a, b); }                              \
  COLLPLAN_EMBEDDED_VECOP(T) V unlo(V a, V b) { return _mm256_unpacklo_epi8(a, b); }                             \
  COLLPLAN_EMBEDDED_VECOP(T) V unhi(V a, V b) { return _mm256_unpackhi_epi8(a, b); }

struct OpsGfni256 {
  COLLPLAN_EMBEDDED_OPS256(COLLPLAN_EMBEDDED_T256G)
  static constexpr bool kGfni = true;
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_T256G) V aff(V x, uint64_t a) {
    return _mm256_gf2p8affine_epi64_epi8(x, _mm256_set1_epi64x(static_cast<long long>(opaque(a))), 0);
  }
};

struct OpsAvx2 {
  COLLPLAN_EMBEDDED_OPS256(COLLPLAN_EMBEDDED_TAVX2)
  static constexpr bool kGfni = false;
  // A 16-entry table in both 128-bit lanes; lookups by the low / high nibble.
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_TAVX2) V tbl(const uint8_t* t) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_TAVX2) V shuf(V t, V idx) { return _mm256_shuffle_epi8(t, idx); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_TAVX2) V lo4(V x) { return _mm256_and_si256(x, _mm256_set1_epi8(0x0F)); }
  COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_TAVX2) V hi4(V x) {
    return _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0F));
  }
};
#undef COLLPLAN_EMBEDDED_OPS256
#endif

#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
// What the CPU offers: 4 GFNI + AVX-512BW, 3 GFNI + AVX2, 2 AVX2, 0 none of
// them. Asked once; the cached value is an int read and written atomically.
inline int x86_level() {
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
}
#endif

}  // namespace detail

// The kernel path this translation unit runs (for X86_DISPATCH, the one the
// CPU selected).
inline const char* kernel_isa() {
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
  switch (detail::x86_level()) {
    case 4: return "x86-dispatch: gfni-avx512";
    case 3: return "x86-dispatch: gfni-avx2";
    case 2: return "x86-dispatch: avx2";
    default: return "x86-dispatch: scalar";
  }
#else
  return COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX512 ? "gfni-avx512"
         : COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 ? "gfni-avx2"
         : COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_AVX2      ? "avx2"
         : COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON      ? "neon"
                                                                    : "scalar";
#endif
}

// ─── GF(2^M) ────────────────────────────────────────────────────────────────

template <uint32_t M>
struct Gf2mElem;
template <>
struct Gf2mElem<8> {
  using type = uint8_t;
};
template <>
struct Gf2mElem<16> {
  using type = uint16_t;
};

// GF(2^M), M ∈ {8, 16}, reduction polynomial POLY (with its x^M bit).
// Multiplication by a constant c is linear over GF(2) in the bits of x,
// which every path uses: a bit matrix (GFNI), or XORs of table entries
// indexed by the nibbles (or bytes) of x (split tables).
template <uint32_t M, uint32_t POLY>
struct Gf2m {
  static_assert(M == 8 || M == 16, "collplan_embedded: GF(2^m) for m = 8 or 16");
  using elem = typename Gf2mElem<M>::type;
  static constexpr uint32_t kBytes = M / 8;

  struct Coef {
    elem c = 0;
#if COLLPLAN_EMBEDDED_COEF_GFNI
    uint64_t a[kBytes * kBytes] = {};  // block (out byte o, in byte i) at a[o·kBytes + i]
#endif
#if COLLPLAN_EMBEDDED_COEF_SPLIT
    uint8_t split[(M / 4) * kBytes][16] = {};  // split[h·kBytes + b][v] = byte b of c·(v << 4h)
#endif
  };

  static constexpr elem mul1(elem a, elem b) { return static_cast<elem>(gf2m_mul_scalar(a, b, M, POLY)); }

  static constexpr Coef prepare(elem c) {
    Coef t{};
    t.c = c;
#if COLLPLAN_EMBEDDED_COEF_GFNI
    for (uint32_t o = 0; o < kBytes; ++o)
      for (uint32_t i = 0; i < kBytes; ++i) t.a[o * kBytes + i] = gfni_block(c, M, POLY, o, i);
#endif
#if COLLPLAN_EMBEDDED_COEF_SPLIT
    for (uint32_t h = 0; h < M / 4; ++h) {
      const elem b = mul1(c, static_cast<elem>(1u << (4 * h)));  // c·x^(4h)
      elem e[16] = {};
      for (uint32_t i = 0; i < 4; ++i) {  // e[v] for v < 2^(i+1), from c·x^(4h+i)
        const elem ci = mul1(b, static_cast<elem>(1u << i));
        for (uint32_t v = 0; v < (1u << i); ++v) e[(1u << i) | v] = static_cast<elem>(e[v] ^ ci);
      }
      for (uint32_t v = 0; v < 16; ++v)
        for (uint32_t b8 = 0; b8 < kBytes; ++b8) t.split[h * kBytes + b8][v] = static_cast<uint8_t>(e[v] >> (8 * b8));
    }
#endif
    return t;
  }

  // dst (+)= Σ co[s].c · src[s], s < k; see the contract at the top.
  static void dot(elem* dst, const elem* const* src, const Coef* co, uint32_t k, size_t n, bool accumulate) {
    if (k == 0) {
      if (!accumulate) memset(dst, 0, n * sizeof(elem));
      return;
    }
    unsigned char* d = reinterpret_cast<unsigned char*>(dst);
    const unsigned char* const* s = reinterpret_cast<const unsigned char* const*>(src);
    const size_t nb = n * sizeof(elem);
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX512
    dot_gfni512(d, s, co, k, nb, accumulate);
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX2
    dot_gfni256(d, s, co, k, nb, accumulate);
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_AVX2
    dot_avx2(d, s, co, k, nb, accumulate);
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
    switch (detail::x86_level()) {
      case 4: dot_gfni512(d, s, co, k, nb, accumulate); break;
      case 3: dot_gfni256(d, s, co, k, nb, accumulate); break;
      case 2: dot_avx2(d, s, co, k, nb, accumulate); break;
      default: dot_scalar(dst, src, co, k, n, accumulate); break;
    }
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON
    dot_neon(d, s, co, k, nb, accumulate);
#else
    (void)d;
    (void)s;
    (void)nb;
    dot_scalar(dst, src, co, k, n, accumulate);
#endif
  }

  // Whether dot() may write dst while dst is also one of its sources (the
  // same pointer): true for the vector paths, which read every source of a
  // block before storing it; false for SCALAR, which goes term by term.
  static bool dot_in_place() {
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
    return detail::x86_level() >= 2;
#else
    return COLLPLAN_EMBEDDED_ISA != COLLPLAN_EMBEDDED_ISA_SCALAR;
#endif
  }

  // Single-term forms (tests, applications).
  static void add(elem* dst, const elem* src, size_t n) {
    const Coef one = prepare(1);
    dot(dst, &src, &one, 1, n, true);
  }
  static void mul(elem* dst, const elem* src, elem c, size_t n) {  // src == dst allowed (one term)
    const Coef t = prepare(c);
    dot(dst, &src, &t, 1, n, false);
  }
  static void mad(elem* dst, const elem* src, elem c, size_t n) {
    const Coef t = prepare(c);
    dot(dst, &src, &t, 1, n, true);
  }

 private:
  using DotFn = void (*)(unsigned char*, const unsigned char* const*, const Coef*, uint32_t, size_t, bool);

#if COLLPLAN_EMBEDDED_HAS_GFNI512
#define COLLPLAN_X86_OPS detail::OpsGfni512
#define COLLPLAN_X86_TARGET COLLPLAN_EMBEDDED_TARGET(COLLPLAN_EMBEDDED_T512)
#define COLLPLAN_X86_DOT dot_gfni512
#include "collplan_kernels_x86.inc"
#undef COLLPLAN_X86_OPS
#undef COLLPLAN_X86_TARGET
#undef COLLPLAN_X86_DOT
#endif
#if COLLPLAN_EMBEDDED_HAS_GFNI256
#define COLLPLAN_X86_OPS detail::OpsGfni256
#define COLLPLAN_X86_TARGET COLLPLAN_EMBEDDED_TARGET(COLLPLAN_EMBEDDED_T256G)
#define COLLPLAN_X86_DOT dot_gfni256
#include "collplan_kernels_x86.inc"
#undef COLLPLAN_X86_OPS
#undef COLLPLAN_X86_TARGET
#undef COLLPLAN_X86_DOT
#endif
#if COLLPLAN_EMBEDDED_HAS_SPLIT_X86
#define COLLPLAN_X86_OPS detail::OpsAvx2
#define COLLPLAN_X86_TARGET COLLPLAN_EMBEDDED_TARGET(COLLPLAN_EMBEDDED_TAVX2)
#define COLLPLAN_X86_DOT dot_avx2
#include "collplan_kernels_x86.inc"
#undef COLLPLAN_X86_OPS
#undef COLLPLAN_X86_TARGET
#undef COLLPLAN_X86_DOT
#endif

#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON
  static void dot_neon(unsigned char* dst, const unsigned char* const* src, const Coef* co, uint32_t k, size_t nb,
                       bool accumulate) {
    constexpr size_t step = 16 * kBytes;
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    size_t i = 0;
    for (; i + step <= nb; i += step) {
      if constexpr (M == 8) {
        uint8x16_t acc = vdupq_n_u8(0);
        for (uint32_t s = 0; s < k; ++s) {
          const uint8x16_t x = vld1q_u8(src[s] + i);
          if (co[s].c == 1) {
            acc = veorq_u8(acc, x);
            continue;
          }
          acc = veorq_u8(acc, veorq_u8(vqtbl1q_u8(vld1q_u8(co[s].split[0]), vandq_u8(x, m4)),
                                       vqtbl1q_u8(vld1q_u8(co[s].split[1]), vshrq_n_u8(x, 4))));
        }
        if (accumulate) acc = veorq_u8(acc, vld1q_u8(dst + i));
        vst1q_u8(dst + i, acc);
      } else {
        uint8x16x2_t acc;
        acc.val[0] = vdupq_n_u8(0);
        acc.val[1] = vdupq_n_u8(0);
        for (uint32_t s = 0; s < k; ++s) {
          const uint8x16x2_t x = vld2q_u8(src[s] + i);  // val[0]: low bytes, val[1]: high bytes
          if (co[s].c == 1) {
            acc.val[0] = veorq_u8(acc.val[0], x.val[0]);
            acc.val[1] = veorq_u8(acc.val[1], x.val[1]);
            continue;
          }
          const uint8x16_t n0 = vandq_u8(x.val[0], m4), n1 = vshrq_n_u8(x.val[0], 4);
          const uint8x16_t n2 = vandq_u8(x.val[1], m4), n3 = vshrq_n_u8(x.val[1], 4);
          const uint8_t(*t)[16] = co[s].split;
          for (int b = 0; b < 2; ++b)
            acc.val[b] = veorq_u8(acc.val[b], veorq_u8(veorq_u8(vqtbl1q_u8(vld1q_u8(t[0 + b]), n0),
                                                                vqtbl1q_u8(vld1q_u8(t[2 + b]), n1)),
                                                       veorq_u8(vqtbl1q_u8(vld1q_u8(t[4 + b]), n2),
                                                                vqtbl1q_u8(vld1q_u8(t[6 + b]), n3))));
        }
        if (accumulate) {
          const uint8x16x2_t d = vld2q_u8(dst + i);
          acc.val[0] = veorq_u8(acc.val[0], d.val[0]);
          acc.val[1] = veorq_u8(acc.val[1], d.val[1]);
        }
        vst2q_u8(dst + i, acc);
      }
    }
    if (i < nb) detail::tail<step>(&dot_neon, dst + i, src, i, co, k, nb - i, accumulate);
  }
#endif

#if COLLPLAN_EMBEDDED_HAS_SCALAR
  // Term by term over the whole region: a lookup per byte is what bounds a
  // scalar GF(2^m) kernel on a superscalar core (grouping terms per pass to
  // save destination loads and stores measured no faster), and a term's
  // pass streams one source and the destination. The nibble tables of a
  // term: nib(t, h, v) = c·(v << 4h).
  static elem nib(const Coef& t, uint32_t h, uint32_t v) {
    elem r = 0;
    for (uint32_t b = 0; b < kBytes; ++b) r = static_cast<elem>(r | (t.split[h * kBytes + b][v] << (8 * b)));
    return r;
  }
  static constexpr size_t kByteTablesFrom = 256;  // elements; below, building 256 entries costs more than it saves
  static void dot_scalar(elem* d, const elem* const* src, const Coef* co, uint32_t k, size_t n, bool accumulate) {
    for (uint32_t s = 0; s < k; ++s) {
      const elem* x = src[s];
      const bool first = s == 0 && !accumulate;
      if (co[s].c == 1) {
        if (first) {
          if (d != x) memcpy(d, x, n * sizeof(elem));
        } else
          for (size_t i = 0; i < n; ++i) d[i] = static_cast<elem>(d[i] ^ x[i]);
        continue;
      }
      if (n >= kByteTablesFrom) {
        elem tb[kBytes][256];
        byte_tables(co[s], tb);
        const auto lookup = [&](elem v) -> elem {
          if constexpr (M == 8) return tb[0][v];
          else return static_cast<elem>(tb[0][v & 0xFF] ^ tb[kBytes - 1][v >> 8]);
        };
        if (first)
          for (size_t i = 0; i < n; ++i) d[i] = lookup(x[i]);
        else
          for (size_t i = 0; i < n; ++i) d[i] = static_cast<elem>(d[i] ^ lookup(x[i]));
        continue;
      }
      for (size_t i = 0; i < n; ++i) {
        elem r = 0;
        for (uint32_t h = 0; h < M / 4; ++h) r = static_cast<elem>(r ^ nib(co[s], h, (x[i] >> (4 * h)) & 15));
        d[i] = first ? r : static_cast<elem>(d[i] ^ r);
      }
    }
  }
  // tb[b][16·hi + lo] = c·(hi << (8b + 4)) + c·(lo << 8b), from the nibble
  // tables: 256 XORs per byte of x.
  static void byte_tables(const Coef& t, elem (*tb)[256]) {
    for (uint32_t b = 0; b < kBytes; ++b) {
      elem lo[16], hi[16];
      for (uint32_t v = 0; v < 16; ++v) {
        lo[v] = nib(t, 2 * b, v);
        hi[v] = nib(t, 2 * b + 1, v);
      }
      for (uint32_t h = 0; h < 16; ++h)
        for (uint32_t l = 0; l < 16; ++l) tb[b][16 * h + l] = static_cast<elem>(hi[h] ^ lo[l]);
    }
  }
#endif
};

// ─── GF(Q), Q prime ─────────────────────────────────────────────────────────

// GF(Q) for a prime Q < 2^31. A term's product c·x < Q² < 2^62 is summed
// unreduced; the sum is brought back below Q only when the next product
// could overflow 64 bits (every kFold terms; for Q = 65537 never before the
// end), and once at the end.
template <uint32_t Q>
struct Prime {
  static_assert(Q >= 2 && Q < (1u << 31), "collplan_embedded: prime fields need Q < 2^31");
  using elem = uint32_t;
  // Terms that can be added to a value below Q without passing 2^64 − 1.
  static constexpr uint64_t kFold = (~uint64_t{0} - Q) / (static_cast<uint64_t>(Q - 1) * (Q - 1) + 1);

  struct Coef {
    elem c = 0;
    uint64_t shoup = 0;  // ⌊c·2^32 / Q⌋
  };
  static constexpr Coef prepare(elem c) {
    Coef t{};
    t.c = c;
    t.shoup = (static_cast<uint64_t>(c) << 32) / Q;
    return t;
  }

  // Shoup's c·x mod Q (exact for Q < 2^31).
  static uint32_t mulc(const Coef& t, uint32_t x) {
    const uint64_t hi = (t.shoup * x) >> 32;
    const uint32_t r = static_cast<uint32_t>(static_cast<uint64_t>(t.c) * x - hi * Q);
    return r >= Q ? r - Q : r;
  }
  static uint32_t addq(uint32_t a, uint32_t b) {
    const uint32_t s = a + b;  // < 2^32 since both < 2^31
    return s >= Q ? s - Q : s;
  }

  static void dot(elem* dst, const elem* const* src, const Coef* co, uint32_t k, size_t n, bool accumulate) {
    size_t i = 0;
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
    if (detail::x86_level() >= 2) i = dot_avx2(dst, src, co, k, n, accumulate);
#elif COLLPLAN_EMBEDDED_HAS_AVX2
    i = dot_avx2(dst, src, co, k, n, accumulate);
#endif
    if (i < n) dot_scalar(dst + i, src, co, k, i, n - i, accumulate);
  }

  // Every path works block by block (all sources of a block read before it
  // is stored), so dst may also be a source.
  static bool dot_in_place() { return true; }

  static void add(elem* dst, const elem* src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = addq(dst[i], src[i]);
  }
  static void mul(elem* dst, const elem* src, elem c, size_t n) {
    const Coef t = prepare(c);
    for (size_t i = 0; i < n; ++i) dst[i] = mulc(t, src[i]);
  }
  static void mad(elem* dst, const elem* src, elem c, size_t n) {
    const Coef t = prepare(c);
    for (size_t i = 0; i < n; ++i) dst[i] = addq(dst[i], mulc(t, src[i]));
  }

 private:
  static constexpr size_t kBlock = 128;  // elements: 1 KiB of 64-bit sums on the stack
  static void dot_scalar(elem* dst, const elem* const* src, const Coef* co, uint32_t k, size_t off, size_t n,
                         bool accumulate) {
    uint64_t acc[kBlock];
    for (size_t b = 0; b < n; b += kBlock) {
      const size_t m = n - b < kBlock ? n - b : kBlock;
      for (size_t i = 0; i < m; ++i) acc[i] = accumulate ? dst[b + i] : 0;
      uint64_t since = accumulate ? 1 : 0;  // terms in acc since the last reduction
      for (uint32_t s = 0; s < k; ++s) {
        if (since == kFold) {
          for (size_t i = 0; i < m; ++i) acc[i] %= Q;
          since = 1;
        }
        const uint32_t* x = src[s] + off + b;
        const uint64_t c = co[s].c;
        for (size_t i = 0; i < m; ++i) acc[i] += c * x[i];
        ++since;
      }
      for (size_t i = 0; i < m; ++i) dst[b + i] = static_cast<uint32_t>(acc[i] % Q);
    }
  }

#if COLLPLAN_EMBEDDED_HAS_AVX2
#define COLLPLAN_EMBEDDED_AVX2OP COLLPLAN_EMBEDDED_VECOP(COLLPLAN_EMBEDDED_TAVX2)
  COLLPLAN_EMBEDDED_AVX2OP __m256i loadu(const uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  COLLPLAN_EMBEDDED_AVX2OP void storeu(uint32_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  // Any 32-bit lane mod 65537: lo − hi + Q in [2, 2^17], one conditional
  // subtraction.
  COLLPLAN_EMBEDDED_AVX2OP __m256i reduce65537(__m256i v, __m256i qv) {
    const __m256i r =
        _mm256_sub_epi32(_mm256_add_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), qv), _mm256_srli_epi32(v, 16));
    return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
  }
  // A 64-bit lane v = H·2^32 + L → v mod Q in [0, 4Q) by two Shoup products
  // (v ≡ H·R + L, R = 2^32 mod Q).
  COLLPLAN_EMBEDDED_AVX2OP __m256i fold64(__m256i v, __m256i q, __m256i R, __m256i Rp, __m256i onep) {
    const __m256i H = _mm256_srli_epi64(v, 32);
    const __m256i L = _mm256_and_si256(v, _mm256_set1_epi64x(0xFFFFFFFFLL));
    const __m256i qh = _mm256_srli_epi64(_mm256_mul_epu32(H, Rp), 32);
    const __m256i rh = _mm256_sub_epi64(_mm256_mul_epu32(H, R), _mm256_mul_epu32(qh, q));
    const __m256i ql = _mm256_srli_epi64(_mm256_mul_epu32(L, onep), 32);
    const __m256i rl = _mm256_sub_epi64(L, _mm256_mul_epu32(ql, q));
    return _mm256_add_epi64(rh, rl);
  }
  // [0, 4Q) → [0, Q) in 64-bit lanes (values < 2^33: signed compares work).
  COLLPLAN_EMBEDDED_AVX2OP __m256i final64(__m256i v, __m256i q) {
    const __m256i q2 = _mm256_add_epi64(q, q);
    v = _mm256_sub_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(v, _mm256_sub_epi64(q2, _mm256_set1_epi64x(1))), q2));
    return _mm256_sub_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(v, _mm256_sub_epi64(q, _mm256_set1_epi64x(1))), q));
  }
#undef COLLPLAN_EMBEDDED_AVX2OP

  // dot_avx2 over KV vectors of 8 elements at element offset i. c·x = lo − hi
  // (2^16 ≡ −1): lazy products lo − hi + Q in [2, 2^17 + 1], c = 65536 (−1)
  // as Q − x; up to 2^14 of them fit a 32-bit lane.
  template <size_t KV>
  COLLPLAN_EMBEDDED_TARGET(COLLPLAN_EMBEDDED_TAVX2)
  static void tile65537(elem* dst, const elem* const* src, const Coef* co, uint32_t k, size_t i, bool accumulate) {
    const __m256i qv = _mm256_set1_epi32(65537), lo16 = _mm256_set1_epi32(0xFFFF);
    __m256i acc[KV];
    _Pragma("GCC unroll 4") for (size_t v = 0; v < KV; ++v) acc[v] =
        accumulate ? loadu(dst + i + 8 * v) : _mm256_setzero_si256();
    uint32_t since = 0;
    for (uint32_t s = 0; s < k; ++s) {
      const uint32_t* x = src[s] + i;
      if (co[s].c == 65536) {
        _Pragma("GCC unroll 4") for (size_t v = 0; v < KV; ++v) acc[v] =
            _mm256_add_epi32(acc[v], _mm256_sub_epi32(qv, loadu(x + 8 * v)));
      } else {
        const __m256i cv = _mm256_set1_epi32(static_cast<int>(co[s].c));
        _Pragma("GCC unroll 4") for (size_t v = 0; v < KV; ++v) {
          const __m256i p = _mm256_mullo_epi32(loadu(x + 8 * v), cv);
          acc[v] = _mm256_add_epi32(
              acc[v], _mm256_sub_epi32(_mm256_add_epi32(_mm256_and_si256(p, lo16), qv), _mm256_srli_epi32(p, 16)));
        }
      }
      if (++since == (1u << 14)) {
        _Pragma("GCC unroll 4") for (size_t v = 0; v < KV; ++v) acc[v] = reduce65537(acc[v], qv);
        since = 1;
      }
    }
    _Pragma("GCC unroll 4") for (size_t v = 0; v < KV; ++v) storeu(dst + i + 8 * v, reduce65537(acc[v], qv));
  }

  // Whole 8-element blocks; returns how many elements were done.
  COLLPLAN_EMBEDDED_TARGET(COLLPLAN_EMBEDDED_TAVX2)
  static size_t dot_avx2(elem* dst, const elem* const* src, const Coef* co, uint32_t k, size_t n, bool accumulate) {
    size_t i = 0;
    if constexpr (Q == 65537) {
      // Four vectors per pass (32 elements): four independent sums per
      // source, one coefficient broadcast for all of them.
      for (; i + 32 <= n; i += 32) tile65537<4>(dst, src, co, k, i, accumulate);
      for (; i + 8 <= n; i += 8) tile65537<1>(dst, src, co, k, i, accumulate);
    } else {
      const uint64_t R = (uint64_t{1} << 32) % Q;
      const __m256i q = _mm256_set1_epi64x(Q), Rv = _mm256_set1_epi64x(static_cast<long long>(R));
      const __m256i Rp = _mm256_set1_epi64x(static_cast<long long>((R << 32) / Q));
      const __m256i onep = _mm256_set1_epi64x(static_cast<long long>((uint64_t{1} << 32) / Q));
      // Terms that may be added to a value below 4Q without passing 2^64 − 1.
      constexpr uint64_t fold = (~uint64_t{0} - 4ull * Q) / (static_cast<uint64_t>(Q - 1) * (Q - 1) + 1);
      for (; i + 8 <= n; i += 8) {
        __m256i ae, ao;
        if (accumulate) {
          const __m256i d = loadu(dst + i);
          ae = _mm256_and_si256(d, _mm256_set1_epi64x(0xFFFFFFFFLL));
          ao = _mm256_srli_epi64(d, 32);
        } else {
          ae = ao = _mm256_setzero_si256();
        }
        uint64_t since = 0;
        for (uint32_t s = 0; s < k; ++s) {
          const __m256i cv = _mm256_set1_epi64x(static_cast<long long>(co[s].c));
          const __m256i x = loadu(src[s] + i);
          ae = _mm256_add_epi64(ae, _mm256_mul_epu32(x, cv));
          ao = _mm256_add_epi64(ao, _mm256_mul_epu32(_mm256_srli_epi64(x, 32), cv));
          if (++since == fold) {
            ae = fold64(ae, q, Rv, Rp, onep);
            ao = fold64(ao, q, Rv, Rp, onep);
            since = 0;
          }
        }
        ae = final64(fold64(ae, q, Rv, Rp, onep), q);
        ao = final64(fold64(ao, q, Rv, Rp, onep), q);
        storeu(dst + i, _mm256_blend_epi32(ae, _mm256_slli_epi64(ao, 32), 0xAA));
      }
    }
    return i;
  }
#endif
};

}  // namespace collplan_embedded
