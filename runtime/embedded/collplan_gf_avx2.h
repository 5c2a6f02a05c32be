// collplan_gf_avx2.h — x86 AVX2 kernels (`_avx2`): XOR, GF(2^8) and GF(2^16)
// by split tables (VPSHUFB), prime fields by Shoup's multiply and delayed
// reduction, GF(65537) through 2^16 ≡ −1. Part of the GF kernel library
// (collplan_gf_base.h has the conventions). Every function carries
// target("avx2"): callable from a plain x86-64 translation unit once the CPU
// is known to have AVX2 (collplan_gf.h). All loads and stores are unaligned;
// the last partial vector goes through the scalar forms, element by element
// in the dots (every source of an element read before it is stored).
#pragma once

#include <immintrin.h>

#include "collplan_gf_base.h"

#define COLLPLAN_GF_AVX2 __attribute__((target("avx2")))
#define COLLPLAN_GF_AVX2_OP __attribute__((target("avx2"), always_inline)) inline
// The tiles' per-vector loops must be unrolled for their accumulators to
// stay in registers; -O2 alone keeps them in a stack array.
#define COLLPLAN_GF_UNROLL _Pragma("GCC unroll 8")

namespace collplan_gf {

namespace avx2_detail {

inline const unsigned char* cbytes(const void* p, size_t off) { return static_cast<const unsigned char*>(p) + off; }
inline unsigned char* bytes(void* p, size_t off) { return static_cast<unsigned char*>(p) + off; }

COLLPLAN_GF_AVX2_OP __m256i loadu(const unsigned char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
COLLPLAN_GF_AVX2_OP void storeu(unsigned char* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
// A 16-entry table in both 128-bit lanes.
COLLPLAN_GF_AVX2_OP __m256i tbl(const uint8_t* t) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}

// c·x for 32 bytes of GF(2^8) from the two nibble tables.
COLLPLAN_GF_AVX2_OP __m256i mul8x32(__m256i t0, __m256i t1, __m256i x) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  return _mm256_xor_si256(_mm256_shuffle_epi8(t0, _mm256_and_si256(x, m4)),
                          _mm256_shuffle_epi8(t1, _mm256_and_si256(_mm256_srli_epi16(x, 4), m4)));
}

// GF(2^16), in the packed domain: the low and high bytes of 32 elements (a,
// b) gathered by PACKUSWB (which interleaves a and b per 128-bit lane);
// PUNPCK{L,H}BW undoes exactly that interleave, so no cross-lane permutes.
COLLPLAN_GF_AVX2_OP void pack16(__m256i a, __m256i b, __m256i& lo, __m256i& hi) {
  const __m256i m8 = _mm256_set1_epi16(0x00FF);
  lo = _mm256_packus_epi16(_mm256_and_si256(a, m8), _mm256_and_si256(b, m8));
  hi = _mm256_packus_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
}
// c·(lo, hi) looked up nibble by nibble in the eight tables T.
COLLPLAN_GF_AVX2_OP void mul16_packed(const __m256i* T, __m256i lo, __m256i hi, __m256i& rlo, __m256i& rhi) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i n0 = _mm256_and_si256(lo, m4);
  const __m256i n1 = _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4);
  const __m256i n2 = _mm256_and_si256(hi, m4);
  const __m256i n3 = _mm256_and_si256(_mm256_srli_epi16(hi, 4), m4);
  rlo = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi8(T[0], n0), _mm256_shuffle_epi8(T[2], n1)),
                         _mm256_xor_si256(_mm256_shuffle_epi8(T[4], n2), _mm256_shuffle_epi8(T[6], n3)));
  rhi = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi8(T[1], n0), _mm256_shuffle_epi8(T[3], n1)),
                         _mm256_xor_si256(_mm256_shuffle_epi8(T[5], n2), _mm256_shuffle_epi8(T[7], n3)));
}
COLLPLAN_GF_AVX2_OP void load_split16(const uint8_t (*split)[16], __m256i* T) {
  for (int j = 0; j < 8; ++j) T[j] = tbl(split[j]);
}

