// MPI's predefined reductions (runtime/reduce_ops.h): every (op, type) pair
// the MPI standard defines, compared byte for byte with a per-element
// computation written here independently (wide integers for the wrap-around,
// explicit NaN / signed-zero rules), on edge values (INT_MIN, wrap-around,
// ±0.0, infinities, NaN, minloc ties) and random ones, out of place and in
// place (out == a); the pairs MPI leaves undefined give nullptr.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/reduce_ops.h"

using namespace collplan;
using rt::ElemType;
using rt::ReduceOp;

namespace {

template <class V>
struct Pair {
  V v;
  int i;
};
template <class T>
struct Cx {
  T re, im;
};

// Which pairs exist: the table of MPI 4.1 §6.9.2, spelled out type by type.
bool defined(ReduceOp op, ElemType t) {
  const std::set<ElemType> ints{ElemType::i8,  ElemType::u8,  ElemType::i16, ElemType::u16,
                                ElemType::i32, ElemType::u32, ElemType::i64, ElemType::u64};
  const std::set<ElemType> floats{ElemType::f32, ElemType::f64, ElemType::f80};
  const std::set<ElemType> complexes{ElemType::c32, ElemType::c64, ElemType::c80};
  const std::set<ElemType> pairs{ElemType::float_int, ElemType::double_int, ElemType::long_int,
                                 ElemType::int2,      ElemType::short_int,  ElemType::long_double_int};
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::prod: return ints.count(t) || floats.count(t) || complexes.count(t);
    case ReduceOp::min:
    case ReduceOp::max: return ints.count(t) || floats.count(t);
    case ReduceOp::land:
    case ReduceOp::lor:
    case ReduceOp::lxor: return ints.count(t) || t == ElemType::boolean;
    case ReduceOp::band:
    case ReduceOp::bor:
    case ReduceOp::bxor: return ints.count(t) > 0;
    case ReduceOp::minloc:
    case ReduceOp::maxloc: return pairs.count(t) > 0;
  }
  return false;
}

// The low sizeof(T) bytes of a 128-bit value, as T (little-endian hosts; the
// runtime targets x86-64 and AArch64).
template <class T>
T low_bits(unsigned __int128 v) {
  T r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}

template <class T>
T ref_int(ReduceOp op, T a, T b) {
  // Two's complement bits of the operands, sign-extended to 128 bits.
  const auto wa = static_cast<unsigned __int128>(static_cast<__int128>(a));
  const auto wb = static_cast<unsigned __int128>(static_cast<__int128>(b));
  const bool la = a != 0, lb = b != 0;
  switch (op) {
    case ReduceOp::sum: return low_bits<T>(wa + wb);
    case ReduceOp::prod: return low_bits<T>(wa * wb);
    case ReduceOp::min: return b < a ? b : a;
    case ReduceOp::max: return b > a ? b : a;
    case ReduceOp::land: return static_cast<T>(la && lb ? 1 : 0);
    case ReduceOp::lor: return static_cast<T>(la || lb ? 1 : 0);
    case ReduceOp::lxor: return static_cast<T>(la != lb ? 1 : 0);
    case ReduceOp::band: return low_bits<T>(wa & wb);
    case ReduceOp::bor: return low_bits<T>(wa | wb);
    case ReduceOp::bxor: return low_bits<T>(wa ^ wb);
    default: FAIL("no integer reference for " << rt::name(op)); return a;
  }
}

// The documented float rule: NaN on either side or equal operands give b.
template <class T>
T ref_float(ReduceOp op, T a, T b) {
  if (op == ReduceOp::sum) return a + b;
  if (op == ReduceOp::prod) return a * b;
  if (std::isnan(a) || std::isnan(b) || a == b) return b;
  if (op == ReduceOp::min) return std::fmin(a, b);
  return std::fmax(a, b);
}

template <class T>
Cx<T> ref_complex(ReduceOp op, Cx<T> a, Cx<T> b) {
  if (op == ReduceOp::sum) return {a.re + b.re, a.im + b.im};
  const T re = a.re * b.re - a.im * b.im;
  const T im = a.re * b.im + a.im * b.re;
  return {re, im};
}

