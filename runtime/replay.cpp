#include "runtime/replay.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "matrix/matrix.h"
#include "matrix/postcondition.h"
#include "support/error.h"

namespace collplan::rt {

namespace {

// Little-endian element i of a buffer at the field's width (the buffer format
// of gf_kernels.h on the little-endian hosts collplan supports).
Elem load(const unsigned char* buf, size_t eb, size_t i) {
  Elem v = 0;
  for (size_t b = 0; b < eb; ++b) v |= static_cast<Elem>(buf[i * eb + b]) << (8 * b);
  return v;
}

void store(unsigned char* buf, size_t eb, size_t i, Elem v) {
  for (size_t b = 0; b < eb; ++b) buf[i * eb + b] = static_cast<unsigned char>(v >> (8 * b));
}

}  // namespace

ReplayReport replay_and_compare(const ir::Plan& plan, size_t len, uint64_t seed, size_t reps, ThreadsOptions opt) {
  if (len == 0) user_error("replay: len = 0 is invalid: vectors need len >= 1 elements");
  reps = std::max<size_t>(reps, 1);
  const Field& f = plan.spec.field;
  const size_t eb = f.elem_bytes();
  const Postcondition post = postcondition(plan.spec);
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  if (K != post.K) user_error("replay: the plan has {} ranks, its spec {}", K, post.K);
  for (uint32_t k = 0; k < K; ++k) {
    if (plan.ranks[k].inputs.size() != post.inputs_per_rank[k])
      user_error("replay: rank {} loads {} inputs, the postcondition gives it {}", k, plan.ranks[k].inputs.size(),
                 post.inputs_per_rank[k]);
    if (plan.ranks[k].outputs.size() != post.outputs_per_rank[k])
      user_error("replay: rank {} produces {} outputs, the postcondition asks for {}", k, plan.ranks[k].outputs.size(),
                 post.outputs_per_rank[k]);
  }

  ReplayReport rep;
  rep.len = len;
  rep.reps = reps;

  // Inputs, as field elements (for direct_compute) and as buffers.
  SplitMix64 rng(seed);
  std::vector<std::vector<std::vector<Elem>>> x(K);
  std::vector<std::vector<std::vector<unsigned char>>> in_buf(K), out_buf(K);
  std::vector<std::vector<const void*>> in_ptr(K);
  std::vector<std::vector<void*>> out_ptr(K);
  for (uint32_t k = 0; k < K; ++k) {
    const size_t ni = post.inputs_per_rank[k], no = post.outputs_per_rank[k];
    x[k].assign(ni, std::vector<Elem>(len));
    in_buf[k].assign(ni, std::vector<unsigned char>(len * eb));
    for (size_t i = 0; i < ni; ++i) {
      for (size_t e = 0; e < len; ++e) {
        x[k][i][e] = rng.uniform(f);
        store(in_buf[k][i].data(), eb, e, x[k][i][e]);
      }
      in_ptr[k].push_back(in_buf[k][i].data());
    }
    out_buf[k].assign(no, std::vector<unsigned char>(len * eb));
    for (size_t j = 0; j < no; ++j) out_ptr[k].push_back(out_buf[k][j].data());
    rep.bytes_in_total += static_cast<uint64_t>(ni) * len * eb;
  }

  ThreadsRunner runner(plan, opt);
  runner.prepare(len);
  std::vector<double> times;
  for (size_t r = 0; r < reps; ++r) {
    for (auto& outs : out_buf)
      for (auto& o : outs) std::memset(o.data(), 0xA5, o.size());  // poison: every run must write every output
    times.push_back(runner.run(len, in_ptr, out_ptr));
  }
  std::sort(times.begin(), times.end());
  rep.seconds_min = times.front();
  rep.seconds_median = times.size() % 2 ? times[times.size() / 2]
                                        : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
  rep.throughput_gbps = rep.seconds_median > 0 ? static_cast<double>(rep.bytes_in_total) / rep.seconds_median / 1e9 : 0;

  const auto expected = direct_compute(f, post, x);
  rep.equal = true;
  std::vector<unsigned char> want(len * eb);
  for (uint32_t k = 0; k < K && rep.equal; ++k) {
    for (size_t j = 0; j < out_buf[k].size() && rep.equal; ++j) {
      for (size_t e = 0; e < len; ++e) store(want.data(), eb, e, expected[k][j][e]);
      if (std::memcmp(want.data(), out_buf[k][j].data(), want.size()) == 0) continue;
      rep.equal = false;
      for (size_t e = 0; e < len; ++e) {
        const Elem got = load(out_buf[k][j].data(), eb, e);
        if (got != expected[k][j][e]) {
          rep.first_mismatch =
              fmt::format("rank {}, output {}, element {}: expected {}, got {}", k, j, e, expected[k][j][e], got);
          break;
        }
      }
    }
  }
  return rep;
}

}  // namespace collplan::rt
