// std::vector storage aligned to 64 bytes, for the harness of emitted code
// and the kernel timings: a region that starts mid cache line makes every
// 64-byte vector load and store touch two lines, and std::vector's malloc
// gives 16-byte alignment at an offset that differs from buffer to buffer,
// so code timed on such vectors is not timed alike with the engine, whose
// arena is 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace collplan_test {

template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) {}  // NOLINT: rebinding, as allocators do
  T* allocate(std::size_t n) {
    void* p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  friend bool operator==(const Aligned64&, const Aligned64&) { return true; }
  friend bool operator!=(const Aligned64&, const Aligned64&) { return false; }
};

template <class T>
using AlignedVec = std::vector<T, Aligned64<T>>;

}  // namespace collplan_test
