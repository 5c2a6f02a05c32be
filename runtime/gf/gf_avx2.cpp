// AVX2 region kernels for GF(2^16), prime fields and XOR. Compiled for the
// baseline ISA with per-function target attributes, so the library runs on
// any x86-64; the dispatcher (gf_kernels.cpp) calls these only when the CPU
// reports AVX2. All loads and stores are unaligned.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "runtime/gf/gf_detail.h"

#define COLLPLAN_AVX2 __attribute__((target("avx2")))
#define COLLPLAN_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline
// The tiles' per-vector loops must be unrolled for their accumulators to
// stay in registers; -O2 alone keeps them in a stack array.
#define COLLPLAN_UNROLL _Pragma("GCC unroll 8")

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

// ── GF(65537) through 2^16 ≡ −1 ────────────────────────────────────────────

namespace collplan::gf::detail {

namespace {

// Unreduced c·x mod 65537 for 8 lanes, c < 2^16: lo − hi + q in [2, 2^17].
COLLPLAN_AVX2_INLINE __m256i mul65537_lazy(__m256i x, __m256i cv, __m256i qv) {
  const __m256i p = _mm256_mullo_epi32(x, cv);
  return _mm256_sub_epi32(_mm256_add_epi32(_mm256_and_si256(p, _mm256_set1_epi32(0xFFFF)), qv), _mm256_srli_epi32(p, 16));
}

// Any 32-bit lane value mod 65537: lo − hi + q in [2, 2^17], then one
// conditional subtraction.
COLLPLAN_AVX2_INLINE __m256i reduce65537(__m256i v, __m256i qv) {
  const __m256i r =
      _mm256_sub_epi32(_mm256_add_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), qv), _mm256_srli_epi32(v, 16));
  return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
}

COLLPLAN_AVX2_INLINE __m256i mul65537_8(__m256i x, uint32_t c, __m256i cv, __m256i qv) {
  if (c == 65536) {  // −x: q − x, and 0 for x = 0 (q − 0 = q reduces to 0)
    const __m256i r = _mm256_sub_epi32(qv, x);
    return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
  }
  const __m256i r = mul65537_lazy(x, cv, qv);
  return _mm256_min_epu32(r, _mm256_sub_epi32(r, qv));
}

}  // namespace

COLLPLAN_AVX2 void mad65537_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  const __m256i qv = _mm256_set1_epi32(65537);
  const __m256i cv = _mm256_set1_epi32(static_cast<int>(t.c));
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    storeu(bytes(dst, 4 * i), addmod8(mul65537_8(loadu(cbytes(src, 4 * i)), t.c, cv, qv), loadu(cbytes(dst, 4 * i)), qv));
  if (i < n) mad65537_scalar(f, t, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}

COLLPLAN_AVX2 void mul65537_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  const __m256i qv = _mm256_set1_epi32(65537);
  const __m256i cv = _mm256_set1_epi32(static_cast<int>(t.c));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) storeu(bytes(dst, 4 * i), mul65537_8(loadu(cbytes(src, 4 * i)), t.c, cv, qv));
  if (i < n) mul65537_scalar(f, t, cbytes(src, 4 * i), bytes(dst, 4 * i), n - i);
}

