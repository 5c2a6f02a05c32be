// collplan_embedded.h — the only runtime code that C++ emitted by
// `collplan emit-cpp` depends on. Header-only, C++17, freestanding-friendly:
// no heap, no exceptions, no RTTI, no threads, no MPI, no other collplan
// header. It holds
//
//   * portable GF region kernels for the fields collplan plans use:
//       Gf2m<M, POLY>  GF(2^M), M = 8 or 16 (collplan: 0x11D, 0x1100B)
//       Prime<Q>       GF(Q), Q a prime < 2^31
//     each with elem (the storage type: 1, 2 or 4 bytes, host byte order, the
//     runtime's buffer format) and add/mul/mad on regions;
//   * Channel, the interface an application implements to move messages;
//   * Rank<F>, the context the emitted per-rank functions drive: it lays out
//     the caller's workspace (slot rows, then staging rows) and evaluates the
//     combinations the emitted code names by offsets into its constant tables.
//
// ─── The Channel contract ───────────────────────────────────────────────────
//
//   bool send(port, peer, data, bytes)
//     hands a message to `peer` on `port`. It MUST NOT wait for the peer to
//     receive it (copy it, queue it, or hand it to hardware): the emitted
//     code does all sends of a step before that step's receives, which is
//     deadlock-free only with buffered sends. It may reuse `data` as soon as
//     it returns. At most λ messages per (peer, port) are outstanding (λ =
//     the plan's postal latency), so a channel needs that much buffering.
//   bool recv(port, peer, data, bytes)
//     blocks until the next message from `peer` on `port` has arrived and
//     copies its `bytes` bytes to `data`.
//   Messages of one (sender, receiver, port) must arrive in the order sent
//   (FIFO); the emitted receives of a (peer, port) are in send order, so no
//   step number travels with a message. Both return false on failure (lost
//   peer, wrong size, timeout...); the emitted function then stops and
//   returns a Result naming step, peer and port.
//
// Postal latency λ: the emitted code follows the plan's step order: in step
// t, evaluate and send the payloads of step t (from the slots as they were
// at the end of step t−1), receive the messages the plan receives in step t
// (sent in step t−λ+1), then run step t's local combinations in order.
//
// The Channel has a protected non-virtual destructor: it is never deleted
// through this interface, so no operator delete is needed on a device.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace collplan_embedded {

template <uint32_t M>
struct Gf2mElem;
template <>
struct Gf2mElem<8> {
  using type = uint8_t;
};
template <>
struct Gf2mElem<16> {
  using type = uint16_t;
};

// ─── scalar arithmetic ──────────────────────────────────────────────────────

// a·b in GF(2^m) modulo `poly` (shift-and-add; a, b < 2^m).
constexpr uint32_t gf2m_mul_scalar(uint32_t a, uint32_t b, uint32_t m, uint32_t poly) {
  uint32_t r = 0;
  const uint32_t top = 1u << m;
  while (b != 0) {
    if (b & 1u) r ^= a;
    b >>= 1;
    a <<= 1;
    if (a & top) a ^= poly;
  }
  return r;
}

// ─── fields ─────────────────────────────────────────────────────────────────

// GF(2^M), M ∈ {8, 16}, reduction polynomial POLY (with its x^M bit).
// Multiplication by a constant c is linear over GF(2), so c·x is the XOR over
// the B-bit digits d_j of x of T_j[d_j] = c·(d_j << Bj). A region call builds
// the tables once (one XOR per entry, from the products c·x^i), then does one
// lookup per digit per element: B = 8 (byte tables, 256 entries each) for
// regions of at least kByteTablesFrom elements, B = 4 (nibble tables) below,
// where building 256 entries would cost more than it saves.
template <uint32_t M, uint32_t POLY>
struct Gf2m {
  static_assert(M == 8 || M == 16, "collplan_embedded: GF(2^m) for m = 8 or 16");
  using elem = typename Gf2mElem<M>::type;
  static constexpr size_t kByteTablesFrom = 256;

  template <uint32_t B>
  struct Tables {
    elem t[M / B][1u << B];
    explicit Tables(elem c) {
      uint32_t b = c;  // c·x^(Bj+i), advanced one x at a time
      for (uint32_t j = 0; j < M / B; ++j) {
        t[j][0] = 0;
        for (uint32_t i = 0; i < B; ++i) {
          for (uint32_t v = 0; v < (1u << i); ++v) t[j][(1u << i) | v] = static_cast<elem>(t[j][v] ^ b);
          b <<= 1;
          if (b & (1u << M)) b ^= POLY;
        }
      }
    }
    elem operator()(elem x) const {
      elem r = 0;
      for (uint32_t j = 0; j < M / B; ++j) r = static_cast<elem>(r ^ t[j][(x >> (B * j)) & ((1u << B) - 1)]);
      return r;
    }
  };

  static void add(elem* dst, const elem* src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<elem>(dst[i] ^ src[i]);
  }
  template <uint32_t B>
  static void mul_with(elem* dst, const elem* src, elem c, size_t n) {
    const Tables<B> tb(c);
    for (size_t i = 0; i < n; ++i) dst[i] = tb(src[i]);
  }
  template <uint32_t B>
  static void mad_with(elem* dst, const elem* src, elem c, size_t n) {
    const Tables<B> tb(c);
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<elem>(dst[i] ^ tb(src[i]));
  }
  static void mul(elem* dst, const elem* src, elem c, size_t n) {
    if (n >= kByteTablesFrom) mul_with<8>(dst, src, c, n);
    else mul_with<4>(dst, src, c, n);
  }
  static void mad(elem* dst, const elem* src, elem c, size_t n) {
    if (n >= kByteTablesFrom) mad_with<8>(dst, src, c, n);
    else mad_with<4>(dst, src, c, n);
  }
};

