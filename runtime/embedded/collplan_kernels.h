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
//                           dst[i] (+)= Σ_{s<k} co[s].c · src[s][i], i < n,
//                           one pass over dst: each block of dst is built
//                           from all k sources before it is stored. dst may
//                           not overlap a source; k = 0 zeroes dst (or leaves
//                           it when accumulating).
//   F::add, F::mul, F::mad  single-term region forms (tests, applications)
//
// ─── Kernel selection (compile time) ───────────────────────────────────────
//
// COLLPLAN_EMBEDDED_ISA is one of the values below. Left undefined, the best
// the compiler targets is taken (what -march=... enables):
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
//   NEON         AArch64 Advanced SIMD: the split tables with TBL (GF(2^8),
//                GF(2^16) with LD2/ST2 de-interleaving); prime fields scalar.
//   VECTOR       GCC/Clang generic vectors on SSE2 (every x86-64 CPU, so a
//                plain -O2 build): GF(2^8) and GF(2^16) bitsliced — for each
//                bit j of x, a compare makes a byte mask and the mask selects
//                c·x^j; no table lookups, 16 bytes per operation.
//   SCALAR       any C++17 compiler and CPU (microcontrollers): GF(2^8)
//                through 256-byte tables expanded per call from the
//                prepared 16-entry nibble tables (one lookup per byte),
//                GF(2^16) through four 16-entry nibble tables per
//                coefficient; words of 8 bytes are read and written at once.
//                Prime fields: 64-bit products summed unreduced, reduced
//                (Q is a compile-time constant, so % Q is a multiply) only
//                when the next term could overflow, and at the end.
//
// Defining COLLPLAN_EMBEDDED_ISA to a path the compiler does not target is
// an #error. Every path gives the same bytes (tests force each one).
//
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
#define COLLPLAN_EMBEDDED_ISA_VECTOR 1
#define COLLPLAN_EMBEDDED_ISA_NEON 2
#define COLLPLAN_EMBEDDED_ISA_AVX2 3
#define COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 4
#define COLLPLAN_EMBEDDED_ISA_GFNI_AVX512 5

#if defined(__GFNI__) && defined(__AVX512BW__) && defined(__AVX512F__)
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_GFNI_AVX512
#elif defined(__GFNI__) && defined(__AVX2__)
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_GFNI_AVX2
#elif defined(__AVX2__)
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_AVX2
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_NEON
#elif defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_VECTOR
#else
#define COLLPLAN_EMBEDDED_BEST_ISA COLLPLAN_EMBEDDED_ISA_SCALAR
#endif

#ifndef COLLPLAN_EMBEDDED_ISA
#define COLLPLAN_EMBEDDED_ISA COLLPLAN_EMBEDDED_BEST_ISA
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
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_VECTOR && !(defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__)))
#error "COLLPLAN_EMBEDDED_ISA VECTOR needs GCC or Clang on an SSE2 target"
#endif
#if COLLPLAN_EMBEDDED_ISA < 0 || COLLPLAN_EMBEDDED_ISA > 5
#error "COLLPLAN_EMBEDDED_ISA must be one of COLLPLAN_EMBEDDED_ISA_SCALAR ... _GFNI_AVX512 (0..5)"
#endif

#define COLLPLAN_EMBEDDED_X86 \
  (COLLPLAN_EMBEDDED_ISA >= COLLPLAN_EMBEDDED_ISA_AVX2 && COLLPLAN_EMBEDDED_ISA <= COLLPLAN_EMBEDDED_ISA_GFNI_AVX512)
#define COLLPLAN_EMBEDDED_GFNI (COLLPLAN_EMBEDDED_ISA >= COLLPLAN_EMBEDDED_ISA_GFNI_AVX2)

#if COLLPLAN_EMBEDDED_X86
#include <immintrin.h>
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON
#include <arm_neon.h>
#endif

