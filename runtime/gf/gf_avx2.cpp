// AVX2 region kernels for GF(2^16), prime fields and XOR. Compiled for the
// baseline ISA with per-function target attributes, so the library runs on
// any x86-64; the dispatcher (gf_kernels.cpp) calls these only when the CPU
// reports AVX2. All loads and stores are unaligned.
#include <immintrin.h>

#include <cstring>

#include "runtime/gf/gf_detail.h"

#define COLLPLAN_AVX2 __attribute__((target("avx2")))
#define COLLPLAN_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

namespace collplan::gf::detail {

namespace {

inline const unsigned char* cbytes(const void* p, size_t off) { return static_cast<const unsigned char*>(p) + off; }
inline unsigned char* bytes(void* p, size_t off) { return static_cast<unsigned char*>(p) + off; }

COLLPLAN_AVX2_INLINE __m256i loadu(const unsigned char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
COLLPLAN_AVX2_INLINE void storeu(unsigned char* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// GF(2^16): the eight 16-byte split tables, each broadcast to both lanes.
COLLPLAN_AVX2_INLINE void load_split(const MadTable& t, __m256i* T) {
  for (int j = 0; j < 8; ++j)
    T[j] = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.split[j])));
}

// c * (32 elements in a, b). The low and high bytes of all 32 elements are
// gathered with PACKUSWB (which interleaves a and b per 128-bit lane), looked
// up nibble by nibble, and re-interleaved with PUNPCK{L,H}BW, which undoes
// exactly that per-lane interleave -- so no cross-lane permutes are needed.
COLLPLAN_AVX2_INLINE void mul16x32(const __m256i* T, __m256i a, __m256i b, __m256i& ra, __m256i& rb) {
  const __m256i m8 = _mm256_set1_epi16(0x00FF);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_packus_epi16(_mm256_and_si256(a, m8), _mm256_and_si256(b, m8));
  const __m256i hi = _mm256_packus_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
  const __m256i n0 = _mm256_and_si256(lo, m4);
  const __m256i n1 = _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4);
  const __m256i n2 = _mm256_and_si256(hi, m4);
  const __m256i n3 = _mm256_and_si256(_mm256_srli_epi16(hi, 4), m4);
  const __m256i rlo = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi8(T[0], n0), _mm256_shuffle_epi8(T[2], n1)),
                                       _mm256_xor_si256(_mm256_shuffle_epi8(T[4], n2), _mm256_shuffle_epi8(T[6], n3)));
  const __m256i rhi = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi8(T[1], n0), _mm256_shuffle_epi8(T[3], n1)),
                                       _mm256_xor_si256(_mm256_shuffle_epi8(T[5], n2), _mm256_shuffle_epi8(T[7], n3)));
  ra = _mm256_unpacklo_epi8(rlo, rhi);
  rb = _mm256_unpackhi_epi8(rlo, rhi);
}

// Prime field, 8 lanes of Shoup's multiply: qhat = hi32(c' * x) per lane
// (even and odd lanes through two PMULUDQ), r = c*x - qhat*q (mod 2^32) in
// [0, 2q), then min(r, r - q) subtracts q when r >= q (if r < q, r - q wraps
// above 2^31 > r).
COLLPLAN_AVX2_INLINE __m256i shoup8(__m256i x, __m256i cv, __m256i cpv, __m256i qv) {
  const __m256i pe = _mm256_mul_epu32(x, cpv);
  const __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), cpv);
  const __m256i qh = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
  const __m256i r = _mm256_sub_epi32(_mm256_mullo_epi32(x, cv), _mm256_mullo_epi32(qh, qv));
  return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
}

COLLPLAN_AVX2_INLINE __m256i addmod8(__m256i a, __m256i b, __m256i qv) {
  const __m256i s = _mm256_add_epi32(a, b);
  return _mm256_min_epu32(s, _mm256_sub_epi32(s, qv));
}

}  // namespace

