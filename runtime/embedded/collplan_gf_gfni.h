// collplan_gf_gfni.h — GF(2^8) and GF(2^16) kernels on x86 GFNI, with AVX2
// (`_gfni`, 32-byte vectors) or AVX-512BW (`_gfni512`, 64-byte vectors).
// Part of the GF kernel library (collplan_gf_base.h has the conventions).
//
// GF2P8MULB multiplies modulo the AES polynomial 0x11B, not collplan's (and
// ISA-L's) 0x11D, so it cannot be used. But multiplication by a constant c is
// GF(2)-linear in the bits of x under any polynomial, so it is one 8x8 bit
// matrix M_c, and GF2P8AFFINEQB applies exactly such a matrix to every byte.
// One instruction per 32 or 64 bytes, no table lookups.
//
// GF(2^16): multiplication by c is a 16x16 bit matrix, four 8x8 blocks.
// With the low and high bytes of the elements gathered into separate
// vectors, out_lo = M_ll·lo ⊕ M_lh·hi and out_hi = M_hl·lo ⊕ M_hh·hi: four
// affine instructions per 2 vectors of elements. The gather is one PSHUFB
// per input vector (low bytes to the low half of each 128-bit lane, high
// bytes to the high half) and PUNPCK{L,H}QDQ across the two inputs -- four
// shuffles, where masking and shifting for PACKUSWB took six; it lands in
// PACKUSWB's per-lane layout, so PUNPCK{L,H}BW undoes it, once per output
// block, not once per source (the dots keep their sums in the packed
// domain). VPERMT2B (AVX-512VBMI) as the gather was slower on an AMD Zen 4
// core (bench_gf, 0.73 of XOR at 1 MiB against 0.78 for PACKUSWB).
//
// Every function carries its target attribute: a translation unit compiled
// for plain x86-64 holds them and calls them only when the CPU has the
// instructions (collplan_gf.h: x86_level()). The AVX-512 kernels finish
// with masked loads and stores; the AVX2 ones with the scalar matrix product
// (affine_byte, affine_elem16) on the last partial vector.
#pragma once

#include <immintrin.h>

#include "collplan_gf_base.h"

#define COLLPLAN_GF_GFNI __attribute__((target("gfni,avx2")))
#define COLLPLAN_GF_GFNI512 __attribute__((target("gfni,avx512f,avx512bw")))
#define COLLPLAN_GF_GFNI_OP __attribute__((target("gfni,avx2"), always_inline)) inline
#define COLLPLAN_GF_GFNI512_OP __attribute__((target("gfni,avx512f,avx512bw"), always_inline)) inline

