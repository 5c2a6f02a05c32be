// The C++ backend (collplan emit-cpp) against the replay engine, on
// prepare-and-shoot encode plans (p = 2, random matrix):
//
//   emit      time to generate every rank's source and the dispatch header
//             (median of 3), total and per-rank source sizes, and the
//             dispatch header of a single-rank emit (GF(2^8), K = 16, 64,
//             256, 4096);
//   replay    for K = 16, 64, 256 over GF(2^8), GF(2^16) and GF(65537): the
//             generated code of all ranks, built twice with the system
//             compiler (CMake's) — "native" -O2 -march=native and
//             "portable" plain -O2 — run in threads of one process over the
//             in-process channel of tests/emit (tests/emit/harness.cpp,
//             persistent threads), against the engine (runtime/engine.h) on
//             the threads transport; vectors of 4 KiB and 64 KiB; 5 rounds,
//             each running the engine, then the native build, then the
//             portable one 5 times (so load drifts over all three alike);
//             outputs compared byte for byte (a mismatch aborts). Ratio =
//             generated time / engine time, the median of the rounds'
//             ratios (< 1: generated faster);
//   kernels   one combination of 8 sources (emitted `r.set`) by
//             collplan_kernels.h's fused dot() built for: SCALAR forced,
//             plain -O2 (x86-dispatch) and -march=native; by the same
//             SCALAR build one region pass per term (mul, then mad per
//             term: how emitted code combined before dot() fused them); and
//             the engine's gf::dot on the same data (bench/emit_kernels.cpp),
//             timed interleaved with the same dot() compiled into this
//             program ("inproc": both run the one GF kernel library).
//
//   bench_emit [--quick | --kernels]
//     --quick: K = 16 and 64 only in the replay; --kernels: the kernel
//     table only (a minute, where the whole run takes 10-20)
//
// The machine is shared and noisy: read the ratios, and run it twice.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "aligned.h"
#include "backend/emit_cpp.h"
#include "host_tools.h"
#include "matrix/matrix.h"
#include "pipeline/pipeline.h"
#include "runtime/embedded/collplan_embedded.h"
#include "runtime/gf/gf_kernels.h"
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
std::string cxx() { return std::string(COLLPLAN_CXX) + " -std=c++17 -Wall -Wextra -Werror"; }

void must(const std::string& cmd) {
  const auto r = emit_test::run_cmd(cmd);
  if (r.status != 0) {
    std::fprintf(stderr, "command failed: %s\n%s\n", cmd.c_str(), r.output.c_str());
    std::exit(1);
  }
}

const std::vector<std::pair<std::string, std::string>> kBuilds = {{"native", "-O2 -march=native"},
                                                                   {"portable", "-O2"}};

ir::Plan encode_plan(uint32_t K, const Field& f) {
  pipeline::CompileOptions opt;
  opt.algorithm = "prepare-shoot";
  return pipeline::compile(make_encode_spec(K, 2, 1, f, matrix_random(K, 42, f)), opt).plan;
}

void emit_section(const fs::path& root) {
  std::printf("== emit (GF(2^8), p = 2)\n");
  for (uint32_t K : {16u, 64u, 256u, 4096u}) {
    const ir::Plan plan = encode_plan(K, Field::gf256());
    const auto view = backend::view_of(plan);
    std::vector<double> et;
    std::vector<backend::EmittedFile> files;
    for (int i = 0; i < 3; ++i) {
      const double t0 = now();
      files = backend::emit_cpp(view);
      et.push_back(now() - t0);
    }
    size_t total = 0, largest = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      total += files[i].text.size();
      if (i > 0) largest = std::max(largest, files[i].text.size());
    }
    backend::EmitCppOptions one;
    one.ranks = {K / 2};
    const auto single = backend::emit_cpp(view, one);
    std::printf("K = %4u: %llu terms; emit %.3f s; sources %.2f MB (header %zu B, largest rank %zu B); "
                "single-rank emit: header %zu B, rank %zu B\n",
                K, static_cast<unsigned long long>(ir::count_terms(plan)), median(et), total / 1e6, files[0].text.size(),
                largest, single[0].text.size(), single[1].text.size());
    if (K == 64) {  // compile time of one rank, both builds
      const fs::path dir = root / "emit64";
      fs::remove_all(dir);
      backend::write_files(single, dir.string());
      for (const auto& [bname, flags] : kBuilds) {
        const double t0 = now();
        must(cxx() + " " + flags + " -I" + dir.string() + " -I" + src("runtime/embedded") + " -c " +
             (dir / single[1].name).string() + " -o " + (dir / "r.o").string());
        std::printf("          compile one rank (%s): %.2f s\n", bname.c_str(), now() - t0);
      }
    }
  }
}