template <class V>
Pair<V> ref_loc(ReduceOp op, Pair<V> a, Pair<V> b) {
  const bool a_wins = op == ReduceOp::minloc ? a.v < b.v : a.v > b.v;
  if (a_wins) return a;
  if (a.v == b.v) return {a.v, std::min(a.i, b.i)};
  return b;
}

uint8_t ref_bool(ReduceOp op, uint8_t a, uint8_t b) {
  const bool x = a != 0, y = b != 0;
  if (op == ReduceOp::land) return x && y;
  if (op == ReduceOp::lor) return x || y;
  return x != y;
}

// Byte equality of what a value holds: long double has padding after its
// 10 bytes (x86), and the pair structs after their int, whose contents no
// store defines.
template <class T>
bool same_bits(const T& x, const T& y) {
  if constexpr (std::is_same_v<T, long double>)
    return std::memcmp(&x, &y, std::numeric_limits<long double>::digits == 64 ? 10 : sizeof(T)) == 0;
  else if constexpr (std::is_same_v<T, Cx<long double>>)
    return same_bits(x.re, y.re) && same_bits(x.im, y.im);
  else if constexpr (std::is_class_v<T> && !std::is_same_v<T, Cx<float>> && !std::is_same_v<T, Cx<double>>)
    return same_bits(x.v, y.v) && x.i == y.i;
  else
    return std::memcmp(&x, &y, sizeof(T)) == 0;
}

// Runs the kernel on a, b out of place and in place (out == a) and compares
// every byte with ref. The arrays hold every value of `vals` against every
// other (the edge cases meet each other), then random ones; lengths are
// not multiples of any vector width.
template <class T, class Ref>
void check(ReduceOp op, ElemType t, const std::vector<T>& vals, Ref ref) {
  INFO("op " << rt::name(op) << " type " << rt::name(t));
  const rt::UserOpFn fn = rt::reduce_kernel(op, t);
  REQUIRE(fn != nullptr);
  REQUIRE(rt::elem_size(t) == sizeof(T));
  std::vector<T> a, b;
  for (const T& x : vals)
    for (const T& y : vals) {
      a.push_back(x);
      b.push_back(y);
    }
  std::mt19937_64 rng(static_cast<uint64_t>(op) * 131 + static_cast<uint64_t>(t));
  for (int i = 0; i < 37; ++i) {
    a.push_back(vals[rng() % vals.size()]);
    b.push_back(vals[rng() % vals.size()]);
  }
  std::vector<T> want(a.size()), got(a.size());
  for (size_t i = 0; i < a.size(); ++i) want[i] = ref(op, a[i], b[i]);
  auto same = [&](const std::vector<T>& x) {
    for (size_t i = 0; i < x.size(); ++i)
      if (!same_bits(x[i], want[i])) {
        FAIL_CHECK("element " << i << " differs");
        return false;
      }
    return true;
  };
  fn(a.data(), b.data(), got.data(), a.size(), nullptr);
  CHECK(same(got));
  std::vector<T> in_place = a;
  fn(in_place.data(), b.data(), in_place.data(), in_place.size(), nullptr);
  CHECK(same(in_place));
}

template <class T>
std::vector<T> int_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v{L::min(), static_cast<T>(L::min() + 1), L::max(), static_cast<T>(L::max() - 1), 0, 1, 2, 3,
                   static_cast<T>(L::max() / 2 + 1)};
  if constexpr (L::is_signed)
    for (int x : {-1, -2, -100}) v.push_back(static_cast<T>(x));
  std::mt19937_64 rng(sizeof(T));
  for (int i = 0; i < 6; ++i) v.push_back(static_cast<T>(rng()));
  return v;
}

template <class T>
std::vector<T> float_values(bool with_nan) {
  using L = std::numeric_limits<T>;
  std::vector<T> v{T(0), -T(0), T(1), T(-1), T(2.5), T(-3.75), L::infinity(), -L::infinity(), L::max(), L::lowest(),
                   L::denorm_min(), T(1) / T(3)};
  if (with_nan) v.push_back(L::quiet_NaN());
  return v;
}

