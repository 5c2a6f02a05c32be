// Finite fields: every binary-field product and inverse against an independent
// carry-less multiply, prime-field axioms, generators, roots of unity, the
// primality test, and every user error with its message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "field/field.h"
#include "support/error.h"

using namespace collplan;

namespace {

// Reference GF(2^m) multiply: schoolbook carry-less product, then reduction
// by the polynomial bit by bit. Shares nothing with the table code.
uint32_t clmul_mod(uint32_t a, uint32_t b, uint32_t m, uint32_t poly) {
  uint64_t r = 0;
  for (uint32_t i = 0; i < 32; ++i)
    if ((b >> i) & 1) r ^= static_cast<uint64_t>(a) << i;
  for (int i = 2 * static_cast<int>(m) - 2; i >= static_cast<int>(m); --i)
    if ((r >> i) & 1) r ^= static_cast<uint64_t>(poly) << (i - static_cast<int>(m));
  return static_cast<uint32_t>(r);
}

uint64_t mulmod_ref(uint64_t a, uint64_t b, uint64_t q) { return a * b % q; }  // a, b < 2^31

// 1610612741: frac(2^64 / q) is far from 0, so products near q^2 hit the
// case where a Barrett quotient estimate is one too small.
const std::vector<uint64_t> kPrimes = {2, 3, 5, 257, 65537, 2147483647, 1000003, 1610612741};

std::vector<Field> all_fields() {
  std::vector<Field> fs = {Field::gf256(), Field::gf65536()};
  for (uint64_t q : kPrimes) fs.push_back(Field::prime(q));
  return fs;
}

// Multiplicative order by brute force (small fields only).
uint64_t brute_order(const Field& f, Elem a) {
  uint64_t n = 1;
  for (Elem x = a; x != 1; x = f.mul(x, a)) ++n;
  return n;
}

}  // namespace

TEST_CASE("gf256: all 256x256 products match carry-less multiply mod 0x11D", "[field]") {
  const Field f = Field::gf256();
  for (uint32_t a = 0; a < 256; ++a)
    for (uint32_t b = 0; b < 256; ++b)
      REQUIRE(f.mul(a, b) == clmul_mod(a, b, 8, 0x11D));
}

TEST_CASE("gf256 and gf65536: every inverse", "[field]") {
  for (const Field& f : {Field::gf256(), Field::gf65536()}) {
    for (uint32_t a = 1; a < f.size(); ++a) {
      const Elem ia = f.inv(a);
      REQUIRE(ia < f.size());
      REQUIRE(clmul_mod(a, ia, f.m(), f.poly()) == 1);
    }
  }
}

TEST_CASE("gf65536: sampled products match carry-less multiply mod 0x1100B", "[field]") {
  const Field f = Field::gf65536();
  std::mt19937_64 rng(0x16);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t a = rng() & 0xFFFF, b = rng() & 0xFFFF;
    REQUIRE(f.mul(a, b) == clmul_mod(a, b, 16, 0x1100B));
  }
  for (uint32_t a = 0; a < 65536; ++a)
    for (uint32_t b : {0u, 1u, 2u, 0x8000u, 0xFFFFu}) {
      REQUIRE(f.mul(a, b) == clmul_mod(a, b, 16, 0x1100B));
      REQUIRE(f.mul(b, a) == clmul_mod(a, b, 16, 0x1100B));
    }
}