namespace collplan_embedded {

// The name of the kernel path this translation unit was compiled with.
constexpr const char* kernel_isa() {
  return COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX512 ? "gfni-avx512"
         : COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 ? "gfni-avx2"
         : COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_AVX2      ? "avx2"
         : COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON      ? "neon"
         : COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_VECTOR    ? "vector-sse2"
                                                                    : "scalar";
}

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

// SIMD tails: the last partial vector goes through a zero-padded copy, so
// every path runs one vector loop. W is the vector width in bytes.
template <size_t W>
struct Tail {
  alignas(64) unsigned char buf[W];
};

#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_VECTOR
typedef uint8_t v16u8 __attribute__((vector_size(16)));
typedef int8_t v16s8 __attribute__((vector_size(16)));
typedef uint16_t v8u16 __attribute__((vector_size(16)));
typedef int16_t v8s16 __attribute__((vector_size(16)));
template <class V>
inline V vload(const void* p) {
  V v;
  memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
inline void vstore(void* p, V v) {
  memcpy(p, &v, sizeof v);
}
#endif

}  // namespace detail

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
// which every path uses: a bit matrix (GFNI), XORs of table entries indexed
// by the nibbles of x (split tables), or XORs of c·x^j selected by the bits
// of x (bitsliced).
template <uint32_t M, uint32_t POLY>
struct Gf2m {
  static_assert(M == 8 || M == 16, "collplan_embedded: GF(2^m) for m = 8 or 16");
  using elem = typename Gf2mElem<M>::type;
  static constexpr uint32_t kBytes = M / 8;

  struct Coef {
    elem c = 0;
#if COLLPLAN_EMBEDDED_GFNI
    uint64_t a[kBytes * kBytes] = {};  // block (out byte o, in byte i) at a[o·kBytes + i]
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_VECTOR
    elem bit[M] = {};  // c·x^j
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_SCALAR
    elem nib[M / 4][16] = {};  // nib[h][v] = c·(v << 4h)
#else
    uint8_t split[(M / 4) * kBytes][16] = {};  // split[h·kBytes + b][v] = byte b of c·(v << 4h)
#endif
  };

  static constexpr elem mul1(elem a, elem b) { return static_cast<elem>(gf2m_mul_scalar(a, b, M, POLY)); }