// Prime field, 8 lanes of Shoup's multiply: qhat = hi32(c'·x) per lane (even
// and odd lanes through two PMULUDQ), r = c·x − qhat·q (mod 2^32) in [0, 2q),
// then min(r, r − q) subtracts q when r >= q (if r < q, r − q wraps above
// 2^31 > r).
COLLPLAN_GF_AVX2_OP __m256i shoup8(__m256i x, __m256i cv, __m256i cpv, __m256i qv) {
  const __m256i pe = _mm256_mul_epu32(x, cpv);
  const __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), cpv);
  const __m256i qh = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
  const __m256i r = _mm256_sub_epi32(_mm256_mullo_epi32(x, cv), _mm256_mullo_epi32(qh, qv));
  return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
}
COLLPLAN_GF_AVX2_OP __m256i addmod8(__m256i a, __m256i b, __m256i qv) {
  const __m256i s = _mm256_add_epi32(a, b);
  return _mm256_min_epu32(s, _mm256_sub_epi32(s, qv));
}

// Any 32-bit lane value mod 65537: lo − hi + q in [2, 2^17], then one
// conditional subtraction.
COLLPLAN_GF_AVX2_OP __m256i reduce65537(__m256i v, __m256i qv) {
  const __m256i r =
      _mm256_sub_epi32(_mm256_add_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), qv), _mm256_srli_epi32(v, 16));
  return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
}
// c·x mod 65537 for 8 lanes (c = 65536 ≡ −1: q − x, and 0 for x = 0).
COLLPLAN_GF_AVX2_OP __m256i mul65537_8(__m256i x, uint32_t c, __m256i cv, __m256i qv) {
  if (c == 65536) {
    const __m256i r = _mm256_sub_epi32(qv, x);
    return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
  }
  const __m256i p = _mm256_mullo_epi32(x, cv);
  const __m256i r =
      _mm256_sub_epi32(_mm256_add_epi32(_mm256_and_si256(p, _mm256_set1_epi32(0xFFFF)), qv), _mm256_srli_epi32(p, 16));
  return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
}

// The last < 8 elements of a prime-field dot, one element at a time.
template <class Co, class Mul>
inline void dotp_tail(uint32_t q, size_t k, size_t m, const Co& co, const Mul& mul, const void* const* src,
                      void* const* dst, size_t i, size_t n, bool accumulate) {
  dot_elems<uint32_t>(k, m, [&co, &mul](size_t j, size_t s, uint32_t x) { return mul(co(j, s), x); },
                      [q](uint32_t a, uint32_t b) { return add_mod(a, b, q); }, src, dst, i, n, accumulate);
}

}  // namespace avx2_detail

// ─── XOR, GF(2^8), GF(2^16) ─────────────────────────────────────────────────

// dst ^= src over `bytes` bytes.
COLLPLAN_GF_AVX2 inline void xor_avx2(const void* src, void* dst, size_t bytes) {
  using namespace avx2_detail;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + 128 <= bytes; i += 128) {
    const __m256i a0 = _mm256_xor_si256(loadu(d + i), loadu(s + i));
    const __m256i a1 = _mm256_xor_si256(loadu(d + i + 32), loadu(s + i + 32));
    const __m256i a2 = _mm256_xor_si256(loadu(d + i + 64), loadu(s + i + 64));
    const __m256i a3 = _mm256_xor_si256(loadu(d + i + 96), loadu(s + i + 96));
    storeu(d + i, a0);
    storeu(d + i + 32, a1);
    storeu(d + i + 64, a2);
    storeu(d + i + 96, a3);
  }
  for (; i + 32 <= bytes; i += 32) storeu(d + i, _mm256_xor_si256(loadu(d + i), loadu(s + i)));
  for (; i < bytes; ++i) d[i] = static_cast<unsigned char>(d[i] ^ s[i]);
}

