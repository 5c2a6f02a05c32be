// Finite fields used by collplan plans.
//
//   gf256    GF(2^8),  primitive polynomial 0x11D (x^8+x^4+x^3+x^2+1), as in
//            ISA-L and most Reed-Solomon codecs. Elements 0..255, the integer
//            is the polynomial's coefficient bit pattern.
//   gf65536  GF(2^16), primitive polynomial 0x1100B. Elements 0..65535.
//   prime:Q  GF(q) for a prime 2 <= q < 2^31. Elements 0..q-1.
//
// A Field is a small value type (copyable, no global state). Elements are
// carried as uint32_t in their canonical representation; every operation
// requires its operands to be valid (< size()) and the public entry points
// that take user values check it (UserError naming the value).
//
// Multiplication in the binary fields uses log/antilog tables owned by the
// Field object (shared, immutable, built once per field kind).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collplan {

using Elem = uint32_t;

enum class FieldKind : uint8_t { GF2m = 1, Prime = 2 };

class Field {
 public:
  // GF(2^8)/0x11D and GF(2^16)/0x1100B are the supported binary fields; any
  // other (m, poly) is a UserError.
  static Field gf2m(uint32_t m, uint32_t poly);
  static Field gf256() { return gf2m(8, 0x11D); }
  static Field gf65536() { return gf2m(16, 0x1100B); }
  // q must be a prime with 2 <= q < 2^31 (checked deterministically; a
  // composite or out-of-range q is a UserError naming q).
  static Field prime(uint64_t q);
  // "gf256", "gf65536", "prime:Q" (also "gf2^8", "gf2^16"). UserError listing
  // the valid names otherwise.
  static Field parse(const std::string& name);

  FieldKind kind() const { return kind_; }
  uint32_t m() const { return m_; }        // GF2m only: extension degree
  uint32_t poly() const { return poly_; }  // GF2m only: primitive polynomial
  uint64_t size() const { return size_; }  // q, the number of elements
  uint32_t characteristic() const { return kind_ == FieldKind::GF2m ? 2u : static_cast<uint32_t>(size_); }
  // Bytes per element in buffers and plan files: 1 (gf256), 2 (gf65536),
  // 4 (prime fields).
  uint32_t elem_bytes() const { return elem_bytes_; }
  std::string name() const;  // "gf256", "gf65536", "prime:65537"

  bool valid(uint64_t a) const { return a < size_; }
  // Throws UserError "<what> = <a> is not an element of <field> (valid: 0..q-1)".
  void check(uint64_t a, const char* what) const;

  Elem add(Elem a, Elem b) const;
  Elem sub(Elem a, Elem b) const;
  Elem neg(Elem a) const;
  Elem mul(Elem a, Elem b) const;
  Elem inv(Elem a) const;  // UserError for a = 0
  Elem div(Elem a, Elem b) const;
  Elem pow(Elem a, uint64_t e) const;  // pow(0, 0) = 1

  // A generator of the multiplicative group (the smallest one).
  Elem generator() const;
  // A primitive K-th root of unity (generator^((q-1)/K)); UserError when K
  // does not divide q-1, naming K and q-1.
  Elem root_of_unity(uint64_t K) const;
  // The multiplicative order of a != 0.
  uint64_t order(Elem a) const;

  friend bool operator==(const Field& a, const Field& b) {
    return a.kind_ == b.kind_ && a.size_ == b.size_ && a.poly_ == b.poly_;
  }

  // Internal tables for binary fields (nullptr for prime fields): log[a] for
  // a != 0 and exp[i] for i in [0, 2(q-1)), so mul = exp[log a + log b].
  const uint32_t* log_table() const;
  const uint32_t* exp_table() const;

 private:
  struct Tables;
  FieldKind kind_ = FieldKind::Prime;
  uint32_t m_ = 0, poly_ = 0;
  uint64_t size_ = 0;
  uint32_t elem_bytes_ = 4;
  Elem generator_ = 0;
  std::shared_ptr<const Tables> tables_;
};

// Deterministic primality test for n < 2^32 (Miller-Rabin with fixed bases).
bool is_prime_u32(uint64_t n);
// Distinct prime factors of n.
std::vector<uint64_t> prime_factors(uint64_t n);

}  // namespace collplan
