// An in-process Channel (collplan_embedded.h) for running every rank of an
// emitted plan in threads of one process: one FIFO mailbox per (sender,
// receiver, port), each with its own lock, so a message wakes only its
// receiver. send copies into a recycled buffer and returns at once (the
// contract's buffered send); recv waits for the next message of its (peer,
// port) — spinning briefly, then sleeping — up to a time limit, checks its
// size and copies it out; a receive that waits is posted, and the sender
// then copies into it directly. Each channel remembers its boxes, so a
// message takes only its own box's lock. Buffers are kept for reuse, so a repeated run
// allocates nothing. It offers the contract's optional forms: a payload
// computed into a queued buffer (send_buffer/send_commit), a message viewed
// where it is queued (recv_view/recv_release), and a send by reference
// (send_ref/sends_done: the receiver copies straight from the sender's
// slots, which stay unchanged until sends_done() has seen every such
// message taken), and rows gathered and scattered where they are
// (send_rows_ref/recv_rows) — so a message is copied once, as in the
// engine's threads transport. For tests and benchmarks (it may allocate).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "collplan_embedded.h"

namespace collplan_test {

// Messages a sender handed over by reference and its receivers have not
// taken yet.
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  uint32_t count = 0;
  void add() {
    std::lock_guard<std::mutex> lock(mu);
    ++count;
  }
  void done() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --count;
    }
    cv.notify_all();
  }
  bool wait_all() {
    std::unique_lock<std::mutex> lock(mu);
    for (int spin = 0; spin < 64 && count != 0; ++spin) {  // as the receives: spin briefly, then sleep
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return count == 0; });
  }
};

// A queued message: its own bytes, or (by reference) the sender's, in one
// piece or as rows gathered where they are.
struct Msg {
  std::vector<unsigned char> data;
  const unsigned char* ref = nullptr;
  size_t ref_bytes = 0;
  std::vector<const unsigned char*> rows;  // gathered by reference
  size_t row_bytes = 0;
  Pending* pending = nullptr;
  bool by_ref() const { return ref != nullptr || !rows.empty(); }
  const unsigned char* bytes() const { return ref ? ref : data.data(); }
  size_t size() const { return !rows.empty() ? rows.size() * row_bytes : ref ? ref_bytes : data.size(); }
  // Copies the message, in order, into `count` pieces of `piece` bytes.
  void copy_to(void* const* dst, size_t count, size_t piece) const {
    const size_t ns = rows.empty() ? 1 : rows.size(), srow = rows.empty() ? size() : row_bytes;
    size_t si = 0, so = 0, di = 0, dof = 0;
    while (si < ns && di < count) {
      const size_t n = std::min(srow - so, piece - dof);
      if (n > 0) std::memcpy(static_cast<unsigned char*>(dst[di]) + dof, (rows.empty() ? bytes() : rows[si]) + so, n);
      so += n;
      dof += n;
      if (so == srow) ++si, so = 0;
      if (dof == piece) ++di, dof = 0;
    }
  }
};

