// GF(2^8) and GF(2^16) multiply(-accumulate) and dot with GFNI's affine
// instruction.
//
// GF2P8MULB multiplies modulo the AES polynomial 0x11B, not collplan's (and
// ISA-L's) 0x11D, so it cannot be used. But multiplication by a constant c is
// GF(2)-linear in the bits of x under any polynomial, so it is one 8x8 bit
// matrix M_c, and GF2P8AFFINEQB applies exactly such a matrix to every byte:
// result bit i = parity(A.byte[7−i] & x). Row i of M_c (A's byte 7−i) holds
// bit i of c·x^j in bit j. One instruction per 32 (AVX2) or 64 (AVX-512)
// bytes, no table lookups.
//
// GF(2^16): multiplication by c is a 16x16 bit matrix, i.e. four 8x8 blocks
// (out byte o, in byte i). With the low and high bytes of the elements
// gathered into separate vectors, out_lo = M_ll·lo ⊕ M_lh·hi and out_hi =
// M_hl·lo ⊕ M_hh·hi: four affine instructions per 2 vectors of elements.
// The gather is one PSHUFB per input vector (low bytes to the low half of
// each 128-bit lane, high bytes to the high half) and PUNPCK{L,H}QDQ across
// the two inputs -- four shuffles, where masking and shifting for PACKUSWB
// took six instructions; it lands in PACKUSWB's per-lane layout, no
// cross-lane permute. PUNPCK{L,H}BW undoes exactly that interleave, so it is
// paid once per output block, not once per source (the dot keeps its sums in
// the packed domain). VPERMT2B (AVX-512VBMI) as the gather was slower on an
// AMD Zen 4 core (bench_gf, 0.73 of XOR at 1 MiB against 0.78 for PACKUSWB).
//
// Compiled with per-function target attributes; called only when the CPU
// reports GFNI and AVX2 (cpu_has_gfni()), or GFNI and AVX-512BW
// (cpu_has_gfni512(); its tails use masked loads and stores).
#include <immintrin.h>

#include "runtime/gf/gf_detail.h"

#define COLLPLAN_GFNI __attribute__((target("gfni,avx2")))
#define COLLPLAN_GFNI512 __attribute__((target("gfni,avx512f,avx512bw")))
#define COLLPLAN_GFNI_INLINE __attribute__((target("gfni,avx2"), always_inline)) inline
#define COLLPLAN_GFNI512_INLINE __attribute__((target("gfni,avx512f,avx512bw"), always_inline)) inline

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

// The 8x8 bit matrix with bit j of byte i moved to bit i of byte j
// (three rounds of delta swaps: 1x1, 2x2, then 4x4 sub-blocks).
inline uint64_t transpose8x8(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  x ^= t ^ (t << 28);
  return x;
}

// The first `bytes` (< 64 allowed, 0 included) bytes of a 64-byte vector.
inline __mmask64 mask_first(size_t bytes) {
  return bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
}

// The four blocks of a GF(2^16) constant, each broadcast to every 64-bit lane.
struct Mat16x512 {
  __m512i ll, lh, hl, hh;
};
struct Mat16x256 {
  __m256i ll, lh, hl, hh;
};

COLLPLAN_GFNI512_INLINE Mat16x512 mat16_512(const uint64_t* a) {
  return {_mm512_set1_epi64(static_cast<long long>(opaque(a[0]))), _mm512_set1_epi64(static_cast<long long>(opaque(a[1]))),
          _mm512_set1_epi64(static_cast<long long>(opaque(a[2]))), _mm512_set1_epi64(static_cast<long long>(opaque(a[3])))};
}
COLLPLAN_GFNI_INLINE Mat16x256 mat16_256(const uint64_t* a) {
  return {_mm256_set1_epi64x(static_cast<long long>(opaque(a[0]))), _mm256_set1_epi64x(static_cast<long long>(opaque(a[1]))),
          _mm256_set1_epi64x(static_cast<long long>(opaque(a[2]))), _mm256_set1_epi64x(static_cast<long long>(opaque(a[3])))};
}

// The low and high bytes of the elements in (a, b), packed per 128-bit lane:
// lane L of lo = low bytes of a's lane L, then of b's lane L (as PACKUSWB
// would pack them).
COLLPLAN_GFNI512_INLINE void split16(__m512i a, __m512i b, __m512i& lo, __m512i& hi) {
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
COLLPLAN_GFNI_INLINE void split16(__m256i a, __m256i b, __m256i& lo, __m256i& hi) {
  const __m256i idx = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12, 14, 1,
                                       3, 5, 7, 9, 11, 13, 15);
  const __m256i as = _mm256_shuffle_epi8(a, idx), bs = _mm256_shuffle_epi8(b, idx);
  lo = _mm256_unpacklo_epi64(as, bs);
  hi = _mm256_unpackhi_epi64(as, bs);
}