COLLPLAN_AVX2 void mad16_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  __m256i T[8];
  load_split(t, T);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i ra, rb;
    mul16x32(T, loadu(cbytes(src, 2 * i)), loadu(cbytes(src, 2 * i + 32)), ra, rb);
    storeu(bytes(dst, 2 * i), _mm256_xor_si256(loadu(cbytes(dst, 2 * i)), ra));
    storeu(bytes(dst, 2 * i + 32), _mm256_xor_si256(loadu(cbytes(dst, 2 * i + 32)), rb));
  }
  if (i < n) mad16_scalar(f, t, cbytes(src, 2 * i), bytes(dst, 2 * i), n - i);
}

COLLPLAN_AVX2 void mul16_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  __m256i T[8];
  load_split(t, T);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    // Both halves are loaded before either is stored: src == dst is safe.
    __m256i ra, rb;
    mul16x32(T, loadu(cbytes(src, 2 * i)), loadu(cbytes(src, 2 * i + 32)), ra, rb);
    storeu(bytes(dst, 2 * i), ra);
    storeu(bytes(dst, 2 * i + 32), rb);
  }
  if (i < n) mul16_scalar(f, t, cbytes(src, 2 * i), bytes(dst, 2 * i), n - i);
}

COLLPLAN_AVX2 void madp_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  const __m256i qv = _mm256_set1_epi32(static_cast<int>(f.size()));
  const __m256i cv = _mm256_set1_epi32(static_cast<int>(t.c));
  const __m256i cpv = _mm256_set1_epi64x(static_cast<long long>(t.shoup));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i r = shoup8(loadu(cbytes(src, 4 * i)), cv, cpv, qv);
    storeu(bytes(dst, 4 * i), addmod8(r, loadu(cbytes(dst, 4 * i)), qv));
  }
  if (i < n) madp_scalar(f, t, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}

COLLPLAN_AVX2 void mulp_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  const __m256i qv = _mm256_set1_epi32(static_cast<int>(f.size()));
  const __m256i cv = _mm256_set1_epi32(static_cast<int>(t.c));
  const __m256i cpv = _mm256_set1_epi64x(static_cast<long long>(t.shoup));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) storeu(bytes(dst, 4 * i), shoup8(loadu(cbytes(src, 4 * i)), cv, cpv, qv));
  if (i < n) mulp_scalar(f, t, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}

COLLPLAN_AVX2 void xor_avx2(const Field& f, const void* src, void* dst, size_t n) {
  const size_t nbytes = n * f.elem_bytes();
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + 128 <= nbytes; i += 128) {
    const __m256i a0 = _mm256_xor_si256(loadu(d + i), loadu(s + i));
    const __m256i a1 = _mm256_xor_si256(loadu(d + i + 32), loadu(s + i + 32));
    const __m256i a2 = _mm256_xor_si256(loadu(d + i + 64), loadu(s + i + 64));
    const __m256i a3 = _mm256_xor_si256(loadu(d + i + 96), loadu(s + i + 96));
    storeu(d + i, a0);
    storeu(d + i + 32, a1);
    storeu(d + i + 64, a2);
    storeu(d + i + 96, a3);
  }
  for (; i + 32 <= nbytes; i += 32) storeu(d + i, _mm256_xor_si256(loadu(d + i), loadu(s + i)));
  for (; i < nbytes; ++i) d[i] ^= s[i];
}

COLLPLAN_AVX2 void addp_avx2(const Field& f, const void* src, void* dst, size_t n) {
  const __m256i qv = _mm256_set1_epi32(static_cast<int>(f.size()));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) storeu(bytes(dst, 4 * i), addmod8(loadu(cbytes(src, 4 * i)), loadu(cbytes(dst, 4 * i)), qv));
  if (i < n) addp_scalar(f, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}

}  // namespace collplan::gf::detail