// GF(2^16) by the eight split tables: dst ^= c·src (kMad), dst = c·src
// (src == dst allowed: both halves of a block are loaded before either is
// stored).
template <bool kMad>
COLLPLAN_GF_AVX2 void region16_avx2(const uint8_t (*split)[16], const void* src, void* dst, size_t n) {
  using namespace avx2_detail;
  __m256i T[8];
  load_split16(split, T);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i lo, hi, rlo, rhi;
    pack16(loadu(cbytes(src, 2 * i)), loadu(cbytes(src, 2 * i + 32)), lo, hi);
    mul16_packed(T, lo, hi, rlo, rhi);
    __m256i r0 = _mm256_unpacklo_epi8(rlo, rhi), r1 = _mm256_unpackhi_epi8(rlo, rhi);
    if (kMad) {
      r0 = _mm256_xor_si256(loadu(cbytes(dst, 2 * i)), r0);
      r1 = _mm256_xor_si256(loadu(cbytes(dst, 2 * i + 32)), r1);
    }
    storeu(bytes(dst, 2 * i), r0);
    storeu(bytes(dst, 2 * i + 32), r1);
  }
  if (i == n) return;
  if (kMad)
    mad_split_base<16>(split, cbytes(src, 2 * i), bytes(dst, 2 * i), n - i);
  else
    mul_split_base<16>(split, cbytes(src, 2 * i), bytes(dst, 2 * i), n - i);
}
inline void mad16_avx2(const uint8_t (*split)[16], const void* src, void* dst, size_t n) {
  region16_avx2<true>(split, src, dst, n);
}
inline void mul16_avx2(const uint8_t (*split)[16], const void* src, void* dst, size_t n) {
  region16_avx2<false>(split, src, dst, n);
}

// GF(2^8) dot by split tables: co(j, s) returns the tables (const uint8_t
// (*)[16]). Each 32-byte block of an output is summed over all k sources in
// a register and stored once.
template <class Co>
COLLPLAN_GF_AVX2 void dot8_avx2(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst, size_t n,
                                bool accumulate) {
  using namespace avx2_detail;
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) {
      unsigned char* d = bytes(dst[j], i);
      __m256i acc = accumulate ? loadu(d) : _mm256_setzero_si256();
      for (size_t s = 0; s < k; ++s) {
        const uint8_t(*t)[16] = co(j, s);
        acc = _mm256_xor_si256(acc, mul8x32(tbl(t[0]), tbl(t[1]), loadu(cbytes(src[s], i))));
      }
      storeu(d, acc);
    }
  dot_elems<uint8_t>(k, m, [&co](size_t j, size_t s, uint32_t x) { return split_elem<8>(co(j, s), x); }, XorOp{}, src, dst,
                     i, n, accumulate);
}

// GF(2^16) dot by split tables, summed in the packed domain and re-interleaved
// once per output block of 32 elements.
template <class Co>
COLLPLAN_GF_AVX2 void dot16_avx2(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst, size_t n,
                                 bool accumulate) {
  using namespace avx2_detail;
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) {
      unsigned char* d = bytes(dst[j], 2 * i);
      __m256i alo = _mm256_setzero_si256(), ahi = _mm256_setzero_si256();
      if (accumulate) pack16(loadu(d), loadu(d + 32), alo, ahi);
      for (size_t s = 0; s < k; ++s) {
        __m256i T[8], lo, hi, rlo, rhi;
        load_split16(co(j, s), T);
        pack16(loadu(cbytes(src[s], 2 * i)), loadu(cbytes(src[s], 2 * i + 32)), lo, hi);
        mul16_packed(T, lo, hi, rlo, rhi);
        alo = _mm256_xor_si256(alo, rlo);
        ahi = _mm256_xor_si256(ahi, rhi);
      }
      storeu(d, _mm256_unpacklo_epi8(alo, ahi));
      storeu(d + 32, _mm256_unpackhi_epi8(alo, ahi));
    }
  dot_elems<uint16_t>(k, m, [&co](size_t j, size_t s, uint32_t x) { return split_elem<16>(co(j, s), x); }, XorOp{}, src,
                      dst, i, n, accumulate);
}

