// collplan_kernels.h — the field types of collplan_embedded.h over the GF
// kernel library (collplan_gf.h and the files it includes, beside this one:
// the same kernels the replay engine runs). Header-only, C++17,
// freestanding-friendly: no heap, no exceptions, no RTTI, no library beyond
// <stdint.h>, <stddef.h> and <string.h> (and the target's intrinsics header
// on the SIMD paths).
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
//   F::dot_rows(dst, m, src, co, stride, k, n, accumulate)
//                           m outputs over the same k sources in one pass:
//                           dst[j][i] (+)= Σ_{s<k} co[j·stride + s].c ·
//                           src[s][i]; no dst[j] may be a source (unless
//                           m = 1, as dot())
//   F::add, F::mul, F::mad  single-term region forms (tests, applications)
//
// ─── Kernel selection ───────────────────────────────────────────────────────
//
// COLLPLAN_EMBEDDED_ISA picks the library's path (collplan_gf.h lists them:
// GFNI_AVX512, GFNI_AVX2, AVX2, X86_DISPATCH -- the default of a plain
// x86-64 build --, NEON, SCALAR). Per field:
//
//   GF(2^8), GF(2^16)  GFNI: the bit matrices of the coefficients
//                      (dot8_gfni*, dot16_gfni*); AVX2 and NEON: split
//                      tables (dot8_avx2, dot16_avx2, dot*_neon); SCALAR:
//                      dot_split_base (256-entry tables expanded per call
//                      and term for regions of at least 256 elements, the
//                      nibble tables below, one pass per term)
//   GF(Q)              every x86 path: dot_prime_avx2 (delayed reduction;
//                      GF(65537) by 2^16 ≡ −1, 2^31 − 1 by its Mersenne
//                      fold); NEON and SCALAR: dotp_base (64-bit sums reduced
//                      only when the next term could overflow; Q is a
//                      compile-time constant, so % Q is a multiply)

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

#include "collplan_gf.h"

