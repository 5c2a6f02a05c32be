// collplan_gf_base.h — the GF kernel library: prepared forms and the portable
// (`_base`) kernels every other path is checked against and falls back to.
//
// The library is header-only, C++17 and freestanding: no heap, no
// exceptions, no RTTI, nothing beyond <stdint.h>, <stddef.h> and <string.h>
// (and a target's intrinsics header in the SIMD files). It is laid out as
// ISA-L lays out its erasure code: one file per instruction set, each
// kernel named after it, and a dispatcher:
//
//   collplan_gf_base.h    this file: prepared coefficients (constexpr) and
//                         the scalar kernels (any CPU, microcontrollers)
//   collplan_gf_avx2.h    x86 AVX2: split tables (VPSHUFB), prime fields
//   collplan_gf_gfni.h    x86 GFNI with AVX2 or AVX-512BW: GF2P8AFFINEQB
//   collplan_gf_neon.h    AArch64 Advanced SIMD: split tables (TBL)
//   collplan_gf.h         which of them a translation unit compiles and the
//                         run-time choice among the x86 ones
//
// Both users compile the same kernels: the replay engine (runtime/gf/, an
// adapter from its Field and prepared tables) and emitted C++
// (collplan_kernels.h, the field types of collplan_embedded.h).
//
// ─── Conventions of every kernel ────────────────────────────────────────────
//
// Regions are n elements of 1 (GF(2^8)), 2 (GF(2^16)) or 4 (prime fields)
// bytes, host byte order, canonical values; no alignment is needed. mul
// allows src == dst; mad and add need disjoint regions. A dot
//   dot(k, m, co, src, dst, n, accumulate)
// computes, for each output j < m, dst[j][i] (+)= Σ_{s<k} co(j, s) · src[s][i]
// (overwritten, or added to when `accumulate`), k >= 1. Coefficients come
// through an accessor co(j, s) so that each user keeps its own table layout
// (the engine m x k row-major arrays, emitted code a constexpr array of
// its Coef). Every vector and prime-field dot reads all k sources of a block
// before it stores the block, so with m = 1 the output may be one of the
// sources (the same pointer), as emitted code needs; dot_split_base (the
// scalar GF(2^m) dot) goes term by term and may not.
//
// Prepared forms of a constant c:
//   GF(2^8)   gfni8(c): the 8x8 bit matrix of x ↦ c·x in GF2P8AFFINEQB's
//             layout; split tables split[h][v] = c·(v << 4h), h < 2
//   GF(2^16)  gfni16(c): four 8x8 blocks, a[2·o + i] mapping input byte i to
//             output byte o (0 = low); split tables split[2h + b][v] = byte b
//             of c·(v << 4h), h < 4
//   GF(q)     c and Shoup's constant ⌊c·2^32 / q⌋ (PrimeCoef)
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

// Forces inlining where the compiler allows it: the dots take their
// coefficients through accessors, and the prime field's modulus is often a
// compile-time constant at the call site.
#if defined(__GNUC__) || defined(__clang__)
#define COLLPLAN_GF_INLINE __attribute__((always_inline)) inline
#else
#define COLLPLAN_GF_INLINE inline
#endif

