// collplan_gf_neon.h — AArch64 Advanced SIMD kernels (`_neon`): GF(2^8) and
// GF(2^16) dots by split tables with TBL, GF(2^16) de-interleaved by LD2/ST2
// (low bytes in one register, high bytes in the other). Part of the GF
// kernel library (collplan_gf_base.h has the conventions); prime fields take
// the _base kernels on AArch64. The last partial vector is done element by
// element (every source of an element read before it is stored).
#pragma once

#include <arm_neon.h>

#include "collplan_gf_base.h"

namespace collplan_gf {

// co(j, s) returns the split tables (const uint8_t (*)[16]) of a coefficient.
template <class Co>
void dot8_neon(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst, size_t n, bool accumulate) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (size_t j = 0; j < m; ++j) {
      uint8_t* d = static_cast<uint8_t*>(dst[j]) + i;
      uint8x16_t acc = accumulate ? vld1q_u8(d) : vdupq_n_u8(0);
      for (size_t s = 0; s < k; ++s) {
        const uint8x16_t x = vld1q_u8(static_cast<const uint8_t*>(src[s]) + i);
        const uint8_t(*t)[16] = co(j, s);
        acc = veorq_u8(acc, veorq_u8(vqtbl1q_u8(vld1q_u8(t[0]), vandq_u8(x, m4)), vqtbl1q_u8(vld1q_u8(t[1]), vshrq_n_u8(x, 4))));
      }
      vst1q_u8(d, acc);
    }
  dot_elems<uint8_t>(k, m, [&co](size_t j, size_t s, uint32_t x) { return split_elem<8>(co(j, s), x); }, XorOp{}, src, dst,
                     i, n, accumulate);
}

template <class Co>
void dot16_neon(size_t k, size_t m, const Co& co, const void* const* src, void* const* dst, size_t n, bool accumulate) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (size_t j = 0; j < m; ++j) {
      uint8_t* d = static_cast<uint8_t*>(dst[j]) + 2 * i;
      uint8x16x2_t acc;
      if (accumulate) {
        acc = vld2q_u8(d);
      } else {
        acc.val[0] = vdupq_n_u8(0);
        acc.val[1] = vdupq_n_u8(0);
      }
      for (size_t s = 0; s < k; ++s) {
        const uint8x16x2_t x = vld2q_u8(static_cast<const uint8_t*>(src[s]) + 2 * i);  // val[0]: low bytes
        const uint8x16_t n0 = vandq_u8(x.val[0], m4), n1 = vshrq_n_u8(x.val[0], 4);
        const uint8x16_t n2 = vandq_u8(x.val[1], m4), n3 = vshrq_n_u8(x.val[1], 4);
        const uint8_t(*t)[16] = co(j, s);
        for (int b = 0; b < 2; ++b)
          acc.val[b] = veorq_u8(acc.val[b], veorq_u8(veorq_u8(vqtbl1q_u8(vld1q_u8(t[0 + b]), n0), vqtbl1q_u8(vld1q_u8(t[2 + b]), n1)),
                                                     veorq_u8(vqtbl1q_u8(vld1q_u8(t[4 + b]), n2), vqtbl1q_u8(vld1q_u8(t[6 + b]), n3))));
      }
      vst2q_u8(d, acc);
    }
  dot_elems<uint16_t>(k, m, [&co](size_t j, size_t s, uint32_t x) { return split_elem<16>(co(j, s), x); }, XorOp{}, src,
                      dst, i, n, accumulate);
}

}  // namespace collplan_gf
