// collplan_embedded.h — the only runtime code that C++ emitted by
// `collplan emit-cpp` depends on. Header-only, C++17, freestanding-friendly:
// no heap, no exceptions, no RTTI, no threads, no MPI, no other collplan
// header. It holds
//
//   * the GF region kernels (collplan_kernels.h, beside this file), chosen
//     at compile time from what the compiler targets (GFNI, AVX2, NEON, a
//     run-time choice among them for plain x86-64 builds, or portable scalar
//     code), for the fields collplan uses:
//       Gf2m<M, POLY>  GF(2^M), M = 8 or 16 (collplan: 0x11D, 0x1100B)
//       Prime<Q>       GF(Q), Q a prime < 2^31
//     each with elem (the storage type: 1, 2 or 4 bytes, host byte order, the
//     runtime's buffer format), prepared coefficients (Coef, prepare(), a
//     constant expression) and the fused multi-source combination dot();
//   * Prepared<F, N>, a plan's coefficients prepared at compile time;
//   * Channel, the interface an application implements to move messages;
//   * Rank<F>, the context the emitted per-rank functions drive: it lays out
//     the caller's workspace (slot rows, then staging rows) and evaluates the
//     combinations the emitted code names by offsets into its constant
//     tables, each in one pass over its destination (a fused run of them,
//     set_rows, in one pass over all its destinations), or through the
//     application's kernel hook, set_kernel_hook<F>().
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
// Optional, for channels that own message memory (a transmit ring, DMA
// buffers, shared memory); the defaults say "not offered" and the Rank then
// uses send/recv and its staging rows:
//   void* send_buffer(port, peer, bytes)
//     a buffer (aligned to 4) of `bytes` for the next message to `peer` on
//     `port`; the emitted code computes a combined payload straight into it
//     and hands it over with send_commit(port, peer, buffer, bytes), which
//     has send's contract. At most one buffer is outstanding at a time.
//   const void* recv_view(port, peer, bytes, bool* failed)
//     blocks like recv, then returns the message in the channel's memory
//     (aligned to 4) instead of copying it; the emitted code copies its rows
//     to their slots and calls recv_release(port, peer, view). At most one
//     view is outstanding at a time. nullptr with *failed = true is a
//     failure; nullptr with *failed = false, "not offered".
//   bool send_ref(port, peer, data, bytes)
//     send's contract, except that the channel may keep reading `data`
//     until the sender's next sends_done(); the emitted code uses it (plans
//     with λ = 1 only) for payloads that are plain slots, which then stay
//     unchanged until
//   bool sends_done()
//     blocks until every message handed over by send_ref since the last
//     call has been taken by its receiver. The emitted code calls it after
//     a step's receives, before its ops write any slot; a slot a send_ref
//     reads is never written by a receive of the same step. The defaults
//     copy (send) and return true at once.
//   bool rows_offered()
//     true if the channel offers the two gathered forms below; the emitted
//     code then moves a message whose rows are not adjacent where they are:
//   bool send_rows_ref(port, peer, rows, count, row_bytes)
//     send_ref's contract for the message made of `count` rows of
//     `row_bytes` bytes at rows[0], rows[1], ... in that order (the array
//     itself need not outlive the call); used under send_ref's conditions
//   bool recv_rows(port, peer, rows, count, row_bytes)
//     recv's contract, row i of the message copied to rows[i]
// With these, a message is copied once, from the sender's memory to the
// receiver's, instead of three times (staging row, channel copy, receive
// copy).
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

#include "collplan_kernels.h"

namespace collplan_embedded {

// A plan's coefficients, prepared for the kernel path of the translation
// unit at compile time (constexpr): the emitted code holds them as
//   constexpr Prepared<Field, N> kPrep(kCoef);
// so they live in read-only memory and nothing is prepared at run time.
template <class F, size_t N>
struct Prepared {
  typename F::Coef c[N];
  constexpr explicit Prepared(const typename F::elem (&coef)[N]) : c{} {
    for (size_t i = 0; i < N; ++i) c[i] = F::prepare(coef[i]);
  }
};

// ─── channel and results ────────────────────────────────────────────────────

class Channel {
 public:
  virtual bool send(uint32_t port, uint32_t peer, const void* data, size_t bytes) = 0;
  virtual bool recv(uint32_t port, uint32_t peer, void* data, size_t bytes) = 0;