  static constexpr Coef prepare(elem c) {
    Coef t{};
    t.c = c;
#if COLLPLAN_EMBEDDED_GFNI
    for (uint32_t o = 0; o < kBytes; ++o)
      for (uint32_t i = 0; i < kBytes; ++i) t.a[o * kBytes + i] = gfni_block(c, M, POLY, o, i);
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_VECTOR
    for (uint32_t j = 0; j < M; ++j) t.bit[j] = mul1(c, static_cast<elem>(1u << j));
#else
    for (uint32_t h = 0; h < M / 4; ++h) {
      const elem b = mul1(c, static_cast<elem>(1u << (4 * h)));  // c·x^(4h)
      elem e[16] = {};
      for (uint32_t i = 0; i < 4; ++i) {  // e[v] for v < 2^(i+1) from c·x^(4h+i)
        const elem ci = mul1(b, static_cast<elem>(1u << i));
        for (uint32_t v = 0; v < (1u << i); ++v) e[(1u << i) | v] = static_cast<elem>(e[v] ^ ci);
      }
      for (uint32_t v = 0; v < 16; ++v) {
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_SCALAR
        t.nib[h][v] = e[v];
#else
        for (uint32_t b8 = 0; b8 < kBytes; ++b8) t.split[h * kBytes + b8][v] = static_cast<uint8_t>(e[v] >> (8 * b8));
#endif
      }
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
    dot_impl(reinterpret_cast<unsigned char*>(dst), reinterpret_cast<const unsigned char* const*>(src), co, k,
             n * sizeof(elem), accumulate);
  }

  static void add(elem* dst, const elem* src, size_t n) {
    const Coef one = prepare(1);
    dot(dst, &src, &one, 1, n, true);
  }
  static void mul(elem* dst, const elem* src, elem c, size_t n) {
    const Coef t = prepare(c);
    if (dst == src) {  // in place: block by block through a buffer
      elem buf[256];
      for (size_t i = 0; i < n; i += 256) {
        const size_t m = n - i < 256 ? n - i : 256;
        memcpy(buf, src + i, m * sizeof(elem));
        const elem* b = buf;
        dot(dst + i, &b, &t, 1, m, false);
      }
      return;
    }
    dot(dst, &src, &t, 1, n, false);
  }
  static void mad(elem* dst, const elem* src, elem c, size_t n) {
    const Coef t = prepare(c);
    dot(dst, &src, &t, 1, n, true);
  }

 private:
  // Byte-level kernel: nb bytes (a multiple of kBytes).
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_GFNI_AVX512
  using V = __m512i;
  static constexpr size_t kW = 64;
  static V vload(const unsigned char* p) { return _mm512_loadu_si512(p); }
  static void vstore(unsigned char* p, V v) { _mm512_storeu_si512(p, v); }
  static V vxor(V a, V b) { return _mm512_xor_si512(a, b); }
  static V vzero() { return _mm512_setzero_si512(); }
  static V aff(V x, uint64_t a) { return _mm512_gf2p8affine_epi64_epi8(x, _mm512_set1_epi64(static_cast<long long>(a)), 0); }
  static V and16(V x) { return _mm512_and_si512(x, _mm512_set1_epi16(0x00FF)); }
  static V srl16(V x) { return _mm512_srli_epi16(x, 8); }
  static V pack(V a, V b) { return _mm512_packus_epi16(a, b); }
  static V unlo(V a, V b) { return _mm512_unpacklo_epi8(a, b); }
  static V unhi(V a, V b) { return _mm512_unpackhi_epi8(a, b); }
#elif COLLPLAN_EMBEDDED_X86
  using V = __m256i;
  static constexpr size_t kW = 32;
  static V vload(const unsigned char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void vstore(unsigned char* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static V vxor(V a, V b) { return _mm256_xor_si256(a, b); }
  static V vzero() { return _mm256_setzero_si256(); }
#if COLLPLAN_EMBEDDED_GFNI
  static V aff(V x, uint64_t a) { return _mm256_gf2p8affine_epi64_epi8(x, _mm256_set1_epi64x(static_cast<long long>(a)), 0); }
#endif
  static V and16(V x) { return _mm256_and_si256(x, _mm256_set1_epi16(0x00FF)); }
  static V srl16(V x) { return _mm256_srli_epi16(x, 8); }
  static V pack(V a, V b) { return _mm256_packus_epi16(a, b); }
  static V unlo(V a, V b) { return _mm256_unpacklo_epi8(a, b); }
  static V unhi(V a, V b) { return _mm256_unpackhi_epi8(a, b); }
  static V tbl(const uint8_t* t) { return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t))); }
  static V shuf(V t, V idx) { return _mm256_shuffle_epi8(t, idx); }
#endif

#if COLLPLAN_EMBEDDED_X86
  // One vector of bytes (GF(2^8)) or two of elements (GF(2^16)) from all
  // sources at byte offset i; r0 (and r1) hold the result.
  static void block(const unsigned char* const* src, const Coef* co, uint32_t k, size_t i, V& r0, V& r1) {
    if constexpr (M == 8) {
      V acc = vzero();
      for (uint32_t s = 0; s < k; ++s) {
        const V x = vload(src[s] + i);
        if (co[s].c == 1) {
          acc = vxor(acc, x);
          continue;
        }
#if COLLPLAN_EMBEDDED_GFNI
        acc = vxor(acc, aff(x, co[s].a[0]));
#else
        const V m4 = _mm256_set1_epi8(0x0F);
        const V lo = _mm256_and_si256(x, m4), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
        acc = vxor(acc, vxor(shuf(tbl(co[s].split[0]), lo), shuf(tbl(co[s].split[1]), hi)));
#endif
      }
      r0 = acc;
    } else {
      // Low and high bytes of 2·kW/2 elements gathered by PACKUSWB (per
      // 128-bit lane), multiplied in that domain, and re-interleaved once
      // at the end by PUNPCK{L,H}BW, which undoes exactly that interleave.
      V alo = vzero(), ahi = vzero();
      for (uint32_t s = 0; s < k; ++s) {
        const V a = vload(src[s] + i), b = vload(src[s] + i + kW);
        const V lo = pack(and16(a), and16(b)), hi = pack(srl16(a), srl16(b));
        if (co[s].c == 1) {
          alo = vxor(alo, lo);
          ahi = vxor(ahi, hi);
          continue;
        }
#if COLLPLAN_EMBEDDED_GFNI
        alo = vxor(alo, vxor(aff(lo, co[s].a[0]), aff(hi, co[s].a[1])));
        ahi = vxor(ahi, vxor(aff(lo, co[s].a[2]), aff(hi, co[s].a[3])));
#else
        const V m4 = _mm256_set1_epi8(0x0F);
        const V n0 = _mm256_and_si256(lo, m4), n1 = _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4);
        const V n2 = _mm256_and_si256(hi, m4), n3 = _mm256_and_si256(_mm256_srli_epi16(hi, 4), m4);
        const uint8_t(*t)[16] = co[s].split;
        alo = vxor(alo, vxor(vxor(shuf(tbl(t[0]), n0), shuf(tbl(t[2]), n1)), vxor(shuf(tbl(t[4]), n2), shuf(tbl(t[6]), n3))));
        ahi = vxor(ahi, vxor(vxor(shuf(tbl(t[1]), n0), shuf(tbl(t[3]), n1)), vxor(shuf(tbl(t[5]), n2), shuf(tbl(t[7]), n3))));
#endif
      }
      r0 = unlo(alo, ahi);
      r1 = unhi(alo, ahi);
    }
  }