namespace collplan_gf {

// ─── scalar arithmetic and prepared forms ───────────────────────────────────

// a·b in GF(2^m) modulo `poly` (with its x^m bit; shift-and-add).
constexpr uint32_t gf2m_mul(uint32_t a, uint32_t b, uint32_t m, uint32_t poly) {
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

// The GF2P8AFFINEQB matrix of the 8x8 block of x ↦ c·x in GF(2^m) that maps
// input byte `in_byte` of x to output byte `out_byte`. Result bit i =
// parity(matrix byte 7−i & x), so row i (byte 7−i) holds, in bit j, bit
// 8·out_byte + i of c·x^(8·in_byte + j). The columns c·x^j come from one
// shift-and-reduce each, not a general multiply.
constexpr uint64_t gfni_block(uint32_t c, uint32_t m, uint32_t poly, uint32_t out_byte, uint32_t in_byte) {
  uint32_t col[8] = {};
  uint32_t p = c;
  for (uint32_t j = 0; j < 8 * in_byte; ++j) {
    p <<= 1;
    if (p & (1u << m)) p ^= poly;
  }
  for (uint32_t j = 0; j < 8; ++j) {
    col[j] = p;
    p <<= 1;
    if (p & (1u << m)) p ^= poly;
  }
  uint64_t a = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    uint64_t row = 0;
    for (uint32_t j = 0; j < 8; ++j) row |= static_cast<uint64_t>((col[j] >> (8 * out_byte + i)) & 1u) << j;
    a |= row << (8 * (7 - i));
  }
  return a;
}

// GF(2^8): the matrix of x ↦ c·x.
constexpr uint64_t gfni8(uint32_t c, uint32_t poly) { return gfni_block(c, 8, poly, 0, 0); }

// GF(2^16): the four blocks of x ↦ c·x into a[0..3] (a[2·o + i]).
constexpr void gfni16(uint32_t c, uint32_t poly, uint64_t* a) {
  for (uint32_t o = 0; o < 2; ++o)
    for (uint32_t i = 0; i < 2; ++i) a[2 * o + i] = gfni_block(c, 16, poly, o, i);
}

// Split tables of x ↦ c·x in GF(2^m) (m = 8 or 16): split[h·B + b][v] =
// byte b of c·(v << 4h), B = m/8 bytes per element. Multiplication is linear,
// so each table is built from the four products c·x^(4h+i) by XORs.
constexpr void split_tables(uint32_t c, uint32_t m, uint32_t poly, uint8_t (*split)[16]) {
  const uint32_t B = m / 8;
  for (uint32_t h = 0; h < m / 4; ++h) {
    const uint32_t b = gf2m_mul(c, 1u << (4 * h), m, poly);
    uint32_t e[16] = {};
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t ci = gf2m_mul(b, 1u << i, m, poly);
      for (uint32_t v = 0; v < (1u << i); ++v) e[(1u << i) | v] = e[v] ^ ci;
    }
    for (uint32_t v = 0; v < 16; ++v)
      for (uint32_t b8 = 0; b8 < B; ++b8) split[h * B + b8][v] = static_cast<uint8_t>(e[v] >> (8 * b8));
  }
}

// A prime-field constant with Shoup's precomputed quotient.
struct PrimeCoef {
  uint32_t c = 0;
  uint64_t shoup = 0;  // ⌊c·2^32 / q⌋
};
constexpr PrimeCoef prime_coef(uint32_t c, uint32_t q) {
  return PrimeCoef{c, (static_cast<uint64_t>(c) << 32) / q};
}

// Shoup: c·x − ⌊c'·x / 2^32⌋·q lies in [0, 2q) and fits in 32 bits because
// q < 2^31, so it may be computed modulo 2^32.
inline uint32_t shoup_mul(uint32_t c, uint64_t cp, uint32_t x, uint32_t q) {
  const uint32_t qh = static_cast<uint32_t>((cp * x) >> 32);
  const uint32_t r = c * x - qh * q;
  return r >= q ? r - q : r;
}
inline uint32_t add_mod(uint32_t a, uint32_t b, uint32_t q) {
  const uint32_t s = a + b;  // < 2^32: both < 2^31
  return s >= q ? s - q : s;
}

// c·x mod 65537 through 2^16 ≡ −1: for c < 2^16, c·x < 2^32 and c·x =
// hi·2^16 + lo ≡ lo − hi; c = 65536 ≡ −1 is a negation.
inline uint32_t mul65537(uint32_t c, uint32_t x) {
  if (c == 65536) return x ? 65537 - x : 0;
  const uint32_t p = c * x;
  const uint32_t r = (p & 0xFFFF) + 65537 - (p >> 16);  // in [2, 131072]
  return r >= 65537 ? r - 65537 : r;
}

// One byte through a GF2P8AFFINEQB matrix (the vector paths' tails).
inline uint8_t affine_byte(uint64_t a, uint8_t x) {
  uint8_t r = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    uint8_t v = static_cast<uint8_t>((a >> (8 * (7 - i))) & x);
    v ^= v >> 4;
    v ^= v >> 2;
    v ^= v >> 1;
    r = static_cast<uint8_t>(r | ((v & 1u) << i));
  }
  return r;
}
// c·x in GF(2^16) from the four blocks.
inline uint16_t affine_elem16(const uint64_t* a, uint16_t x) {
  const uint8_t lo = static_cast<uint8_t>(x), hi = static_cast<uint8_t>(x >> 8);
  return static_cast<uint16_t>((affine_byte(a[0], lo) ^ affine_byte(a[1], hi)) |
                               ((affine_byte(a[2], lo) ^ affine_byte(a[3], hi)) << 8));
}

// c·x in GF(2^m) from the split tables: the XOR over the nibbles of x.
template <uint32_t M>
inline uint32_t split_elem(const uint8_t (*split)[16], uint32_t x) {
  constexpr uint32_t B = M / 8;
  uint32_t r = 0;
  for (uint32_t h = 0; h < M / 4; ++h)
    for (uint32_t b = 0; b < B; ++b) r ^= static_cast<uint32_t>(split[h * B + b][(x >> (4 * h)) & 15]) << (8 * b);
  return r;
}

