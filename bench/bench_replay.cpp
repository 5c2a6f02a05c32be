// In-process replay throughput of prepare-and-shoot encode plans (p = 2,
// GF(2^8)) on the threads transport, against two baselines measured in the
// same run:
//   direct   the centralized computation of x·A on one thread with the GF
//            kernels (one dot call over all K inputs): the work a single node
//            holding all data would do;
//   memcpy   copying the same input bytes once: the floor for moving them.
// Throughput is total input bytes (K·ℓ) over the median time of ≥ 11 runs.
// The replay's outputs are checked against the direct computation, so a
// fast wrong answer cannot be reported.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gen/prepare_shoot.h"
#include "matrix/matrix.h"
#include "runtime/gf/gf_kernels.h"
#include "runtime/transport/threads.h"

using namespace collplan;

namespace {

constexpr int kReps = 11;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_median(F&& f) {
  std::vector<double> t;
  f();  // warm-up: page in buffers, size tables
  for (int i = 0; i < kReps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

void bench(uint32_t K, size_t len) {
  const Field f = Field::gf256();
  Spec spec;
  spec.op = OpKind::Encode;
  spec.K = K;
  spec.p = 2;
  spec.lambda = 1;
  spec.field = f;
  spec.matrix = matrix_random(K, 42, f);
  spec.algorithm = "prepare-shoot";
  const ir::Plan plan = gen::prepare_shoot(spec);
  const Matrix A = materialize(spec.matrix, f);

  SplitMix64 rng(7);
  std::vector<std::vector<unsigned char>> x(K, std::vector<unsigned char>(len)), y(K, std::vector<unsigned char>(len)),
      want(K, std::vector<unsigned char>(len)), copy(K, std::vector<unsigned char>(len));
  for (auto& v : x)
    for (auto& b : v) b = static_cast<unsigned char>(rng.next());
  std::vector<std::vector<const void*>> in(K);
  std::vector<std::vector<void*>> out(K);
  for (uint32_t k = 0; k < K; ++k) {
    in[k] = {x[k].data()};
    out[k] = {y[k].data()};
  }

  // Replay.
  rt::ThreadsRunner runner(plan);
  runner.prepare(len);
  std::vector<double> rt_times;
  runner.run(len, in, out);
  for (int i = 0; i < kReps; ++i) rt_times.push_back(runner.run(len, in, out));
  const double t_replay = median(rt_times);

  // Direct: y_j = Σ_i A[i][j]·x_i for all j, one dot call (coefficients
  // m×k row-major: row j = column j of A).
  std::vector<Elem> coeffs(static_cast<size_t>(K) * K);
  for (uint32_t j = 0; j < K; ++j)
    for (uint32_t i = 0; i < K; ++i) coeffs[static_cast<size_t>(j) * K + i] = A.at(i, j);
  const gf::DotTables tables = gf::prepare_dot(f, K, K, coeffs.data());
  std::vector<const void*> src(K);
  std::vector<void*> dst(K), cdst(K);
  for (uint32_t k = 0; k < K; ++k) {
    src[k] = x[k].data();
    dst[k] = want[k].data();
    cdst[k] = copy[k].data();
  }
  const double t_direct = time_median([&] { gf::dot_prepared(f, tables, src.data(), dst.data(), len); });
  const double t_memcpy = time_median([&] {
    for (uint32_t k = 0; k < K; ++k) std::memcpy(cdst[k], src[k], len);
  });

  bool ok = true;
  for (uint32_t k = 0; k < K; ++k) ok = ok && y[k] == want[k];
  const double bytes = static_cast<double>(K) * len;
  const rt::Engine::Stats& st = runner.engine(0).stats();
  std::printf("K=%-3u p=2 len=%7zu  replay %8.3f ms %6.2f GB/s | direct %8.3f ms %6.2f GB/s | memcpy %7.3f ms %6.2f GB/s"
              " | replay/direct %5.2fx  replay/memcpy %6.1fx | %s\n",
              K, len, t_replay * 1e3, bytes / t_replay / 1e9, t_direct * 1e3, bytes / t_direct / 1e9, t_memcpy * 1e3,
              bytes / t_memcpy / 1e9, t_replay / t_direct, t_replay / t_memcpy, ok ? "outputs ok" : "OUTPUTS WRONG");
  std::printf("        rank 0: %zu kernel calls (%zu dot), %zu/%zu sends and %zu/%zu receives zero-copy, arena %zu KiB\n",
              st.instructions, st.dot_calls, st.zero_copy_sends, st.zero_copy_sends + st.staged_sends, st.direct_recvs,
              st.direct_recvs + st.staged_recvs, runner.engine(0).arena_bytes(len) / 1024);
  if (!ok) std::exit(1);
}

}  // namespace

int main() {
  std::printf("bench_replay: prepare-and-shoot encode, gf256 (%s kernels), threads transport, %u hardware threads,"
              " median of %d runs\n",
              gf::kernel_name(Field::gf256()), std::thread::hardware_concurrency(), kReps);
  std::printf("ratios: replay time / baseline time (lower is better)\n");
  for (uint32_t K : {16u, 64u})
    for (size_t len : {size_t{64} << 10, size_t{1} << 20}) bench(K, len);
  return 0;
}
