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

bool cpu_has_avx2();

// Portable fast paths (gf_kernels.cpp).
void mad16_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul16_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void madp_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mulp_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void xor_scalar(const Field& f, const void* src, void* dst, size_t n);
void addp_scalar(const Field& f, const void* src, void* dst, size_t n);

// AVX2 paths (gf_avx2.cpp); call only when cpu_has_avx2(). Tails shorter
// than one vector go to the scalar versions above.
void mad16_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mul16_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void madp_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void mulp_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n);
void xor_avx2(const Field& f, const void* src, void* dst, size_t n);
void addp_avx2(const Field& f, const void* src, void* dst, size_t n);

}  // namespace collplan::gf::detail