namespace collplan_gf {

namespace gfni_detail {

// Clang (seen with 14) folds a broadcast matrix operand of GF2P8AFFINEQB into
// a memory operand with a wrongly scaled 8-bit displacement, so the
// instruction reads the wrong matrix; a matrix kept in a register avoids
// that form. GCC needs nothing.
inline uint64_t opaque(uint64_t a) {
#if defined(__clang__)
  __asm__("" : "+r"(a));
#endif
  return a;
}

// The first `bytes` (< 64 allowed, 0 included) bytes of a 64-byte vector.
COLLPLAN_GF_GFNI512_OP __mmask64 mask_first(size_t bytes) {
  return bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
}

COLLPLAN_GF_GFNI_OP __m256i ld256(const unsigned char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
COLLPLAN_GF_GFNI_OP void st256(unsigned char* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
COLLPLAN_GF_GFNI_OP __m256i aff256(__m256i x, uint64_t a) {
  return _mm256_gf2p8affine_epi64_epi8(x, _mm256_set1_epi64x(static_cast<long long>(opaque(a))), 0);
}
COLLPLAN_GF_GFNI512_OP __m512i aff512(__m512i x, uint64_t a) {
  return _mm512_gf2p8affine_epi64_epi8(x, _mm512_set1_epi64(static_cast<long long>(opaque(a))), 0);
}

// The four blocks of a GF(2^16) constant, each broadcast to every 64-bit lane.
struct Mat16x512 {
  __m512i ll, lh, hl, hh;
};
struct Mat16x256 {
  __m256i ll, lh, hl, hh;
};
COLLPLAN_GF_GFNI512_OP Mat16x512 mat16_512(const uint64_t* a) {
  return {_mm512_set1_epi64(static_cast<long long>(opaque(a[0]))), _mm512_set1_epi64(static_cast<long long>(opaque(a[1]))),
          _mm512_set1_epi64(static_cast<long long>(opaque(a[2]))), _mm512_set1_epi64(static_cast<long long>(opaque(a[3])))};
}
COLLPLAN_GF_GFNI_OP Mat16x256 mat16_256(const uint64_t* a) {
  return {_mm256_set1_epi64x(static_cast<long long>(opaque(a[0]))), _mm256_set1_epi64x(static_cast<long long>(opaque(a[1]))),
          _mm256_set1_epi64x(static_cast<long long>(opaque(a[2]))), _mm256_set1_epi64x(static_cast<long long>(opaque(a[3])))};
}

// The low and high bytes of the elements in (a, b), packed per 128-bit lane:
// lane L of lo = low bytes of a's lane L, then of b's lane L (as PACKUSWB
// would pack them).
COLLPLAN_GF_GFNI512_OP void split16(__m512i a, __m512i b, __m512i& lo, __m512i& hi) {
  // Per 128-bit lane: bytes 0, 2, .., 14, then 1, 3, .., 15. GCC 12 warns of
  // an uninitialized operand inside _mm512_broadcast_i32x4 and the unmasked
  // 64-bit unpacks (their pass-through is _mm512_undefined_epi32()), hence
  // 64-bit words and all-ones zero masks, which compile to the same
  // instructions.
  const __m512i idx = _mm512_set4_epi64(0x0F0D0B0907050301LL, 0x0E0C0A0806040200LL, 0x0F0D0B0907050301LL,
                                        0x0E0C0A0806040200LL);
  const __m512i as = _mm512_shuffle_epi8(a, idx), bs = _mm512_shuffle_epi8(b, idx);
  lo = _mm512_maskz_unpacklo_epi64(0xFF, as, bs);
  hi = _mm512_maskz_unpackhi_epi64(0xFF, as, bs);
}
COLLPLAN_GF_GFNI_OP void split16(__m256i a, __m256i b, __m256i& lo, __m256i& hi) {
  const __m256i idx = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12, 14, 1,
                                       3, 5, 7, 9, 11, 13, 15);
  const __m256i as = _mm256_shuffle_epi8(a, idx), bs = _mm256_shuffle_epi8(b, idx);
  lo = _mm256_unpacklo_epi64(as, bs);
  hi = _mm256_unpackhi_epi64(as, bs);
}

// c·(lo, hi) in the packed domain.
COLLPLAN_GF_GFNI512_OP void mul16(const Mat16x512& M, __m512i lo, __m512i hi, __m512i& rlo, __m512i& rhi) {
  rlo = _mm512_xor_si512(_mm512_gf2p8affine_epi64_epi8(lo, M.ll, 0), _mm512_gf2p8affine_epi64_epi8(hi, M.lh, 0));
  rhi = _mm512_xor_si512(_mm512_gf2p8affine_epi64_epi8(lo, M.hl, 0), _mm512_gf2p8affine_epi64_epi8(hi, M.hh, 0));
}
COLLPLAN_GF_GFNI_OP void mul16(const Mat16x256& M, __m256i lo, __m256i hi, __m256i& rlo, __m256i& rhi) {
  rlo = _mm256_xor_si256(_mm256_gf2p8affine_epi64_epi8(lo, M.ll, 0), _mm256_gf2p8affine_epi64_epi8(hi, M.lh, 0));
  rhi = _mm256_xor_si256(_mm256_gf2p8affine_epi64_epi8(lo, M.hl, 0), _mm256_gf2p8affine_epi64_epi8(hi, M.hh, 0));
}

// c·(elements in a, b), back in memory order.
COLLPLAN_GF_GFNI512_OP void mul16x64(const Mat16x512& M, __m512i a, __m512i b, __m512i& ra, __m512i& rb) {
  __m512i lo, hi, rlo, rhi;
  split16(a, b, lo, hi);
  mul16(M, lo, hi, rlo, rhi);
  ra = _mm512_unpacklo_epi8(rlo, rhi);
  rb = _mm512_unpackhi_epi8(rlo, rhi);
}
COLLPLAN_GF_GFNI_OP void mul16x32(const Mat16x256& M, __m256i a, __m256i b, __m256i& ra, __m256i& rb) {
  __m256i lo, hi, rlo, rhi;
  split16(a, b, lo, hi);
  mul16(M, lo, hi, rlo, rhi);
  ra = _mm256_unpacklo_epi8(rlo, rhi);
  rb = _mm256_unpackhi_epi8(rlo, rhi);
}

// mad16_gfni512 runs 512-bit vectors on regions up to this many bytes,
// 256-bit ones on larger regions (see there).
constexpr size_t kWideLoopBytes = 8192;

}  // namespace gfni_detail

// ─── GF(2^8) ────────────────────────────────────────────────────────────────
// a = gfni8(c).

COLLPLAN_GF_GFNI512 inline void mad8_gfni512(uint64_t a, const void* src, void* dst, size_t n) {
  using namespace gfni_detail;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m512i r0 = _mm512_xor_si512(_mm512_loadu_si512(d + i), aff512(_mm512_loadu_si512(s + i), a));
    const __m512i r1 = _mm512_xor_si512(_mm512_loadu_si512(d + i + 64), aff512(_mm512_loadu_si512(s + i + 64), a));
    _mm512_storeu_si512(d + i, r0);
    _mm512_storeu_si512(d + i + 64, r1);
  }
  for (; i < n; i += 64) {
    const __mmask64 k = mask_first(n - i);
    const __m512i x = _mm512_maskz_loadu_epi8(k, s + i);
    const __m512i y = _mm512_maskz_loadu_epi8(k, d + i);
    _mm512_mask_storeu_epi8(d + i, k, _mm512_xor_si512(y, aff512(x, a)));
  }
}

// src == dst allowed: each block is loaded before it is stored.
COLLPLAN_GF_GFNI512 inline void mul8_gfni512(uint64_t a, const void* src, void* dst, size_t n) {
  using namespace gfni_detail;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n; i += 64) {
    const __mmask64 k = mask_first(n - i);
    _mm512_mask_storeu_epi8(d + i, k, aff512(_mm512_maskz_loadu_epi8(k, s + i), a));
  }
}