// Compiles every rank source of `dir` (and the harness) with `flags`, two
// compilers at a time, into dir/run_<name>.
void build(const fs::path& dir, const std::string& name, const std::string& flags) {
  const std::string inc = " -I" + dir.string() + " -I" + src("runtime/embedded") + " -I" + src("tests/emit");
  const fs::path objs = dir / ("obj_" + name);
  fs::create_directories(objs);
  std::string list;
  std::vector<std::string> o;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".cpp") {
      const std::string obj = (objs / (e.path().stem().string() + ".o")).string();
      list += cxx() + " " + flags + inc + " -c " + e.path().string() + " -o " + obj + "\n";
      o.push_back(obj);
    }
  emit_test::write_bytes(dir / "cmds.txt", std::vector<unsigned char>(list.begin(), list.end()));
  must("xargs -P 2 -d '\\n' -I CMD sh -c CMD < " + (dir / "cmds.txt").string());
  std::string link = cxx() + " " + flags + inc + " -pthread " + src("tests/emit/harness.cpp") + " " +
                     src("tests/emit/plan_glue.cpp");
  for (const auto& x : o) link += " " + x;
  must(link + " -o " + (dir / ("run_" + name)).string());
}

// The replay's rounds and the runs of each side per round.
constexpr int kRounds = 5, kRunsPerRound = 5;

void replay_section(const fs::path& root, bool quick) {
  std::printf("\n== replay: generated code (threads, in-process channel) vs engine (threads transport), %d rounds of\n"
              "   %d runs of each side; times: medians of the rounds' medians; ratios: medians of the rounds' ratios\n",
              kRounds, kRunsPerRound);
  std::printf("%-12s %5s %7s | %10s %10s %10s | %8s %8s\n", "field", "K", "vector", "native s", "portable s", "engine s",
              "nat/eng", "port/eng");
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)})
    for (uint32_t K : {16u, 64u, 256u}) {
      if (quick && K > 64) continue;
      const ir::Plan plan = encode_plan(K, f);
      const fs::path dir = root / fmt::format("K{}-{}", K, f.elem_bytes());
      fs::remove_all(dir);
      backend::write_files(backend::emit_cpp(backend::view_of(plan)), dir.string());
      const double tb = now();
      for (const auto& [bname, flags] : kBuilds) build(dir, bname, flags);
      std::fprintf(stderr, "  (built K = %u %s twice in %.0f s)\n", K, f.name().c_str(), now() - tb);
      rt::ThreadsRunner runner(plan);
      for (size_t bytes : {size_t{4096}, size_t{65536}}) {
        const size_t eb = f.elem_bytes(), len = bytes / eb, row = len * eb;
        SplitMix64 rng(5 + bytes);
        std::vector<unsigned char> in(static_cast<size_t>(K) * row);
        for (size_t i = 0; i < K * len; ++i) {
          const Elem v = rng.uniform(f);
          for (size_t b = 0; b < eb; ++b) in[i * eb + b] = static_cast<unsigned char>(v >> (8 * b));
        }
        emit_test::write_bytes(dir / "in.bin", in);
        // The engine's buffers 64-byte aligned, as the harness aligns the
        // generated code's (both read inputs and write outputs in place).
        const collplan_test::AlignedVec<unsigned char> in_buf(in.begin(), in.end());
        collplan_test::AlignedVec<unsigned char> out_buf(in.size());
        std::vector<std::vector<const void*>> ins(K);
        std::vector<std::vector<void*>> outs(K);
        for (uint32_t k = 0; k < K; ++k) {
          ins[k].push_back(in_buf.data() + k * row);
          outs[k].push_back(out_buf.data() + k * row);
        }
        runner.prepare(len);
        runner.run(len, ins, outs);
        const std::vector<unsigned char> out(out_buf.begin(), out_buf.end());
        // Rounds of (engine, native, portable), each a median of 5 runs, so
        // that the machine's load drifts over all three alike; the ratios
        // are the medians of the rounds' ratios.
        std::vector<double> te, tg[2], rg[2];
        for (int round = 0; round < kRounds; ++round) {
          std::vector<double> tt;
          for (int i = 0; i < kRunsPerRound; ++i) tt.push_back(runner.run(len, ins, outs));
          te.push_back(median(tt));
          for (size_t b = 0; b < kBuilds.size(); ++b) {
            double g = 0;
            const auto r = emit_test::run_cmd((dir / ("run_" + kBuilds[b].first)).string() + fmt::format(" {} ", len) +
                                              (dir / "in.bin").string() + " " + (dir / "out.bin").string() +
                                              fmt::format(" {}", kRunsPerRound));
            if (r.status != 0 || std::sscanf(r.output.c_str(), "median %lf", &g) != 1) {
              std::fprintf(stderr, "generated replay failed: %s\n", r.output.c_str());
              std::exit(1);
            }
            if (emit_test::read_bytes(dir / "out.bin") != out) {
              std::fprintf(stderr, "K = %u %s: generated code (%s) and engine disagree\n", K, f.name().c_str(),
                           kBuilds[b].first.c_str());
              std::exit(1);
            }
            tg[b].push_back(g);
            rg[b].push_back(g / te.back());
          }
        }
        const double eng = median(te), gen[2] = {median(tg[0]), median(tg[1])};
        const double ratio[2] = {median(rg[0]), median(rg[1])};
        std::printf("%-12s %5u %4zu KiB | %10.6f %10.6f %10.6f | %8.2f %8.2f\n", f.name().c_str(), K, bytes / 1024,
                    gen[0], gen[1], eng, ratio[0], ratio[1]);
        std::fflush(stdout);
      }
      fs::remove_all(dir);
    }
}