// Delayed reduction with split sums: a lazy product c·x (c < 2^16) is
// hi·2^16 + lo ≡ lo − hi, so the low halves and the high halves of the k
// products are summed in two 32-bit lanes each (< 2^16 per term; the
// negation c = 65536 adds q − x ≤ q to the low sum) and combined once, as
// lo_sum + 2^14·q − hi_sum < 2^32, by one reduce65537 per 2^14 terms and at
// the end. Per term and vector: one multiply, a mask, a shift and two adds.
// Each coefficient is broadcast once per tile of four vectors (32 elements):
// with a broadcast and a branch per vector, the dot was slower than the
// per-term kernels at 64 KiB and 1 MiB (bench_gf, 0.79x and 0.84x).
namespace {

// dot65537_avx2 for kV vectors of 8 elements at element offset i, output j.
template <int kV>
COLLPLAN_AVX2_INLINE void dot65537_tile(size_t k, const MadTable* row, const void* const* src, void* out, size_t i) {
  constexpr size_t kFold = size_t{1} << 14;
  const __m256i qv = _mm256_set1_epi32(65537);
  const __m256i mask = _mm256_set1_epi32(0xFFFF);
  const __m256i bias = _mm256_set1_epi32(static_cast<int>(kFold * 65537));  // >= any hi sum of kFold terms
  __m256i lo[kV], hi[kV];
  COLLPLAN_UNROLL
  for (int v = 0; v < kV; ++v) lo[v] = hi[v] = _mm256_setzero_si256();
  for (size_t s = 0; s < k; ++s) {
    const uint32_t c = row[s].c;
    const unsigned char* p = cbytes(src[s], 4 * i);
    if (c == 65536) {
      COLLPLAN_UNROLL
      for (int v = 0; v < kV; ++v) lo[v] = _mm256_add_epi32(lo[v], _mm256_sub_epi32(qv, loadu(p + 32 * v)));
    } else {
      const __m256i cv = _mm256_set1_epi32(static_cast<int>(c));
      COLLPLAN_UNROLL
      for (int v = 0; v < kV; ++v) {
        const __m256i prod = _mm256_mullo_epi32(loadu(p + 32 * v), cv);
        lo[v] = _mm256_add_epi32(lo[v], _mm256_and_si256(prod, mask));
        hi[v] = _mm256_add_epi32(hi[v], _mm256_srli_epi32(prod, 16));
      }
    }
    if ((s + 1) % kFold == 0)
      COLLPLAN_UNROLL
      for (int v = 0; v < kV; ++v) {
        lo[v] = reduce65537(_mm256_sub_epi32(_mm256_add_epi32(lo[v], bias), hi[v]), qv);
        hi[v] = _mm256_setzero_si256();
      }
  }
  COLLPLAN_UNROLL
  for (int v = 0; v < kV; ++v)
    storeu(bytes(out, 4 * i + 32 * v), reduce65537(_mm256_sub_epi32(_mm256_add_epi32(lo[v], bias), hi[v]), qv));
}

}  // namespace

COLLPLAN_AVX2 void dot65537_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src,
                                 void* const* dst, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) dot65537_tile<4>(k, coef + j * k, src, dst[j], i);
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < m; ++j) dot65537_tile<1>(k, coef + j * k, src, dst[j], i);
  if (i < n) {
    for (size_t j = 0; j < m; ++j) {
      mul65537_scalar(f, coef[j * k], cbytes(src[0], 4 * i), bytes(dst[j], 4 * i), n - i);
      for (size_t s = 1; s < k; ++s) mad65537_scalar(f, coef[j * k + s], cbytes(src[s], 4 * i), bytes(dst[j], 4 * i), n - i);
    }
  }
}

// ── Prime fields: delayed reduction in 64-bit lanes ────────────────────────
//
// For 8 elements at a time, the even and odd 32-bit lanes are multiplied by
// the constant into 64-bit products (PMULUDQ; each < q^2 < 2^62) and summed
// unreduced. A 64-bit sum v = H·2^32 + L is brought back below 2q with two
// Shoup products: v ≡ H·R + L·1 with R = 2^32 mod q, each Shoup result in
// [0, 2q) (valid for any 32-bit H, L). That fold runs once every `fold`
// terms, where fold·(q−1)^2 + 4q < 2^64, and once at the end, followed by
// the final corrections into [0, q). Per term this costs one PMULUDQ per 4
// elements and an add, against Shoup's three multiplies and a correction.

namespace {

struct Fold64 {
  __m256i q, R, Rp, onep, mask;
};

// v (64-bit lanes) → v mod q in [0, 2q) (as 64-bit lanes)
COLLPLAN_AVX2_INLINE __m256i fold64(__m256i v, const Fold64& F) {
  const __m256i H = _mm256_srli_epi64(v, 32);
  const __m256i L = _mm256_and_si256(v, F.mask);
  const __m256i qh = _mm256_srli_epi64(_mm256_mul_epu32(H, F.Rp), 32);
  const __m256i rh = _mm256_sub_epi64(_mm256_mul_epu32(H, F.R), _mm256_mul_epu32(qh, F.q));
  const __m256i ql = _mm256_srli_epi64(_mm256_mul_epu32(L, F.onep), 32);
  const __m256i rl = _mm256_sub_epi64(L, _mm256_mul_epu32(ql, F.q));
  return _mm256_add_epi64(rh, rl);  // [0, 4q)
}

// [0, 4q) → [0, q) in 64-bit lanes (values < 2^33: signed compares are fine).
COLLPLAN_AVX2_INLINE __m256i final64(__m256i v, const Fold64& F) {
  const __m256i q2 = _mm256_add_epi64(F.q, F.q);
  const __m256i qm1 = _mm256_sub_epi64(F.q, _mm256_set1_epi64x(1));
  v = _mm256_sub_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(v, _mm256_sub_epi64(q2, _mm256_set1_epi64x(1))), q2));
  return _mm256_sub_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(v, qm1), F.q));
}

