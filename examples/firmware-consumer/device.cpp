// One device: embeds its rank's generated code (PLAN_HEADER, namespace
// PLAN_NAMESPACE, rank DEVICE_RANK, entry point PLAN_NAMESPACE::rank_<r>)
// and runs it over pipes.
//   rank_<r> LEN FD...
// FD... are, for every peer q = 0..K-1 other than r and port 0..P-1 in that
// order, the read end of the pipe q -> r and the write end of r -> q.
// Each device makes its input from its rank, checks its output against the
// Vandermonde encode computed directly, prints one line, exits 0 when equal.
#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include PLAN_HEADER

namespace plan = PLAN_NAMESPACE;

// This rank's entry point, plan::rank_<DEVICE_RANK>. The device links only
// its own rank's library, so it calls that entry point directly:
// plan::run_rank() dispatches over every rank in the header and would need
// them all.
#define DEVICE_CONCAT2(a, b) a##b
#define DEVICE_CONCAT(a, b) DEVICE_CONCAT2(a, b)
#define DEVICE_ENTRY DEVICE_CONCAT(rank_, DEVICE_RANK)

namespace {

constexpr uint32_t kRank = DEVICE_RANK;
constexpr size_t kMaxLen = 4096;

// Element e of device r's input vector: a fixed pattern every device knows.
uint8_t input_elem(uint32_t r, size_t e) { return static_cast<uint8_t>((r * 73u + e * 29u + (e >> 3) * 7u + 1u) & 0xFF); }

uint8_t gmul(uint8_t a, uint8_t b) { return static_cast<uint8_t>(collplan_embedded::gf2m_mul_scalar(a, b, 8, 0x11D)); }

// A pipe channel: messages are a u32 length then the bytes; a receive waits
// at most 10 s. Pipes buffer 64 KiB, more than the plan's at most lambda
// messages in flight per pipe at the lengths used here, so send never waits
// for the receiver (the Channel contract).
class PipeChannel final : public collplan_embedded::Channel {
 public:
  int rfd[plan::kNumRanks][plan::kPorts];
  int wfd[plan::kNumRanks][plan::kPorts];

  bool send(uint32_t port, uint32_t peer, const void* data, size_t bytes) override {
    const uint32_t n = static_cast<uint32_t>(bytes);
    return write_all(wfd[peer][port], &n, sizeof n) && write_all(wfd[peer][port], data, bytes);
  }
  bool recv(uint32_t port, uint32_t peer, void* data, size_t bytes) override {
    uint32_t n = 0;
    if (!read_all(rfd[peer][port], &n, sizeof n) || n != bytes) return false;
    return read_all(rfd[peer][port], data, bytes);
  }

 private:
  static bool write_all(int fd, const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    while (n > 0) {
      const ssize_t w = ::write(fd, b, n);
      if (w <= 0) return false;
      b += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }
  static bool read_all(int fd, void* p, size_t n) {
    auto* b = static_cast<unsigned char*>(p);
    while (n > 0) {
      pollfd pf{fd, POLLIN, 0};
      if (::poll(&pf, 1, 10000) <= 0) return false;
      const ssize_t r = ::read(fd, b, n);
      if (r <= 0) return false;
      b += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
};

// Static storage only: the workspace and buffers a device would reserve.
uint32_t workspace[(plan::workspace_rows(kRank) * kMaxLen + 3) / 4];
uint8_t input[kMaxLen], output[kMaxLen];

}  // namespace

int main(int argc, char** argv) {
  static_assert(plan::emitted(kRank), "this device's rank was not emitted");
  static_assert(plan::num_inputs(kRank) == 1 && plan::num_outputs(kRank) == 1, "an encode rank has one input, one output");
  const size_t fds = 2u * (plan::kNumRanks - 1) * plan::kPorts;
  if (argc != 2 + static_cast<int>(fds)) {
    std::fprintf(stderr, "usage: %s LEN FD... (%zu descriptors)\n", argv[0], fds);
    return 2;
  }
  const size_t len = std::strtoul(argv[1], nullptr, 10);
  if (len == 0 || len > kMaxLen) {
    std::fprintf(stderr, "rank %u: LEN must be 1..%zu\n", kRank, kMaxLen);
    return 2;
  }
  PipeChannel ch;
  int a = 2;
  for (uint32_t q = 0; q < plan::kNumRanks; ++q) {
    if (q == kRank) continue;
    for (uint32_t t = 0; t < plan::kPorts; ++t) {
      ch.rfd[q][t] = std::atoi(argv[a++]);
      ch.wfd[q][t] = std::atoi(argv[a++]);
    }
  }
  for (size_t e = 0; e < len; ++e) input[e] = input_elem(kRank, e);
  const void* in[] = {input};
  void* out[] = {output};
  const auto res = plan::DEVICE_ENTRY(ch, in, out, len, workspace);
  if (!res.ok()) {
    std::printf("rank %u: FAILED at step %u (peer %u, port %u, error %d)\n", kRank, res.step, res.peer, res.port,
                static_cast<int>(res.error));
    return 1;
  }
  // Expected: sum_r x_r * point^r with point = g^kRank, g = 2 (the generator
  // collplan uses for GF(2^8) mod 0x11D).
  uint8_t point = 1;
  for (uint32_t i = 0; i < kRank; ++i) point = gmul(point, 2);
  for (size_t e = 0; e < len; ++e) {
    uint8_t want = 0, pw = 1;
    for (uint32_t r = 0; r < plan::kNumRanks; ++r, pw = gmul(pw, point)) want ^= gmul(input_elem(r, e), pw);
    if (output[e] != want) {
      std::printf("rank %u: WRONG element %zu: got %u, expected %u\n", kRank, e, output[e], want);
      return 1;
    }
  }
  std::printf("rank %u: ok, %zu elements, plan %s\n", kRank, len, plan::kDigest);
  return 0;
}