// The engine's gf::dot and collplan_kernels.h's dot() compiled into this
// program (the library's X86_DISPATCH build, as the portable generated code)
// on one combination of k sources (same shape as emit_kernels.cpp's), timed
// interleaved -- one sample of each per round, 21 rounds -- so that load from
// other processes hits both alike; median seconds {engine, embedded}. Both
// run the same library kernel, so their ratio shows what the adapters cost;
// the separate builds' figures, taken minutes apart, move far more with the
// machine's load. Exits on a mismatch.
template <class F>
std::pair<double, double> engine_and_embedded(const Field& f, size_t bytes, uint32_t k) {
  using E = typename F::elem;
  const size_t eb = f.elem_bytes(), n = bytes / eb;
  SplitMix64 rng(bytes + k);
  // 64-byte aligned (tests/emit/aligned.h), both kernels' buffers alike.
  std::vector<collplan_test::AlignedVec<E>> src(k, collplan_test::AlignedVec<E>(n));
  std::vector<const void*> ptr(k);
  std::vector<const E*> eptr(k);
  std::vector<Elem> coef(k);
  std::vector<typename F::Coef> prep(k);
  for (uint32_t s = 0; s < k; ++s) {
    for (auto& e : src[s]) e = static_cast<E>(rng.uniform(f));
    ptr[s] = src[s].data();
    eptr[s] = src[s].data();
    coef[s] = 2 + rng.uniform(f) % (f.size() - 2);
    prep[s] = F::prepare(static_cast<E>(coef[s]));
  }
  collplan_test::AlignedVec<E> dst(n), dst2(n);
  void* d = dst.data();
  const auto t = gf::prepare_dot(f, k, 1, coef.data());
  const size_t reps = std::max<size_t>(1, (size_t{1} << 22) / bytes);
  std::vector<double> te, tm;
  for (int s = 0; s < 21; ++s) {
    double t0 = now();
    for (size_t r = 0; r < reps; ++r) gf::dot_prepared(f, t, ptr.data(), &d, n);
    te.push_back((now() - t0) / static_cast<double>(reps));
    t0 = now();
    for (size_t r = 0; r < reps; ++r) F::dot(dst2.data(), eptr.data(), prep.data(), k, n, false);
    tm.push_back((now() - t0) / static_cast<double>(reps));
  }
  if (dst != dst2) {
    std::fprintf(stderr, "%s: the engine's and the embedded dot disagree\n", f.name().c_str());
    std::exit(1);
  }
  return {median(te), median(tm)};
}

