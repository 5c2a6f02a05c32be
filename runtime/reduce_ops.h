// MPI's predefined reductions (MPI standard 4.1, §6.9.2 "Predefined
// Reduction Operations"; §5.9.2 in MPI 3.1) as UserOp kernels
// (runtime/op_program.h), with no MPI dependency: an MPI layer maps
// (MPI_Op, MPI_Datatype) to (ReduceOp, ElemType) and replays a plan with
// reduce_kernel()'s function.
//
// Which pairs exist (the standard's table; every other pair is nullptr):
//   sum, prod            integers, floating point, complex
//   min, max             integers, floating point
//   land, lor, lxor      integers, boolean
//   band, bor, bxor      integers (u8 also serves MPI_BYTE)
//   minloc, maxloc       the pair types only
//
// Semantics:
//   integers      sum and prod wrap modulo 2^bits (two's complement for the
//                 signed types), computed in unsigned arithmetic.
//   logical ops   operands are true when non-zero; the result is 0 or 1 of
//                 the type (boolean: any non-zero byte reads as true, the
//                 result byte is 0 or 1).
//   min, max      min(a, b) = a < b ? a : b, max(a, b) = a > b ? a : b on
//                 every type: on floating point an unordered pair (a NaN
//                 operand) and equal operands (+0.0 and -0.0) give the right
//                 operand b. This is what x86's minps/maxps compute, so the
//                 loop vectorises; MPI leaves NaN and signed zeros open.
//   complex       sum adds re and im; prod is (ar·br − ai·bi, ar·bi + ai·br)
//                 without the C library's infinity / NaN recovery.
//   minloc        (u, i) ⊕ (v, j) = (u, i) if u < v, (v, j) if v < u, else
//                 (u, min(i, j)); maxloc the same with >. Equal values keep
//                 the smaller index, as MPI specifies; a NaN value compares
//                 neither less nor equal, so (v, j) is taken.
// Operands are read element by element and out[i] is written after a[i]
// and b[i] are read, so out may alias a (or b). Every kernel is a plain
// loop the compiler vectorises where the type allows; the same inputs give
// the same bits on every call (no reassociation).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/op_program.h"

namespace collplan::rt {

enum class ElemType : uint8_t {
  i8, u8, i16, u16, i32, u32, i64, u64,  // int8_t … uint64_t
  f32, f64, f80,                         // float, double, long double
  c32, c64, c80,                         // float _Complex, double _Complex, long double _Complex
  boolean,                               // C bool / C++ bool (one byte)
  float_int, double_int, long_int,       // MPI_FLOAT_INT: struct { float v; int i; } …
  int2,                                  // MPI_2INT: struct { int v; int i; }
  short_int, long_double_int,            // struct { short v; int i; }, struct { long double v; int i; }
};
inline constexpr unsigned kNumElemTypes = 21;

enum class ReduceOp : uint8_t { sum, prod, min, max, land, lor, lxor, band, bor, bxor, minloc, maxloc };
inline constexpr unsigned kNumReduceOps = 12;

// sizeof of the C type; for a pair, sizeof the struct MPI describes
// (padding included: struct { double; int; } is 16 bytes).
size_t elem_size(ElemType t);

// The kernel for `op` on `t` (ctx is ignored), or nullptr where MPI does not
// define the pair (e.g. band on f32, sum on float_int, minloc on i32).
UserOpFn reduce_kernel(ReduceOp op, ElemType t);

// Lower-case names as above ("sum", "f64", "float_int").
const char* name(ReduceOp op);
const char* name(ElemType t);

}  // namespace collplan::rt
