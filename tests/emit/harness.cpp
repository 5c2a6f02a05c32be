// Runs every emitted rank of a plan (described by plan_glue.cpp, see
// harness.h) in threads over the in-process channel:
//   harness LEN IN OUT [REPS]
// Environment: COLLPLAN_CHANNEL_COPY=1 makes the channel a plain copying one
// (no zero-copy forms); COLLPLAN_HARNESS_IN_PLACE=1 runs each rank in place:
// its output j is written over its input j (for j below both counts), as a
// caller reusing its buffers would (not with REPS: a run overwrites inputs).
// IN holds every rank's inputs, rank-major then input order, LEN elements
// each at the field's width; OUT receives the outputs in the same order.
// With REPS, runs all ranks REPS times more and prints the median wall time
// of one run (from releasing the ranks' threads, started once, to the last
// one finishing; workspaces allocated before the clock starts). Exit 0 on
// success, 1 when a rank reports an error (printed), 2 on bad use.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "aligned.h"
#include "harness.h"
#include "inproc_channel.h"

int main(int argc, char** argv) {
  const collplan_test::PlanInfo plan = collplan_test::plan_info();
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: harness LEN IN OUT [REPS]\n");
    return 2;
  }
  const size_t len = std::strtoull(argv[1], nullptr, 10);
  // COLLPLAN_CHANNEL_COPY=1: the channel offers no zero-copy forms, so the
  // emitted code's staging-row paths run.
  const char* copy = std::getenv("COLLPLAN_CHANNEL_COPY");
  const bool zero_copy = !(copy && std::string(copy) == "1");
  const char* in_place_env = std::getenv("COLLPLAN_HARNESS_IN_PLACE");
  const bool in_place = in_place_env && std::string(in_place_env) == "1";
  if (in_place && argc == 5) {
    std::fprintf(stderr, "harness: COLLPLAN_HARNESS_IN_PLACE=1 runs once (no REPS)\n");
    return 2;
  }
  const size_t row = len * plan.elem_bytes;
  std::ifstream in(argv[2], std::ios::binary);
  const std::vector<unsigned char> input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t n_in = 0, n_out = 0;
  for (uint32_t r = 0; r < plan.num_ranks; ++r) {
    n_in += plan.num_inputs(r);
    n_out += plan.num_outputs(r);
  }
  if (input.size() != n_in * row) {
    std::fprintf(stderr, "harness: %s holds %zu bytes, expected %zu\n", argv[2], input.size(), n_in * row);
    return 2;
  }
  // Every buffer 64-byte aligned (aligned.h), as a caller who cares for
  // speed allocates them (the contract needs 4) and as the engine's arena is.
  using Buffer = collplan_test::AlignedVec<unsigned char>;
  const Buffer in_buf(input.begin(), input.end());
  Buffer output(n_out * row);
  std::vector<collplan_embedded::Result> results(plan.num_ranks);
  std::vector<std::vector<const void*>> ins(plan.num_ranks);
  std::vector<std::vector<void*>> outs(plan.num_ranks);
  std::vector<Buffer> ws(plan.num_ranks);
  // In place: output j of a rank is its input j's buffer (a copy of the
  // input, copied to OUT after the run).
  std::vector<Buffer> shared;
  std::vector<std::pair<size_t, size_t>> shared_out;  // (shared index, offset in output)
  size_t in_at = 0, out_at = 0;
  for (uint32_t r = 0; r < plan.num_ranks; ++r) {
    for (uint32_t i = 0; i < plan.num_inputs(r); ++i, in_at += row) ins[r].push_back(in_buf.data() + in_at);
    for (uint32_t j = 0; j < plan.num_outputs(r); ++j, out_at += row) {
      if (in_place && j < plan.num_inputs(r)) {
        const auto* from = static_cast<const unsigned char*>(ins[r][j]);
        shared.emplace_back(from, from + row);
        ins[r][j] = shared.back().data();
        outs[r].push_back(shared.back().data());
        shared_out.emplace_back(shared.size() - 1, out_at);
        continue;
      }
      outs[r].push_back(output.data() + out_at);
    }
    ws[r].resize(std::max<size_t>(plan.workspace_bytes(r, len), 1));  // never a null workspace
  }
  // One persistent thread per rank (as the engine's threads runner keeps its
  // workers): a run releases them all and ends when the last one is done, so
  // thread start-up is not timed.
  collplan_test::Mailboxes boxes;
  std::mutex mu;
  std::condition_variable start_cv, done_cv;
  uint64_t generation = 0;
  uint32_t running = 0;
  bool quit = false;
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < plan.num_ranks; ++r)
    threads.emplace_back([&, r] {
      collplan_test::InprocChannel ch(boxes, r, zero_copy);
      uint64_t seen = 0;
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(mu);
          start_cv.wait(lock, [&] { return quit || generation != seen; });
          if (quit) return;
          seen = generation;
        }
        results[r] = plan.run_rank(r, ch, ins[r].data(), outs[r].data(), len, ws[r].data());
        std::lock_guard<std::mutex> lock(mu);
        if (--running == 0) done_cv.notify_one();
      }
    });
  const auto run_all = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu);
      running = plan.num_ranks;
      ++generation;
    }
    start_cv.notify_all();
    std::unique_lock<std::mutex> lock(mu);
    done_cv.wait(lock, [&] { return running == 0; });
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  run_all();
  if (argc == 5) {
    std::vector<double> times;
    for (long i = std::strtol(argv[4], nullptr, 10); i > 0; --i) times.push_back(run_all());
    std::sort(times.begin(), times.end());
    if (!times.empty()) std::printf("median %.9f\n", times[times.size() / 2]);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    quit = true;
  }
  start_cv.notify_all();
  for (auto& t : threads) t.join();
  int rc = 0;
  for (uint32_t r = 0; r < plan.num_ranks; ++r)
    if (!results[r].ok()) {
      std::fprintf(stderr, "rank %u: error %d at step %u (peer %u, port %u)\n", r, static_cast<int>(results[r].error),
                   results[r].step, results[r].peer, results[r].port);
      rc = 1;
    }
  for (const auto& [k, at] : shared_out) std::copy(shared[k].begin(), shared[k].end(), output.begin() + static_cast<std::ptrdiff_t>(at));
  std::ofstream(argv[3], std::ios::binary).write(reinterpret_cast<const char*>(output.data()),
                                                  static_cast<std::streamsize>(output.size()));
  return rc;
}