std::pair<double, double> engine_and_embedded(const std::string& field, size_t bytes, uint32_t k) {
  if (field == "gf256") return engine_and_embedded<collplan_embedded::Gf2m<8, 0x11D>>(Field::gf256(), bytes, k);
  if (field == "gf65536") return engine_and_embedded<collplan_embedded::Gf2m<16, 0x1100B>>(Field::gf65536(), bytes, k);
  return engine_and_embedded<collplan_embedded::Prime<65537>>(Field::prime(65537), bytes, k);
}

void kernel_section(const fs::path& root) {
  std::printf("\n== kernels: one combination of 8 sources, median seconds (per-term = SCALAR build, one pass per term)\n");
  const fs::path dir = root / "kernels";
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> builds = {
      {"scalar", "-O2 -DCOLLPLAN_EMBEDDED_ISA=0"}, {"portable", "-O2"}, {"native", "-O2 -march=native"}};
  // key: field/bytes → build → (per-term, fused)
  std::map<std::pair<std::string, size_t>, std::map<std::string, std::pair<double, double>>> res;
  std::map<std::string, std::string> isa;
  for (const auto& [bname, flags] : builds) {
    const std::string exe = (dir / ("k_" + bname)).string();
    must(cxx() + " " + flags + " -I" + src("runtime/embedded") + " -I" + src("tests/emit") + " " +
         src("bench/emit_kernels.cpp") + " -o " + exe);
    const auto r = emit_test::run_cmd(exe + " 8");
    if (r.status != 0) {
      std::fprintf(stderr, "emit_kernels (%s) failed: %s\n", bname.c_str(), r.output.c_str());
      std::exit(1);
    }
    size_t pos = 0;
    while (pos < r.output.size()) {
      const size_t eol = r.output.find('\n', pos);
      const std::string line = r.output.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
      pos = eol == std::string::npos ? r.output.size() : eol + 1;
      char field[32];
      size_t bytes;
      unsigned kk;
      double perterm, fused;
      const size_t at = line.find(" isa="), lg = line.find(" perterm=");
      if (at == std::string::npos || lg == std::string::npos) continue;
      if (std::sscanf(line.c_str(), "field=%31s bytes=%zu k=%u", field, &bytes, &kk) == 3 &&
          std::sscanf(line.c_str() + lg, " perterm=%lf fused=%lf", &perterm, &fused) == 2) {
        res[{field, bytes}][bname] = {perterm, fused};
        isa[bname] = line.substr(at + 5, lg - at - 5);
      }
    }
  }
  for (const auto& [bname, flags] : builds) std::printf("  %-8s (%s): %s\n", bname.c_str(), flags.c_str(), isa[bname].c_str());
  std::printf("%-12s %7s | %10s | %10s %10s %10s | %10s %10s | %9s %9s %9s %9s\n", "field", "vector", "per-term",
              "scalar", "portable", "native", "engine", "emb-inproc", "pt/scal", "port/eng", "nat/eng", "inproc");
  for (const auto& [key, m] : res) {
    const auto [eng, emb] = engine_and_embedded(key.first, key.second, 8);
    const double perterm = m.at("scalar").first;
    std::printf("%-12s %3zu KiB | %10.3e | %10.3e %10.3e %10.3e | %10.3e %10.3e | %9.2f %9.2f %9.2f %9.2f\n",
                key.first.c_str(), key.second / 1024, perterm, m.at("scalar").second, m.at("portable").second,
                m.at("native").second, eng, emb, perterm / m.at("scalar").second, m.at("portable").second / eng,
                m.at("native").second / eng, emb / eng);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool kernels_only = argc > 1 && std::strcmp(argv[1], "--kernels") == 0;
  if (argc > 2 || (argc > 1 && !quick && !kernels_only)) {
    std::fprintf(stderr, "bench_emit: unknown argument '%s' (valid: --quick, --kernels)\nusage: bench_emit [--quick | --kernels]\n",
                 argv[argc > 2 && (quick || kernels_only) ? 2 : 1]);
    return 2;
  }
  const fs::path root = fs::temp_directory_path() / "collplan-bench-emit";
  fs::remove_all(root);
  fs::create_directories(root);
  std::printf("compiler: %s\n", COLLPLAN_CXX);
  if (!kernels_only) emit_section(root);
  kernel_section(root);
  if (!kernels_only) replay_section(root, quick);
  fs::remove_all(root);
  return 0;
}