template <uint32_t M>
struct Elem2m;
template <>
struct Elem2m<8> {
  using type = uint8_t;
};
template <>
struct Elem2m<16> {
  using type = uint16_t;
};

template <class T>
inline T load_at(const void* p, size_t i) {
  T v;
  memcpy(&v, static_cast<const unsigned char*>(p) + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
inline void store_at(void* p, size_t i, T v) {
  memcpy(static_cast<unsigned char*>(p) + i * sizeof(T), &v, sizeof(T));
}

// Elements i .. n−1 of a dot, one at a time, every source of an element read
// before it is stored: the vector paths' last partial vector. prod(j, s, x)
// is co(j, s)·x, add the field's sum.
template <class E, class Prod, class Add>
inline void dot_elems(size_t k, size_t m, const Prod& prod, const Add& add, const void* const* src, void* const* dst,
                      size_t i, size_t n, bool accumulate) {
  for (; i < n; ++i)
    for (size_t j = 0; j < m; ++j) {
      E r = accumulate ? load_at<E>(dst[j], i) : E(0);
      for (size_t s = 0; s < k; ++s) r = static_cast<E>(add(r, prod(j, s, load_at<E>(src[s], i))));
      store_at<E>(dst[j], i, r);
    }
}
// GF(2^m) addition for dot_elems.
struct XorOp {
  uint32_t operator()(uint32_t a, uint32_t b) const { return a ^ b; }
};

// ─── the _base kernels ──────────────────────────────────────────────────────

// dst ^= src over `bytes` bytes (addition in GF(2^m)).
inline void xor_base(const void* src, void* dst, size_t bytes) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) store_at<uint64_t>(d + i, 0, load_at<uint64_t>(d + i, 0) ^ load_at<uint64_t>(s + i, 0));
  for (; i < bytes; ++i) d[i] = static_cast<unsigned char>(d[i] ^ s[i]);
}

// GF(2^m), m = 8 or 16, from the split tables: dst ^= c·src, dst = c·src.
template <uint32_t M>
inline void mad_split_base(const uint8_t (*split)[16], const void* src, void* dst, size_t n) {
  using E = typename Elem2m<M>::type;
  for (size_t i = 0; i < n; ++i)
    store_at<E>(dst, i, static_cast<E>(load_at<E>(dst, i) ^ split_elem<M>(split, load_at<E>(src, i))));
}
template <uint32_t M>
inline void mul_split_base(const uint8_t (*split)[16], const void* src, void* dst, size_t n) {
  using E = typename Elem2m<M>::type;
  for (size_t i = 0; i < n; ++i) store_at<E>(dst, i, static_cast<E>(split_elem<M>(split, load_at<E>(src, i))));
}

// GF(2^m) dot from the split tables, term by term over the whole region: a
// lookup per byte is what bounds a scalar GF(2^m) kernel on a superscalar
// core (grouping terms per pass to save destination loads and stores
// measured no faster), and a term's pass streams one source and the
// destination. From kByteTablesFrom elements on, a term first expands its
// nibble tables into 256-entry byte tables (one lookup per byte of x).
// Unlike every other dot, the output must not be one of the sources.
// co(j, s) returns the split tables (const uint8_t (*)[16]) of a
// coefficient and one(j, s) whether it is 1 (a plain XOR or copy).
constexpr size_t kByteTablesFrom = 256;  // elements; below, building 256 entries costs more than it saves
template <uint32_t M, class Co, class One>
inline void dot_split_base(size_t k, size_t m, const Co& co, const One& one, const void* const* src,
                           void* const* dst, size_t n, bool accumulate) {
  using E = typename Elem2m<M>::type;
  constexpr uint32_t B = M / 8;
  for (size_t j = 0; j < m; ++j) {
    E* d = static_cast<E*>(dst[j]);
    for (size_t s = 0; s < k; ++s) {
      const E* x = static_cast<const E*>(src[s]);
      const bool first = s == 0 && !accumulate;
      if (one(j, s)) {
        if (first) {
          if (static_cast<const void*>(d) != static_cast<const void*>(x)) memcpy(d, x, n * sizeof(E));
        } else {
          xor_base(x, d, n * sizeof(E));
        }
        continue;
      }
      const uint8_t(*t)[16] = co(j, s);
      if (n >= kByteTablesFrom) {
        // tb[b][16·hi + lo] = c·(hi << (8b + 4)) ⊕ c·(lo << 8b): 256 XORs per byte of x.
        E tb[B][256];
        for (uint32_t b = 0; b < B; ++b)
          for (uint32_t h = 0; h < 16; ++h)
            for (uint32_t l = 0; l < 16; ++l)
              tb[b][16 * h + l] = static_cast<E>(split_elem<M>(t, (h << (8 * b + 4)) | (l << (8 * b))));
        if (B == 1) {
          if (first)
            for (size_t i = 0; i < n; ++i) d[i] = tb[0][x[i] & 0xFF];
          else
            for (size_t i = 0; i < n; ++i) d[i] = static_cast<E>(d[i] ^ tb[0][x[i] & 0xFF]);
        } else {
          if (first)
            for (size_t i = 0; i < n; ++i) d[i] = static_cast<E>(tb[0][x[i] & 0xFF] ^ tb[B - 1][(x[i] >> 8) & 0xFF]);
          else
            for (size_t i = 0; i < n; ++i)
              d[i] = static_cast<E>(d[i] ^ tb[0][x[i] & 0xFF] ^ tb[B - 1][(x[i] >> 8) & 0xFF]);
        }
        continue;
      }
      for (size_t i = 0; i < n; ++i) {
        const E r = static_cast<E>(split_elem<M>(t, x[i]));
        d[i] = first ? r : static_cast<E>(d[i] ^ r);
      }
    }
  }
}

