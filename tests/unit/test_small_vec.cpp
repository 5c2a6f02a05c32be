// support/small_vec.h against std::vector: a random sequence of the
// operations the IR uses, applied to both, must leave the same elements at
// every step, across the change from in-place to heap storage and back
// (moves, copies, clear, shrink_to_fit), for a trivially copyable element
// and for one that owns heap memory and counts its live objects (every
// element constructed is destroyed exactly once; the sanitizer tier runs
// these too).
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "support/error.h"
#include "support/small_vec.h"

namespace {

struct P {
  uint32_t a = 0, b = 7;  // a default that is not all zero bits
  static constexpr bool counted = false;
  friend bool operator==(const P&, const P&) = default;
};

// Not trivially copyable: its text is longer than a string holds in place,
// so an element copied bytewise, never destroyed or destroyed twice shows
// as a leak or a double free under the sanitizers, and `live` counts the
// objects in existence.
struct Tracked {
  static inline int64_t live = 0;
  static constexpr bool counted = true;
  uint32_t a = 0;
  std::string text = std::string(40, 'd');
  Tracked() { ++live; }
  Tracked(uint32_t a_, uint32_t b) : a(a_), text(std::to_string(b) + std::string(40, 'x')) { ++live; }
  Tracked(const Tracked& o) : a(o.a), text(o.text) { ++live; }
  Tracked(Tracked&& o) noexcept : a(o.a), text(std::move(o.text)) { ++live; }
  Tracked& operator=(const Tracked&) = default;
  Tracked& operator=(Tracked&&) noexcept = default;
  ~Tracked() { --live; }
  friend bool operator==(const Tracked& x, const Tracked& y) { return x.a == y.a && x.text == y.text; }
};

template <class E, uint32_t N>
void random_ops(uint64_t seed) {
  const int64_t live_before = Tracked::live;
  {
  std::mt19937_64 rng(seed);
  collplan::SmallVec<E, N> v;
  std::vector<E> w;
  auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int step = 0; step < 3000; ++step) {
    const E x{static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())};
    switch (below(14)) {
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
        collplan::SmallVec<E, N> c = v;
        CHECK(c == w);
        collplan::SmallVec<E, N> m = std::move(c);
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
        auto odd = [&](const E& p) { return p.a % mod == 0; };
        CHECK(erase_if(v, odd) == std::erase_if(w, odd));
        break;
      }
      case 10: {  // from and to the other containers
        v = w;
        const collplan::SmallVec<E, N + 1> wider = v;
        CHECK(wider == w);
        const std::span<const E> s = v;
        CHECK(std::vector<E>(s.begin(), s.end()) == w);
        std::vector<E> moved = w;  // moved in element by element
        v = std::move(moved);
        break;
      }
      case 11:
        v.push_back(v.empty() ? x : v.back()), w.push_back(w.empty() ? x : w.back());  // an element of itself
        break;
      case 12: {
        const size_t n = below(2 * N + 3);
        v.resize(n, x), w.resize(n, x);
        if (!w.empty()) v.resize(n + 1, v.front()), w.resize(n + 1, w.front());  // a value of its own
        break;
      }
      case 13:
        v.shrink_to_fit(), w.shrink_to_fit();
        CHECK(v.capacity() == std::max<size_t>(N, v.size()));
        break;
    }
    REQUIRE(v == w);
    REQUIRE(v.size() == w.size());
    REQUIRE(v.capacity() >= v.size());
    if (!w.empty()) REQUIRE((v.front() == w.front() && v.back() == w.back() && v.at(w.size() - 1) == w.back()));
    if (E::counted) REQUIRE(Tracked::live == live_before + static_cast<int64_t>(v.size() + w.size()) + 1);  // + x
  }
  }
  REQUIRE(Tracked::live == live_before);  // every element destroyed with its vector
}

}  // namespace

TEST_CASE("SmallVec behaves as std::vector over random operations", "[small_vec]") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    random_ops<P, 1>(seed);
    random_ops<P, 2>(seed);
    random_ops<P, 5>(seed);
  }
}

TEST_CASE("SmallVec of elements that own memory constructs and destroys each once", "[small_vec]") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    random_ops<Tracked, 1>(seed);
    random_ops<Tracked, 2>(seed);
    random_ops<Tracked, 5>(seed);
  }
}

TEST_CASE("SmallVec of SmallVecs (the IR's payloads) copies and moves the inner lists", "[small_vec]") {
  using Inner = collplan::SmallVec<P, 1>;
  collplan::SmallVec<Inner, 1> v;
  std::vector<std::vector<P>> w;
  std::mt19937_64 rng(9);
  for (int step = 0; step < 2000; ++step) {
    const size_t len = rng() % 4;
    std::vector<P> inner;
    for (size_t i = 0; i < len; ++i) inner.push_back(P{static_cast<uint32_t>(rng()), 1});
    switch (rng() % 5) {
      case 0:
      case 1:
        v.push_back(Inner(inner)), w.push_back(inner);
        break;
      case 2:
        if (!w.empty()) v.erase(v.begin()), w.erase(w.begin());
        break;
      case 3: {
        collplan::SmallVec<Inner, 1> c = v;
        v = std::move(c);
        break;
      }
      case 4:
        if (!w.empty()) v.back().push_back(P{}), w.back().push_back(P{});
        break;
    }
    REQUIRE(v.size() == w.size());
    for (size_t i = 0; i < w.size(); ++i) REQUIRE(v[i] == w[i]);
  }
}

TEST_CASE("SmallVec holds N elements without a heap block and is small", "[small_vec]") {
  collplan::SmallVec<P, 2> v{P{1, 2}, P{3, 4}};
  CHECK(v.capacity() == 2);  // still in place
  v.push_back(P{5, 6});
  CHECK(v.capacity() > 2);
  CHECK(v[2] == P{5, 6});
  static_assert(sizeof(collplan::SmallVec<uint64_t, 1>) == 16, "one term and two 32-bit counts");
  static_assert(sizeof(collplan::SmallVec<uint32_t, 2>) == 16, "two slots share the pointer's bytes");
  v.resize(1);
  v.shrink_to_fit();
  CHECK(v.capacity() == 2);  // back in place
  CHECK(v[0] == P{1, 2});
}

TEST_CASE("SmallVec::at outside the elements is an internal error", "[small_vec]") {
  collplan::SmallVec<P, 1> v;
  CHECK_THROWS_AS(v.at(0), collplan::InternalError);
  v.push_back(P{});
  CHECK(v.at(0) == P{});
  CHECK_THROWS_AS(v.at(1), collplan::InternalError);
}