// ─── prime fields, single term ──────────────────────────────────────────────

COLLPLAN_GF_AVX2 inline void madp_avx2(uint32_t q, PrimeCoef t, const void* src, void* dst, size_t n) {
  using namespace avx2_detail;
  const __m256i qv = _mm256_set1_epi32(static_cast<int>(q));
  const __m256i cv = _mm256_set1_epi32(static_cast<int>(t.c));
  const __m256i cpv = _mm256_set1_epi64x(static_cast<long long>(t.shoup));
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    storeu(bytes(dst, 4 * i), addmod8(shoup8(loadu(cbytes(src, 4 * i)), cv, cpv, qv), loadu(cbytes(dst, 4 * i)), qv));
  if (i < n) madp_base(q, t, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}
// src == dst allowed.
COLLPLAN_GF_AVX2 inline void mulp_avx2(uint32_t q, PrimeCoef t, const void* src, void* dst, size_t n) {
  using namespace avx2_detail;
  const __m256i qv = _mm256_set1_epi32(static_cast<int>(q));
  const __m256i cv = _mm256_set1_epi32(static_cast<int>(t.c));
  const __m256i cpv = _mm256_set1_epi64x(static_cast<long long>(t.shoup));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) storeu(bytes(dst, 4 * i), shoup8(loadu(cbytes(src, 4 * i)), cv, cpv, qv));
  if (i < n) mulp_base(q, t, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}
COLLPLAN_GF_AVX2 inline void addp_avx2(uint32_t q, const void* src, void* dst, size_t n) {
  using namespace avx2_detail;
  const __m256i qv = _mm256_set1_epi32(static_cast<int>(q));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) storeu(bytes(dst, 4 * i), addmod8(loadu(cbytes(src, 4 * i)), loadu(cbytes(dst, 4 * i)), qv));
  if (i < n) addp_base(q, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}
COLLPLAN_GF_AVX2 inline void mad65537_avx2(uint32_t c, const void* src, void* dst, size_t n) {
  using namespace avx2_detail;
  const __m256i qv = _mm256_set1_epi32(65537);
  const __m256i cv = _mm256_set1_epi32(static_cast<int>(c));
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    storeu(bytes(dst, 4 * i), addmod8(mul65537_8(loadu(cbytes(src, 4 * i)), c, cv, qv), loadu(cbytes(dst, 4 * i)), qv));
  if (i < n) mad65537_base(c, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}
// src == dst allowed.
COLLPLAN_GF_AVX2 inline void mul65537_avx2(uint32_t c, const void* src, void* dst, size_t n) {
  using namespace avx2_detail;
  const __m256i qv = _mm256_set1_epi32(65537);
  const __m256i cv = _mm256_set1_epi32(static_cast<int>(c));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) storeu(bytes(dst, 4 * i), mul65537_8(loadu(cbytes(src, 4 * i)), c, cv, qv));
  if (i < n) mul65537_base(c, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}

// ─── prime-field dots ───────────────────────────────────────────────────────
// co(j, s) returns the PrimeCoef of output j, source s.

namespace avx2_detail {

// GF(65537), delayed reduction with split sums: a lazy product c·x (c < 2^16)
// is hi·2^16 + lo ≡ lo − hi, so the low halves and the high halves of the k
// products are summed in two 32-bit lanes each (< 2^16 per term; the
// negation c = 65536 adds q − x ≤ q to the low sum) and combined once, as
// lo_sum + 2^14·q − hi_sum < 2^32, by one reduce65537 per 2^14 terms and at
// the end. Per term and vector: one multiply, a mask, a shift and two adds.
// Each coefficient is broadcast once per tile of kV vectors: with a broadcast
// and a branch per vector, the dot was slower than the per-term kernels at
// 64 KiB and 1 MiB (bench_gf, 0.79x and 0.84x).
template <size_t kV, class Co>
COLLPLAN_GF_AVX2_OP void dot65537_tile(size_t k, size_t j, const Co& co, const void* const* src, void* out, size_t i,
                                       bool accumulate) {
  constexpr size_t kFold = size_t{1} << 14;
  const __m256i qv = _mm256_set1_epi32(65537);
  const __m256i mask = _mm256_set1_epi32(0xFFFF);
  const __m256i bias = _mm256_set1_epi32(static_cast<int>(kFold * 65537));  // >= any hi sum of kFold terms
  __m256i lo[kV], hi[kV];
  COLLPLAN_GF_UNROLL
  for (size_t v = 0; v < kV; ++v) {
    lo[v] = accumulate ? loadu(cbytes(out, 4 * i + 32 * v)) : _mm256_setzero_si256();
    hi[v] = _mm256_setzero_si256();
  }
  for (size_t s = 0; s < k; ++s) {
    const uint32_t c = co(j, s).c;
    const unsigned char* p = cbytes(src[s], 4 * i);
    if (c == 65536) {
      COLLPLAN_GF_UNROLL
      for (size_t v = 0; v < kV; ++v) lo[v] = _mm256_add_epi32(lo[v], _mm256_sub_epi32(qv, loadu(p + 32 * v)));
    } else {
      const __m256i cv = _mm256_set1_epi32(static_cast<int>(c));
      COLLPLAN_GF_UNROLL
      for (size_t v = 0; v < kV; ++v) {
        const __m256i prod = _mm256_mullo_epi32(loadu(p + 32 * v), cv);
        lo[v] = _mm256_add_epi32(lo[v], _mm256_and_si256(prod, mask));
        hi[v] = _mm256_add_epi32(hi[v], _mm256_srli_epi32(prod, 16));
      }
    }
    if ((s + 1) % kFold == 0)
      COLLPLAN_GF_UNROLL
      for (size_t v = 0; v < kV; ++v) {
        lo[v] = reduce65537(_mm256_sub_epi32(_mm256_add_epi32(lo[v], bias), hi[v]), qv);
        hi[v] = _mm256_setzero_si256();
      }
  }
  COLLPLAN_GF_UNROLL
  for (size_t v = 0; v < kV; ++v)
    storeu(bytes(out, 4 * i + 32 * v), reduce65537(_mm256_sub_epi32(_mm256_add_epi32(lo[v], bias), hi[v]), qv));
}

// Delayed reduction in 64-bit lanes: for 8 elements at a time, the even and
// odd 32-bit lanes are multiplied by the constant into 64-bit products
// (PMULUDQ; each < q^2 < 2^62) and summed unreduced. A 64-bit sum v = H·2^32
// + L is brought back below 4q with two Shoup products: v ≡ H·R + L·1 with R
// = 2^32 mod q. That fold runs once every `fold` terms, where fold·(q−1)^2 +
// 4q < 2^64, and once at the end, followed by the final corrections into
// [0, q). Per term this costs one PMULUDQ per 4 elements and an add, against
// Shoup's three multiplies and a correction.
struct Fold64 {
  __m256i q, R, Rp, onep, mask;
};
COLLPLAN_GF_AVX2_OP __m256i fold64(__m256i v, const Fold64& F) {
  const __m256i H = _mm256_srli_epi64(v, 32);
  const __m256i L = _mm256_and_si256(v, F.mask);
  const __m256i qh = _mm256_srli_epi64(_mm256_mul_epu32(H, F.Rp), 32);
  const __m256i rh = _mm256_sub_epi64(_mm256_mul_epu32(H, F.R), _mm256_mul_epu32(qh, F.q));
  const __m256i ql = _mm256_srli_epi64(_mm256_mul_epu32(L, F.onep), 32);
  const __m256i rl = _mm256_sub_epi64(L, _mm256_mul_epu32(ql, F.q));
  return _mm256_add_epi64(rh, rl);  // [0, 4q)
}
// [0, 4q) → [0, q) in 64-bit lanes (values < 2^33: signed compares are fine).
COLLPLAN_GF_AVX2_OP __m256i final64(__m256i v, const Fold64& F) {
  const __m256i q2 = _mm256_add_epi64(F.q, F.q);
  const __m256i qm1 = _mm256_sub_epi64(F.q, _mm256_set1_epi64x(1));
  v = _mm256_sub_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(v, _mm256_sub_epi64(q2, _mm256_set1_epi64x(1))), q2));
  return _mm256_sub_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(v, qm1), F.q));
}
// The reductions dotp_tile takes: fold(v) brings a 64-bit sum back to a few
// times q so that `fold` more products fit, finish(v) lands in [0, q).
struct Shoup64 {
  Fold64 F;
  COLLPLAN_GF_AVX2_OP __m256i fold(__m256i v) const { return fold64(v, F); }
  COLLPLAN_GF_AVX2_OP __m256i finish(__m256i v) const { return final64(fold64(v, F), F); }
};
// q = 2^31 − 1: 2^31 ≡ 1, so v ≡ (v & q) + (v >> 31), which takes any 64-bit
// v below 2^31 + 2^33. Four products ((q−1)^2 = 2^62 − 2^33 + 4 each) and
// such a remainder stay below 2^64, so it folds every 4 terms -- three
// instructions where Shoup's fold (fold64) takes twelve, five of them
// multiplies.
struct Mersenne31 {
  __m256i q;  // q in every 64-bit lane
  COLLPLAN_GF_AVX2_OP __m256i fold(__m256i v) const { return _mm256_add_epi64(_mm256_and_si256(v, q), _mm256_srli_epi64(v, 31)); }
  // Two folds leave v < 2^31 + 8 (< 2^32: the high 32-bit half is 0), then
  // min(v, v − q) per 32-bit lane subtracts q when v >= q.
  COLLPLAN_GF_AVX2_OP __m256i finish(__m256i v) const {
    v = fold(fold(v));
    return _mm256_min_epu32(v, _mm256_sub_epi32(v, q));
  }
};

