#include "runtime/check/replay.h"

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

std::vector<std::vector<std::vector<Elem>>> replay_inputs(const ir::Plan& plan, size_t len, uint64_t seed) {
  if (len == 0) user_error("replay: len = 0 is invalid: vectors need len >= 1 elements");
  const Field& f = plan.spec.field;
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
  SplitMix64 rng(seed);
  std::vector<std::vector<std::vector<Elem>>> x(K);
  for (uint32_t k = 0; k < K; ++k) {
    x[k].assign(post.inputs_per_rank[k], std::vector<Elem>(len));
    for (auto& v : x[k])
      for (Elem& e : v) e = rng.uniform(f);
  }
  return x;
}

namespace {

std::vector<unsigned char> pack(size_t eb, const std::vector<Elem>& v) {
  std::vector<unsigned char> buf(v.size() * eb);
  for (size_t e = 0; e < v.size(); ++e) store(buf.data(), eb, e, v[e]);
  return buf;
}

}  // namespace

RankReplayData rank_replay_data(const ir::Plan& plan, ir::Rank r, size_t len, uint64_t seed) {
  if (r >= plan.ranks.size()) user_error("replay: rank {} does not exist (valid: 0..{})", r, plan.ranks.size() - 1);
  const auto x = replay_inputs(plan, len, seed);
  const auto expected = direct_compute(plan.spec.field, postcondition(plan.spec), x);
  const size_t eb = plan.spec.field.elem_bytes();
  RankReplayData d;
  for (const auto& v : x[r]) d.inputs.push_back(pack(eb, v));
  for (const auto& v : expected[r]) d.expected.push_back(pack(eb, v));
  return d;
}

std::string first_mismatch(const Field& f, ir::Rank r, const std::vector<std::vector<unsigned char>>& expected,
                           const std::vector<std::vector<unsigned char>>& outputs) {
  const size_t eb = f.elem_bytes();
  if (expected.size() != outputs.size())
    return fmt::format("rank {}: {} outputs, expected {}", r, outputs.size(), expected.size());
  for (size_t j = 0; j < expected.size(); ++j) {
    if (expected[j] == outputs[j]) continue;
    if (expected[j].size() != outputs[j].size())
      return fmt::format("rank {}, output {}: {} bytes, expected {}", r, j, outputs[j].size(), expected[j].size());
    for (size_t e = 0; e * eb < expected[j].size(); ++e) {
      const Elem want = load(expected[j].data(), eb, e), got = load(outputs[j].data(), eb, e);
      if (want != got) return fmt::format("rank {}, output {}, element {}: expected {}, got {}", r, j, e, want, got);
    }
  }
  return {};
}

ReplayReport replay_and_compare(const ir::Plan& plan, size_t len, uint64_t seed, size_t reps, ThreadsOptions opt) {
  reps = std::max<size_t>(reps, 1);
  const Field& f = plan.spec.field;
  const size_t eb = f.elem_bytes();
  const auto x = replay_inputs(plan, len, seed);
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());

  ReplayReport rep;
  rep.len = len;
  rep.reps = reps;

  std::vector<std::vector<std::vector<unsigned char>>> in_buf(K), out_buf(K);
  std::vector<std::vector<const void*>> in_ptr(K);
  std::vector<std::vector<void*>> out_ptr(K);
  for (uint32_t k = 0; k < K; ++k) {
    for (const auto& v : x[k]) {
      in_buf[k].push_back(pack(eb, v));
      in_ptr[k].push_back(in_buf[k].back().data());
    }
    out_buf[k].assign(plan.ranks[k].outputs.size(), std::vector<unsigned char>(len * eb));
    for (auto& o : out_buf[k]) out_ptr[k].push_back(o.data());
    rep.bytes_in_total += static_cast<uint64_t>(x[k].size()) * len * eb;
  }

  ThreadsRunner runner(plan, opt);
  runner.prepare(len);
  std::vector<double> times;
  for (size_t r = 0; r < reps; ++r) {
    for (auto& outs : out_buf)
      for (auto& o : outs) std::memset(o.data(), 0xA5, o.size());  // poison: every run must write every output
    times.push_back(runner.run(len, in_ptr, out_ptr));
  }
  for (uint32_t k = 0; k < K; ++k) {
    const Engine::Stats& st = runner.engine(k).stats();
    rep.copies.push_back({st.staged_bytes, st.delivered_bytes, st.op_copy_bytes});
  }
  std::sort(times.begin(), times.end());
  rep.seconds_min = times.front();
  rep.seconds_median = times.size() % 2 ? times[times.size() / 2]
                                        : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
  rep.throughput_gbps = rep.seconds_median > 0 ? static_cast<double>(rep.bytes_in_total) / rep.seconds_median / 1e9 : 0;

  const auto expected = direct_compute(f, postcondition(plan.spec), x);
  for (uint32_t k = 0; k < K && rep.first_mismatch.empty(); ++k) {
    std::vector<std::vector<unsigned char>> want;
    for (const auto& v : expected[k]) want.push_back(pack(eb, v));
    rep.first_mismatch = first_mismatch(f, k, want, out_buf[k]);
  }
  rep.equal = rep.first_mismatch.empty();
  return rep;
}

}  // namespace collplan::rt
