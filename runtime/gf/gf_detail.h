// Internals of the GF region kernels, exposed so that tests and benchmarks can
// exercise every implementation the CPU supports, not only the one the
// dispatcher picks. Applications use gf_kernels.h.
//
// All functions here take a prepared constant and handle every c (including
// 0 and 1) without shortcuts; the public entry points add those shortcuts.
// Same buffer format and overlap rules as gf_kernels.h.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/gf/gf_kernels.h"

namespace collplan::gf::detail {

using PreparedFn = void (*)(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
using AddFn = void (*)(const Field& f, const void* src, void* dst, size_t n);

struct Impl {
  const char* name;
  PreparedFn mad;  // dst += c*src
  PreparedFn mul;  // dst  = c*src
  AddFn add;       // dst += src
};

// Every implementation usable for f on this CPU; the dispatched one first.
std::vector<Impl> implementations(const Field& f);
// The implementation mad()/mul()/add()/dot() use for f.
const Impl& dispatched(const Field& f);

// The engine's entry points into the GF kernel library
// (runtime/embedded/collplan_gf*.h), each a thin wrapper taking the
// engine's Field and prepared tables (gf_kernels.cpp).

bool cpu_has_avx2();
bool cpu_has_gfni();     // GFNI and AVX2
bool cpu_has_gfni512();  // GFNI and AVX-512BW

// GF(2^8) with GFNI (collplan_gf_gfni.h): kernels take the 8x8 bit matrix
// of multiplication by c (collplan_gf::gfni8) from t.gfni.
void mad8_gfni(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul8_gfni(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mad8_gfni512(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul8_gfni512(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
// gf::dot for gf256 with GFNI + AVX-512: mats = m x k matrices (gfni_matrix).
// Each 64-byte block of an output is summed in a register over all k
// sources and stored once.
void dot8_gfni512(size_t k, size_t m, const uint64_t* mats, const void* const* src, void* const* dst, size_t n);

// GF(2^16) with GFNI (collplan_gf_gfni.h): the four 8x8 blocks of the 16x16 bit
// matrix of multiplication by c modulo `poly`, out[2·o + i] mapping input
// byte i (0 = low) to output byte o, each in GF2P8AFFINEQB's layout; kernels
// take them from t.gfni16. Tails: masked (AVX-512), the scalar matrix
// product (AVX2).
void gfni16_matrices(uint16_t c, uint32_t poly, uint64_t out[4]);
void mad16_gfni(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul16_gfni(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mad16_gfni512(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul16_gfni512(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
// gf::dot for gf65536, k >= 1, coef = m x k prepared constants (prepare_mad).
// Each block of an output (64 elements with AVX-512, 32 with AVX2) is summed
// in registers over all k sources, in the de-interleaved (low/high byte)
// domain, and re-interleaved and stored once. The AVX2 version does the last
// < 32 elements term by term (scalar).
void dot16_gfni512(size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst, size_t n);
void dot16_gfni(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
                size_t n);

// GF(65537): 2^16 ≡ −1, so c·x = hi·2^16 + lo ≡ lo − hi. Constants c < 2^16
// make c·x < 2^32 exact in 32 bits; c = 65536 ≡ −1 is a negation.
void mad65537_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul65537_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mad65537_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul65537_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);

// Prime-field dot products with delayed reduction (collplan_gf_avx2.h): same
// contract as gf::dot for k >= 1, coef = m x k prepared constants. Products
// are summed unreduced and reduced once per output element (per group of
// terms whose sum could overflow), instead of once per term.
void dotp_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
               size_t n);
void dot65537_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src,
                   void* const* dst, size_t n);
// q = 2^31 − 1 only: dotp_avx2's delayed sums with the Mersenne fold
// ((v & q) + (v >> 31)) every 4 terms instead of Shoup's.
void dotm31_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
                 size_t n);
// Every prime q < 2^31: Shoup's product per term (as madp_avx2) with each
// output tile summed in registers over all k terms and stored once.
void dots_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
               size_t n);
// The one of the four above that gf::dot runs for f (by q).
void dot_prime_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src,
                    void* const* dst, size_t n);
// GF(2^16) by the split tables of coef (AVX2 without GFNI): each block of 32
// elements of an output summed over all k sources, stored once.
void dot16_avx2(size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst, size_t n);

// Portable fast paths (the library's _base kernels; GF(2^16) log/exp is the
// engine's own, from Field's tables).
void mad16_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul16_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void madp_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mulp_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void xor_scalar(const Field& f, const void* src, void* dst, size_t n);
void addp_scalar(const Field& f, const void* src, void* dst, size_t n);

// AVX2 paths (collplan_gf_avx2.h); call only when cpu_has_avx2(). Tails
// shorter than one vector go to the scalar versions.
void mad16_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul16_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void madp_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mulp_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void xor_avx2(const Field& f, const void* src, void* dst, size_t n);
void addp_avx2(const Field& f, const void* src, void* dst, size_t n);

}  // namespace collplan::gf::detail