// kV vectors of 8 elements at element offset i, output j; each coefficient
// broadcast once per tile. An accumulated dst (< q) starts the sums: below
// 4q, as the fold count assumes.
template <size_t kV, class Co, class Red>
COLLPLAN_GF_AVX2_OP void dotp_tile(size_t k, size_t j, const Co& co, const void* const* src, void* out, size_t i,
                                   size_t fold, const Red& red, bool accumulate) {
  __m256i ae[kV], ao[kV];
  COLLPLAN_GF_UNROLL
  for (size_t v = 0; v < kV; ++v) {
    if (accumulate) {
      const __m256i d = loadu(cbytes(out, 4 * i + 32 * v));
      ae[v] = _mm256_and_si256(d, _mm256_set1_epi64x(0xFFFFFFFFLL));
      ao[v] = _mm256_srli_epi64(d, 32);
    } else {
      ae[v] = ao[v] = _mm256_setzero_si256();
    }
  }
  size_t since = 0;
  for (size_t s = 0; s < k; ++s) {
    const __m256i cv = _mm256_set1_epi64x(static_cast<long long>(co(j, s).c));
    const unsigned char* p = cbytes(src[s], 4 * i);
    COLLPLAN_GF_UNROLL
    for (size_t v = 0; v < kV; ++v) {
      const __m256i x = loadu(p + 32 * v);
      ae[v] = _mm256_add_epi64(ae[v], _mm256_mul_epu32(x, cv));
      ao[v] = _mm256_add_epi64(ao[v], _mm256_mul_epu32(_mm256_srli_epi64(x, 32), cv));
    }
    if (++since == fold) {
      COLLPLAN_GF_UNROLL
      for (size_t v = 0; v < kV; ++v) {
        ae[v] = red.fold(ae[v]);
        ao[v] = red.fold(ao[v]);
      }
      since = 0;
    }
  }
  COLLPLAN_GF_UNROLL
  for (size_t v = 0; v < kV; ++v) {
    const __m256i e = red.finish(ae[v]);
    const __m256i o = red.finish(ao[v]);
    storeu(bytes(out, 4 * i + 32 * v), _mm256_blend_epi32(e, _mm256_slli_epi64(o, 32), 0xAA));
  }
}