// The reductions dotp_tile takes: fold(v) brings a 64-bit sum back to a few
// times q so that `fold` more products fit, finish(v) lands in [0, q).
struct Shoup64 {
  Fold64 F;
  COLLPLAN_AVX2_INLINE __m256i fold(__m256i v) const { return fold64(v, F); }
  COLLPLAN_AVX2_INLINE __m256i finish(__m256i v) const { return final64(fold64(v, F), F); }
};

// q = 2^31 − 1: 2^31 ≡ 1, so v ≡ (v & q) + (v >> 31), which takes any 64-bit
// v below 2^31 + 2^33. Four products ((q−1)^2 = 2^62 − 2^33 + 4 each) and
// such a remainder stay below 2^64, so it folds every 4 terms -- three
// instructions where Shoup's fold (fold64) takes twelve, five of them
// multiplies.
struct Mersenne31 {
  __m256i q;  // q in every 64-bit lane
  COLLPLAN_AVX2_INLINE __m256i fold(__m256i v) const {
    return _mm256_add_epi64(_mm256_and_si256(v, q), _mm256_srli_epi64(v, 31));
  }
  // Two folds leave v < 2^31 + 8 (< 2^32: the high 32-bit half is 0), then
  // min(v, v − q) per 32-bit lane subtracts q when v >= q.
  COLLPLAN_AVX2_INLINE __m256i finish(__m256i v) const {
    v = fold(fold(v));
    return _mm256_min_epu32(v, _mm256_sub_epi32(v, q));
  }
};

}  // namespace

namespace {

// dotp_avx2 for kV vectors of 8 elements at element offset i, one output:
// each coefficient is broadcast once per tile (2 vectors: 4 accumulators of
// 64-bit lanes).
template <int kV, class Red>
COLLPLAN_AVX2_INLINE void dotp_tile(size_t k, const MadTable* row, const void* const* src, void* out, size_t i,
                                    size_t fold, const Red& red) {
  __m256i ae[kV], ao[kV];
  COLLPLAN_UNROLL
  for (int v = 0; v < kV; ++v) ae[v] = ao[v] = _mm256_setzero_si256();
  size_t since = 0;
  for (size_t s = 0; s < k; ++s) {
    const __m256i cv = _mm256_set1_epi64x(static_cast<long long>(row[s].c));
    const unsigned char* p = cbytes(src[s], 4 * i);
    COLLPLAN_UNROLL
    for (int v = 0; v < kV; ++v) {
      const __m256i x = loadu(p + 32 * v);
      ae[v] = _mm256_add_epi64(ae[v], _mm256_mul_epu32(x, cv));
      ao[v] = _mm256_add_epi64(ao[v], _mm256_mul_epu32(_mm256_srli_epi64(x, 32), cv));
    }
    if (++since == fold) {
      COLLPLAN_UNROLL
      for (int v = 0; v < kV; ++v) {
        ae[v] = red.fold(ae[v]);
        ao[v] = red.fold(ao[v]);
      }
      since = 0;
    }
  }
  COLLPLAN_UNROLL
  for (int v = 0; v < kV; ++v) {
    const __m256i e = red.finish(ae[v]);
    const __m256i o = red.finish(ao[v]);
    storeu(bytes(out, 4 * i + 32 * v), _mm256_blend_epi32(e, _mm256_slli_epi64(o, 32), 0xAA));
  }
}

// Tiles of kV vectors, then single vectors, then a scalar tail.
template <int kV, class Red>
COLLPLAN_AVX2_INLINE void dotp_run(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src,
                                   void* const* dst, size_t n, size_t fold, const Red& red) {
  size_t i = 0;
  for (; i + 8 * kV <= n; i += 8 * kV)
    for (size_t j = 0; j < m; ++j) dotp_tile<kV>(k, coef + j * k, src, dst[j], i, fold, red);
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < m; ++j) dotp_tile<1>(k, coef + j * k, src, dst[j], i, fold, red);
  if (i < n) {
    for (size_t j = 0; j < m; ++j) {
      mulp_scalar(f, coef[j * k], cbytes(src[0], 4 * i), bytes(dst[j], 4 * i), n - i);
      for (size_t s = 1; s < k; ++s) madp_scalar(f, coef[j * k + s], cbytes(src[s], 4 * i), bytes(dst[j], 4 * i), n - i);
    }
  }
}