  static void dot_impl(unsigned char* dst, const unsigned char* const* src, const Coef* co, uint32_t k, size_t nb,
                       bool accumulate) {
    constexpr size_t step = kW * kBytes;  // bytes per block
    size_t i = 0;
    for (; i + step <= nb; i += step) {
      V r0, r1;
      block(src, co, k, i, r0, r1);
      if (accumulate) r0 = vxor(r0, vload(dst + i));
      vstore(dst + i, r0);
      if constexpr (M == 16) {
        if (accumulate) r1 = vxor(r1, vload(dst + i + kW));
        vstore(dst + i + kW, r1);
      }
    }
    if (i < nb) tail(dst + i, src, co, k, i, nb - i, accumulate);
  }
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON
  static constexpr size_t kW = 16;
  static void dot_impl(unsigned char* dst, const unsigned char* const* src, const Coef* co, uint32_t k, size_t nb,
                       bool accumulate) {
    constexpr size_t step = kW * kBytes;
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
          const uint8x16x2_t x = vld2q_u8(src[s] + i);  // val[0] low bytes, val[1] high bytes
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
    if (i < nb) tail(dst + i, src, co, k, i, nb - i, accumulate);
  }
#elif COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_VECTOR
  static constexpr size_t kW = 16;
  static void dot_impl(unsigned char* dst, const unsigned char* const* src, const Coef* co, uint32_t k, size_t nb,
                       bool accumulate) {
    using namespace detail;
    constexpr size_t step = 16;
    size_t i = 0;
    for (; i + step <= nb; i += step) {
      if constexpr (M == 8) {
        v16u8 acc = {};
        for (uint32_t s = 0; s < k; ++s) {
          v16u8 x = vload<v16u8>(src[s] + i);
          if (co[s].c == 1) {
            acc ^= x;
            continue;
          }
          // From the top bit down: the sign of each byte selects c·x^j.
          for (int j = 7; j >= 0; --j) {
            acc ^= reinterpret_cast<v16u8>(reinterpret_cast<v16s8>(x) < 0) & co[s].bit[j];
            x += x;
          }
        }
        if (accumulate) acc ^= vload<v16u8>(dst + i);
        vstore(dst + i, acc);
      } else {
        v8u16 acc = {};
        for (uint32_t s = 0; s < k; ++s) {
          v8u16 x = vload<v8u16>(src[s] + i);
          if (co[s].c == 1) {
            acc ^= x;
            continue;
          }
          for (int j = 15; j >= 0; --j) {
            acc ^= reinterpret_cast<v8u16>(reinterpret_cast<v8s16>(x) < 0) & co[s].bit[j];
            x += x;
          }
        }
        if (accumulate) acc ^= vload<v8u16>(dst + i);
        vstore(dst + i, acc);
      }
    }
    if (i < nb) tail(dst + i, src, co, k, i, nb - i, accumulate);
  }
#else  // SCALAR
  static constexpr size_t kBlock = 1024;  // elements per block: dst stays in L1 across the terms
  static void dot_impl(unsigned char* dst, const unsigned char* const* src, const Coef* co, uint32_t k, size_t nb,
                       bool accumulate) {
    const size_t n = nb / kBytes;
    elem* d = reinterpret_cast<elem*>(dst);
    if constexpr (M == 8) {
      // Byte tables for long regions (one lookup per byte), expanded per
      // term from the nibble tables; nibble lookups for short ones.
      if (n >= 512) {
        uint8_t t[256];
        for (uint32_t s = 0; s < k; ++s) {
          const bool first = s == 0 && !accumulate;
          if (co[s].c == 1) {
            xor_words(d, src[s], n, first);
            continue;
          }
          for (uint32_t h = 0; h < 16; ++h)
            for (uint32_t l = 0; l < 16; ++l) t[h * 16 + l] = static_cast<uint8_t>(co[s].nib[1][h] ^ co[s].nib[0][l]);
          lookup_words(d, src[s], t, n, first);
        }
        return;
      }
      for (uint32_t s = 0; s < k; ++s) {
        const uint8_t* x = src[s];
        const bool first = s == 0 && !accumulate;
        for (size_t i = 0; i < n; ++i) {
          const uint8_t v = static_cast<uint8_t>(co[s].nib[0][x[i] & 15] ^ co[s].nib[1][x[i] >> 4]);
          d[i] = first ? v : static_cast<uint8_t>(d[i] ^ v);
        }
      }
    } else {
      for (size_t b = 0; b < n; b += kBlock) {
        const size_t m = n - b < kBlock ? n - b : kBlock;
        for (uint32_t s = 0; s < k; ++s) {
          const uint16_t* x = reinterpret_cast<const uint16_t*>(src[s]) + b;
          const bool first = s == 0 && !accumulate;
          const uint16_t(*t)[16] = co[s].nib;
          for (size_t i = 0; i < m; ++i) {
            const uint32_t v = x[i];
            const uint16_t r = static_cast<uint16_t>(t[0][v & 15] ^ t[1][(v >> 4) & 15] ^ t[2][(v >> 8) & 15] ^ t[3][v >> 12]);
            d[b + i] = first ? r : static_cast<uint16_t>(d[b + i] ^ r);
          }
        }
      }
    }
  }
  // d (^)= x, eight bytes at a time.
  static void xor_words(uint8_t* d, const uint8_t* x, size_t n, bool first) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t a, b = 0;
      memcpy(&a, x + i, 8);
      if (!first) memcpy(&b, d + i, 8);
      a ^= b;
      memcpy(d + i, &a, 8);
    }
    for (; i < n; ++i) d[i] = first ? x[i] : static_cast<uint8_t>(d[i] ^ x[i]);
  }
  // d (^)= t[x], eight bytes read and written at once.
  static void lookup_words(uint8_t* d, const uint8_t* x, const uint8_t* t, size_t n, bool first) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t a, r = 0;
      memcpy(&a, x + i, 8);
      for (uint32_t j = 0; j < 8; ++j) r |= static_cast<uint64_t>(t[(a >> (8 * j)) & 0xFF]) << (8 * j);
      if (!first) {
        uint64_t b;
        memcpy(&b, d + i, 8);
        r ^= b;
      }
      memcpy(d + i, &r, 8);
    }
    for (; i < n; ++i) d[i] = first ? t[x[i]] : static_cast<uint8_t>(d[i] ^ t[x[i]]);
  }
