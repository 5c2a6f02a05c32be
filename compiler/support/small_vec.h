// SmallVec<T, N>: a vector that holds up to N elements in place and only
// then allocates.
//
// Why: the plan IR holds one term list per message element and per op, and
// almost all of them have one or two terms; likewise almost every step of a
// latency-optimal plan has one send, one receive and one op, and almost
// every message one element. As std::vector each list costs 24 bytes plus
// a heap block of at least 32 bytes (malloc's smallest chunk) — about 56
// bytes for a one-term Combo, several times its 4–10 bytes in a plan file,
// and one allocation per element. SmallVec<Term, 1> is 16 bytes and
// allocates nothing for one term. (boost::container::small_vector<Term,
// 1> would do the same job in 32 bytes: 64-bit size and capacity beside
// the in-place storage; here the pointer and the in-place elements share
// the same bytes.)
//
// Elements may be of any type whose move constructor does not throw (the
// IR's Send, Recv and Op hold SmallVecs themselves): they are constructed,
// moved and destroyed as std::vector does, so a SmallVec<Send, 1> frees
// its sends' payloads. For trivially copyable T these operations are
// plain copies.
//
// The interface is the subset of std::vector the IR uses (iterators are
// plain pointers); sizes are 32-bit (a list longer than 2^32 − 1 is an
// InternalError). It converts from std::vector and from any contiguous
// range, so code that builds a std::vector<T> and moves it into the IR
// keeps working (copied, or moved element by element, once), and to
// std::span<const T>; not to std::vector, so no function silently copies a
// list into one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace collplan {