  // Optional zero-copy forms (see "The Channel contract"); not offered by default.
  virtual void* send_buffer(uint32_t /*port*/, uint32_t /*peer*/, size_t /*bytes*/) { return nullptr; }
  virtual bool send_commit(uint32_t /*port*/, uint32_t /*peer*/, void* /*buffer*/, size_t /*bytes*/) { return false; }
  virtual const void* recv_view(uint32_t /*port*/, uint32_t /*peer*/, size_t /*bytes*/, bool* failed) {
    *failed = false;
    return nullptr;
  }
  virtual void recv_release(uint32_t /*port*/, uint32_t /*peer*/, const void* /*view*/) {}
  virtual bool send_ref(uint32_t port, uint32_t peer, const void* data, size_t bytes) {
    return send(port, peer, data, bytes);
  }
  virtual bool sends_done() { return true; }
  virtual bool rows_offered() const { return false; }
  virtual bool send_rows_ref(uint32_t /*port*/, uint32_t /*peer*/, const void* const* /*rows*/, uint32_t /*count*/,
                             size_t /*row_bytes*/) {
    return false;
  }
  virtual bool recv_rows(uint32_t /*port*/, uint32_t /*peer*/, void* const* /*rows*/, uint32_t /*count*/,
                         size_t /*row_bytes*/) {
    return false;
  }

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
//
// Slots in the caller's buffers: ids num_slots + b (b < the table's size)
// name the row in table[b] (bind()), a caller's input read in place or a
// caller's output built in place, so that neither is copied. The emitted
// code binds an input only to a slot nothing writes, and an output only
// after overlapping() said the caller's buffers do not overlap (else the
// output's own workspace row stands in and unbind_output copies it out).
template <class F>
class Rank {
 public:
  using elem = typename F::elem;
  using Coef = typename F::Coef;

  Rank(Channel& ch, void* workspace, size_t len, uint32_t num_slots)
      : ch_(ch), ws_(static_cast<elem*>(workspace)), len_(len), slots_(num_slots) {}

  size_t len() const { return len_; }
  size_t row_bytes() const { return len_ * sizeof(elem); }
  elem* row(uint32_t r) {
    return r < slots_ ? ws_ + static_cast<size_t>(r) * len_ : static_cast<elem*>(bound_[r - slots_]);
  }
  elem* stage(uint32_t i) { return ws_ + static_cast<size_t>(slots_ + i) * len_; }

  void load_input(uint32_t slot, const void* src) { memcpy(row(slot), src, row_bytes()); }
  void store_output(uint32_t slot, void* dst) { memcpy(dst, row(slot), row_bytes()); }

  // The table of bound rows (on the caller's stack, one pointer per bound
  // slot); then bind_input / bind_output fill it.
  void bind(void** table) { bound_ = table; }
  // Read only: the code never writes a bound input.
  void bind_input(uint32_t b, const void* src) { bound_[b] = const_cast<void*>(src); }
  // Output buffer dst, or with `overlap` the workspace row of `slot`.
  void bind_output(uint32_t b, void* dst, uint32_t slot, bool overlap) {
    bound_[b] = overlap ? static_cast<void*>(row(slot)) : dst;
  }
  // After the last step: copies the output out when it was built aside.
  void unbind_output(uint32_t b, void* dst) {
    if (bound_[b] != dst) memcpy(dst, bound_[b], row_bytes());
  }
  // True when an output overlaps an input or another output (inputs may
  // alias each other). The contract is "inputs read before step 1, outputs
  // written in order after the last step", which outputs built in place
  // keep only for disjoint buffers. O(n) when the outputs lie in increasing
  // order with every input before or after all of them, else O(n²).
  bool overlapping(const void* const* in, uint32_t n_in, void* const* out, uint32_t n_out) const {
    if (n_out == 0) return false;
    const uintptr_t b = row_bytes();
    const auto at = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
    const auto meet = [&](const void* x, const void* y) { return at(x) < at(y) + b && at(y) < at(x) + b; };
    bool sorted = true;
    for (uint32_t j = 1; j < n_out && sorted; ++j) sorted = at(out[j]) >= at(out[j - 1]) + b;
    if (sorted) {
      const uintptr_t lo = at(out[0]), hi = at(out[n_out - 1]) + b;
      bool apart = true;
      for (uint32_t i = 0; i < n_in && apart; ++i) apart = at(in[i]) + b <= lo || at(in[i]) >= hi;
      if (apart) return false;
    }
    for (uint32_t j = 0; j < n_out; ++j) {
      for (uint32_t k = 0; k < j; ++k)
        if (meet(out[j], out[k])) return true;
      for (uint32_t i = 0; i < n_in; ++i)
        if (meet(out[j], in[i])) return true;
    }
    return false;
  }