// co(j, s): the matrix (uint64_t). Each 64-byte block of an output is summed
// in a register over all k sources and stored once.
template <class Co>
COLLPLAN_GF_GFNI512 void dot8_gfni512(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst,
                                      size_t n, bool accumulate) {
  using namespace gfni_detail;
  for (size_t i = 0; i < n; i += 64) {
    const __mmask64 mask = mask_first(n - i);
    for (size_t j = 0; j < m; ++j) {
      auto* d = static_cast<unsigned char*>(dst[j]) + i;
      __m512i acc = accumulate ? _mm512_maskz_loadu_epi8(mask, d) : _mm512_setzero_si512();
      for (size_t s = 0; s < k; ++s)
        acc = _mm512_xor_si512(acc, aff512(_mm512_maskz_loadu_epi8(mask, static_cast<const unsigned char*>(src[s]) + i),
                                           co(j, s)));
      _mm512_mask_storeu_epi8(d, mask, acc);
    }
  }
}

COLLPLAN_GF_GFNI inline void mad8_gfni(uint64_t a, const void* src, void* dst, size_t n) {
  using namespace gfni_detail;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256i r[4];
    for (size_t u = 0; u < 4; ++u) r[u] = _mm256_xor_si256(ld256(d + i + 32 * u), aff256(ld256(s + i + 32 * u), a));
    for (size_t u = 0; u < 4; ++u) st256(d + i + 32 * u, r[u]);
  }
  for (; i + 32 <= n; i += 32) st256(d + i, _mm256_xor_si256(ld256(d + i), aff256(ld256(s + i), a)));
  for (; i < n; ++i) d[i] = static_cast<unsigned char>(d[i] ^ affine_byte(a, s[i]));
}

// src == dst allowed.
COLLPLAN_GF_GFNI inline void mul8_gfni(uint64_t a, const void* src, void* dst, size_t n) {
  using namespace gfni_detail;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) st256(d + i, aff256(ld256(s + i), a));
  for (; i < n; ++i) d[i] = affine_byte(a, s[i]);
}