// c·(lo, hi) in the packed domain.
COLLPLAN_GFNI512_INLINE void mul16(const Mat16x512& M, __m512i lo, __m512i hi, __m512i& rlo, __m512i& rhi) {
  rlo = _mm512_xor_si512(_mm512_gf2p8affine_epi64_epi8(lo, M.ll, 0), _mm512_gf2p8affine_epi64_epi8(hi, M.lh, 0));
  rhi = _mm512_xor_si512(_mm512_gf2p8affine_epi64_epi8(lo, M.hl, 0), _mm512_gf2p8affine_epi64_epi8(hi, M.hh, 0));
}
COLLPLAN_GFNI_INLINE void mul16(const Mat16x256& M, __m256i lo, __m256i hi, __m256i& rlo, __m256i& rhi) {
  rlo = _mm256_xor_si256(_mm256_gf2p8affine_epi64_epi8(lo, M.ll, 0), _mm256_gf2p8affine_epi64_epi8(hi, M.lh, 0));
  rhi = _mm256_xor_si256(_mm256_gf2p8affine_epi64_epi8(lo, M.hl, 0), _mm256_gf2p8affine_epi64_epi8(hi, M.hh, 0));
}

// c·(elements in a, b), back in memory order.
COLLPLAN_GFNI512_INLINE void mul16x64(const Mat16x512& M, __m512i a, __m512i b, __m512i& ra, __m512i& rb) {
  __m512i lo, hi, rlo, rhi;
  split16(a, b, lo, hi);
  mul16(M, lo, hi, rlo, rhi);
  ra = _mm512_unpacklo_epi8(rlo, rhi);
  rb = _mm512_unpackhi_epi8(rlo, rhi);
}
COLLPLAN_GFNI_INLINE void mul16x32(const Mat16x256& M, __m256i a, __m256i b, __m256i& ra, __m256i& rb) {
  __m256i lo, hi, rlo, rhi;
  split16(a, b, lo, hi);
  mul16(M, lo, hi, rlo, rhi);
  ra = _mm256_unpacklo_epi8(rlo, rhi);
  rb = _mm256_unpackhi_epi8(rlo, rhi);
}

