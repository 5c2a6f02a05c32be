// Runs every emitted rank of a plan (described by plan_glue.cpp, see
// harness.h) in threads over the in-process channel:
//   harness LEN IN OUT [REPS]
// IN holds every rank's inputs, rank-major then input order, LEN elements
// each at the field's width; OUT receives the outputs in the same order.
// With REPS, runs all ranks REPS times and prints the median wall time of
// one run (threads started and joined included; workspaces allocated before
// the clock starts). Exit 0 on success, 1 when a rank reports an error
// (printed), 2 on bad use.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "harness.h"
#include "inproc_channel.h"

int main(int argc, char** argv) {
  const collplan_test::PlanInfo plan = collplan_test::plan_info();
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: harness LEN IN OUT [REPS]\n");
    return 2;
  }
  const size_t len = std::strtoull(argv[1], nullptr, 10);
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
  std::vector<unsigned char> output(n_out * row);
  std::vector<collplan_embedded::Result> results(plan.num_ranks);
  std::vector<std::vector<const void*>> ins(plan.num_ranks);
  std::vector<std::vector<void*>> outs(plan.num_ranks);
  std::vector<std::vector<uint32_t>> ws(plan.num_ranks);
  size_t in_at = 0, out_at = 0;
  for (uint32_t r = 0; r < plan.num_ranks; ++r) {
    for (uint32_t i = 0; i < plan.num_inputs(r); ++i, in_at += row) ins[r].push_back(input.data() + in_at);
    for (uint32_t j = 0; j < plan.num_outputs(r); ++j, out_at += row) outs[r].push_back(output.data() + out_at);
    // uint32_t words: aligned for every field's element type.
    ws[r].resize((plan.workspace_bytes(r, len) + 3) / 4 + 1);
  }
  const auto run_all = [&] {
    collplan_test::Mailboxes boxes;
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < plan.num_ranks; ++r)
      threads.emplace_back([&, r] {
        collplan_test::InprocChannel ch(boxes, r);
        results[r] = plan.run_rank(r, ch, ins[r].data(), outs[r].data(), len, ws[r].data());
      });
    for (auto& t : threads) t.join();
  };
  run_all();
  if (argc == 5) {
    std::vector<double> times;
    for (long i = std::strtol(argv[4], nullptr, 10); i > 0; --i) {
      const auto t0 = std::chrono::steady_clock::now();
      run_all();
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    if (!times.empty()) std::printf("median %.9f\n", times[times.size() / 2]);
  }
  int rc = 0;
  for (uint32_t r = 0; r < plan.num_ranks; ++r)
    if (!results[r].ok()) {
      std::fprintf(stderr, "rank %u: error %d at step %u (peer %u, port %u)\n", r, static_cast<int>(results[r].error),
                   results[r].step, results[r].peer, results[r].port);
      rc = 1;
    }
  std::ofstream(argv[3], std::ios::binary).write(reinterpret_cast<const char*>(output.data()),
                                                  static_cast<std::streamsize>(output.size()));
  return rc;
}