// As dot8_gfni512, two 32-byte blocks per pass (two independent XOR chains).
template <class Co>
COLLPLAN_GF_GFNI void dot8_gfni(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst, size_t n,
                                bool accumulate) {
  using namespace gfni_detail;
  size_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (size_t j = 0; j < m; ++j) {
      auto* d = static_cast<unsigned char*>(dst[j]) + i;
      __m256i a0 = accumulate ? ld256(d) : _mm256_setzero_si256();
      __m256i a1 = accumulate ? ld256(d + 32) : _mm256_setzero_si256();
      for (size_t s = 0; s < k; ++s) {
        const auto* p = static_cast<const unsigned char*>(src[s]) + i;
        const uint64_t a = co(j, s);
        a0 = _mm256_xor_si256(a0, aff256(ld256(p), a));
        a1 = _mm256_xor_si256(a1, aff256(ld256(p + 32), a));
      }
      st256(d, a0);
      st256(d + 32, a1);
    }
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) {
      auto* d = static_cast<unsigned char*>(dst[j]) + i;
      __m256i a0 = accumulate ? ld256(d) : _mm256_setzero_si256();
      for (size_t s = 0; s < k; ++s) a0 = _mm256_xor_si256(a0, aff256(ld256(static_cast<const unsigned char*>(src[s]) + i), co(j, s)));
      st256(d, a0);
    }
  dot_elems<uint8_t>(k, m, [&co](size_t j, size_t s, uint32_t x) { return affine_byte(co(j, s), static_cast<uint8_t>(x)); },
                     XorOp{}, src, dst, i, n, accumulate);
}

// ─── GF(2^16) ───────────────────────────────────────────────────────────────
// a = gfni16(c): four matrices.

COLLPLAN_GF_GFNI512 inline void mad16_gfni512(const uint64_t* a, const void* src, void* dst, size_t n) {
  using namespace gfni_detail;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const Mat16x512 M = mat16_512(a);
  const Mat16x256 M2 = mat16_256(a);
  const size_t nb = 2 * n;
  size_t i = 0;
  // On an AMD Zen 4 core the 512-bit loop was the faster one in L1 (1 KiB:
  // 56 against 49 GB/s) but the slower one from L2 on (1 MiB: 0.76-0.81 of
  // XOR against 0.97-0.98 for the 256-bit loop, bench_gf). Regions up to
  // kWideLoopBytes (source and destination together within half of a 32 KiB
  // L1) take the 512-bit loop; the threshold itself is not measured.
  if (nb <= kWideLoopBytes) {
    for (; i + 128 <= nb; i += 128) {
      __m512i ra, rb;
      mul16x64(M, _mm512_loadu_si512(s + i), _mm512_loadu_si512(s + i + 64), ra, rb);
      _mm512_storeu_si512(d + i, _mm512_xor_si512(_mm512_loadu_si512(d + i), ra));
      _mm512_storeu_si512(d + i + 64, _mm512_xor_si512(_mm512_loadu_si512(d + i + 64), rb));
    }
  } else {
    for (; i + 64 <= nb; i += 64) {
      __m256i ra, rb;
      mul16x32(M2, ld256(s + i), ld256(s + i + 32), ra, rb);
      st256(d + i, _mm256_xor_si256(ld256(d + i), ra));
      st256(d + i + 32, _mm256_xor_si256(ld256(d + i + 32), rb));
    }
  }
  if (i < nb) {
    // Zero-filled lanes multiply to zero and are not stored.
    const __mmask64 k0 = mask_first(nb - i), k1 = nb - i > 64 ? mask_first(nb - i - 64) : 0;
    __m512i ra, rb;
    mul16x64(M, _mm512_maskz_loadu_epi8(k0, s + i), _mm512_maskz_loadu_epi8(k1, s + i + 64), ra, rb);
    _mm512_mask_storeu_epi8(d + i, k0, _mm512_xor_si512(_mm512_maskz_loadu_epi8(k0, d + i), ra));
    _mm512_mask_storeu_epi8(d + i + 64, k1, _mm512_xor_si512(_mm512_maskz_loadu_epi8(k1, d + i + 64), rb));
  }
}

// src == dst allowed: both halves of a block are loaded before either is stored.
COLLPLAN_GF_GFNI512 inline void mul16_gfni512(const uint64_t* a, const void* src, void* dst, size_t n) {
  using namespace gfni_detail;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const Mat16x512 M = mat16_512(a);
  const size_t nb = 2 * n;
  for (size_t i = 0; i < nb; i += 128) {
    const __mmask64 k0 = mask_first(nb - i), k1 = nb - i > 64 ? mask_first(nb - i - 64) : 0;
    __m512i ra, rb;
    mul16x64(M, _mm512_maskz_loadu_epi8(k0, s + i), _mm512_maskz_loadu_epi8(k1, s + i + 64), ra, rb);
    _mm512_mask_storeu_epi8(d + i, k0, ra);
    _mm512_mask_storeu_epi8(d + i + 64, k1, rb);
  }
}

