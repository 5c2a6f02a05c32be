// An in-process Channel (collplan_embedded.h) for running every rank of an
// emitted plan in threads of one process: one FIFO mailbox per (sender,
// receiver, port), send copies and returns at once (the contract's buffered
// send), recv waits for the next message of its (peer, port) up to a time
// limit and checks its size. For tests and benchmarks, so it may allocate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "collplan_embedded.h"

namespace collplan_test {

class Mailboxes {
 public:
  void put(uint32_t from, uint32_t to, uint32_t port, const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::lock_guard<std::mutex> lock(mu_);
    box_[{from, to, port}].emplace_back(p, p + bytes);
    cv_.notify_all();
  }
  bool take(uint32_t from, uint32_t to, uint32_t port, void* data, size_t bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = box_[{from, to, port}];
    if (!cv_.wait_for(lock, std::chrono::seconds(20), [&] { return !q.empty(); })) return false;
    const bool fits = q.front().size() == bytes;
    if (fits && bytes > 0) std::memcpy(data, q.front().data(), bytes);
    q.pop_front();
    return fits;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::deque<std::vector<unsigned char>>> box_;
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

 private:
  Mailboxes& m_;
  uint32_t rank_;
};

}  // namespace collplan_test