#endif

#if COLLPLAN_EMBEDDED_ISA != COLLPLAN_EMBEDDED_ISA_SCALAR
  // The last partial block: sources copied into zero-padded buffers, one
  // block computed, the valid bytes written back.
  static void tail(unsigned char* dst, const unsigned char* const* src, const Coef* co, uint32_t k, size_t off,
                   size_t nb, bool accumulate) {
    constexpr size_t step = kW * kBytes;
    constexpr uint32_t kChunk = 16;  // sources per pass over the tail buffer
    detail::Tail<step> buf[kChunk];
    detail::Tail<step> out{};
    const unsigned char* ptr[kChunk];
    if (accumulate) memcpy(out.buf, dst, nb);
    for (uint32_t s0 = 0; s0 < k; s0 += kChunk) {
      const uint32_t c = k - s0 < kChunk ? k - s0 : kChunk;
      for (uint32_t s = 0; s < c; ++s) {
        memset(buf[s].buf, 0, step);
        memcpy(buf[s].buf, src[s0 + s] + off, nb);
        ptr[s] = buf[s].buf;
      }
      dot_impl(out.buf, ptr, co + s0, c, step, accumulate || s0 > 0);
    }
    memcpy(dst, out.buf, nb);
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
#if COLLPLAN_EMBEDDED_X86
    i = dot_avx2(dst, src, co, k, n, accumulate);
#endif
    if (i < n) dot_scalar(dst + i, src, co, k, i, n - i, accumulate);
  }

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