// Vectors per dotm31_avx2 tile: 4 (8 accumulators) keeps the loads of one
// source back to back without spilling.
constexpr int kM31Vectors = 4;

}  // namespace

COLLPLAN_AVX2 void dotp_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src,
                             void* const* dst, size_t n) {
  const uint64_t q = f.size();
  const uint64_t R = (uint64_t{1} << 32) % q;
  const Fold64 F{_mm256_set1_epi64x(static_cast<long long>(q)), _mm256_set1_epi64x(static_cast<long long>(R)),
                 _mm256_set1_epi64x(static_cast<long long>((R << 32) / q)),
                 _mm256_set1_epi64x(static_cast<long long>((uint64_t{1} << 32) / q)), _mm256_set1_epi64x(0xFFFFFFFFLL)};
  // Terms that may be added to a value below 4q without exceeding 2^64 − 1.
  const unsigned __int128 room = (static_cast<unsigned __int128>(1) << 64) - 1 - 4 * q;
  const size_t fold = static_cast<size_t>(std::min<unsigned __int128>(room / ((q - 1) * (q - 1)), 1u << 20));
  dotp_run<2>(f, k, m, coef, src, dst, n, fold, Shoup64{F});
}

COLLPLAN_AVX2 void dotm31_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src,
                               void* const* dst, size_t n) {
  dotp_run<kM31Vectors>(f, k, m, coef, src, dst, n, 4, Mersenne31{_mm256_set1_epi64x(0x7FFFFFFF)});
}

// ── Prime fields from 2^30: Shoup per term, sums kept in registers ─────────
//
// Above 2^30 the 64-bit delayed sums must be folded every 4-15 terms, which
// made that kernel 0.7x of the per-term kernels (bench_gf, q = 2^31 − 1).
// This one reduces every product as mad does (Shoup, then one conditional
// subtraction) but keeps each output tile in registers over all k terms:
// dst is written once instead of loaded and stored per term.
// q = 2^31 − 1 takes dotm31_avx2 instead (its fold is cheap); this one
// serves the other primes from 2^30.

namespace {

template <int kV>
COLLPLAN_AVX2_INLINE void dots_tile(size_t k, const MadTable* row, const void* const* src, void* out, size_t i,
                                    __m256i qv) {
  // The first term's product is the initial sum (k >= 1): no addition of a
  // zero sum, which is the one operation per element the per-term kernels
  // (mul, then mad) did not do and this tile did.
  __m256i acc[kV];
  {
    const __m256i cv = _mm256_set1_epi32(static_cast<int>(row[0].c));
    const __m256i cpv = _mm256_set1_epi64x(static_cast<long long>(row[0].shoup));
    const unsigned char* p = cbytes(src[0], 4 * i);
    COLLPLAN_UNROLL
    for (int v = 0; v < kV; ++v) acc[v] = shoup8(loadu(p + 32 * v), cv, cpv, qv);
  }
  for (size_t s = 1; s < k; ++s) {
    const __m256i cv = _mm256_set1_epi32(static_cast<int>(row[s].c));
    const __m256i cpv = _mm256_set1_epi64x(static_cast<long long>(row[s].shoup));
    const unsigned char* p = cbytes(src[s], 4 * i);
    COLLPLAN_UNROLL
    for (int v = 0; v < kV; ++v) acc[v] = addmod8(acc[v], shoup8(loadu(p + 32 * v), cv, cpv, qv), qv);
  }
  COLLPLAN_UNROLL
  for (int v = 0; v < kV; ++v) storeu(bytes(out, 4 * i + 32 * v), acc[v]);
}

}  // namespace

COLLPLAN_AVX2 void dots_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src,
                             void* const* dst, size_t n) {
  const __m256i qv = _mm256_set1_epi32(static_cast<int>(f.size()));
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t j = 0; j < m; ++j) dots_tile<4>(k, coef + j * k, src, dst[j], i, qv);
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < m; ++j) dots_tile<1>(k, coef + j * k, src, dst[j], i, qv);
  if (i < n) {
    for (size_t j = 0; j < m; ++j) {
      mulp_scalar(f, coef[j * k], cbytes(src[0], 4 * i), bytes(dst[j], 4 * i), n - i);
      for (size_t s = 1; s < k; ++s) madp_scalar(f, coef[j * k + s], cbytes(src[s], 4 * i), bytes(dst[j], 4 * i), n - i);
    }
  }
}

}  // namespace collplan::gf::detail
