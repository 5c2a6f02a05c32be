// Helpers for tests that build and run code emitted by `collplan emit-cpp`
// with the system C++ compiler (the one CMake found, COLLPLAN_CXX): compile a
// plan's sources with tests/emit/harness.cpp, run all ranks in threads, and
// compare with the replay engine on the same inputs.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "backend/emit_cpp.h"
#include "host_tools.h"
#include "matrix/matrix.h"
#include "matrix/postcondition.h"
#include "runtime/transport/threads.h"
#include "test_util.h"

namespace emit_test {

namespace fs = std::filesystem;

// The compiler command: CMake's C++ compiler, behind its launcher (ccache)
// when the build uses one, in the strict mode generated code must pass.
inline std::string cxx() {
  std::string c = COLLPLAN_CXX_LAUNCHER;
  if (!c.empty()) c += " ";
  return c + COLLPLAN_CXX + " -std=c++17 -Wall -Wextra -Werror";
}

inline std::string src(const std::string& rel) { return std::string(COLLPLAN_SOURCE_DIR) + "/" + rel; }

// A fresh folder for one emitted plan (test_util.h's scratch_dir).
inline fs::path scratch(const std::string& name) { return collplan::test::scratch_dir("emit-" + name); }

// Every rank's inputs, rank-major then input order, len elements each.
inline std::vector<unsigned char> random_inputs(const collplan::ir::Plan& plan, size_t len, uint64_t seed) {
  collplan::SplitMix64 rng(seed);
  const size_t eb = plan.spec.field.elem_bytes();
  std::vector<unsigned char> bytes;
  for (const auto& prog : plan.ranks)
    for (size_t i = 0; i < prog.inputs.size() * len; ++i) {
      const collplan::Elem v = rng.uniform(plan.spec.field);
      for (size_t b = 0; b < eb; ++b) bytes.push_back(static_cast<unsigned char>(v >> (8 * b)));
    }
  return bytes;
}

// What the replay engine (runtime/engine.h, threads transport) computes, in
// the harness's output order.
inline std::vector<unsigned char> engine_outputs(const collplan::ir::Plan& plan, size_t len,
                                                 const std::vector<unsigned char>& in) {
  const size_t row = len * plan.spec.field.elem_bytes();
  size_t n_out = 0;
  for (const auto& prog : plan.ranks) n_out += prog.outputs.size();
  std::vector<unsigned char> out(n_out * row);
  std::vector<std::vector<const void*>> ins(plan.ranks.size());
  std::vector<std::vector<void*>> outs(plan.ranks.size());
  size_t ia = 0, oa = 0;
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    for (size_t i = 0; i < plan.ranks[r].inputs.size(); ++i, ia += row) ins[r].push_back(in.data() + ia);
    for (size_t j = 0; j < plan.ranks[r].outputs.size(); ++j, oa += row) outs[r].push_back(out.data() + oa);
  }
  collplan::rt::ThreadsRunner runner(plan);
  runner.run(len, ins, outs);
  return out;
}

// What direct_compute (the spec's postcondition applied to the inputs) gives,
// in the same order: an oracle independent of every plan.
inline std::vector<unsigned char> direct_outputs(const collplan::ir::Plan& plan, size_t len,
                                                 const std::vector<unsigned char>& in) {
  const auto& f = plan.spec.field;
  const size_t eb = f.elem_bytes();
  const auto post = collplan::postcondition(plan.spec);
  std::vector<std::vector<std::vector<collplan::Elem>>> x(plan.ranks.size());
  size_t at = 0;
  for (size_t r = 0; r < plan.ranks.size(); ++r)
    for (size_t i = 0; i < plan.ranks[r].inputs.size(); ++i) {
      std::vector<collplan::Elem> v(len);
      for (auto& e : v) {
        e = 0;
        for (size_t b = 0; b < eb; ++b) e |= static_cast<collplan::Elem>(in[at++]) << (8 * b);
      }
      x[r].push_back(std::move(v));
    }
  std::vector<unsigned char> out;
  for (const auto& rank : collplan::direct_compute(f, post, x))
    for (const auto& v : rank)
      for (collplan::Elem e : v)
        for (size_t b = 0; b < eb; ++b) out.push_back(static_cast<unsigned char>(e >> (8 * b)));
  return out;
}

// The plan-independent harness object (tests/emit/harness.cpp), compiled once
// per test process.
inline const std::string& harness_object() {
  static const std::string obj = [] {
    const fs::path d = scratch("harness");
    const std::string o = (d / "harness.o").string();
    const std::string cmd = cxx() + " -O1 -pthread -I" + src("runtime/embedded") + " -I" + src("tests/emit") + " -c " +
                            src("tests/emit/harness.cpp") + " -o " + o;
    const CmdResult c = run_cmd(cmd);
    INFO(cmd << "\n" << c.output);
    REQUIRE(c.status == 0);
    return o;
  }();
  return obj;
}

