// GF(2^8) multiply(-accumulate) with GFNI's affine instruction.
//
// GF2P8MULB multiplies modulo the AES polynomial 0x11B, not collplan's (and
// ISA-L's) 0x11D, so it cannot be used. But multiplication by a constant c is
// GF(2)-linear in the bits of x under any polynomial, so it is one 8x8 bit
// matrix M_c, and GF2P8AFFINEQB applies exactly such a matrix to every byte:
// result bit i = parity(A.byte[7−i] & x). Row i of M_c (A's byte 7−i) holds
// bit i of c·x^j in bit j. One instruction per 32 (AVX2) or 64 (AVX-512)
// bytes, no table lookups. Compiled with per-function target attributes;
// called only when the CPU reports GFNI and AVX2 (cpu_has_gfni()), or GFNI
// and AVX-512BW (cpu_has_gfni512(); its tails use masked loads and stores).
#include <immintrin.h>

#include "runtime/gf/gf_detail.h"

#define COLLPLAN_GFNI __attribute__((target("gfni,avx2")))
#define COLLPLAN_GFNI512 __attribute__((target("gfni,avx512f,avx512bw")))

namespace collplan::gf::detail {

namespace {

// Clang (seen with 14) folds a broadcast matrix operand of GF2P8AFFINEQB
// into a memory operand with a wrongly scaled 8-bit displacement, so the
// instruction reads the wrong matrix; a matrix kept in a register avoids
// that form. GCC needs nothing.
inline uint64_t opaque(uint64_t a) {
#if defined(__clang__)
  __asm__("" : "+r"(a));
#endif
  return a;
}

inline uint8_t mul8_tbl(const unsigned char* tbl, uint8_t x) {
  return static_cast<uint8_t>(tbl[x & 15] ^ tbl[16 + (x >> 4)]);
}

}  // namespace

uint64_t gfni_matrix(uint8_t c, uint32_t poly) {
  uint8_t col[8];  // c·x^j
  uint32_t p = c;
  for (int j = 0; j < 8; ++j) {
    col[j] = static_cast<uint8_t>(p);
    p <<= 1;
    if (p & 0x100) p ^= poly;
  }
  uint64_t a = 0;
  for (int i = 0; i < 8; ++i) {
    uint64_t row = 0;
    for (int j = 0; j < 8; ++j) row |= static_cast<uint64_t>((col[j] >> i) & 1) << j;
    a |= row << (8 * (7 - i));
  }
  return a;
}

bool cpu_has_gfni() {
  static const bool has = __builtin_cpu_supports("gfni") && __builtin_cpu_supports("avx2");
  return has;
}

bool cpu_has_gfni512() {
  static const bool has = __builtin_cpu_supports("gfni") && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw");
  return has;
}

COLLPLAN_GFNI512 void mad8_gfni512(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const __m512i A = _mm512_set1_epi64(static_cast<long long>(opaque(t.gfni)));
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m512i r0 = _mm512_xor_si512(_mm512_loadu_si512(d + i), _mm512_gf2p8affine_epi64_epi8(_mm512_loadu_si512(s + i), A, 0));
    const __m512i r1 =
        _mm512_xor_si512(_mm512_loadu_si512(d + i + 64), _mm512_gf2p8affine_epi64_epi8(_mm512_loadu_si512(s + i + 64), A, 0));
    _mm512_storeu_si512(d + i, r0);
    _mm512_storeu_si512(d + i + 64, r1);
  }
  for (; i < n; i += 64) {
    const __mmask64 k = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    const __m512i x = _mm512_maskz_loadu_epi8(k, s + i);
    const __m512i y = _mm512_maskz_loadu_epi8(k, d + i);
    _mm512_mask_storeu_epi8(d + i, k, _mm512_xor_si512(y, _mm512_gf2p8affine_epi64_epi8(x, A, 0)));
  }
}

COLLPLAN_GFNI512 void mul8_gfni512(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const __m512i A = _mm512_set1_epi64(static_cast<long long>(opaque(t.gfni)));
  // Each block is loaded before it is stored: src == dst is safe.
  for (size_t i = 0; i < n; i += 64) {
    const __mmask64 k = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    _mm512_mask_storeu_epi8(d + i, k, _mm512_gf2p8affine_epi64_epi8(_mm512_maskz_loadu_epi8(k, s + i), A, 0));
  }
}

COLLPLAN_GFNI512 void dot8_gfni512(size_t k, size_t m, const uint64_t* mats, const void* const* src, void* const* dst,
                                   size_t n) {
  for (size_t i = 0; i < n; i += 64) {
    const __mmask64 mask = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    for (size_t j = 0; j < m; ++j) {
      __m512i acc = _mm512_setzero_si512();
      for (size_t s = 0; s < k; ++s) {
        const __m512i x = _mm512_maskz_loadu_epi8(mask, static_cast<const unsigned char*>(src[s]) + i);
        acc = _mm512_xor_si512(acc, _mm512_gf2p8affine_epi64_epi8(
                                        x, _mm512_set1_epi64(static_cast<long long>(opaque(mats[j * k + s]))), 0));
      }
      _mm512_mask_storeu_epi8(static_cast<unsigned char*>(dst[j]) + i, mask, acc);
    }
  }
}

COLLPLAN_GFNI void mad8_gfni(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const __m256i A = _mm256_set1_epi64x(static_cast<long long>(opaque(t.gfni)));
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256i r[4];
    for (int u = 0; u < 4; ++u)
      r[u] = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + i + 32 * u)),
          _mm256_gf2p8affine_epi64_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32 * u)), A, 0));
    for (int u = 0; u < 4; ++u) _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 32 * u), r[u]);
  }
  for (; i + 32 <= n; i += 32) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_xor_si256(y, _mm256_gf2p8affine_epi64_epi8(x, A, 0)));
  }
  for (; i < n; ++i) d[i] ^= mul8_tbl(t.mul_tbl, s[i]);
}

COLLPLAN_GFNI void mul8_gfni(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const __m256i A = _mm256_set1_epi64x(static_cast<long long>(opaque(t.gfni)));
  size_t i = 0;
  // Each block is loaded before it is stored: src == dst is safe.
  for (; i + 32 <= n; i += 32) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_gf2p8affine_epi64_epi8(x, A, 0));
  }
  for (; i < n; ++i) d[i] = mul8_tbl(t.mul_tbl, s[i]);
}

}  // namespace collplan::gf::detail