template <class T, uint32_t N>
class SmallVec {
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "SmallVec moves its elements between storages without a way back");
  static_assert(N >= 1, "SmallVec needs room for at least one element in place");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;
  using size_type = size_t;

  SmallVec() noexcept {}
  SmallVec(std::initializer_list<T> init) { assign(init.begin(), init.end()); }
  SmallVec(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit by design
  SmallVec(std::vector<T>&& v) { assign_moved(v.data(), v.size()); }  // NOLINT
  SmallVec(std::span<const T> s) { assign(s.begin(), s.end()); }  // NOLINT
  template <uint32_t M>
  SmallVec(const SmallVec<T, M>& o) {  // NOLINT: another in-place capacity
    assign(o.begin(), o.end());
  }
  SmallVec(size_t n, const T& value) { assign(n, value); }
  template <std::forward_iterator It>
  SmallVec(It first, It last) {
    assign(first, last);
  }
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept { steal(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  SmallVec& operator=(const std::vector<T>& v) {
    assign(v.begin(), v.end());
    return *this;
  }
  SmallVec& operator=(std::vector<T>&& v) {
    assign_moved(v.data(), v.size());
    return *this;
  }
  SmallVec& operator=(std::initializer_list<T> init) {
    assign(init.begin(), init.end());
    return *this;
  }
  ~SmallVec() { release(); }

  operator std::span<const T>() const { return {data(), size()}; }  // NOLINT

  T* data() noexcept { return cap_ > N ? heap_ : in_; }
  const T* data() const noexcept { return cap_ > N ? heap_ : in_; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }
  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return cap_; }
  bool empty() const noexcept { return size_ == 0; }

  T& operator[](size_t i) noexcept { return data()[i]; }
  const T& operator[](size_t i) const noexcept { return data()[i]; }
  T& at(size_t i) {
    check_index(i);
    return data()[i];
  }
  const T& at(size_t i) const {
    check_index(i);
    return data()[i];
  }
  T& front() noexcept { return data()[0]; }
  const T& front() const noexcept { return data()[0]; }
  T& back() noexcept { return data()[size_ - 1]; }
  const T& back() const noexcept { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n > cap_) grow_to(n);
  }
  // Back in place when the elements fit, else a heap block of exactly
  // size() elements.
  void shrink_to_fit() {
    if (cap_ <= N || cap_ == size_) return;
    if (size_ <= N) {
      T* h = heap_;  // in_ overlays heap_: read it before writing in_
      std::uninitialized_move_n(h, size_, in_);
      std::destroy_n(h, size_);
      std::free(h);
      cap_ = N;
    } else {
      move_to_heap(size_);
    }
  }
  void clear() noexcept {
    std::destroy_n(data(), size_);
    size_ = 0;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  template <class... A>
  T& emplace_back(A&&... a) {
    if (size_ == cap_) {
      T made = make(std::forward<A>(a)...);  // the arguments may refer into this vector
      grow_to(size_t{cap_} * 2);
      ::new (static_cast<void*>(data() + size_)) T(std::move(made));
    } else {
      construct_at_end(std::forward<A>(a)...);
    }
    ++size_;
    return back();
  }
  void pop_back() noexcept {
    std::destroy_at(data() + size_ - 1);
    --size_;
  }
  void resize(size_t n) {
    if (n <= size_) return truncate(n);
    reserve(n);
    std::uninitialized_value_construct(data() + size_, data() + n);
    size_ = checked(n);
  }
  void resize(size_t n, const T& value) {
    if (n <= size_) return truncate(n);
    if (n > cap_) {
      const T copy = value;  // value may live in this vector
      grow_to(n);
      std::uninitialized_fill(data() + size_, data() + n, copy);
    } else {
      std::uninitialized_fill(data() + size_, data() + n, value);
    }
    size_ = checked(n);
  }
  void assign(size_t n, const T& value) {
    clear();
    resize(n, value);
  }
  // [first, last) must not be this vector's own elements.
  template <std::forward_iterator It>
  void assign(It first, It last) {
    const size_t n = static_cast<size_t>(std::distance(first, last));
    clear();
    reserve(n);
    std::uninitialized_copy(first, last, data());
    size_ = checked(n);
  }
  T* insert(const T* pos, const T& v) {
    const size_t i = static_cast<size_t>(pos - data());
    push_back(v);
    std::rotate(data() + i, end() - 1, end());
    return data() + i;
  }
  template <class It>
  T* insert(const T* pos, It first, It last) {
    const size_t i = static_cast<size_t>(pos - data()), old = size_;
    for (; first != last; ++first) push_back(*first);
    std::rotate(data() + i, data() + old, end());
    return data() + i;
  }
  T* erase(const T* first, const T* last) {
    T* f = data() + (first - data());
    T* l = data() + (last - data());
    if (f == l) return f;  // moving the tail onto itself would move-assign elements to themselves
    T* e = std::move(l, end(), f);
    std::destroy(e, end());
    size_ = static_cast<uint32_t>(e - data());
    return f;
  }
  T* erase(const T* pos) { return erase(pos, pos + 1); }

  friend bool operator==(const SmallVec& a, const SmallVec& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const SmallVec& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  static uint32_t checked(size_t n);  // n, or throws when it does not fit 32 bits
  void check_index(size_t i) const;
  // A T from emplace_back's arguments: a constructor if T has one for them,
  // else aggregate initialization (Term{slot, coeff}).
  template <class... A>
  static T make(A&&... a) {
    if constexpr (std::is_constructible_v<T, A&&...>)
      return T(std::forward<A>(a)...);
    else
      return T{std::forward<A>(a)...};
  }
  template <class... A>
  void construct_at_end(A&&... a) {
    void* p = data() + size_;
    if constexpr (std::is_constructible_v<T, A&&...>)
      ::new (p) T(std::forward<A>(a)...);
    else
      ::new (p) T{std::forward<A>(a)...};
  }
  // The n elements at `from` (not this vector's) moved in, replacing these.
  void assign_moved(T* from, size_t n) {
    clear();
    reserve(n);
    std::uninitialized_move_n(from, n, data());
    size_ = checked(n);
  }
  void truncate(size_t n) noexcept {
    std::destroy(data() + n, end());
    size_ = static_cast<uint32_t>(n);
  }
  void grow_to(size_t n) { move_to_heap(std::max<size_t>(n, N + 1)); }
  // The elements moved to a new heap block of `n` (> N, ≥ size()) elements.
  void move_to_heap(size_t n) {
    const uint32_t cap = checked(n);
    T* p = static_cast<T*>(std::malloc(sizeof(T) * cap));
    if (!p) throw std::bad_alloc();
    T* old = data();
    std::uninitialized_move_n(old, size_, p);
    std::destroy_n(old, size_);
    if (cap_ > N) std::free(old);
    heap_ = p;  // in place: written only after the elements there are gone
    cap_ = cap;
  }
  void release() noexcept {
    std::destroy_n(data(), size_);
    if (cap_ > N) std::free(heap_);
    size_ = 0;
    cap_ = N;
  }
  // Takes o's elements; this vector holds none and is in place.
  void steal(SmallVec& o) noexcept {
    size_ = o.size_;
    cap_ = o.cap_;
    if (o.cap_ > N) {
      heap_ = o.heap_;
    } else {
      std::uninitialized_move_n(o.in_, o.size_, in_);
      std::destroy_n(o.in_, o.size_);
    }
    o.size_ = 0;
    o.cap_ = N;
  }

  union {
    T in_[N];
    T* heap_;
  };
  uint32_t size_ = 0;
  uint32_t cap_ = N;  // > N: the elements are in heap_
};

// std::erase_if's counterpart (found by argument-dependent lookup).
template <class T, uint32_t N, class Pred>
size_t erase_if(SmallVec<T, N>& v, Pred pred) {
  T* e = std::remove_if(v.begin(), v.end(), pred);
  const size_t n = static_cast<size_t>(v.end() - e);
  v.erase(e, v.end());
  return n;
}

}  // namespace collplan

#include "support/error.h"

namespace collplan {
template <class T, uint32_t N>
uint32_t SmallVec<T, N>::checked(size_t n) {
  if (n > UINT32_MAX) COLLPLAN_ASSERT(false, "a small vector of more than 2^32 - 1 entries");
  return static_cast<uint32_t>(n);
}
template <class T, uint32_t N>
void SmallVec<T, N>::check_index(size_t i) const {
  COLLPLAN_ASSERT(i < size_, "SmallVec::at: index out of range");
}
}  // namespace collplan