TEST_CASE("binary fields: add, sub, neg, div, pow", "[field]") {
  for (const Field& f : {Field::gf256(), Field::gf65536()}) {
    std::mt19937_64 rng(f.size());
    const uint32_t mask = static_cast<uint32_t>(f.size() - 1);
    for (int i = 0; i < 20000; ++i) {
      const Elem a = rng() & mask, b = rng() & mask;
      REQUIRE(f.add(a, b) == (a ^ b));
      REQUIRE(f.sub(a, b) == (a ^ b));
      REQUIRE(f.neg(a) == a);
      if (b) REQUIRE(f.mul(f.div(a, b), b) == a);
      const uint64_t e = rng() % 600;
      Elem p = 1;
      for (uint64_t j = 0; j < e; ++j) p = clmul_mod(p, a, f.m(), f.poly());
      REQUIRE(f.pow(a, e) == p);
    }
    REQUIRE(f.pow(0, 0) == 1);
    REQUIRE(f.pow(0, 5) == 0);
    REQUIRE(f.pow(3, f.size() - 1) == 1);
    REQUIRE(f.pow(3, uint64_t{1} << 63) == f.pow(3, (uint64_t{1} << 63) % (f.size() - 1)));
  }
}

TEST_CASE("binary fields: log/exp tables are consistent and shared", "[field]") {
  for (const Field& f : {Field::gf256(), Field::gf65536()}) {
    const uint32_t* lg = f.log_table();
    const uint32_t* ex = f.exp_table();
    REQUIRE(lg != nullptr);
    REQUIRE(ex != nullptr);
    const uint64_t q1 = f.size() - 1;
    for (uint32_t a = 1; a < f.size(); ++a) {
      REQUIRE(lg[a] < q1);
      REQUIRE(ex[lg[a]] == a);
    }
    for (uint64_t i = 0; i < 2 * q1; ++i) REQUIRE(ex[i] == f.pow(f.generator(), i));
  }
  REQUIRE(Field::prime(257).log_table() == nullptr);
  REQUIRE(Field::prime(257).exp_table() == nullptr);

  // Built once per kind: every Field of a kind, made on any thread, shares
  // the same table.
  const uint32_t* t16 = Field::gf65536().log_table();
  std::vector<const uint32_t*> seen(4);
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) ts.emplace_back([&seen, i] { seen[i] = Field::parse("gf2^16").log_table(); });
  for (auto& t : ts) t.join();
  for (const uint32_t* p : seen) REQUIRE(p == t16);
  REQUIRE(Field::gf256().log_table() == Field::gf2m(8, 0x11D).log_table());
}

TEST_CASE("prime fields: arithmetic against 64-bit reference and field axioms", "[field]") {
  for (uint64_t q : kPrimes) {
    const Field f = Field::prime(q);
    INFO("q = " << q);
    REQUIRE(f.kind() == FieldKind::Prime);
    REQUIRE(f.size() == q);
    REQUIRE(f.characteristic() == q);
    REQUIRE(f.elem_bytes() == 4);
    std::mt19937_64 rng(q);
    const std::vector<Elem> edge = {0, 1, static_cast<Elem>(q - 1), static_cast<Elem>(q / 2),
                                    static_cast<Elem>(q > 2 ? q - 2 : 0)};
    for (Elem a : edge)
      for (Elem b : edge) {
        REQUIRE(f.mul(a, b) == mulmod_ref(a, b, q));
        REQUIRE(f.add(a, b) == (uint64_t{a} + b) % q);
        REQUIRE(f.sub(a, b) == (uint64_t{a} + q - b) % q);
      }
    for (int i = 0; i < 100000; ++i) {
      const Elem a = rng() % q, b = rng() % q, c = rng() % q;
      REQUIRE(f.mul(a, b) == mulmod_ref(a, b, q));
      REQUIRE(f.add(a, b) == (uint64_t{a} + b) % q);
      REQUIRE(f.sub(a, b) == (uint64_t{a} + q - b) % q);
      REQUIRE(f.add(a, f.neg(a)) == 0);
      REQUIRE(f.mul(f.mul(a, b), c) == f.mul(a, f.mul(b, c)));
      REQUIRE(f.add(f.add(a, b), c) == f.add(a, f.add(b, c)));
      REQUIRE(f.mul(a, f.add(b, c)) == f.add(f.mul(a, b), f.mul(a, c)));
      if (a) {
        REQUIRE(f.mul(a, f.inv(a)) == 1);
        REQUIRE(f.pow(a, q - 1) == 1);  // Fermat
        if (b) REQUIRE(f.mul(f.div(a, b), b) == a);
      }
    }
    // Small fields: every element.
    if (q <= 65537) {
      for (Elem a = 1; a < q; ++a) {
        REQUIRE(f.mul(a, f.inv(a)) == 1);
        REQUIRE(f.pow(a, q - 1) == 1);
      }
    }
    // pow against repeated multiplication.
    for (int i = 0; i < 200; ++i) {
      const Elem a = rng() % q;
      const uint64_t e = rng() % 300;
      uint64_t p = 1 % q;
      for (uint64_t j = 0; j < e; ++j) p = mulmod_ref(p, a, q);
      REQUIRE(f.pow(a, e) == p);
    }
    REQUIRE(f.pow(0, 0) == 1);
    REQUIRE(f.pow(0, 7) == 0);
  }
}

