// The GF region kernels of collplan_embedded.h as they were before the
// kernels of collplan_kernels.h: portable scalar code, one region pass per
// term, tables built per call. Kept only as the baseline bench_emit measures
// the current kernels against, in the same run (bench/emit_kernels.cpp).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace collplan_legacy {

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

// ─── fields ─────────────────────────────────────────────────────────────────

// GF(2^M), M ∈ {8, 16}, reduction polynomial POLY (with its x^M bit).
// Multiplication by a constant c is linear over GF(2), so c·x is the XOR over
// the B-bit digits d_j of x of T_j[d_j] = c·(d_j << Bj). A region call builds
// the tables once (one XOR per entry, from the products c·x^i), then does one
// lookup per digit per element: B = 8 (byte tables, 256 entries each) for
// regions of at least kByteTablesFrom elements, B = 4 (nibble tables) below,
// where building 256 entries would cost more than it saves.
template <uint32_t M, uint32_t POLY>
struct Gf2m {
  static_assert(M == 8 || M == 16, "collplan_embedded: GF(2^m) for m = 8 or 16");
  using elem = typename Gf2mElem<M>::type;
  static constexpr size_t kByteTablesFrom = 256;

  template <uint32_t B>
  struct Tables {
    elem t[M / B][1u << B];
    explicit Tables(elem c) {
      uint32_t b = c;  // c·x^(Bj+i), advanced one x at a time
      for (uint32_t j = 0; j < M / B; ++j) {
        t[j][0] = 0;
        for (uint32_t i = 0; i < B; ++i) {
          for (uint32_t v = 0; v < (1u << i); ++v) t[j][(1u << i) | v] = static_cast<elem>(t[j][v] ^ b);
          b <<= 1;
          if (b & (1u << M)) b ^= POLY;
        }
      }
    }
    elem operator()(elem x) const {
      elem r = 0;
      for (uint32_t j = 0; j < M / B; ++j) r = static_cast<elem>(r ^ t[j][(x >> (B * j)) & ((1u << B) - 1)]);
      return r;
    }
  };

  static void add(elem* dst, const elem* src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<elem>(dst[i] ^ src[i]);
  }
  template <uint32_t B>
  static void mul_with(elem* dst, const elem* src, elem c, size_t n) {
    const Tables<B> tb(c);
    for (size_t i = 0; i < n; ++i) dst[i] = tb(src[i]);
  }
  template <uint32_t B>
  static void mad_with(elem* dst, const elem* src, elem c, size_t n) {
    const Tables<B> tb(c);
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<elem>(dst[i] ^ tb(src[i]));
  }
  static void mul(elem* dst, const elem* src, elem c, size_t n) {
    if (n >= kByteTablesFrom) mul_with<8>(dst, src, c, n);
    else mul_with<4>(dst, src, c, n);
  }
  static void mad(elem* dst, const elem* src, elem c, size_t n) {
    if (n >= kByteTablesFrom) mad_with<8>(dst, src, c, n);
    else mad_with<4>(dst, src, c, n);
  }
};

// GF(Q) for a prime Q < 2^31. Multiplication by a constant c is Shoup's:
// c' = ⌊c·2^32 / Q⌋, then c·x mod Q = c·x − ⌊c'·x / 2^32⌋·Q, less Q once if
// needed (exact for Q < 2^31).
template <uint32_t Q>
struct Prime {
  static_assert(Q >= 2 && Q < (1u << 31), "collplan_embedded: prime fields need Q < 2^31");
  using elem = uint32_t;
  static uint32_t mulc(uint32_t c, uint64_t shoup, uint32_t x) {
    const uint64_t hi = (shoup * x) >> 32;
    uint32_t r = static_cast<uint32_t>(static_cast<uint64_t>(c) * x - hi * Q);
    return r >= Q ? r - Q : r;
  }
  static uint32_t addq(uint32_t a, uint32_t b) {
    const uint32_t s = a + b;  // < 2^32 since both < 2^31
    return s >= Q ? s - Q : s;
  }
  static void add(elem* dst, const elem* src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = addq(dst[i], src[i]);
  }
  static void mul(elem* dst, const elem* src, elem c, size_t n) {
    const uint64_t sh = (static_cast<uint64_t>(c) << 32) / Q;
    for (size_t i = 0; i < n; ++i) dst[i] = mulc(c, sh, src[i]);
  }
  static void mad(elem* dst, const elem* src, elem c, size_t n) {
    const uint64_t sh = (static_cast<uint64_t>(c) << 32) / Q;
    for (size_t i = 0; i < n; ++i) dst[i] = addq(dst[i], mulc(c, sh, src[i]));
  }
};

}  // namespace collplan_legacy