class Mailboxes {
 public:
  struct Box;
  // The mailbox of (from, to, port), made on first use. A channel keeps the
  // boxes it uses (InprocChannel::out/in), so this lookup and its lock are
  // taken once per box, not once per message.
  Box& box(uint32_t from, uint32_t to, uint32_t port) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& p = boxes_[{from, to, port}];
    if (!p) p = std::make_unique<Box>();
    return *p;
  }
  void put(Box& b, const void* data, size_t bytes) {
    Msg direct;  // handed to a waiting receive without a copy of our own
    direct.ref = static_cast<const unsigned char*>(data);
    direct.ref_bytes = bytes;
    if (deliver(b, direct)) return;
    std::vector<unsigned char> buf = buffer(b, bytes);
    if (bytes > 0) std::memcpy(buf.data(), data, bytes);
    queue(b, std::move(buf));
  }
  void put_ref(Box& b, const void* data, size_t bytes, Pending& pending) {
    Msg m;
    m.ref = static_cast<const unsigned char*>(data);
    m.ref_bytes = bytes;
    m.pending = &pending;
    push(b, std::move(m));
  }
  void put_rows_ref(Box& b, const void* const* rows, uint32_t count, size_t row_bytes, Pending& pending) {
    Msg m;
    for (uint32_t i = 0; i < count; ++i) m.rows.push_back(static_cast<const unsigned char*>(rows[i]));
    m.row_bytes = row_bytes;
    m.pending = &pending;
    push(b, std::move(m));
  }
  // The next message into `count` pieces of `piece` bytes; false on a
  // timeout or a message of another size.
  bool take(Box& b, void* const* dst, uint32_t count, size_t piece) {
    Msg msg;
    {
      std::unique_lock<std::mutex> lock(b.mu);
      if (b.q.empty()) {
        // Posted: the sender copies straight into `dst` (deliver, push), as
        // the engine's threads transport does when the receive is there
        // first, so a send by reference need not wait for this thread to run.
        b.posted.assign(dst, dst + count);
        b.posted_piece = piece;
        const auto done = [&] { return b.delivered != 0; };
        for (int spin = 0; spin < 64 && !done(); ++spin) {
          lock.unlock();
          std::this_thread::yield();
          lock.lock();
        }
        const bool arrived = b.cv.wait_for(lock, std::chrono::seconds(20), done);
        b.posted.clear();
        if (!arrived) return false;
        const bool fits = b.delivered == 1;
        b.delivered = 0;
        return fits;
      }
    }
    if (!pop(b, msg)) return false;
    const bool fits = msg.size() == count * piece;
    if (fits) msg.copy_to(dst, count, piece);
    release(b, std::move(msg));
    return fits;
  }
  // A recycled buffer to fill, then queued as it is.
  std::vector<unsigned char> buffer(Box& b, size_t bytes) {
    std::vector<unsigned char> buf;
    {
      std::lock_guard<std::mutex> lock(b.mu);
      if (!b.spare.empty()) {
        buf = std::move(b.spare.back());
        b.spare.pop_back();
      }
    }
    buf.resize(bytes);
    return buf;
  }
  void queue(Box& b, std::vector<unsigned char>&& buf) {
    Msg m;
    m.data = std::move(buf);
    push(b, std::move(m));
  }
  // The next message itself; hand it back with release().
  bool pop(Box& b, Msg& msg) {
    std::unique_lock<std::mutex> lock(b.mu);
    for (int spin = 0; spin < 64 && b.q.empty(); ++spin) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
    if (!b.cv.wait_for(lock, std::chrono::seconds(20), [&] { return !b.q.empty(); })) return false;
    msg = std::move(b.q.front());
    b.q.pop_front();
    return true;
  }
  // A message taken: by reference, its sender is told; else its buffer is
  // kept for reuse.
  void release(Box& b, Msg&& msg) {
    if (msg.by_ref()) {
      msg.pending->done();
      return;
    }
    std::lock_guard<std::mutex> lock(b.mu);
    b.spare.push_back(std::move(msg.data));
  }

  struct Box {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Msg> q;
    std::vector<std::vector<unsigned char>> spare;
    std::vector<void*> posted;  // a waiting receive's pieces (queue empty)
    size_t posted_piece = 0;
    int delivered = 0;  // to the posted receive: 1 its bytes, 2 a message of another size
  };

 private:
  // Copies the message into the posted receive of `b`, if one waits (then
  // the queue is empty: it posts only then, and nothing is queued while it
  // waits); false when none does.
  bool deliver(Box& b, const Msg& m) {
    {
      std::lock_guard<std::mutex> lock(b.mu);
      if (b.posted.empty() || b.delivered != 0) return false;
      copy_posted(b, m);
    }
    b.cv.notify_one();
    return true;
  }
  // Into the posted receive of b (its lock held).
  static void copy_posted(Box& b, const Msg& m) {
    const bool fits = m.size() == b.posted.size() * b.posted_piece;
    if (fits) m.copy_to(b.posted.data(), b.posted.size(), b.posted_piece);
    b.delivered = fits ? 1 : 2;
  }
  // Queues m, or copies it into the receive waiting on b: under the box's
  // lock, so a receive posts either before (and has it delivered) or after
  // (and finds it queued).
  void push(Box& b, Msg&& m) {
    {
      std::lock_guard<std::mutex> lock(b.mu);
      if (!b.posted.empty() && b.delivered == 0) {
        copy_posted(b, m);
        if (!m.by_ref()) b.spare.push_back(std::move(m.data));
      } else {
        if (m.pending) m.pending->add();
        b.q.push_back(std::move(m));
      }
    }
    b.cv.notify_one();
  }


  std::mutex mu_;  // guards the map only; a Box never moves once made
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::unique_ptr<Box>> boxes_;
};

