// GF region kernels: element-wise arithmetic on buffers of field elements.
//
// Buffer format. A buffer of n elements of Field f holds n * f.elem_bytes()
// bytes: 1 byte per element for gf256, 2 for gf65536, 4 for prime fields,
// native (little-endian) byte order, every element canonical (< f.size()).
// Pointers need no alignment (not even to the element width). Kernels never
// allocate, except dot() for k*m > 64 (documented there); prepare_dot()
// allocates its tables.
//
// Every kernel exists twice with the same signature:
//   name_base  a portable reference written with Field's scalar operations;
//              it is what the fast version is tested against;
//   name       the dispatched fast version (kernel_name(f) says which).
//
// Fast paths (the dispatcher picks the first the CPU supports) are the GF
// kernel library's (runtime/embedded/collplan_gf*.h, which emitted code
// compiles too), except ISA-L and the GF(2^16) log/exp path:
//   gf256      GFNI: multiplication by c as one GF2P8AFFINEQB bit-matrix
//              product per 64 bytes (AVX-512BW) or 32 bytes (AVX2), any
//              polynomial (collplan_gf_gfni.h); dot() sums each 64-byte block of
//              an output over all sources in a register (AVX-512 only).
//              Otherwise ISA-L (libisal >= 2.30). Requirements of the ISA-L entry points
//              and how they are met here:
//                gf_vect_mad(len, vec, vec_i, tbls, src, dst)
//                  len >= 64 (the AVX-512 version rejects shorter; AVX2 needs
//                  32), any len above that (it finishes with an overlapping
//                  masked block), no alignment. Regions shorter than 64 bytes
//                  go through a scalar loop. Its table comes from
//                  ec_init_tables (one coefficient = one 32-byte table).
//              The tables of all 256 constants are built once (16 KiB) and
//              shared, so mad()/mul()/prepare_mad() build none per call.
//                gf_vect_mul(len, tbl, src, dst)
//                  len a multiple of 32 and > 0, src and dst 32-byte aligned
//                  (aligned loads/stores). When src and dst have the same
//                  offset mod 32, the head up to the boundary and the tail
//                  below 32 bytes are done by a scalar loop and the middle by
//                  ISA-L; otherwise the region is staged through an aligned
//                  4 KiB bounce buffer on the stack. In-place (src == dst)
//                  is safe: each 32-byte block is loaded before it is stored.
//                  Its table comes from gf_vect_mul_init.
//                ec_encode_data(len, k, rows, tbls, data, coding)
//                  any len >= 0 (it falls back to its own base version below
//                  64), no alignment; tbls is 32*k*rows bytes from
//                  ec_init_tables(k, rows, a, tbls) where a is rows x k
//                  row-major (row = output) -- the same layout as dot()'s
//                  coeffs.
//              ISA-L takes `int len`, so regions of 2^30 bytes and more are
//              processed in chunks. XOR (add) is a word loop, AVX2 when the
//              CPU has it.
//   gf65536    GFNI: multiplication by c is a 16x16 bit matrix, four 8x8
//              blocks (MadTable::gfni16). The low and high bytes of 64
//              (AVX-512BW) or 32 (AVX2) elements are gathered by PSHUFB
//              and PUNPCK{L,H}QDQ (mad's AVX-512 version runs 256-bit
//              vectors on regions above 8 KiB),
//              out_lo = M_ll*lo ^ M_lh*hi and out_hi = M_hl*lo ^ M_hh*hi
//              (four GF2P8AFFINEQB), then PUNPCK{L,H}BW restores the element
//              order (collplan_gf_gfni.h). dot() sums each block of an output over
//              all sources in that de-interleaved form and re-interleaves it
//              once. Tails: masked loads/stores (AVX-512), scalar (AVX2).
//              Otherwise AVX2 split tables -- c*x = XOR over the four nibbles
//              of x of c*(nibble << 4j), each a 16-entry byte table (low and
//              high product byte): eight PSHUFB lookups per 32 elements.
//              Without AVX2: log/exp with log(c) hoisted.
//   prime:q    Shoup multiplication by a constant: c' = floor(c * 2^32 / q),
//              then c*x mod q = c*x - floor(c'*x / 2^32)*q, minus q once if
//              needed (exact for q < 2^31). AVX2 (8 lanes) or scalar.
//              dot() for q < 2^30 (AVX2): delayed reduction -- 64-bit
//              products summed unreduced, folded back by two Shoup products
//              only when the sum could overflow (every >= 16 terms) and once
//              at the end; q = 2^31 - 1: the same sums folded every 4
//              terms by (v & q) + (v >> 31) (2^31 = 1), no multiplies;
//              other q from 2^30: Shoup per term with the sum of each
//              output tile kept in registers (collplan_gf_avx2.h).
//   prime:65537  2^16 = -1: c*x = hi*2^16 + lo = lo - hi, no multiply for the
//              reduction (c = 65536 = -1 is a negation). dot() sums the low
//              and the high halves in separate 32-bit lanes, combining and
//              reducing them once per 2^14 terms.
//
// Overlap. mul() allows src == dst (exactly equal); otherwise, and for mad(),
// add() and dot(), source and destination regions must not overlap.
//
// Constants c must be field elements (< f.size()); the unprepared entry points
// and prepare_*() check it (InternalError: callers validate user input
// first). The *_prepared kernels check nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "field/field.h"