// GF(q), q < 2^31, Shoup per element: dst = c·src, dst += c·src, dst += src.
inline void mulp_base(uint32_t q, PrimeCoef t, const void* src, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_at<uint32_t>(dst, i, shoup_mul(t.c, t.shoup, load_at<uint32_t>(src, i), q));
}
inline void madp_base(uint32_t q, PrimeCoef t, const void* src, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i)
    store_at<uint32_t>(dst, i, add_mod(shoup_mul(t.c, t.shoup, load_at<uint32_t>(src, i), q), load_at<uint32_t>(dst, i), q));
}
inline void addp_base(uint32_t q, const void* src, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_at<uint32_t>(dst, i, add_mod(load_at<uint32_t>(src, i), load_at<uint32_t>(dst, i), q));
}
// GF(65537) through 2^16 ≡ −1 (no Shoup constant needed).
inline void mul65537_base(uint32_t c, const void* src, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_at<uint32_t>(dst, i, mul65537(c, load_at<uint32_t>(src, i)));
}
inline void mad65537_base(uint32_t c, const void* src, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i)
    store_at<uint32_t>(dst, i, add_mod(mul65537(c, load_at<uint32_t>(src, i)), load_at<uint32_t>(dst, i), 65537));
}

// GF(q) dot with delayed reduction: a term's product c·x < q² < 2^62 is
// summed unreduced in 64 bits; the sum is reduced only when the next product
// could overflow (every (2^64 − 1 − q) / (q − 1)² terms; for q = 65537 never
// before 2^32 terms) and at the end. Blocks of 128 elements (1 KiB of sums on
// the stack), every source of a block read before the block is stored.
// Inlined where q is a compile-time constant, `% q` is a multiply.
// co(j, s) returns the coefficient (uint32_t).
template <class Co>
COLLPLAN_GF_INLINE void dotp_base(uint32_t q, size_t k, size_t m, const Co& co,
                            const void* const* src, void* const* dst, size_t n, bool accumulate) {
  constexpr size_t kBlock = 128;
  const uint64_t fold = (~uint64_t{0} - q) / (static_cast<uint64_t>(q - 1) * (q - 1) + 1);
  uint64_t acc[kBlock];
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t len = n - b < kBlock ? n - b : kBlock;
    for (size_t j = 0; j < m; ++j) {
      for (size_t i = 0; i < len; ++i) acc[i] = accumulate ? load_at<uint32_t>(dst[j], b + i) : 0;
      uint64_t since = accumulate ? 1 : 0;  // terms in acc since the last reduction
      for (size_t s = 0; s < k; ++s) {
        if (since == fold) {
          for (size_t i = 0; i < len; ++i) acc[i] %= q;
          since = 1;
        }
        const uint64_t c = co(j, s);
        for (size_t i = 0; i < len; ++i) acc[i] += c * load_at<uint32_t>(src[s], b + i);
        ++since;
      }
      for (size_t i = 0; i < len; ++i) store_at<uint32_t>(dst[j], b + i, static_cast<uint32_t>(acc[i] % q));
    }
  }
}

}  // namespace collplan_gf