// Shoup per term with the sums of a tile kept in registers over all k terms
// (dst written once instead of loaded and stored per term). The first term's
// product is the initial sum when not accumulating: no addition of a zero
// sum, the one operation per element the per-term kernels (mul, then mad) do
// not do.
template <size_t kV, class Co>
COLLPLAN_GF_AVX2_OP void dots_tile(size_t k, size_t j, const Co& co, const void* const* src, void* out, size_t i,
                                   __m256i qv, bool accumulate) {
  __m256i acc[kV];
  size_t s = 0;
  if (accumulate) {
    COLLPLAN_GF_UNROLL
    for (size_t v = 0; v < kV; ++v) acc[v] = loadu(cbytes(out, 4 * i + 32 * v));
  } else {
    const PrimeCoef t = co(j, 0);
    const __m256i cv = _mm256_set1_epi32(static_cast<int>(t.c));
    const __m256i cpv = _mm256_set1_epi64x(static_cast<long long>(t.shoup));
    const unsigned char* p = cbytes(src[0], 4 * i);
    COLLPLAN_GF_UNROLL
    for (size_t v = 0; v < kV; ++v) acc[v] = shoup8(loadu(p + 32 * v), cv, cpv, qv);
    s = 1;
  }
  for (; s < k; ++s) {
    const PrimeCoef t = co(j, s);
    const __m256i cv = _mm256_set1_epi32(static_cast<int>(t.c));
    const __m256i cpv = _mm256_set1_epi64x(static_cast<long long>(t.shoup));
    const unsigned char* p = cbytes(src[s], 4 * i);
    COLLPLAN_GF_UNROLL
    for (size_t v = 0; v < kV; ++v) acc[v] = addmod8(acc[v], shoup8(loadu(p + 32 * v), cv, cpv, qv), qv);
  }
  COLLPLAN_GF_UNROLL
  for (size_t v = 0; v < kV; ++v) storeu(bytes(out, 4 * i + 32 * v), acc[v]);
}