TEST_CASE("generator: order q-1 and the smallest such element", "[field]") {
  for (const Field& f : all_fields()) {
    INFO(f.name());
    const Elem g = f.generator();
    REQUIRE(g >= 1);
    REQUIRE(g < f.size());
    REQUIRE(f.order(g) == f.size() - 1);
    for (Elem h = 1; h < g; ++h) REQUIRE(f.order(h) < f.size() - 1);
  }
  REQUIRE(Field::gf256().generator() == 2);
  REQUIRE(Field::prime(2).generator() == 1);
  REQUIRE(Field::prime(65537).generator() == 3);
  REQUIRE(Field::prime(2147483647).generator() == 7);
}

TEST_CASE("order agrees with brute force", "[field]") {
  for (const Field& f : {Field::gf256(), Field::prime(257), Field::prime(5), Field::prime(2)}) {
    for (Elem a = 1; a < f.size(); ++a) REQUIRE(f.order(a) == brute_order(f, a));
  }
  const Field f16 = Field::gf65536();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    const Elem a = 1 + rng() % 65535;
    REQUIRE(f16.order(a) == brute_order(f16, a));
  }
}

TEST_CASE("root_of_unity(K) has order exactly K", "[field]") {
  struct Case {
    Field f;
    std::vector<uint64_t> ks;
  };
  const std::vector<Case> cases = {
      {Field::gf256(), {1, 3, 5, 15, 17, 51, 85, 255}},
      {Field::gf65536(), {1, 3, 5, 17, 255, 257, 4369, 65535}},
      {Field::prime(65537), {1, 2, 4, 16, 256, 1024, 32768, 65536}},
      {Field::prime(2147483647), {2, 9, 7, 11, 31, 151, 331, 2 * 3 * 7 * 11, 2147483646}},
      {Field::prime(1000003), {2, 3, 6, 166667, 1000002}},
      {Field::prime(257), {2, 8, 64, 256}},
  };
  for (const Case& c : cases) {
    for (uint64_t K : c.ks) {
      INFO(c.f.name() << " K = " << K);
      const Elem w = c.f.root_of_unity(K);
      REQUIRE(c.f.order(w) == K);
      REQUIRE(c.f.pow(w, K) == 1);
    }
  }
}