namespace collplan::gf {

// dst[i] += c * src[i]
void mad(const Field& f, Elem c, const void* src, void* dst, size_t n);
void mad_base(const Field& f, Elem c, const void* src, void* dst, size_t n);

// dst[i] = c * src[i]   (src == dst allowed)
void mul(const Field& f, Elem c, const void* src, void* dst, size_t n);
void mul_base(const Field& f, Elem c, const void* src, void* dst, size_t n);

// dst[i] += src[i]
void add(const Field& f, const void* src, void* dst, size_t n);
void add_base(const Field& f, const void* src, void* dst, size_t n);

// k sources -> m outputs; coeffs is m x k row-major:
//   dst[j][i] = sum_s coeffs[j*k + s] * src[s][i]   (dst overwritten)
// k = 0 zeroes the outputs. No dst may overlap a src or another dst. The fast
// version builds a 32*k*m-byte table for gf256 (k*m prepared constants
// otherwise; for gf65536 on GFNI CPUs only their bit matrices) on every call; it lives on the stack up to k*m <= 64 and is
// heap-allocated above that -- use prepare_dot/dot_prepared in hot loops.
// The vector dots (gf256 with GFNI + AVX-512, gf65536 with GFNI or AVX2,
// prime fields with AVX2) keep each output block in registers over all k
// sources; the scalar paths work in 8 KiB blocks so that each output block
// stays in L1 while the k sources are folded into it.
void dot(const Field& f, size_t k, size_t m, const Elem* coeffs, const void* const* src, void* const* dst,
         size_t n);
void dot_base(const Field& f, size_t k, size_t m, const Elem* coeffs, const void* const* src, void* const* dst,
              size_t n);

// The implementation the dispatcher picks for f: "gfni-avx512", "gfni-avx2"
// or "isa-l" (gf256), "gfni-avx512", "gfni-avx2", "avx2-split-table" or
// "scalar-log-exp" (gf65536),
// "avx2-65537" or "scalar-65537" (prime:65537), "avx2-shoup" or
// "scalar-shoup" (other prime fields).
const char* kernel_name(const Field& f);

// ── Prepared constants, for loops that apply the same constant many times ──
//
// A MadTable is everything a multiply by c needs, built once (e.g. at plan
// load): the ISA-L tables and GFNI matrix for gf256, the GFNI matrices, split
// tables and log(c) for gf65536, Shoup's constant for prime fields (every
// implementation's data, so one table serves whichever the CPU runs). It is tied to the field it was prepared
// for; using it with another field is undefined. Plain data, copyable.
struct MadTable {
  Elem c = 0;
  uint32_t log_c = 0;  // gf65536: log(c) for the scalar path (c != 0)
  uint64_t shoup = 0;  // prime: floor(c * 2^32 / q)
  // gf256: ec_init_tables(1, 1, &c) -- what gf_vect_mad consumes.
  alignas(32) unsigned char mad_tbl[32] = {};
  // gf256: gf_vect_mul_init(c) -- what gf_vect_mul consumes; its documented
  // layout {c*0..c*15}, {c*0x00, c*0x10, .., c*0xf0} also drives the scalar
  // head/tail loops.
  alignas(32) unsigned char mul_tbl[32] = {};
  // gf65536: split[2j][v] = low byte, split[2j+1][v] = high byte of
  // c * (v << 4j), j = 0..3, v = 0..15.
  alignas(32) unsigned char split[8][16] = {};
  // gf256: the GF2P8AFFINEQB matrix of multiplication by c (GFNI path).
  uint64_t gfni = 0;
  // gf65536: the four 8x8 blocks of the 16x16 bit matrix of multiplication
  // by c, gfni16[2*o + i] mapping input byte i to output byte o (0 = low
  // byte), each in GF2P8AFFINEQB's layout (GFNI paths).
  uint64_t gfni16[4] = {};
};

MadTable prepare_mad(const Field& f, Elem c);
// dst[i] += t.c * src[i]
void mad_prepared(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
// dst[i] = t.c * src[i]   (src == dst allowed)
void mul_prepared(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);

// dot() with its tables built once.
struct DotTables {
  size_t k = 0, m = 0;
  std::vector<MadTable> coef;         // not gf256: m*k prepared coefficients (row-major; gf65536 GFNI dots read their gfni16)
  std::vector<unsigned char> gftbls;  // gf256: ec_init_tables(k, m, coeffs), 32*k*m bytes
  std::vector<uint64_t> gfni;         // gf256 on GFNI + AVX-512 CPUs: m*k affine matrices
};
DotTables prepare_dot(const Field& f, size_t k, size_t m, const Elem* coeffs);
// Same contract as dot(); no allocation when k <= 64 and m <= 64.
void dot_prepared(const Field& f, const DotTables& t, const void* const* src, void* const* dst, size_t n);

}  // namespace collplan::gf