#if COLLPLAN_EMBEDDED_X86
  static __m256i loadu(const uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void storeu(uint32_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  // Any 32-bit lane mod 65537: lo − hi + Q in [2, 2^17], one conditional
  // subtraction.
  static __m256i reduce65537(__m256i v, __m256i qv) {
    const __m256i r =
        _mm256_sub_epi32(_mm256_add_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), qv), _mm256_srli_epi32(v, 16));
    return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
  }
  // A 64-bit lane v = H·2^32 + L → v mod Q in [0, 4Q) by two Shoup products
  // (v ≡ H·R + L, R = 2^32 mod Q).
  static __m256i fold64(__m256i v, __m256i q, __m256i R, __m256i Rp, __m256i onep) {
    const __m256i H = _mm256_srli_epi64(v, 32);
    const __m256i L = _mm256_and_si256(v, _mm256_set1_epi64x(0xFFFFFFFFLL));
    const __m256i qh = _mm256_srli_epi64(_mm256_mul_epu32(H, Rp), 32);
    const __m256i rh = _mm256_sub_epi64(_mm256_mul_epu32(H, R), _mm256_mul_epu32(qh, q));
    const __m256i ql = _mm256_srli_epi64(_mm256_mul_epu32(L, onep), 32);
    const __m256i rl = _mm256_sub_epi64(L, _mm256_mul_epu32(ql, q));
    return _mm256_add_epi64(rh, rl);
  }
  // [0, 4Q) → [0, Q) in 64-bit lanes (values < 2^33: signed compares work).
  static __m256i final64(__m256i v, __m256i q) {
    const __m256i q2 = _mm256_add_epi64(q, q);
    v = _mm256_sub_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(v, _mm256_sub_epi64(q2, _mm256_set1_epi64x(1))), q2));
    return _mm256_sub_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(v, _mm256_sub_epi64(q, _mm256_set1_epi64x(1))), q));
  }

  // Whole 8-element blocks; returns how many elements were done.
  static size_t dot_avx2(elem* dst, const elem* const* src, const Coef* co, uint32_t k, size_t n, bool accumulate) {
    size_t i = 0;
    if constexpr (Q == 65537) {
      // c·x = lo − hi (2^16 ≡ −1): lazy products lo − hi + Q in [2, 2^17 + 1],
      // c = 65536 (−1) as Q − x; up to 2^14 of them fit a 32-bit lane.
      const __m256i qv = _mm256_set1_epi32(65537);
      for (; i + 8 <= n; i += 8) {
        __m256i acc = accumulate ? loadu(dst + i) : _mm256_setzero_si256();
        uint32_t since = 0;
        for (uint32_t s = 0; s < k; ++s) {
          const __m256i x = loadu(src[s] + i);
          __m256i t;
          if (co[s].c == 65536) {
            t = _mm256_sub_epi32(qv, x);
          } else {
            const __m256i p = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(co[s].c)));
            t = _mm256_sub_epi32(_mm256_add_epi32(_mm256_and_si256(p, _mm256_set1_epi32(0xFFFF)), qv),
                                 _mm256_srli_epi32(p, 16));
          }
          acc = _mm256_add_epi32(acc, t);
          if (++since == (1u << 14)) {
            acc = reduce65537(acc, qv);
            since = 1;
          }
        }
        storeu(dst + i, reduce65537(acc, qv));
      }
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