template <class T>
void check_int(ElemType t) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::land, ReduceOp::lor,
                      ReduceOp::lxor, ReduceOp::band, ReduceOp::bor, ReduceOp::bxor})
    check<T>(op, t, int_values<T>(), ref_int<T>);
}

template <class T>
void check_float(ElemType t) {
  // NaN only where the result is a choice between operands: a sum or
  // product of NaNs may produce any NaN payload.
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod}) check<T>(op, t, float_values<T>(false), ref_float<T>);
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) check<T>(op, t, float_values<T>(true), ref_float<T>);
}

template <class T>
void check_complex(ElemType t) {
  std::vector<Cx<T>> v;
  for (T re : {T(0), -T(0), T(1), T(-2.5), T(3)})
    for (T im : {T(0), T(-1), T(0.5)}) v.push_back({re, im});
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod}) check<Cx<T>>(op, t, v, ref_complex<T>);
}

template <class V>
void check_pair(ElemType t, std::vector<V> values) {
  std::vector<Pair<V>> v;
  // Equal values with different indices: the ties MPI settles by index.
  for (V x : values)
    for (int i : {0, 3, 7, -1}) {
      v.push_back({x, i});
    }
  for (ReduceOp op : {ReduceOp::minloc, ReduceOp::maxloc}) check<Pair<V>>(op, t, v, ref_loc<V>);
}

}  // namespace

TEST_CASE("reduce kernels: integer types, every op MPI defines, wrap-around and edge values", "[reduce_ops]") {
  check_int<int8_t>(ElemType::i8);
  check_int<uint8_t>(ElemType::u8);
  check_int<int16_t>(ElemType::i16);
  check_int<uint16_t>(ElemType::u16);
  check_int<int32_t>(ElemType::i32);
  check_int<uint32_t>(ElemType::u32);
  check_int<int64_t>(ElemType::i64);
  check_int<uint64_t>(ElemType::u64);
}

TEST_CASE("reduce kernels: INT_MIN, wrap-around and logical results by hand", "[reduce_ops]") {
  const int32_t a[4] = {INT32_MIN, INT32_MAX, -7, 0};
  const int32_t b[4] = {-1, 1, 5, 9};
  int32_t out[4];
  rt::reduce_kernel(ReduceOp::sum, ElemType::i32)(a, b, out, 4, nullptr);
  CHECK(out[0] == INT32_MAX);  // INT_MIN + (−1) wraps
  CHECK(out[1] == INT32_MIN);
  CHECK(out[2] == -2);
  rt::reduce_kernel(ReduceOp::prod, ElemType::i32)(a, b, out, 4, nullptr);
  CHECK(out[0] == INT32_MIN);  // INT_MIN · (−1) wraps to itself
  rt::reduce_kernel(ReduceOp::land, ElemType::i32)(a, b, out, 4, nullptr);
  CHECK(out[0] == 1);
  CHECK(out[3] == 0);
  rt::reduce_kernel(ReduceOp::lxor, ElemType::i32)(a, b, out, 4, nullptr);
  CHECK(out[3] == 1);
  const uint16_t x[2] = {65535, 300}, y[2] = {65535, 300};
  uint16_t z[2];
  rt::reduce_kernel(ReduceOp::prod, ElemType::u16)(x, y, z, 2, nullptr);
  CHECK(z[0] == 1);  // (2^16 − 1)^2 mod 2^16
  CHECK(z[1] == static_cast<uint16_t>(90000 % 65536));
}

