// The C++ backend (collplan emit-cpp) on prepare-and-shoot encode plans
// (GF(2^8), p = 2, random matrix) for K = 16, 64, 256, and K = 16 over
// GF(65537):
//   emit      time to generate every rank's source and the dispatch header
//             (median of 3), total and per-rank source sizes;
//   compile   wall time of the system compiler (CMake's, no ccache) on the
//             generated code at -O2: one rank, and all ranks one after the
//             other; at K = 256 a subset of 16 ranks is compiled and the total
//             extrapolated (all 256 would take minutes on a shared machine);
//   replay    the generated code of all ranks run in threads of one process
//             over the in-process channel of tests/emit (tests/emit/harness.cpp)
//             against the replay engine (runtime/engine.h) on the threads
//             transport, same plan, same inputs, ℓ = 64 Ki elements, median of
//             5 runs each; outputs compared byte for byte (a mismatch aborts).
//             K = 16 and 64 (256 would need all 256 ranks compiled).
// The generated code uses the portable kernels of collplan_embedded.h (split
// nibble tables, one region pass per term); the engine uses ISA-L and fuses
// terms into dot products, so the ratio is the price of portability.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/emit_cpp.h"
#include "host_tools.h"
#include "matrix/matrix.h"
#include "passes/pipeline.h"
#include "runtime/transport/threads.h"

using namespace collplan;
namespace fs = std::filesystem;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string src(const std::string& rel) { return std::string(COLLPLAN_SOURCE_DIR) + "/" + rel; }
std::string cxx() { return std::string(COLLPLAN_CXX) + " -std=c++17 -O2 -Wall -Wextra -Werror"; }

double compile(const std::string& args) {
  const double t0 = now();
  const auto r = emit_test::run_cmd(cxx() + " " + args);
  const double t = now() - t0;
  if (r.status != 0) {
    std::fprintf(stderr, "compile failed: %s\n%s\n", args.c_str(), r.output.c_str());
    std::exit(1);
  }
  return t;
}

void bench(uint32_t K, const Field& f, const fs::path& root) {
  passes::CompileOptions opt;
  opt.algorithm = "prepare-shoot";
  const ir::Plan plan = passes::compile(make_encode_spec(K, 2, 1, f, matrix_random(K, 42, f)), opt).plan;
  const auto view = backend::view_of(plan);

  std::vector<double> et;
  std::vector<backend::EmittedFile> files;
  for (int i = 0; i < 3; ++i) {
    const double t0 = now();
    files = backend::emit_cpp(view);
    et.push_back(now() - t0);
  }
  size_t total = 0, largest = 0;
  for (const auto& file : files) {
    total += file.text.size();
    if (&file != &files[0]) largest = std::max(largest, file.text.size());
  }
  const fs::path dir = root / fmt::format("K{}-{}", K, f.elem_bytes());
  fs::remove_all(dir);
  backend::write_files(files, dir.string());
  std::printf("K = %3u %s: %llu terms; emit %.3f s; sources %.2f MB (header %zu B, rank 0 %zu B, largest rank %zu B)\n",
              K, f.name().c_str(), static_cast<unsigned long long>(ir::count_terms(plan)), median(et), total / 1e6,
              files[0].text.size(), files[1].text.size(), largest);

  const std::string inc = " -I" + dir.string() + " -I" + src("runtime/embedded") + " -I" + src("tests/emit");
  const auto obj = [&](uint32_t r) { return (dir / fmt::format("r{}.o", r)).string(); };
  const auto rank_src = [&](uint32_t r) { return (dir / fmt::format("collplan_plan_rank{}.cpp", r)).string(); };
  const double one = compile(inc + " -c " + rank_src(0) + " -o " + obj(0));
  const uint32_t step = K <= 64 ? 1 : K / 16;
  double sum = one;
  uint32_t n = 1;
  for (uint32_t r = step; r < K; r += step, ++n) sum += compile(inc + " -c " + rank_src(r) + " -o " + obj(r));
  if (step == 1)
    std::printf("         compile -O2: one rank %.2f s; all %u ranks %.1f s (one after the other)\n", one, K, sum);
  else
    std::printf("         compile -O2: one rank %.2f s; %u of %u ranks %.1f s, all ranks ~%.0f s (extrapolated)\n", one, n,
                K, sum, sum / n * K);
  if (step != 1) return;

  // Replay: generated code vs the engine.
  const size_t len = 65536;
  SplitMix64 rng(5);
  const size_t eb = f.elem_bytes(), row = len * eb;
  std::vector<unsigned char> in(static_cast<size_t>(K) * row);
  for (size_t i = 0; i < K * len; ++i) {
    const Elem v = rng.uniform(f);
    for (size_t b = 0; b < eb; ++b) in[i * eb + b] = static_cast<unsigned char>(v >> (8 * b));
  }
  emit_test::write_bytes(dir / "in.bin", in);
  std::string link = inc + " -pthread " + src("tests/emit/harness.cpp") + " " + src("tests/emit/plan_glue.cpp");
  for (uint32_t r = 0; r < K; ++r) link += " " + obj(r);
  compile(link + " -o " + (dir / "run").string());
  const auto r = emit_test::run_cmd((dir / "run").string() + fmt::format(" {} ", len) + (dir / "in.bin").string() + " " +
                                    (dir / "out.bin").string() + " 5");
  double gen_t = 0;
  if (r.status != 0 || std::sscanf(r.output.c_str(), "median %lf", &gen_t) != 1) {
    std::fprintf(stderr, "generated replay failed: %s\n", r.output.c_str());
    std::exit(1);
  }
  std::vector<unsigned char> out(in.size());
  std::vector<std::vector<const void*>> ins(K);
  std::vector<std::vector<void*>> outs(K);
  for (uint32_t k = 0; k < K; ++k) {
    ins[k].push_back(in.data() + k * row);
    outs[k].push_back(out.data() + k * row);
  }
  rt::ThreadsRunner runner(plan);
  runner.prepare(len);
  runner.run(len, ins, outs);
  std::vector<double> tt;
  for (int i = 0; i < 5; ++i) tt.push_back(runner.run(len, ins, outs));
  if (emit_test::read_bytes(dir / "out.bin") != out) {
    std::fprintf(stderr, "K = %u: generated code and engine disagree\n", K);
    std::exit(1);
  }
  const double eng_t = median(tt);
  std::printf("         replay, len %zu: generated %.4f s, engine %.4f s; generated/engine = %.2f (outputs equal)\n", len,
              gen_t, eng_t, gen_t / eng_t);
}

}  // namespace

int main() {
  const fs::path root = fs::temp_directory_path() / "collplan-bench-emit";
  for (uint32_t K : {16u, 64u, 256u}) bench(K, Field::gf256(), root);
  // The same at K = 16 over a prime field (Shoup multiplication in both).
  bench(16, Field::prime(65537), root);
  fs::remove_all(root);
  return 0;
}