// GF(Q) for a prime Q < 2^31. Multiplication by a constant c is Shoup's:
// c' = ⌊c·2^32 / Q⌋, then c·x mod Q = c·x − ⌊c'·x / 2^32⌋·Q, less Q once if
// needed (exact for Q < 2^31).
template <uint32_t Q>
struct Prime {
  static_assert(Q >= 2 && Q < (1u << 31), "collplan_embedded: prime fields need Q < 2^31");
  using elem = uint32_t;
  static uint32_t mulc(uint32_t c, uint64_t shoup, uint32_t x) {
    const uint64_t hi = (shoup * x) >> 32;
    uint32_t r = static_cast<uint32_t>(static_cast<uint64_t>(c) * x - hi * Q);
    return r >= Q ? r - Q : r;
  }
  static uint32_t addq(uint32_t a, uint32_t b) {
    const uint32_t s = a + b;  // < 2^32 since both < 2^31
    return s >= Q ? s - Q : s;
  }
  static void add(elem* dst, const elem* src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = addq(dst[i], src[i]);
  }
  static void mul(elem* dst, const elem* src, elem c, size_t n) {
    const uint64_t sh = (static_cast<uint64_t>(c) << 32) / Q;
    for (size_t i = 0; i < n; ++i) dst[i] = mulc(c, sh, src[i]);
  }
  static void mad(elem* dst, const elem* src, elem c, size_t n) {
    const uint64_t sh = (static_cast<uint64_t>(c) << 32) / Q;
    for (size_t i = 0; i < n; ++i) dst[i] = addq(dst[i], mulc(c, sh, src[i]));
  }
};

// ─── channel and results ────────────────────────────────────────────────────

class Channel {
 public:
  virtual bool send(uint32_t port, uint32_t peer, const void* data, size_t bytes) = 0;
  virtual bool recv(uint32_t port, uint32_t peer, void* data, size_t bytes) = 0;

 protected:
  Channel() = default;
  Channel(const Channel&) = default;
  Channel& operator=(const Channel&) = default;
  ~Channel() = default;
};

enum class Error : uint8_t {
  ok = 0,
  send_failed,    // Channel::send returned false
  recv_failed,    // Channel::recv returned false
  bad_argument,   // null workspace/buffers, len = 0, or a rank not emitted
};

struct Result {
  Error error = Error::ok;
  uint32_t step = 0;  // 1-based step of the failure
  uint32_t peer = 0;
  uint32_t port = 0;
  constexpr bool ok() const { return error == Error::ok; }
};

// ─── the per-rank context ───────────────────────────────────────────────────

// Workspace layout: rows of len elements, slot s at row s, staging rows
// after the last slot. The workspace must be aligned for F::elem (4 bytes
// covers every field) and hold rows·len elements.
template <class F>
class Rank {
 public:
  using elem = typename F::elem;

  Rank(Channel& ch, void* workspace, size_t len, uint32_t num_slots)
      : ch_(ch), ws_(static_cast<elem*>(workspace)), len_(len), stage_(num_slots) {}

  size_t len() const { return len_; }
  size_t row_bytes() const { return len_ * sizeof(elem); }
  elem* row(uint32_t r) { return ws_ + static_cast<size_t>(r) * len_; }
  elem* stage(uint32_t i) { return row(stage_ + i); }

  void load_input(uint32_t slot, const void* src) { memcpy(row(slot), src, row_bytes()); }
  void store_output(uint32_t slot, void* dst) { memcpy(dst, row(slot), row_bytes()); }

  void zero(elem* dst) { memset(dst, 0, row_bytes()); }

  // dst := Σ_i coef[i]·row(slots[i]), i < n; dst is no source (the emitter
  // sends such ops through a staging row). n = 0 zeroes dst.
  template <class S>
  void set(elem* dst, const S* slots, const elem* coef, uint32_t n) {
    if (n == 0) {
      memset(dst, 0, row_bytes());
      return;
    }
    if (coef[0] == 1) memcpy(dst, row(slots[0]), row_bytes());
    else F::mul(dst, row(slots[0]), coef[0], len_);
    acc(dst, slots + 1, coef + 1, n - 1);
  }
  // dst += Σ_i coef[i]·row(slots[i]).
  template <class S>
  void acc(elem* dst, const S* slots, const elem* coef, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      if (coef[i] == 1) F::add(dst, row(slots[i]), len_);
      else F::mad(dst, row(slots[i]), coef[i], len_);
    }
  }
  void copy(elem* dst, const elem* src, uint32_t rows) { memmove(dst, src, rows * row_bytes()); }

  // Sends `rows` rows from `src`; false (and *res filled) on failure.
  bool send(uint32_t step, uint32_t port, uint32_t peer, const elem* src, uint32_t rows, Result* res) {
    if (ch_.send(port, peer, src, rows * row_bytes())) return true;
    *res = Result{Error::send_failed, step, peer, port};
    return false;
  }
  bool recv(uint32_t step, uint32_t port, uint32_t peer, elem* dst, uint32_t rows, Result* res) {
    if (ch_.recv(port, peer, dst, rows * row_bytes())) return true;
    *res = Result{Error::recv_failed, step, peer, port};
    return false;
  }

 private:
  Channel& ch_;
  elem* ws_;
  size_t len_;
  uint32_t stage_;
};

}  // namespace collplan_embedded
