// What tcp.cpp and tcp_connect.cpp share (not installed).
#pragma once

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <string>

namespace collplan::rt::tcp_detail {

using Clock = std::chrono::steady_clock;

// Milliseconds until `deadline` for poll(), 0 once it has passed.
inline int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left < INT_MAX ? left : INT_MAX);
}

// File descriptors a rank of a K-rank job needs besides its K − 1
// connections: the listening socket, handshakes in flight, stdio, the plan
// and trace files.
constexpr uint64_t kSpareDescriptors = 16;

inline bool out_of_fds(int e) { return e == EMFILE || e == ENFILE; }

// UserError unless `s` is "host:port" (host in [] for IPv6; port 0..65535).
void check_host_port(const std::string& s);

// ResourceError(Descriptors) naming RLIMIT_NOFILE and what a K-rank job
// needs; `errno_value` is EMFILE or ENFILE.
[[noreturn]] void out_of_descriptors(uint32_t K, int errno_value);
// Throws it at once when RLIMIT_NOFILE is below what a K-rank job needs.
void check_descriptor_limit(uint32_t K);

}  // namespace collplan::rt::tcp_detail
