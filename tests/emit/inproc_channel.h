// An in-process Channel (collplan_embedded.h) for running every rank of an
// emitted plan in threads of one process: one FIFO mailbox per (sender,
// receiver, port), each with its own lock, so a message wakes only its
// receiver. send copies into a recycled buffer and returns at once (the
// contract's buffered send); recv waits for the next message of its (peer,
// port) — spinning briefly, then sleeping — up to a time limit, checks its
// size and copies it out. Buffers are kept for reuse, so a repeated run
// allocates nothing. It offers the contract's optional forms: a payload
// computed into a queued buffer (send_buffer/send_commit), a message viewed
// where it is queued (recv_view/recv_release), and a send by reference
// (send_ref/sends_done: the receiver copies straight from the sender's
// slots, which stay unchanged until sends_done() has seen every such
// message taken) — so a message is copied once, as in the engine's threads
// transport. For tests and benchmarks (it may allocate).
#pragma once

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

// A queued message: its own bytes, or (by reference) the sender's.
struct Msg {
  std::vector<unsigned char> data;
  const unsigned char* ref = nullptr;
  size_t ref_bytes = 0;
  Pending* pending = nullptr;
  const unsigned char* bytes() const { return ref ? ref : data.data(); }
  size_t size() const { return ref ? ref_bytes : data.size(); }
};

class Mailboxes {
 public:
  void put(uint32_t from, uint32_t to, uint32_t port, const void* data, size_t bytes) {
    std::vector<unsigned char> buf = buffer(from, to, port, bytes);
    if (bytes > 0) std::memcpy(buf.data(), data, bytes);
    queue(from, to, port, std::move(buf));
  }
  void put_ref(uint32_t from, uint32_t to, uint32_t port, const void* data, size_t bytes, Pending& pending) {
    pending.add();
    Msg m;
    m.ref = static_cast<const unsigned char*>(data);
    m.ref_bytes = bytes;
    m.pending = &pending;
    push(from, to, port, std::move(m));
  }
  bool take(uint32_t from, uint32_t to, uint32_t port, void* data, size_t bytes) {
    Msg msg;
    if (!pop(from, to, port, msg)) return false;
    const bool fits = msg.size() == bytes;
    if (fits && bytes > 0) std::memcpy(data, msg.bytes(), bytes);
    release(from, to, port, std::move(msg));
    return fits;
  }
  // A recycled buffer to fill, then queued as it is.
  std::vector<unsigned char> buffer(uint32_t from, uint32_t to, uint32_t port, size_t bytes) {
    Box& b = box(from, to, port);
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
  void queue(uint32_t from, uint32_t to, uint32_t port, std::vector<unsigned char>&& buf) {
    Msg m;
    m.data = std::move(buf);
    push(from, to, port, std::move(m));
  }
  // The next message itself; hand it back with release().
  bool pop(uint32_t from, uint32_t to, uint32_t port, Msg& msg) {
    Box& b = box(from, to, port);
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
  void release(uint32_t from, uint32_t to, uint32_t port, Msg&& msg) {
    if (msg.ref) {
      msg.pending->done();
      return;
    }
    Box& b = box(from, to, port);
    std::lock_guard<std::mutex> lock(b.mu);
    b.spare.push_back(std::move(msg.data));
  }

 private:
  struct Box {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Msg> q;
    std::vector<std::vector<unsigned char>> spare;
  };
  Box& box(uint32_t from, uint32_t to, uint32_t port) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& p = boxes_[{from, to, port}];
    if (!p) p = std::make_unique<Box>();
    return *p;
  }
  void push(uint32_t from, uint32_t to, uint32_t port, Msg&& m) {
    Box& b = box(from, to, port);
    {
      std::lock_guard<std::mutex> lock(b.mu);
      b.q.push_back(std::move(m));
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
    m_.put(rank_, peer, port, data, bytes);
    return true;
  }
  bool recv(uint32_t port, uint32_t peer, void* data, size_t bytes) override {
    return m_.take(peer, rank_, port, data, bytes);
  }
  void* send_buffer(uint32_t port, uint32_t peer, size_t bytes) override {
    if (!zero_copy_) return nullptr;
    out_ = m_.buffer(rank_, peer, port, bytes);
    return out_.data();
  }
  bool send_commit(uint32_t port, uint32_t peer, void* buffer, size_t bytes) override {
    if (buffer != out_.data() || bytes != out_.size()) return false;
    m_.queue(rank_, peer, port, std::move(out_));
    return true;
  }
  const void* recv_view(uint32_t port, uint32_t peer, size_t bytes, bool* failed) override {
    *failed = false;
    if (!zero_copy_) return nullptr;
    if (!m_.pop(peer, rank_, port, in_) || in_.size() != bytes) {
      *failed = true;
      return nullptr;
    }
    return in_.bytes();
  }
  void recv_release(uint32_t port, uint32_t peer, const void*) override {
    m_.release(peer, rank_, port, std::move(in_));
  }
  bool send_ref(uint32_t port, uint32_t peer, const void* data, size_t bytes) override {
    if (!zero_copy_) return send(port, peer, data, bytes);
    m_.put_ref(rank_, peer, port, data, bytes, pending_);
    return true;
  }
  bool sends_done() override { return pending_.wait_all(); }

 private:
  Mailboxes& m_;
  uint32_t rank_;
  bool zero_copy_;
  Msg in_;                    // the open receive view
  std::vector<unsigned char> out_;  // the open send buffer
  Pending pending_;
};

}  // namespace collplan_test
