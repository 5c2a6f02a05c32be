// SmallVec<T, N>: a vector of trivially copyable T that holds up to N
// elements in place and only then allocates.
//
// Why: the plan IR holds one term list per message element and per op, and
// almost all of them have one or two terms. As std::vector each costs 24
// bytes plus a heap block of at least 32 bytes (malloc's smallest chunk) —
// about 56 bytes for a one-term Combo, several times its 4–10 bytes in a
// plan file, and one allocation per element. SmallVec<Term, 1> is 16 bytes
// and allocates nothing for one term. (boost::container::small_vector<Term,
// 1> would do the same job in 32 bytes: 64-bit size and capacity beside
// the in-place storage; here the pointer and the one in-place term share
// the same 8 bytes.)
//
// The interface is the subset of std::vector the IR uses (iterators are
// plain pointers); sizes are 32-bit (a term list longer than 2^32 − 1 is an
// InternalError). It converts from and to std::vector and from any
// contiguous range, so code that builds a std::vector<T> and moves it into
// the IR keeps working (it is copied once), and to std::span<const T>; not
// to std::vector, so no function silently copies a term list into one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

namespace collplan {

template <class T, uint32_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVec moves its elements with memcpy");
  static_assert(N >= 1, "SmallVec needs room for at least one element in place");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;
  using size_type = size_t;

  SmallVec() noexcept {}
  SmallVec(std::initializer_list<T> init) { assign(init.begin(), init.end()); }
  SmallVec(const std::vector<T>& v) { assign(v.data(), v.data() + v.size()); }  // NOLINT: implicit by design
  SmallVec(std::span<const T> s) { assign(s.data(), s.data() + s.size()); }      // NOLINT
  template <uint32_t M>
  SmallVec(const SmallVec<T, M>& o) {  // NOLINT: another in-place capacity
    assign(o.begin(), o.end());
  }
  SmallVec(size_t n, const T& value) { assign(n, value); }
  template <class It>
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
    assign(v.data(), v.data() + v.size());
    return *this;
  }
  SmallVec& operator=(std::initializer_list<T> init) {
    assign(init.begin(), init.end());
    return *this;
  }
  ~SmallVec() { release(); }

  operator std::span<const T>() const { return {data(), size()}; }           // NOLINT

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
  void clear() noexcept { size_ = 0; }
  void push_back(const T& v) {
    if (size_ == cap_) {
      const T copy = v;  // v may live in this vector
      grow_to(size_t{cap_} * 2);
      data()[size_++] = copy;
    } else {
      data()[size_++] = v;
    }
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T{std::forward<A>(a)...});
    return back();
  }
  void pop_back() noexcept { --size_; }
  void resize(size_t n) { resize(n, T{}); }
  void resize(size_t n, const T& value) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = value;
    size_ = checked(n);
  }
  void assign(size_t n, const T& value) {
    clear();
    resize(n, value);
  }
  template <class It>
  void assign(It first, It last) {
    const size_t n = static_cast<size_t>(std::distance(first, last));
    clear();
    reserve(n);
    std::copy(first, last, data());
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
    T* e = std::copy(l, end(), f);
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
  void grow_to(size_t n) {
    const uint32_t cap = checked(std::max<size_t>(n, N + 1));
    T* p = static_cast<T*>(std::malloc(sizeof(T) * cap));
    if (!p) throw std::bad_alloc();
    if (size_) std::memcpy(static_cast<void*>(p), data(), sizeof(T) * size_);
    release();
    heap_ = p;
    cap_ = cap;
  }
  void release() noexcept {
    if (cap_ > N) std::free(heap_);
    cap_ = N;
  }
  void steal(SmallVec& o) noexcept {
    size_ = o.size_;
    cap_ = o.cap_;
    if (o.cap_ > N)
      heap_ = o.heap_;
    else
      std::memcpy(static_cast<void*>(in_), o.in_, sizeof(T) * o.size_);
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
  if (n > UINT32_MAX) COLLPLAN_ASSERT(false, "a term list of more than 2^32 - 1 entries");
  return static_cast<uint32_t>(n);
}
template <class T, uint32_t N>
void SmallVec<T, N>::check_index(size_t i) const {
  COLLPLAN_ASSERT(i < size_, "SmallVec::at: index out of range");
}
}  // namespace collplan