namespace collplan_embedded {

// a·b in GF(2^m) modulo `poly` (shift-and-add; a, b < 2^m).
constexpr uint32_t gf2m_mul_scalar(uint32_t a, uint32_t b, uint32_t m, uint32_t poly) {
  return collplan_gf::gf2m_mul(a, b, m, poly);
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

// The kernel path this translation unit runs (for X86_DISPATCH, the one the
// CPU selected).
inline const char* kernel_isa() {
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
  switch (collplan_gf::x86_level()) {
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

// Which prepared forms the selected path reads: bit matrices (GFNI), split
// tables (the others; X86_DISPATCH keeps both).
#define COLLPLAN_EMBEDDED_COEF_GFNI COLLPLAN_GF_HAS_GFNI
#define COLLPLAN_EMBEDDED_COEF_SPLIT \
  (COLLPLAN_EMBEDDED_ISA != COLLPLAN_EMBEDDED_ISA_GFNI_AVX2 && COLLPLAN_EMBEDDED_ISA != COLLPLAN_EMBEDDED_ISA_GFNI_AVX512)

// GF(2^M), M ∈ {8, 16}, reduction polynomial POLY (with its x^M bit).
template <uint32_t M, uint32_t POLY>
struct Gf2m {
  static_assert(M == 8 || M == 16, "collplan_embedded: GF(2^m) for m = 8 or 16");
  using elem = typename collplan_gf::Elem2m<M>::type;
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

  static constexpr Coef prepare(elem c) {
    Coef t{};
    t.c = c;
#if COLLPLAN_EMBEDDED_COEF_GFNI
    for (uint32_t o = 0; o < kBytes; ++o)
      for (uint32_t i = 0; i < kBytes; ++i) t.a[o * kBytes + i] = collplan_gf::gfni_block(c, M, POLY, o, i);
#endif
#if COLLPLAN_EMBEDDED_COEF_SPLIT
    collplan_gf::split_tables(c, M, POLY, t.split);
#endif
    return t;
  }

  // dst (+)= Σ co[s].c · src[s]; see the contract at the top.
  static void dot(elem* dst, const elem* const* src, const Coef* co, uint32_t k, size_t n, bool accumulate) {
    dot_rows(&dst, 1, src, co, k, k, n, accumulate);
  }

  // dst[j] (+)= Σ_{s<k} co[j·stride + s].c · src[s], j < m: m outputs over
  // the same sources in one pass (each block of the sources read once for
  // all m); see the contract at the top (no dst[j] may be a source unless
  // m = 1 and dot() would allow it).
  static void dot_rows(elem* const* dst, uint32_t m, const elem* const* src, const Coef* co, uint32_t stride, uint32_t k,
                       size_t n, bool accumulate) {
    if (k == 0) {
      if (!accumulate)
        for (uint32_t j = 0; j < m; ++j) memset(dst[j], 0, n * sizeof(elem));
      return;
    }
    void* const* d = reinterpret_cast<void* const*>(dst);
    const void* const* s = reinterpret_cast<const void* const*>(src);
#if COLLPLAN_EMBEDDED_COEF_GFNI
    const auto mat = [co, stride](size_t j, size_t i) {
      if constexpr (M == 8)
        return co[j * stride + i].a[0];
      else
        return static_cast<const uint64_t*>(co[j * stride + i].a);
    };
#endif
#if COLLPLAN_EMBEDDED_COEF_SPLIT
    const auto split = [co, stride](size_t j, size_t i) -> const uint8_t(*)[16] { return co[j * stride + i].split; };
#endif
#if COLLPLAN_GF_HAS_GFNI512
    if (collplan_gf::x86_level() >= 4) {
      if constexpr (M == 8)
        collplan_gf::dot8_gfni512(k, m, mat, s, d, n, accumulate);
      else
        collplan_gf::dot16_gfni512(k, m, mat, s, d, n, accumulate);
      return;
    }
#endif
#if COLLPLAN_GF_HAS_GFNI256
    if (collplan_gf::x86_level() >= 3) {
      if constexpr (M == 8)
        collplan_gf::dot8_gfni(k, m, mat, s, d, n, accumulate);
      else
        collplan_gf::dot16_gfni(k, m, mat, s, d, n, accumulate);
      return;
    }
#endif
#if COLLPLAN_GF_HAS_SPLIT_X86
    if (collplan_gf::x86_level() >= 2) {
      if constexpr (M == 8)
        collplan_gf::dot8_avx2(k, m, split, s, d, n, accumulate);
      else
        collplan_gf::dot16_avx2(k, m, split, s, d, n, accumulate);
      return;
    }
#endif
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON
    if constexpr (M == 8)
      collplan_gf::dot8_neon(k, m, split, s, d, n, accumulate);
    else
      collplan_gf::dot16_neon(k, m, split, s, d, n, accumulate);
#elif COLLPLAN_GF_HAS_BASE
    collplan_gf::dot_split_base<M>(k, m, split, [co, stride](size_t j, size_t i) { return co[j * stride + i].c == 1; }, s, d, n, accumulate);
#endif
  }

  // Whether dot() may write dst while dst is also one of its sources (the
  // same pointer): true for the vector paths, which read every source of a
  // block before storing it; false for SCALAR, which goes term by term.
  static bool dot_in_place() {
#if COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
    return collplan_gf::x86_level() >= 2;
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
};

// ─── GF(Q), Q prime ─────────────────────────────────────────────────────────

// GF(Q) for a prime Q < 2^31.
template <uint32_t Q>
struct Prime {
  static_assert(Q >= 2 && Q < (1u << 31), "collplan_embedded: prime fields need Q < 2^31");
  using elem = uint32_t;
  using Coef = collplan_gf::PrimeCoef;  // c and ⌊c·2^32 / Q⌋
  static constexpr Coef prepare(elem c) { return collplan_gf::prime_coef(c, Q); }

  static void dot(elem* dst, const elem* const* src, const Coef* co, uint32_t k, size_t n, bool accumulate) {
    dot_rows(&dst, 1, src, co, k, k, n, accumulate);
  }
  // As Gf2m::dot_rows.
  static void dot_rows(elem* const* dst, uint32_t m, const elem* const* src, const Coef* co, uint32_t stride, uint32_t k,
                       size_t n, bool accumulate) {
    if (k == 0) {
      if (!accumulate)
        for (uint32_t j = 0; j < m; ++j) memset(dst[j], 0, n * sizeof(elem));
      return;
    }
    void* const* d = reinterpret_cast<void* const*>(dst);
    const void* const* s = reinterpret_cast<const void* const*>(src);
#if COLLPLAN_GF_HAS_AVX2
    if (collplan_gf::x86_level() >= 2) {
      collplan_gf::dot_prime_avx2(Q, k, m, [co, stride](size_t j, size_t i) { return co[j * stride + i]; }, s, d, n, accumulate);
      return;
    }
#endif
#if COLLPLAN_GF_HAS_BASE || COLLPLAN_EMBEDDED_ISA == COLLPLAN_EMBEDDED_ISA_NEON
    collplan_gf::dotp_base(Q, k, m, [co, stride](size_t j, size_t i) { return co[j * stride + i].c; }, s, d, n, accumulate);
#endif
  }

  // Every path works block by block (all sources of a block read before it
  // is stored), so dst may also be a source.
  static bool dot_in_place() { return true; }

  static void add(elem* dst, const elem* src, size_t n) { collplan_gf::addp_base(Q, src, dst, n); }
  static void mul(elem* dst, const elem* src, elem c, size_t n) { collplan_gf::mulp_base(Q, prepare(c), src, dst, n); }
  static void mad(elem* dst, const elem* src, elem c, size_t n) { collplan_gf::madp_base(Q, prepare(c), src, dst, n); }
};

}  // namespace collplan_embedded
