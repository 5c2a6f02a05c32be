#include "runtime/reduce_ops.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace collplan::rt {

namespace {

// The pair types, laid out as MPI describes them.
template <class V>
struct Pair {
  V v;
  int i;
};
template <class T>
struct Complex {
  T re, im;
};

// Integer sum and product modulo 2^bits: in an unsigned type at least as
// wide as unsigned int, so that neither the operation nor the promotion of a
// narrow type to int can overflow a signed type.
template <class T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct Sum {
  template <class T>
  static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Wide<T>>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b)));
    else
      return a + b;
  }
  template <class T>
  static Complex<T> f(Complex<T> a, Complex<T> b) {
    return {a.re + b.re, a.im + b.im};
  }
};
struct Prod {
  template <class T>
  static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Wide<T>>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b)));
    else
      return a * b;
  }
  template <class T>
  static Complex<T> f(Complex<T> a, Complex<T> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  }
};
struct Min {
  template <class T>
  static T f(T a, T b) { return a < b ? a : b; }
};
struct Max {
  template <class T>
  static T f(T a, T b) { return a > b ? a : b; }
};
// Logical operations give 0 or 1 of the type.
struct Land {
  template <class T>
  static T f(T a, T b) { return static_cast<T>((a != 0) & (b != 0)); }
};
struct Lor {
  template <class T>
  static T f(T a, T b) { return static_cast<T>((a != 0) | (b != 0)); }
};
struct Lxor {
  template <class T>
  static T f(T a, T b) { return static_cast<T>((a != 0) ^ (b != 0)); }
};
struct Band {
  template <class T>
  static T f(T a, T b) { return static_cast<T>(a & b); }
};
struct Bor {
  template <class T>
  static T f(T a, T b) { return static_cast<T>(a | b); }
};
struct Bxor {
  template <class T>
  static T f(T a, T b) { return static_cast<T>(a ^ b); }
};
// Equal values keep the smaller index (MPI's rule for MINLOC and MAXLOC).
struct MinLoc {
  template <class V>
  static Pair<V> f(Pair<V> a, Pair<V> b) {
    if (a.v < b.v) return a;
    if (a.v == b.v) return {a.v, a.i < b.i ? a.i : b.i};
    return b;
  }
};
struct MaxLoc {
  template <class V>
  static Pair<V> f(Pair<V> a, Pair<V> b) {
    if (a.v > b.v) return a;
    if (a.v == b.v) return {a.v, a.i < b.i ? a.i : b.i};
    return b;
  }
};

// out[i] = F(a[i], b[i]). Both operands are loaded before out[i] is stored,
// so out may alias either; the compiler checks the overlap at run time and
// vectorises the disjoint (or identical) case.
template <class T, class F>
void kernel(const void* a, const void* b, void* out, size_t count, void*) {
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  T* o = static_cast<T*>(out);
  for (size_t i = 0; i < count; ++i) o[i] = F::f(x[i], y[i]);
}

// C bool: any non-zero byte is true; the result byte is 0 or 1. Read as
// bytes, since a bool object holding another value is undefined behaviour.
template <class F>
void bool_kernel(const void* a, const void* b, void* out, size_t count, void*) {
  const uint8_t* x = static_cast<const uint8_t*>(a);
  const uint8_t* y = static_cast<const uint8_t*>(b);
  uint8_t* o = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < count; ++i) o[i] = F::f(x[i], y[i]);
}

enum class Class { integer, floating, complex, boolean, pair };

Class class_of(ElemType t) {
  switch (t) {
    case ElemType::i8: case ElemType::u8: case ElemType::i16: case ElemType::u16:
    case ElemType::i32: case ElemType::u32: case ElemType::i64: case ElemType::u64: return Class::integer;
    case ElemType::f32: case ElemType::f64: case ElemType::f80: return Class::floating;
    case ElemType::c32: case ElemType::c64: case ElemType::c80: return Class::complex;
    case ElemType::boolean: return Class::boolean;
    default: return Class::pair;
  }
}