class InprocChannel final : public collplan_embedded::Channel {
 public:
  // zero_copy = false: none of the optional forms (the tests run emitted
  // code both ways).
  InprocChannel(Mailboxes& m, uint32_t rank, bool zero_copy = true) : m_(m), rank_(rank), zero_copy_(zero_copy) {}

  bool send(uint32_t port, uint32_t peer, const void* data, size_t bytes) override {
    m_.put(out(peer, port), data, bytes);
    return true;
  }
  bool recv(uint32_t port, uint32_t peer, void* data, size_t bytes) override {
    return m_.take(in(peer, port), &data, 1, bytes);
  }
  void* send_buffer(uint32_t port, uint32_t peer, size_t bytes) override {
    if (!zero_copy_) return nullptr;
    out_ = m_.buffer(out(peer, port), bytes);
    return out_.data();
  }
  bool send_commit(uint32_t port, uint32_t peer, void* buffer, size_t bytes) override {
    if (buffer != out_.data() || bytes != out_.size()) return false;
    m_.queue(out(peer, port), std::move(out_));
    return true;
  }
  const void* recv_view(uint32_t port, uint32_t peer, size_t bytes, bool* failed) override {
    *failed = false;
    if (!zero_copy_) return nullptr;
    if (!m_.pop(in(peer, port), in_) || in_.size() != bytes) {
      *failed = true;
      return nullptr;
    }
    if (!in_.rows.empty()) {  // gathered rows: viewed as one piece
      in_.data.resize(bytes);
      void* flat = in_.data.data();
      in_.copy_to(&flat, 1, bytes);
      return in_.data.data();
    }
    return in_.bytes();
  }
  void recv_release(uint32_t port, uint32_t peer, const void*) override {
    m_.release(in(peer, port), std::move(in_));
  }
  bool send_ref(uint32_t port, uint32_t peer, const void* data, size_t bytes) override {
    if (!zero_copy_) return send(port, peer, data, bytes);
    m_.put_ref(out(peer, port), data, bytes, pending_);
    return true;
  }
  bool sends_done() override { return pending_.wait_all(); }
  bool rows_offered() const override { return zero_copy_; }
  bool send_rows_ref(uint32_t port, uint32_t peer, const void* const* rows, uint32_t count, size_t row_bytes) override {
    m_.put_rows_ref(out(peer, port), rows, count, row_bytes, pending_);
    return true;
  }
  bool recv_rows(uint32_t port, uint32_t peer, void* const* rows, uint32_t count, size_t row_bytes) override {
    return m_.take(in(peer, port), rows, count, row_bytes);
  }

 private:
  // The boxes this rank sends to and receives from, by (peer, port): only
  // this rank's thread reads them, so no lock.
  Mailboxes::Box& out(uint32_t peer, uint32_t port) { return cached(out_boxes_, rank_, peer, port); }
  Mailboxes::Box& in(uint32_t peer, uint32_t port) { return cached(in_boxes_, peer, rank_, port); }
  using Cache = std::map<std::pair<uint32_t, uint32_t>, Mailboxes::Box*>;
  Mailboxes::Box& cached(Cache& c, uint32_t from, uint32_t to, uint32_t port) {
    const uint32_t peer = from == rank_ ? to : from;
    auto [it, fresh] = c.try_emplace({peer, port}, nullptr);
    if (fresh) it->second = &m_.box(from, to, port);
    return *it->second;
  }

  Mailboxes& m_;
  Cache out_boxes_, in_boxes_;
  uint32_t rank_;
  bool zero_copy_;
  Msg in_;                    // the open receive view
  std::vector<unsigned char> out_;  // the open send buffer
  Pending pending_;
};

}  // namespace collplan_test