inline uint32_t shoup_of(uint32_t q, PrimeCoef t, uint32_t x) { return shoup_mul(t.c, t.shoup, x, q); }

}  // namespace avx2_detail

// GF(65537): tiles of 4 vectors (32 elements), then single vectors.
template <class Co>
COLLPLAN_GF_AVX2 void dot65537_avx2(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst,
                                    size_t n, bool accumulate) {
  using namespace avx2_detail;
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) dot65537_tile<4>(k, j, co, src, dst[j], i, accumulate);
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < m; ++j) dot65537_tile<1>(k, j, co, src, dst[j], i, accumulate);
  dotp_tail(65537, k, m, co, [](PrimeCoef t, uint32_t x) { return mul65537(t.c, x); }, src, dst, i, n, accumulate);
}

// GF(q), q < 2^30: delayed reduction folded by Shoup products (tiles of 2
// vectors, 4 accumulators of 64-bit lanes).
template <class Co>
COLLPLAN_GF_AVX2 void dotp_avx2(uint32_t q, size_t k, size_t m, const Co& co, const void* const* src, void* const* dst,
                                size_t n, bool accumulate) {
  using namespace avx2_detail;
  const uint64_t R = (uint64_t{1} << 32) % q;
  const Fold64 F{_mm256_set1_epi64x(static_cast<long long>(q)), _mm256_set1_epi64x(static_cast<long long>(R)),
                 _mm256_set1_epi64x(static_cast<long long>((R << 32) / q)),
                 _mm256_set1_epi64x(static_cast<long long>((uint64_t{1} << 32) / q)), _mm256_set1_epi64x(0xFFFFFFFFLL)};
  // Terms that may be added to a value below 4q without exceeding 2^64 − 1.
  const uint64_t room = ~uint64_t{0} - 4 * static_cast<uint64_t>(q);
  const uint64_t sq = static_cast<uint64_t>(q - 1) * (q - 1);
  const uint64_t fold_terms = sq == 0 ? (uint64_t{1} << 20) : room / sq;
  const size_t fold = static_cast<size_t>(fold_terms < (uint64_t{1} << 20) ? fold_terms : (uint64_t{1} << 20));
  const Shoup64 red{F};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (size_t j = 0; j < m; ++j) dotp_tile<2>(k, j, co, src, dst[j], i, fold, red, accumulate);
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < m; ++j) dotp_tile<1>(k, j, co, src, dst[j], i, fold, red, accumulate);
  dotp_tail(q, k, m, co, [q](PrimeCoef t, uint32_t x) { return shoup_of(q, t, x); }, src, dst, i, n, accumulate);
}