// co(j, s): the four matrices (const uint64_t*). Each block of an output (64
// elements) is summed in registers over all k sources, in the de-interleaved
// (low/high byte) domain, and re-interleaved and stored once.
template <class Co>
COLLPLAN_GF_GFNI512 void dot16_gfni512(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst,
                                       size_t n, bool accumulate) {
  using namespace gfni_detail;
  const size_t nb = 2 * n;
  for (size_t i = 0; i < nb; i += 128) {
    const __mmask64 k0 = mask_first(nb - i), k1 = nb - i > 64 ? mask_first(nb - i - 64) : 0;
    for (size_t j = 0; j < m; ++j) {
      auto* d = static_cast<unsigned char*>(dst[j]) + i;
      __m512i alo = _mm512_setzero_si512(), ahi = _mm512_setzero_si512();
      if (accumulate) split16(_mm512_maskz_loadu_epi8(k0, d), _mm512_maskz_loadu_epi8(k1, d + 64), alo, ahi);
      for (size_t s = 0; s < k; ++s) {
        const auto* p = static_cast<const unsigned char*>(src[s]) + i;
        __m512i lo, hi, rlo, rhi;
        split16(_mm512_maskz_loadu_epi8(k0, p), _mm512_maskz_loadu_epi8(k1, p + 64), lo, hi);
        mul16(mat16_512(co(j, s)), lo, hi, rlo, rhi);
        alo = _mm512_xor_si512(alo, rlo);
        ahi = _mm512_xor_si512(ahi, rhi);
      }
      _mm512_mask_storeu_epi8(d, k0, _mm512_unpacklo_epi8(alo, ahi));
      _mm512_mask_storeu_epi8(d + 64, k1, _mm512_unpackhi_epi8(alo, ahi));
    }
  }
}

// dst ^= c·src (kMad), dst = c·src (src == dst allowed: both halves of a
// block are loaded before either is stored).
template <bool kMad>
COLLPLAN_GF_GFNI void region16_gfni(const uint64_t* a, const void* src, void* dst, size_t n) {
  using namespace gfni_detail;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const Mat16x256 M = mat16_256(a);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i ra, rb;
    mul16x32(M, ld256(s + 2 * i), ld256(s + 2 * i + 32), ra, rb);
    if (kMad) {
      ra = _mm256_xor_si256(ld256(d + 2 * i), ra);
      rb = _mm256_xor_si256(ld256(d + 2 * i + 32), rb);
    }
    st256(d + 2 * i, ra);
    st256(d + 2 * i + 32, rb);
  }
  for (; i < n; ++i) {
    const uint16_t r = affine_elem16(a, load_at<uint16_t>(s, i));
    store_at<uint16_t>(d, i, kMad ? static_cast<uint16_t>(load_at<uint16_t>(d, i) ^ r) : r);
  }
}
inline void mad16_gfni(const uint64_t* a, const void* src, void* dst, size_t n) { region16_gfni<true>(a, src, dst, n); }
inline void mul16_gfni(const uint64_t* a, const void* src, void* dst, size_t n) { region16_gfni<false>(a, src, dst, n); }

// As dot16_gfni512 on 32-element blocks; the last < 32 elements one by one.
template <class Co>
COLLPLAN_GF_GFNI void dot16_gfni(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst, size_t n,
                                 bool accumulate) {
  using namespace gfni_detail;
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) {
      auto* d = static_cast<unsigned char*>(dst[j]) + 2 * i;
      __m256i alo = _mm256_setzero_si256(), ahi = _mm256_setzero_si256();
      if (accumulate) split16(ld256(d), ld256(d + 32), alo, ahi);
      for (size_t s = 0; s < k; ++s) {
        const auto* p = static_cast<const unsigned char*>(src[s]) + 2 * i;
        __m256i lo, hi, rlo, rhi;
        split16(ld256(p), ld256(p + 32), lo, hi);
        mul16(mat16_256(co(j, s)), lo, hi, rlo, rhi);
        alo = _mm256_xor_si256(alo, rlo);
        ahi = _mm256_xor_si256(ahi, rhi);
      }
      st256(d, _mm256_unpacklo_epi8(alo, ahi));
      st256(d + 32, _mm256_unpackhi_epi8(alo, ahi));
    }
  dot_elems<uint16_t>(k, m,
                      [&co](size_t j, size_t s, uint32_t x) { return affine_elem16(co(j, s), static_cast<uint16_t>(x)); },
                      XorOp{}, src, dst, i, n, accumulate);
}

}  // namespace collplan_gf