COLLPLAN_GFNI_INLINE __m256i ld256(const unsigned char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
COLLPLAN_GFNI_INLINE void st256(unsigned char* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

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

namespace {

// The blocks built from c·x^j, j < 16.
void gfni16_direct(uint16_t c, uint32_t poly, uint64_t out[4]) {
  uint16_t col[16];  // c·x^j
  uint32_t p = c;
  for (int j = 0; j < 16; ++j) {
    col[j] = static_cast<uint16_t>(p);
    p <<= 1;
    if (p & 0x10000) p ^= poly;
  }
  // Row i of block (o, in) holds bit (8·o + i) of c·x^(8·in + j) in bit j:
  // the transpose of the matrix whose byte j is byte o of c·x^(8·in + j),
  // with its rows in reverse byte order.
  for (int o = 0; o < 2; ++o)
    for (int in = 0; in < 2; ++in) {
      uint64_t x = 0;
      for (int j = 0; j < 8; ++j) x |= static_cast<uint64_t>((col[8 * in + j] >> (8 * o)) & 0xFF) << (8 * j);
      out[2 * o + in] = __builtin_bswap64(transpose8x8(x));
    }
}

}  // namespace

void gfni16_matrices(uint16_t c, uint32_t poly, uint64_t out[4]) {
  if (poly != 0x1100B) {
    gfni16_direct(c, poly, out);
    return;
  }
  // The matrix of c is linear in c too: the XOR of the matrices of the x^b
  // for the set bits b of c. From 16 basis matrices built once this costs a
  // few dozen independent ANDs and XORs instead of 16 dependent shift-reduce
  // steps and four transpositions -- it matters to the unprepared gf::mad(),
  // which prepares its constant on every call.
  struct Basis {
    uint64_t m[16][4];
  };
  static const Basis basis = [] {
    Basis b{};
    for (int i = 0; i < 16; ++i) gfni16_direct(static_cast<uint16_t>(1u << i), 0x1100B, b.m[i]);
    return b;
  }();
  // Four scalars, not an array: GCC kept an array on the stack and chained
  // every iteration through a store and a reload.
  uint64_t r0 = 0, r1 = 0, r2 = 0, r3 = 0;
  for (int i = 0; i < 16; ++i) {
    const uint64_t mask = 0 - static_cast<uint64_t>((c >> i) & 1);
    r0 ^= basis.m[i][0] & mask;
    r1 ^= basis.m[i][1] & mask;
    r2 ^= basis.m[i][2] & mask;
    r3 ^= basis.m[i][3] & mask;
  }
  out[0] = r0;
  out[1] = r1;
  out[2] = r2;
  out[3] = r3;
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

// ── GF(2^16) ───────────────────────────────────────────────────────────────

// mad16_gfni512 runs 512-bit vectors on regions up to this many bytes,
// 256-bit ones on larger regions (see there).
constexpr size_t kWideLoopBytes = 8192;

COLLPLAN_GFNI512 void mad16_gfni512(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const Mat16x512 M = mat16_512(t.gfni16);
  const Mat16x256 M2 = mat16_256(t.gfni16);
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

COLLPLAN_GFNI512 void mul16_gfni512(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const Mat16x512 M = mat16_512(t.gfni16);
  const size_t nb = 2 * n;
  // Both halves of a block are loaded before either is stored: src == dst is safe.
  for (size_t i = 0; i < nb; i += 128) {
    const __mmask64 k0 = mask_first(nb - i), k1 = nb - i > 64 ? mask_first(nb - i - 64) : 0;
    __m512i ra, rb;
    mul16x64(M, _mm512_maskz_loadu_epi8(k0, s + i), _mm512_maskz_loadu_epi8(k1, s + i + 64), ra, rb);
    _mm512_mask_storeu_epi8(d + i, k0, ra);
    _mm512_mask_storeu_epi8(d + i + 64, k1, rb);
  }
}

COLLPLAN_GFNI512 void dot16_gfni512(size_t k, size_t m, const MadTable* coef, const void* const* src,
                                    void* const* dst, size_t n) {
  const size_t nb = 2 * n;
  for (size_t i = 0; i < nb; i += 128) {
    const __mmask64 k0 = mask_first(nb - i), k1 = nb - i > 64 ? mask_first(nb - i - 64) : 0;
    for (size_t j = 0; j < m; ++j) {
      // Summed in the packed domain; re-interleaved once per output block.
      __m512i alo = _mm512_setzero_si512(), ahi = _mm512_setzero_si512();
      for (size_t s = 0; s < k; ++s) {
        const auto* p = static_cast<const unsigned char*>(src[s]) + i;
        __m512i lo, hi, rlo, rhi;
        split16(_mm512_maskz_loadu_epi8(k0, p), _mm512_maskz_loadu_epi8(k1, p + 64), lo, hi);
        mul16(mat16_512(coef[j * k + s].gfni16), lo, hi, rlo, rhi);
        alo = _mm512_xor_si512(alo, rlo);
        ahi = _mm512_xor_si512(ahi, rhi);
      }
      auto* d = static_cast<unsigned char*>(dst[j]) + i;
      _mm512_mask_storeu_epi8(d, k0, _mm512_unpacklo_epi8(alo, ahi));
      _mm512_mask_storeu_epi8(d + 64, k1, _mm512_unpackhi_epi8(alo, ahi));
    }
  }
}

COLLPLAN_GFNI void mad16_gfni(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const Mat16x256 M = mat16_256(t.gfni16);
  const size_t nb = 2 * n;
  size_t i = 0;
  for (; i + 64 <= nb; i += 64) {
    __m256i ra, rb;
    mul16x32(M, ld256(s + i), ld256(s + i + 32), ra, rb);
    st256(d + i, _mm256_xor_si256(ld256(d + i), ra));
    st256(d + i + 32, _mm256_xor_si256(ld256(d + i + 32), rb));
  }
  if (i < nb) mad16_scalar(f, t, s + i, d + i, (nb - i) / 2);
}

COLLPLAN_GFNI void mul16_gfni(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const Mat16x256 M = mat16_256(t.gfni16);
  const size_t nb = 2 * n;
  size_t i = 0;
  // Both halves of a block are loaded before either is stored: src == dst is safe.
  for (; i + 64 <= nb; i += 64) {
    __m256i ra, rb;
    mul16x32(M, ld256(s + i), ld256(s + i + 32), ra, rb);
    st256(d + i, ra);
    st256(d + i + 32, rb);
  }
  if (i < nb) mul16_scalar(f, t, s + i, d + i, (nb - i) / 2);
}

COLLPLAN_GFNI void dot16_gfni(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src,
                              void* const* dst, size_t n) {
  const size_t nb = 2 * n;
  size_t i = 0;
  for (; i + 64 <= nb; i += 64) {
    for (size_t j = 0; j < m; ++j) {
      // Summed in the packed domain; re-interleaved once per output block.
      __m256i alo = _mm256_setzero_si256(), ahi = _mm256_setzero_si256();
      for (size_t s = 0; s < k; ++s) {
        const auto* p = static_cast<const unsigned char*>(src[s]) + i;
        __m256i lo, hi, rlo, rhi;
        split16(ld256(p), ld256(p + 32), lo, hi);
        mul16(mat16_256(coef[j * k + s].gfni16), lo, hi, rlo, rhi);
        alo = _mm256_xor_si256(alo, rlo);
        ahi = _mm256_xor_si256(ahi, rhi);
      }
      auto* d = static_cast<unsigned char*>(dst[j]) + i;
      st256(d, _mm256_unpacklo_epi8(alo, ahi));
      st256(d + 32, _mm256_unpackhi_epi8(alo, ahi));
    }
  }
  // Fewer than 32 elements left: term by term.
  if (i == nb) return;
  for (size_t j = 0; j < m; ++j) {
    auto* d = static_cast<unsigned char*>(dst[j]) + i;
    mul16_scalar(f, coef[j * k], static_cast<const unsigned char*>(src[0]) + i, d, (nb - i) / 2);
    for (size_t s = 1; s < k; ++s)
      mad16_scalar(f, coef[j * k + s], static_cast<const unsigned char*>(src[s]) + i, d, (nb - i) / 2);
  }
}

}  // namespace collplan::gf::detail