TEST_CASE("reduce kernels: floating point and complex, ±0.0, infinities, NaN", "[reduce_ops]") {
  check_float<float>(ElemType::f32);
  check_float<double>(ElemType::f64);
  check_float<long double>(ElemType::f80);
  check_complex<float>(ElemType::c32);
  check_complex<double>(ElemType::c64);
  check_complex<long double>(ElemType::c80);
  // The documented choice: equal operands and NaN give the right operand.
  const double a[3] = {0.0, -0.0, std::nan("")}, b[3] = {-0.0, 0.0, 1.0};
  double out[3];
  rt::reduce_kernel(ReduceOp::min, ElemType::f64)(a, b, out, 3, nullptr);
  CHECK(std::signbit(out[0]));
  CHECK(!std::signbit(out[1]));
  CHECK(out[2] == 1.0);
  rt::reduce_kernel(ReduceOp::max, ElemType::f64)(b, a, out, 3, nullptr);
  CHECK(!std::signbit(out[0]));
  CHECK(std::isnan(out[2]));
}

TEST_CASE("reduce kernels: boolean logical ops read any non-zero byte as true", "[reduce_ops]") {
  std::vector<uint8_t> v{0, 1, 2, 255};
  for (ReduceOp op : {ReduceOp::land, ReduceOp::lor, ReduceOp::lxor})
    check<uint8_t>(op, ElemType::boolean, v, ref_bool);
  CHECK(rt::elem_size(ElemType::boolean) == sizeof(bool));
}

TEST_CASE("reduce kernels: minloc and maxloc on every pair type, ties keep the smaller index", "[reduce_ops]") {
  check_pair<float>(ElemType::float_int, {0.0f, -0.0f, 1.5f, -2.0f, std::numeric_limits<float>::quiet_NaN()});
  check_pair<double>(ElemType::double_int, {0.0, -0.0, 1.5, -2.0, std::numeric_limits<double>::infinity()});
  check_pair<long>(ElemType::long_int, {0L, -1L, std::numeric_limits<long>::min(), std::numeric_limits<long>::max()});
  check_pair<int>(ElemType::int2, {0, -1, INT32_MIN, INT32_MAX, 5});
  check_pair<short>(ElemType::short_int, {0, -1, -32768, 32767});
  check_pair<long double>(ElemType::long_double_int, {0.0L, -2.5L, 1e300L});
  // By hand: a tie keeps the smaller index whichever side it is on.
  const Pair<int> a[2] = {{4, 9}, {4, 2}}, b[2] = {{4, 3}, {4, 8}};
  Pair<int> out[2];
  rt::reduce_kernel(ReduceOp::minloc, ElemType::int2)(a, b, out, 2, nullptr);
  CHECK(out[0].i == 3);
  CHECK(out[1].i == 2);
  CHECK(rt::elem_size(ElemType::double_int) == sizeof(Pair<double>));
  CHECK(rt::elem_size(ElemType::long_double_int) == sizeof(Pair<long double>));
}

TEST_CASE("reduce kernels: exactly the pairs MPI defines have a kernel, with names", "[reduce_ops]") {
  size_t n_defined = 0;
  std::set<std::string> names;
  for (unsigned o = 0; o < rt::kNumReduceOps; ++o)
    for (unsigned t = 0; t < rt::kNumElemTypes; ++t) {
      const auto op = static_cast<ReduceOp>(o);
      const auto ty = static_cast<ElemType>(t);
      INFO(rt::name(op) << " on " << rt::name(ty));
      CHECK((rt::reduce_kernel(op, ty) != nullptr) == defined(op, ty));
      n_defined += defined(op, ty);
      names.insert(rt::name(ty));
      CHECK(rt::elem_size(ty) > 0);
    }
  CHECK(n_defined == 2 * 14 + 2 * 11 + 3 * 9 + 3 * 8 + 2 * 6);
  CHECK(names.size() == rt::kNumElemTypes);
  CHECK(rt::reduce_kernel(ReduceOp::band, ElemType::f32) == nullptr);
  CHECK(rt::reduce_kernel(ReduceOp::sum, ElemType::float_int) == nullptr);
  CHECK(rt::reduce_kernel(ReduceOp::minloc, ElemType::i32) == nullptr);
  CHECK(std::string(rt::name(ReduceOp::maxloc)) == "maxloc");
  CHECK(std::string(rt::name(static_cast<ElemType>(200))) == "unknown element type");
  CHECK(rt::reduce_kernel(ReduceOp::sum, static_cast<ElemType>(200)) == nullptr);
}