TEST_CASE("field names: parse, name, properties, equality", "[field]") {
  REQUIRE(Field::parse("gf256") == Field::gf256());
  REQUIRE(Field::parse("gf2^8") == Field::gf256());
  REQUIRE(Field::parse("gf65536") == Field::gf65536());
  REQUIRE(Field::parse("gf2^16") == Field::gf65536());
  REQUIRE(Field::parse("prime:65537") == Field::prime(65537));
  REQUIRE(Field::parse("prime:2147483647").size() == 2147483647u);
  REQUIRE_FALSE(Field::gf256() == Field::gf65536());
  REQUIRE_FALSE(Field::prime(257) == Field::prime(65537));
  REQUIRE_FALSE(Field::prime(2) == Field::gf256());
  for (const Field& f : all_fields()) REQUIRE(Field::parse(f.name()) == f);
  REQUIRE(Field::gf256().name() == "gf256");
  REQUIRE(Field::gf65536().name() == "gf65536");
  REQUIRE(Field::prime(65537).name() == "prime:65537");

  const Field g8 = Field::gf256(), g16 = Field::gf65536();
  REQUIRE(g8.kind() == FieldKind::GF2m);
  REQUIRE(g8.m() == 8);
  REQUIRE(g8.poly() == 0x11D);
  REQUIRE(g8.size() == 256);
  REQUIRE(g8.characteristic() == 2);
  REQUIRE(g8.elem_bytes() == 1);
  REQUIRE(g16.m() == 16);
  REQUIRE(g16.poly() == 0x1100B);
  REQUIRE(g16.size() == 65536);
  REQUIRE(g16.elem_bytes() == 2);
  REQUIRE(g8.valid(255));
  REQUIRE_FALSE(g8.valid(256));
  REQUIRE_NOTHROW(g8.check(255, "x"));
}

TEST_CASE("field errors name the bad value and what is valid", "[field][error]") {
  using Catch::Contains;
  REQUIRE_THROWS_WITH(Field::parse("prime:65536"), Contains("q = 65536 is not prime") && Contains("gf256"));
  REQUIRE_THROWS_WITH(Field::parse("prime:4294967311"), Contains("4294967311") && Contains("out of range"));
  REQUIRE_THROWS_WITH(Field::parse("prime:2147483648"), Contains("2147483648") && Contains("out of range"));
  REQUIRE_THROWS_WITH(Field::parse("prime:99999999999999999999999"),
                      Contains("99999999999999999999999") && Contains("out of range"));
  REQUIRE_THROWS_WITH(Field::parse("prime:1"), Contains("q = 1") && Contains("out of range"));
  REQUIRE_THROWS_WITH(Field::parse("prime:abc"), Contains("'abc' is not a number") && Contains("prime:Q"));
  REQUIRE_THROWS_WITH(Field::parse("prime:"), Contains("not a number"));
  REQUIRE_THROWS_WITH(Field::parse("prime:-5"), Contains("-5") && Contains("not a number"));
  REQUIRE_THROWS_WITH(Field::parse("prime:17x"), Contains("17x") && Contains("not a number"));
  REQUIRE_THROWS_WITH(Field::parse("gf512"),
                      Contains("'gf512'") && Contains("gf256") && Contains("gf65536") && Contains("prime:Q"));
  REQUIRE_THROWS_WITH(Field::parse(""), Contains("unknown field ''"));
  REQUIRE_THROWS_AS(Field::parse("GF256"), UserError);

  REQUIRE_THROWS_WITH(Field::prime(65536), Contains("q = 65536 is not prime"));
  REQUIRE_THROWS_WITH(Field::prime(561), Contains("q = 561 is not prime") && Contains("3 * 187"));
  REQUIRE_THROWS_WITH(Field::prime(4294967311ull), Contains("q = 4294967311 is out of range"));
  REQUIRE_THROWS_WITH(Field::prime(uint64_t{1} << 31), Contains("q = 2147483648 is out of range"));
  REQUIRE_THROWS_WITH(Field::prime(0), Contains("q = 0 is out of range"));
  REQUIRE_THROWS_WITH(Field::prime(1), Contains("q = 1 is out of range"));

  REQUIRE_THROWS_WITH(Field::gf2m(8, 0x11B), Contains("GF(2^8)") && Contains("0x11b") && Contains("0x11d"));
  REQUIRE_THROWS_WITH(Field::gf2m(4, 0x13), Contains("GF(2^4)") && Contains("0x13"));
  REQUIRE_THROWS_WITH(Field::gf2m(16, 0x11D), Contains("GF(2^16)") && Contains("0x1100b"));

  REQUIRE_THROWS_WITH(Field::gf256().check(256, "coefficient"),
                      "coefficient = 256 is not an element of gf256 (valid: 0..255)");
  REQUIRE_THROWS_WITH(Field::prime(65537).check(70000, "x[3]"),
                      "x[3] = 70000 is not an element of prime:65537 (valid: 0..65536)");
  REQUIRE_THROWS_WITH(Field::gf65536().check(uint64_t{1} << 40, "a"),
                      "a = 1099511627776 is not an element of gf65536 (valid: 0..65535)");

  for (const Field& f : all_fields()) {
    REQUIRE_THROWS_AS(f.inv(0), UserError);
    REQUIRE_THROWS_AS(f.div(1, 0), UserError);
    REQUIRE_THROWS_AS(f.order(0), UserError);
    REQUIRE_THROWS_WITH(f.root_of_unity(0), Contains("K = 0"));
  }
  REQUIRE_THROWS_WITH(Field::gf256().inv(0), Contains("0 has no multiplicative inverse in gf256"));
  REQUIRE_THROWS_WITH(Field::gf256().root_of_unity(4),
                      Contains("K = 4 does not divide q-1 = 255") && Contains("gf256"));
  REQUIRE_THROWS_WITH(Field::prime(65537).root_of_unity(3), Contains("K = 3 does not divide q-1 = 65536"));
  REQUIRE_THROWS_WITH(Field::gf65536().root_of_unity(65536), Contains("K = 65536 does not divide q-1 = 65535"));
}

