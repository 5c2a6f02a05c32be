// support/small_vec.h against std::vector: a random sequence of the
// operations the IR uses, applied to both, must leave the same elements at
// every step, across the change from in-place to heap storage and back
// (moves, copies, clear).
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "support/error.h"
#include "support/small_vec.h"

namespace {

struct P {
  uint32_t a = 0, b = 7;  // a default that is not all zero bits
  friend bool operator==(const P&, const P&) = default;
};

template <uint32_t N>
void random_ops(uint64_t seed) {
  std::mt19937_64 rng(seed);
  collplan::SmallVec<P, N> v;
  std::vector<P> w;
  auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int step = 0; step < 3000; ++step) {
    const P x{static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())};
    switch (below(12)) {
      case 0:
      case 1:
      case 2:
        v.push_back(x), w.push_back(x);
        break;
      case 3:
        if (!w.empty()) v.pop_back(), w.pop_back();
        break;
      case 4: {
        const size_t i = below(w.size() + 1);
        v.insert(v.begin() + i, x), w.insert(w.begin() + static_cast<ptrdiff_t>(i), x);
        break;
      }
      case 5:
        if (!w.empty()) {
          const size_t i = below(w.size()), j = i + below(w.size() - i + 1);
          v.erase(v.begin() + i, v.begin() + j);
          w.erase(w.begin() + static_cast<ptrdiff_t>(i), w.begin() + static_cast<ptrdiff_t>(j));
        }
        break;
      case 6: {
        const size_t n = below(2 * N + 3);
        v.resize(n), w.resize(n);
        break;
      }
      case 7: {  // a copy, a move and a move-assignment, each checked
        collplan::SmallVec<P, N> c = v;
        CHECK(c == w);
        collplan::SmallVec<P, N> m = std::move(c);
        CHECK(m == w);
        CHECK(c.empty());
        v = std::move(m);
        break;
      }
      case 8:
        if (below(4) == 0) v.clear(), w.clear();
        break;
      case 9: {
        const uint32_t mod = 1 + static_cast<uint32_t>(below(5));
        auto odd = [&](const P& p) { return p.a % mod == 0; };
        CHECK(erase_if(v, odd) == std::erase_if(w, odd));
        break;
      }
      case 10: {  // from and to the other containers
        v = w;
        const collplan::SmallVec<P, N + 1> wider = v;
        CHECK(wider == w);
        const std::span<const P> s = v;
        CHECK(std::vector<P>(s.begin(), s.end()) == w);
        break;
      }
      case 11:
        v.push_back(v.empty() ? x : v.back()), w.push_back(w.empty() ? x : w.back());  // an element of itself
        break;
    }
    REQUIRE(v == w);
    REQUIRE(v.size() == w.size());
    REQUIRE(v.capacity() >= v.size());
    if (!w.empty()) REQUIRE((v.front() == w.front() && v.back() == w.back() && v.at(w.size() - 1) == w.back()));
  }
}

}  // namespace

TEST_CASE("SmallVec behaves as std::vector over random operations", "[small_vec]") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    random_ops<1>(seed);
    random_ops<2>(seed);
    random_ops<5>(seed);
  }
}

TEST_CASE("SmallVec holds N elements without a heap block and is small", "[small_vec]") {
  collplan::SmallVec<P, 2> v{P{1, 2}, P{3, 4}};
  CHECK(v.capacity() == 2);  // still in place
  v.push_back(P{5, 6});
  CHECK(v.capacity() > 2);
  CHECK(v[2] == P{5, 6});
  static_assert(sizeof(collplan::SmallVec<uint64_t, 1>) == 16, "one term and two 32-bit counts");
}

TEST_CASE("SmallVec::at outside the elements is an internal error", "[small_vec]") {
  collplan::SmallVec<P, 1> v;
  CHECK_THROWS_AS(v.at(0), collplan::InternalError);
  v.push_back(P{});
  CHECK(v.at(0) == P{});
  CHECK_THROWS_AS(v.at(1), collplan::InternalError);
}
