// Small helpers that many test files need: the checker's exact mode, the
// integer formulas cost bounds are written in, the message of an expected
// UserError, plans from the compile pipeline or from one generator, and
// scratch files.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "gen/registry.h"
#include "matrix/codes.h"
#include "matrix/matrix.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "support/error.h"

namespace collplan::test {

// ---- checking and counting --------------------------------------------------

// The checker in exact mode: coefficient vectors over all inputs.
inline const passes::VerifyOptions kExact{passes::VerifyMode::Exact, 0, 1};

// Checks the plan in exact mode; throws VerifyError if it is wrong.
inline void verify_exact(const ir::Plan& plan) { passes::verify(plan, kExact); }

// ⌈log_{p+1} n⌉ by integer powers: the rounds in which p ports reach n
// ranks (0 for n <= 1).
inline uint32_t log_ceil(uint64_t n, uint64_t p) {
  uint32_t t = 0;
  for (uint64_t r = 1; r < n; r *= p + 1) ++t;
  return t;
}

// ⌈a / b⌉ for b > 0, in the common type of a and b.
template <class A, class B>
constexpr std::common_type_t<A, B> ceil_div(A a, B b) {
  return (a + b - 1) / b;
}

// Runs fn, requires it to throw a UserError, and returns its message.
template <class Fn>
std::string user_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  FAIL("expected a UserError");
  return {};
}

// ---- specs and plans --------------------------------------------------------

// A plain collective (no matrix) of K ranks, p ports, n blocks, latency
// lambda: broadcast and reduce rooted at a rank that moves with K and n,
// allgatherv (and prefix with n > 1) with uneven counts, some of them 0,
// prefix exclusive for odd K + p.
inline Spec plain_spec(OpKind op, uint32_t K, uint32_t p, uint32_t n, uint32_t lambda, const Field& f) {
  Spec s;
  s.op = op;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.field = f;
  s.blocks = op == OpKind::Prefix ? 1 : n;
  if (op == OpKind::Broadcast || op == OpKind::Reduce) s.root = (K * 7 + n) % K;
  if (op == OpKind::Allgatherv || (op == OpKind::Prefix && n > 1)) {
    s.counts.resize(K);
    for (uint32_t k = 0; k < K; ++k) s.counts[k] = (k * 5 + n) % (n + 2);
    s.counts[K / 2] += 1;  // at least one item in all
  }
  if (op == OpKind::Prefix) s.exclusive = (K + p) % 2 == 1;
  return s;
}

// An encode spec with a random K x K matrix (matrix_random's seed).
inline Spec random_encode_spec(uint32_t K, uint32_t p, const Field& f, uint64_t seed, uint32_t lambda = 1) {
  return make_encode_spec(K, p, lambda, f, matrix_random(K, seed, f));
}

// A decentralized [N, K] encode spec with a random matrix: A (K x (N-K))
// when systematic, G (K x N) otherwise.
inline Spec random_decentralized_spec(uint32_t N, uint32_t K, uint32_t p, bool systematic, uint64_t seed,
                                      const Field& f = Field::gf256(), uint32_t lambda = 1) {
  return make_decentralized_spec(N, K, p, lambda, f,
                                 matrix_explicit(random_matrix(K, systematic ? N - K : N, seed, f), f));
}

// The i-th run of K elements of v: one of several point sets drawn at once
// (disjoint_point_sets).
inline std::vector<Elem> slice(const std::vector<Elem>& v, uint32_t i, uint32_t K) {
  return std::vector<Elem>(v.begin() + i * K, v.begin() + (i + 1) * K);
}

// The plan `collplan compile` delivers for s with `algorithm`: the
// generator, the default passes and the checker after each stage.
inline ir::Plan compiled(const Spec& s, const std::string& algorithm = "auto") {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  return pipeline::compile(s, opt).plan;
}

// The plan generator `name` builds for s under the unit cost model, no pass
// after it; the generator must take s.
inline ir::Plan build_with(const std::string& name, const Spec& s) {
  const passes::CostModel unit{};
  const auto& g = gen::find_generator(name);
  const std::string why_not = g.why_not ? g.why_not(s, unit) : std::string();
  INFO(name << ": " << why_not);
  REQUIRE(why_not.empty());
  Spec named = s;
  named.algorithm = name;
  return g.build(named, unit);
}

// ---- scratch files ----------------------------------------------------------

// This process's scratch folder, <tmp>/collplan-tests-<pid>, removed when the
// process exits (kept when COLLPLAN_KEEP_TEST_DIR is set, for a look after a
// failure).
inline const std::filesystem::path& scratch_root() {
  struct Root {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("collplan-tests-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      if (std::getenv("COLLPLAN_KEEP_TEST_DIR") == nullptr) std::filesystem::remove_all(path, ec);
    }
  };
  static const Root root;
  return root.path;
}

// A fresh, empty folder `name` under the scratch root.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const std::filesystem::path d = scratch_root() / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// A file name under the scratch root, not used before in this process;
// the file is removed when the TempFile goes out of scope.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name) {
    static int counter = 0;
    std::filesystem::create_directories(scratch_root() / "files");
    path = (scratch_root() / "files" / (std::to_string(counter++) + "-" + name)).string();
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

// The whole file (empty when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `text` as the whole file.
inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// The names in the folder `dir`, sorted (what a command left behind).
inline std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(dir)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace collplan::test