  void zero(elem* dst) { memset(dst, 0, row_bytes()); }

  // dst := Σ_i co[i].c·row(slots[i]), i < n; dst is no source (update()
  // is for those). n = 0 zeroes dst.
  template <class S>
  void set(elem* dst, const S* slots, const Coef* co, uint32_t n) {
    if (n == 1 && co[0].c == 1) {
      memcpy(dst, row(slots[0]), row_bytes());
      return;
    }
    combine(dst, slots, co, n, false);
  }
  // dst[j] := Σ_i co[j·k + i].c·row(slots[i]), j < m: m combinations over
  // the same k sources (a row-major m×k coefficient matrix, zeros where a
  // combination does not read a source), each block of every source read
  // once for all of them. No dst[j] is a source. Through the kernel hook,
  // which takes one combination at a time, it is m calls.
  template <class S>
  void set_rows(elem* const* dst, uint32_t m, const S* slots, const Coef* co, uint32_t k) {
    if (kernel_hook<F>.fn != nullptr) {
      for (uint32_t j = 0; j < m; ++j) combine_rows(&dst[j], 1, slots, co + static_cast<size_t>(j) * k, k, k, false);
      return;
    }
    combine_rows(dst, m, slots, co, k, k, false);
  }
  // dst += Σ_i co[i].c·row(slots[i]).
  template <class S>
  void acc(elem* dst, const S* slots, const Coef* co, uint32_t n) {
    combine(dst, slots, co, n, true);
  }
  // dst := Σ_i co[i].c·row(slots[i]) where dst is also a source: in place
  // when the kernel allows it (one term, which every kernel reads before it
  // writes, or a block-wise kernel and at most one chunk of sources; never
  // through the hook), else built in staging row 0 and copied.
  template <class S>
  void update(elem* dst, const S* slots, const Coef* co, uint32_t n) {
    if (n <= kChunk && kernel_hook<F>.fn == nullptr && (n == 1 || F::dot_in_place())) {
      combine(dst, slots, co, n, false);
      return;
    }
    combine(stage(0), slots, co, n, false);
    memcpy(dst, stage(0), row_bytes());
  }

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

  // Rows handed over by reference: unchanged until sends_done().
  bool send_ref(uint32_t step, uint32_t port, uint32_t peer, const elem* src, uint32_t rows, Result* res) {
    if (ch_.send_ref(port, peer, src, rows * row_bytes())) return true;
    *res = Result{Error::send_failed, step, peer, port};
    return false;
  }
  // Rows that are not adjacent (a payload of plain slots), by reference
  // under send_ref's conditions: gathered by the channel when it offers
  // that, else copied into send_begin's rows and sent.
  bool send_rows_ref(uint32_t step, uint32_t port, uint32_t peer, const elem* const* src, uint32_t rows, Result* res) {
    if (ch_.rows_offered()) {
      if (ch_.send_rows_ref(port, peer, reinterpret_cast<const void* const*>(src), rows, row_bytes())) return true;
      *res = Result{Error::send_failed, step, peer, port};
      return false;
    }
    elem* b = send_begin(port, peer, rows);
    for (uint32_t i = 0; i < rows; ++i) copy(at(b, i), src[i]);
    return send_end(step, port, peer, b, rows, res);
  }
  // A message into rows that are not adjacent: scattered by the channel
  // when it offers that, else through recv_view and copies.
  bool recv_rows(uint32_t step, uint32_t port, uint32_t peer, elem* const* dst, uint32_t rows, Result* res) {
    if (ch_.rows_offered()) {
      if (ch_.recv_rows(port, peer, reinterpret_cast<void* const*>(dst), rows, row_bytes())) return true;
      *res = Result{Error::recv_failed, step, peer, port};
      return false;
    }
    const elem* v = recv_view(step, port, peer, rows, res);
    if (v == nullptr) return false;
    for (uint32_t i = 0; i < rows; ++i) copy(dst[i], at(v, i));
    recv_done(port, peer, v);
    return true;
  }
  bool sends_done(uint32_t step, Result* res) {
    if (ch_.sends_done()) return true;
    *res = Result{Error::send_failed, step, 0, 0};
    return false;
  }