TEST_CASE("is_prime_u32 agrees with a sieve up to 1e6, and hard cases", "[field]") {
  const uint32_t N = 1000000;
  std::vector<bool> composite(N + 1, false);
  composite[0] = composite[1] = true;
  for (uint32_t i = 2; i * i <= N; ++i)
    if (!composite[i])
      for (uint32_t j = i * i; j <= N; j += i) composite[j] = true;
  for (uint32_t n = 0; n <= N; ++n)
    if (is_prime_u32(n) != !composite[n]) FAIL("is_prime_u32(" << n << ") is wrong");

  // Primes near the limits, Carmichael numbers and strong pseudoprimes to
  // several small bases.
  for (uint64_t p : {2147483647ull, 2147483629ull, 4294967291ull, 1000003ull, 65537ull}) REQUIRE(is_prime_u32(p));
  for (uint64_t c : {561ull, 2047ull, 1373653ull, 25326001ull, 3215031751ull, 4294967295ull, 4294967297ull,
                     2147483649ull, 4759123141ull, 65536ull, 2147483647ull * 2147483629ull})
    REQUIRE_FALSE(is_prime_u32(c));
  REQUIRE(is_prime_u32(4294967311ull));  // the smallest prime above 2^32
}

TEST_CASE("prime_factors", "[field]") {
  using V = std::vector<uint64_t>;
  REQUIRE(prime_factors(0) == V{});
  REQUIRE(prime_factors(1) == V{});
  REQUIRE(prime_factors(2) == V{2});
  REQUIRE(prime_factors(255) == V{3, 5, 17});
  REQUIRE(prime_factors(65535) == V{3, 5, 17, 257});
  REQUIRE(prime_factors(65536) == V{2});
  REQUIRE(prime_factors(2147483646) == V{2, 3, 7, 11, 31, 151, 331});
  REQUIRE(prime_factors(1000002) == V{2, 3, 166667});
  REQUIRE(prime_factors(2147483647) == V{2147483647});
  for (uint64_t n = 2; n < 20000; ++n) {
    const V ps = prime_factors(n);
    REQUIRE(std::is_sorted(ps.begin(), ps.end()));
    uint64_t rest = n;
    for (uint64_t p : ps) {
      REQUIRE(is_prime_u32(p));
      REQUIRE(rest % p == 0);
      while (rest % p == 0) rest /= p;
    }
    REQUIRE(rest == 1);
  }
}