// The kernel of F on t, for the classes F is defined on (the caller checks).
template <class F, bool kPairs = false>
UserOpFn pick(ElemType t) {
  if constexpr (kPairs) {
    switch (t) {
      case ElemType::float_int: return kernel<Pair<float>, F>;
      case ElemType::double_int: return kernel<Pair<double>, F>;
      case ElemType::long_int: return kernel<Pair<long>, F>;
      case ElemType::int2: return kernel<Pair<int>, F>;
      case ElemType::short_int: return kernel<Pair<short>, F>;
      case ElemType::long_double_int: return kernel<Pair<long double>, F>;
      default: return nullptr;
    }
  } else {
    switch (t) {
      case ElemType::i8: return kernel<int8_t, F>;
      case ElemType::u8: return kernel<uint8_t, F>;
      case ElemType::i16: return kernel<int16_t, F>;
      case ElemType::u16: return kernel<uint16_t, F>;
      case ElemType::i32: return kernel<int32_t, F>;
      case ElemType::u32: return kernel<uint32_t, F>;
      case ElemType::i64: return kernel<int64_t, F>;
      case ElemType::u64: return kernel<uint64_t, F>;
      case ElemType::boolean: return bool_kernel<F>;
      default: break;
    }
    if constexpr (std::is_same_v<F, Sum> || std::is_same_v<F, Prod> || std::is_same_v<F, Min> ||
                  std::is_same_v<F, Max>) {
      switch (t) {
        case ElemType::f32: return kernel<float, F>;
        case ElemType::f64: return kernel<double, F>;
        case ElemType::f80: return kernel<long double, F>;
        default: break;
      }
    }
    if constexpr (std::is_same_v<F, Sum> || std::is_same_v<F, Prod>) {
      switch (t) {
        case ElemType::c32: return kernel<Complex<float>, F>;
        case ElemType::c64: return kernel<Complex<double>, F>;
        case ElemType::c80: return kernel<Complex<long double>, F>;
        default: break;
      }
    }
    return nullptr;
  }
}

bool valid_type(ElemType t) { return static_cast<unsigned>(t) < kNumElemTypes; }

}  // namespace

size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::i8: return sizeof(int8_t);
    case ElemType::u8: return sizeof(uint8_t);
    case ElemType::i16: return sizeof(int16_t);
    case ElemType::u16: return sizeof(uint16_t);
    case ElemType::i32: return sizeof(int32_t);
    case ElemType::u32: return sizeof(uint32_t);
    case ElemType::i64: return sizeof(int64_t);
    case ElemType::u64: return sizeof(uint64_t);
    case ElemType::f32: return sizeof(float);
    case ElemType::f64: return sizeof(double);
    case ElemType::f80: return sizeof(long double);
    case ElemType::c32: return sizeof(Complex<float>);
    case ElemType::c64: return sizeof(Complex<double>);
    case ElemType::c80: return sizeof(Complex<long double>);
    case ElemType::boolean: return sizeof(bool);
    case ElemType::float_int: return sizeof(Pair<float>);
    case ElemType::double_int: return sizeof(Pair<double>);
    case ElemType::long_int: return sizeof(Pair<long>);
    case ElemType::int2: return sizeof(Pair<int>);
    case ElemType::short_int: return sizeof(Pair<short>);
    case ElemType::long_double_int: return sizeof(Pair<long double>);
  }
  return 0;
}

UserOpFn reduce_kernel(ReduceOp op, ElemType t) {
  if (!valid_type(t)) return nullptr;
  const Class c = class_of(t);
  switch (op) {
    case ReduceOp::sum:
      return c == Class::integer || c == Class::floating || c == Class::complex ? pick<Sum>(t) : nullptr;
    case ReduceOp::prod:
      return c == Class::integer || c == Class::floating || c == Class::complex ? pick<Prod>(t) : nullptr;
    case ReduceOp::min: return c == Class::integer || c == Class::floating ? pick<Min>(t) : nullptr;
    case ReduceOp::max: return c == Class::integer || c == Class::floating ? pick<Max>(t) : nullptr;
    case ReduceOp::land: return c == Class::integer || c == Class::boolean ? pick<Land>(t) : nullptr;
    case ReduceOp::lor: return c == Class::integer || c == Class::boolean ? pick<Lor>(t) : nullptr;
    case ReduceOp::lxor: return c == Class::integer || c == Class::boolean ? pick<Lxor>(t) : nullptr;
    case ReduceOp::band: return c == Class::integer ? pick<Band>(t) : nullptr;
    case ReduceOp::bor: return c == Class::integer ? pick<Bor>(t) : nullptr;
    case ReduceOp::bxor: return c == Class::integer ? pick<Bxor>(t) : nullptr;
    case ReduceOp::minloc: return c == Class::pair ? pick<MinLoc, true>(t) : nullptr;
    case ReduceOp::maxloc: return c == Class::pair ? pick<MaxLoc, true>(t) : nullptr;
  }
  return nullptr;
}

const char* name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
    case ReduceOp::land: return "land";
    case ReduceOp::lor: return "lor";
    case ReduceOp::lxor: return "lxor";
    case ReduceOp::band: return "band";
    case ReduceOp::bor: return "bor";
    case ReduceOp::bxor: return "bxor";
    case ReduceOp::minloc: return "minloc";
    case ReduceOp::maxloc: return "maxloc";
  }
  return "unknown reduce op";
}

const char* name(ElemType t) {
  static const char* const names[kNumElemTypes] = {
      "i8",  "u8",  "i16", "u16", "i32", "u32",     "i64",       "u64",        "f32",  "f64",       "f80",
      "c32", "c64", "c80", "boolean", "float_int", "double_int", "long_int", "int2", "short_int", "long_double_int"};
  return valid_type(t) ? names[static_cast<unsigned>(t)] : "unknown element type";
}

}  // namespace collplan::rt
