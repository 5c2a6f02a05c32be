// An in-process Channel (collplan_embedded.h) for running every rank of an
// emitted plan in threads of one process: one FIFO mailbox per (sender,
// receiver, port), each with its own lock, so a message wakes only its
// receiver. send copies into a recycled buffer and returns at once (the
// contract's buffered send); recv waits for the next message of its (peer,
// port) — spinning briefly, then sleeping — up to a time limit, checks its
// size and copies it out. Buffers are kept for reuse, so a repeated run
// allocates nothing. It offers the zero-copy forms of the contract
// (send_buffer/send_commit, recv_view/recv_release): a payload computed into
// a queued buffer, a message viewed where it is queued. For tests and
// benchmarks (it may allocate).
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

class Mailboxes {
 public:
  void put(uint32_t from, uint32_t to, uint32_t port, const void* data, size_t bytes) {
    std::vector<unsigned char> buf = buffer(from, to, port, bytes);
    if (bytes > 0) std::memcpy(buf.data(), data, bytes);
    queue(from, to, port, std::move(buf));
  }
  bool take(uint32_t from, uint32_t to, uint32_t port, void* data, size_t bytes) {
    std::vector<unsigned char> msg;
    if (!pop(from, to, port, msg)) return false;
    const bool fits = msg.size() == bytes;
    if (fits && bytes > 0) std::memcpy(data, msg.data(), bytes);
    recycle(from, to, port, std::move(msg));
    return fits;
  }
  // The zero-copy forms: a recycled buffer to fill, queued as it is; the
  // next message itself, handed back with recycle().
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
    Box& b = box(from, to, port);
    {
      std::lock_guard<std::mutex> lock(b.mu);
      b.q.push_back(std::move(buf));
    }
    b.cv.notify_one();
  }
  bool pop(uint32_t from, uint32_t to, uint32_t port, std::vector<unsigned char>& msg) {
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
  void recycle(uint32_t from, uint32_t to, uint32_t port, std::vector<unsigned char>&& msg) {
    Box& b = box(from, to, port);
    std::lock_guard<std::mutex> lock(b.mu);
    b.spare.push_back(std::move(msg));
  }

 private:
  struct Box {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::vector<unsigned char>> q;
    std::vector<std::vector<unsigned char>> spare;
  };
  Box& box(uint32_t from, uint32_t to, uint32_t port) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& p = boxes_[{from, to, port}];
    if (!p) p = std::make_unique<Box>();
    return *p;
  }

  std::mutex mu_;  // guards the map only; a Box never moves once made
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::unique_ptr<Box>> boxes_;
};

class InprocChannel final : public collplan_embedded::Channel {
 public:
  InprocChannel(Mailboxes& m, uint32_t rank) : m_(m), rank_(rank) {}
  bool send(uint32_t port, uint32_t peer, const void* data, size_t bytes) override {
    m_.put(rank_, peer, port, data, bytes);
    return true;
  }
  bool recv(uint32_t port, uint32_t peer, void* data, size_t bytes) override {
    return m_.take(peer, rank_, port, data, bytes);
  }
  // Zero-copy: offered unless the channel was made with zero_copy = false
  // (the tests run emitted code both ways).
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
    return in_.data();
  }
  void recv_release(uint32_t port, uint32_t peer, const void*) override { m_.recycle(peer, rank_, port, std::move(in_)); }

  InprocChannel(Mailboxes& m, uint32_t rank, bool zero_copy) : m_(m), rank_(rank), zero_copy_(zero_copy) {}

 private:
  Mailboxes& m_;
  uint32_t rank_;
  bool zero_copy_ = true;
  std::vector<unsigned char> out_, in_;  // the open send buffer and receive view
};

}  // namespace collplan_test