  // A payload computed in place: send_begin gives `rows` rows to fill (the
  // channel's buffer when it offers one, else staging rows from row 0),
  // send_end sends them.
  elem* send_begin(uint32_t port, uint32_t peer, uint32_t rows) {
    void* b = ch_.send_buffer(port, peer, rows * row_bytes());
    loaned_ = b != nullptr;
    return loaned_ ? static_cast<elem*>(b) : stage(0);
  }
  bool send_end(uint32_t step, uint32_t port, uint32_t peer, elem* rows_at, uint32_t rows, Result* res) {
    const size_t bytes = rows * row_bytes();
    if (loaned_ ? ch_.send_commit(port, peer, rows_at, bytes) : ch_.send(port, peer, rows_at, bytes)) return true;
    *res = Result{Error::send_failed, step, peer, port};
    return false;
  }
  // A message whose rows go to scattered slots: recv_view gives its rows (the
  // channel's memory when it offers a view, else staging rows from row 0,
  // received into), recv_done releases them; nullptr on failure.
  const elem* recv_view(uint32_t step, uint32_t port, uint32_t peer, uint32_t rows, Result* res) {
    bool failed = false;
    const void* v = ch_.recv_view(port, peer, rows * row_bytes(), &failed);
    viewed_ = v != nullptr;
    if (viewed_) return static_cast<const elem*>(v);
    if (failed) {
      *res = Result{Error::recv_failed, step, peer, port};
      return nullptr;
    }
    return recv(step, port, peer, stage(0), rows, res) ? stage(0) : nullptr;
  }
  void recv_done(uint32_t port, uint32_t peer, const elem* view) {
    if (viewed_) ch_.recv_release(port, peer, view);
  }
  // Row i of a block of rows (a send buffer or a received view).
  elem* at(elem* rows_at, uint32_t i) { return rows_at + static_cast<size_t>(i) * len_; }
  const elem* at(const elem* rows_at, uint32_t i) { return rows_at + static_cast<size_t>(i) * len_; }
  void copy(elem* dst, const elem* src) { memcpy(dst, src, row_bytes()); }

 private:
  // Sources in chunks of kChunk (pointer arrays on the stack): each chunk is
  // one fused pass over dst; chunks after the first accumulate.
  static constexpr uint32_t kChunk = 32;
  template <class S>
  void combine(elem* dst, const S* slots, const Coef* co, uint32_t n, bool accumulate) {
    combine_rows(&dst, 1, slots, co, n, n, accumulate);
  }
  // dst[j] (+)= Σ_i co[j·stride + i].c·row(slots[i]), i < n, j < m; the
  // hook only for m = 1.
  template <class S>
  void combine_rows(elem* const* dst, uint32_t m, const S* slots, const Coef* co, uint32_t stride, uint32_t n,
                    bool accumulate) {
    if (n == 0) {
      if (!accumulate)
        for (uint32_t j = 0; j < m; ++j) memset(dst[j], 0, row_bytes());
      return;
    }
    const elem* src[kChunk];
    const KernelHook<F>& hook = kernel_hook<F>;
    for (uint32_t o = 0; o < n; o += kChunk) {
      const uint32_t c = n - o < kChunk ? n - o : kChunk;
      for (uint32_t i = 0; i < c; ++i) src[i] = row(slots[o + i]);
      const bool add = accumulate || o > 0;
      if (m == 1 && hook.fn != nullptr) {
        elem coef[kChunk];
        for (uint32_t i = 0; i < c; ++i) coef[i] = co[o + i].c;
        if (hook.fn(hook.ctx, dst[0], src, coef, c, len_, add)) continue;
      }
      F::dot_rows(dst, m, src, co + o, stride, c, len_, add);
    }
  }

  Channel& ch_;
  bool loaned_ = false;  // the open send_begin's rows are the channel's
  bool viewed_ = false;  // the open recv_view's rows are the channel's
  elem* ws_;
  size_t len_;
  uint32_t slots_;            // workspace rows of slots; staging rows follow
  void** bound_ = nullptr;    // rows of ids slots_ + b (bind())
};

}  // namespace collplan_embedded