// q = 2^31 − 1: dotp_avx2's delayed sums with the Mersenne fold every 4
// terms; tiles of 4 vectors (8 accumulators keep the loads of one source back
// to back without spilling).
template <class Co>
COLLPLAN_GF_AVX2 void dotm31_avx2(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst, size_t n,
                                  bool accumulate) {
  using namespace avx2_detail;
  constexpr uint32_t q = 0x7FFFFFFF;
  const Mersenne31 red{_mm256_set1_epi64x(q)};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) dotp_tile<4>(k, j, co, src, dst[j], i, 4, red, accumulate);
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < m; ++j) dotp_tile<1>(k, j, co, src, dst[j], i, 4, red, accumulate);
  dotp_tail(q, k, m, co, [](PrimeCoef t, uint32_t x) { return shoup_of(q, t, x); }, src, dst, i, n, accumulate);
}

// Any q < 2^31, Shoup per term with the sums in registers: above 2^30 the
// 64-bit delayed sums must be folded every 4-15 terms, which made that
// kernel 0.7x of the per-term kernels (bench_gf, q = 2^31 − 1).
template <class Co>
COLLPLAN_GF_AVX2 void dots_avx2(uint32_t q, size_t k, size_t m, const Co& co, const void* const* src, void* const* dst,
                                size_t n, bool accumulate) {
  using namespace avx2_detail;
  const __m256i qv = _mm256_set1_epi32(static_cast<int>(q));
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) dots_tile<4>(k, j, co, src, dst[j], i, qv, accumulate);
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < m; ++j) dots_tile<1>(k, j, co, src, dst[j], i, qv, accumulate);
  dotp_tail(q, k, m, co, [q](PrimeCoef t, uint32_t x) { return shoup_of(q, t, x); }, src, dst, i, n, accumulate);
}

// The prime-field dot for q: 65537's own reduction, delayed Shoup folds below
// 2^30, the Mersenne fold for 2^31 − 1, Shoup per term for the other primes
// from 2^30 (bench_gf measured each choice against per-term kernels).
template <class Co>
COLLPLAN_GF_AVX2 void dot_prime_avx2(uint32_t q, size_t k, size_t m, const Co& co, const void* const* src,
                                     void* const* dst, size_t n, bool accumulate) {
  if (q == 65537)
    dot65537_avx2(k, m, co, src, dst, n, accumulate);
  else if (q < (1u << 30))
    dotp_avx2(q, k, m, co, src, dst, n, accumulate);
  else if (q == 0x7FFFFFFF)
    dotm31_avx2(k, m, co, src, dst, n, accumulate);
  else
    dots_avx2(q, k, m, co, src, dst, n, accumulate);
}

}  // namespace collplan_gf