// A kernel path of collplan_kernels.h to build emitted code for: the
// compiler (empty: CMake's), the flags that select the path, and a command
// prefix that runs the result (an emulator for a cross-compiled path).
struct KernelPath {
  std::string name, compiler, flags, runner;
};

inline bool have_tool(const std::string& tool) { return run_cmd("command -v " + tool).status == 0; }

// The AArch64 NEON path, when a cross compiler and qemu-aarch64 are installed
// (scripts/setup.sh installs both).
inline std::optional<KernelPath> neon_path() {
  if (!have_tool("aarch64-linux-gnu-g++") || !have_tool("qemu-aarch64")) return std::nullopt;
  return KernelPath{"neon", "aarch64-linux-gnu-g++", "", "qemu-aarch64 -L /usr/aarch64-linux-gnu "};
}

// The paths this machine builds and runs natively: the default (a plain
// build: run-time dispatch on x86-64, which picks GFNI here when the CPU has
// it) and, with `all`, SCALAR forced and each x86 SIMD path the CPU has,
// forced at compile time.
inline std::vector<KernelPath> kernel_paths(bool all) {
  std::vector<KernelPath> p = {{"default", "", "", ""}};
  if (!all) return p;
  p.push_back({"scalar", "", "-DCOLLPLAN_EMBEDDED_ISA=0", ""});
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) p.push_back({"avx2", "", "-mavx2", ""});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("gfni"))
    p.push_back({"gfni-avx2", "", "-mavx2 -mgfni", ""});
  if (__builtin_cpu_supports("gfni") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    p.push_back({"gfni-avx512", "", "-mgfni -mavx512f -mavx512bw", ""});
#endif
  return p;
}

// The paths the slow tier builds the same-bytes cases for: every path this
// machine runs except the plain build, which the quick tier builds.
inline std::vector<KernelPath> other_kernel_paths() {
  auto p = kernel_paths(true);
  p.erase(p.begin());  // the plain build
  if (const auto neon = neon_path()) p.push_back(*neon);
  return p;
}

// Builds the emitted sources in `dir` (dispatch header collplan_plan.h) with
// the harness into dir/run_<path>. Fails the test with the compiler's output.
// At -O0: these builds compare bytes on small inputs, and most of their time
// is the compiler's (a quarter less than at -O1); the warnings that need the
// optimiser are the pedantic build's business (test_emit_cpp.cpp, at -O2).
inline void build_emitted(const fs::path& dir, const KernelPath& path = {"default", "", "", ""},
                          const std::string& opt = "-O0") {
  const bool host = path.compiler.empty();
  std::string cmd = (host ? cxx() : path.compiler + " -std=c++17 -Wall -Wextra -Werror") + " " + opt + " " +
                    path.flags + " -pthread -I" + dir.string() + " -I" + src("runtime/embedded") + " -I" +
                    src("tests/emit") + " " + src("tests/emit/plan_glue.cpp") + " " +
                    (host ? harness_object() : src("tests/emit/harness.cpp"));
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".cpp") cmd += " " + e.path().string();
  cmd += " -o " + (dir / ("run_" + path.name)).string();
  const CmdResult c = run_cmd(cmd);
  INFO(cmd << "\n" << c.output);
  REQUIRE(c.status == 0);
}

// Runs dir/run_<path> on `in`; returns the outputs.
inline std::vector<unsigned char> run_emitted(const fs::path& dir, size_t len, const std::vector<unsigned char>& in,
                                              const KernelPath& path = {"default", "", "", ""}) {
  write_bytes(dir / "in.bin", in);
  const CmdResult r = run_cmd(path.runner + (dir / ("run_" + path.name)).string() + " " + std::to_string(len) + " " +
                              (dir / "in.bin").string() + " " + (dir / "out.bin").string());
  INFO(path.name << ": " << r.output);
  REQUIRE(r.status == 0);
  return read_bytes(dir / "out.bin");
}

// Emits every rank of `plan` into dir, builds it with the harness, runs it on
// `in`; returns the outputs.
inline std::vector<unsigned char> emitted_outputs(const collplan::ir::Plan& plan, size_t len,
                                                  const std::vector<unsigned char>& in, const fs::path& dir) {
  collplan::backend::write_files(collplan::backend::emit_cpp(collplan::backend::view_of(plan)), dir.string());
  build_emitted(dir);
  return run_emitted(dir, len, in);
}

}  // namespace emit_test
