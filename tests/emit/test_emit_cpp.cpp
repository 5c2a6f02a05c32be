// The C++ backend (compiler/backend/emit_cpp.h): templates that are real
// C++, the embedded GF kernels against the runtime's references, strict
// compilation of emitted code, and the same-bytes differential test against
// the replay engine for every generator family. Golden emitted sources:
// tests/golden/test_golden_emit.cpp; `collplan emit-cpp` itself:
// tests/cli/test_cli_emit_cpp.cpp.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#include "collplan_embedded.h"
#include "emit_support.h"
#include "gen/registry.h"
#include "matrix/codes.h"
#include "matrix/structured.h"
#include "pipeline/pipeline.h"
#include "runtime/gf/gf_kernels.h"
#include "support/error.h"
#include "repair_spec.h"
#include "test_util.h"

using namespace collplan;
using test::compiled;
using namespace emit_test;

namespace {

Spec spec_of(OpKind op, uint32_t K, uint32_t p, uint32_t lambda, const Field& f, const std::string& algorithm) {
  Spec s;
  s.op = op;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.field = f;
  s.algorithm = algorithm;
  return s;
}

// A block operation (broadcast, reduce, allgather(v), allreduce).
Spec block_spec(OpKind op, uint32_t K, uint32_t p, uint32_t lambda, const Field& f, uint32_t blocks, uint32_t root) {
  Spec s = spec_of(op, K, p, lambda, f, "");
  s.blocks = blocks;
  s.root = root;
  return s;
}

// A decentralized [N, K] encode with a random A (systematic) or G.
Spec dec_spec(uint32_t N, uint32_t K, uint32_t p, bool systematic, const Field& f) {
  return test::random_decentralized_spec(N, K, p, systematic, N * K, f);
}

// Two disjoint draw-and-loose point sets of K points each (radix P).
std::pair<std::vector<Elem>, std::vector<Elem>> two_point_sets(const Field& f, uint32_t K, uint32_t P) {
  const std::vector<Elem> v = disjoint_point_sets(f, K, P, 2);
  return {std::vector<Elem>(v.begin(), v.begin() + K), std::vector<Elem>(v.begin() + K, v.end())};
}

// The emitted code, the engine and direct computation agree byte for byte,
// for vectors of `len` elements and of len + 300 (whole SIMD vectors and a
// tail on every path; these over a copying channel), the emitted code built
// for each of `paths` (by default the plain build).
void same_bytes(const ir::Plan& plan, size_t len, const std::string& name,
                const std::vector<KernelPath>& paths = kernel_paths(false)) {
  INFO(name);
  const auto dir = scratch(name);
  backend::write_files(backend::emit_cpp(backend::view_of(plan)), dir.string());
  std::vector<std::pair<std::vector<unsigned char>, std::vector<unsigned char>>> cases;  // inputs, engine outputs
  for (size_t l : {len, len + 300}) {
    const auto in = random_inputs(plan, l, 0x5eed + l);
    const auto engine = engine_outputs(plan, l, in);
    REQUIRE(engine == direct_outputs(plan, l, in));
    cases.emplace_back(in, engine);
  }
  for (const auto& path : paths) {
    INFO("kernel path " << path.name);
    build_emitted(dir, path);
    for (size_t i = 0; i < cases.size(); ++i) {
      const size_t l = i == 0 ? len : len + 300;
      // The long vectors over a plain copying channel: the staging-row code
      // runs too, not only the channel's zero-copy forms.
      KernelPath run = path;
      if (i == 1) run.runner = "COLLPLAN_CHANNEL_COPY=1 " + run.runner;
      const auto emitted = run_emitted(dir, l, cases[i].first, run);
      REQUIRE(emitted.size() == cases[i].second.size());
      CHECK(emitted == cases[i].second);
    }
    // Each rank's outputs written over its inputs: outputs held in the
    // caller's buffers must then be built aside (Rank::overlapping).
    KernelPath in_place = path;
    in_place.runner = "COLLPLAN_HARNESS_IN_PLACE=1 " + in_place.runner;
    CHECK(run_emitted(dir, len, cases[0].first, in_place) == cases[0].second);
  }
}

template <class F>
void kernels_match(const Field& f, const std::vector<Elem>& constants) {
  using E = typename F::elem;
  SplitMix64 rng(f.size());
  for (size_t n : {1, 7, 64, 100, 256, 1000}) {
    std::vector<E> src(n), dst(n);
    for (auto& v : src) v = static_cast<E>(rng.uniform(f));
    for (auto& v : dst) v = static_cast<E>(rng.uniform(f));
    for (Elem c : constants) {
      INFO(f.name() << " c = " << c << " n = " << n);
      std::vector<E> a = dst, b = dst;
      F::mad(a.data(), src.data(), static_cast<E>(c), n);
      gf::mad_base(f, c, src.data(), b.data(), n);
      REQUIRE(a == b);
      F::mul(a.data(), src.data(), static_cast<E>(c), n);
      gf::mul_base(f, c, src.data(), b.data(), n);
      REQUIRE(a == b);
      F::add(a.data(), src.data(), n);
      gf::add_base(f, src.data(), b.data(), n);
      REQUIRE(a == b);
    }
  }
}

}  // namespace

TEST_CASE("emit-cpp: embedded kernels equal the runtime's portable references", "[emit]") {
  std::vector<Elem> all256(256);
  for (Elem c = 0; c < 256; ++c) all256[c] = c;
  kernels_match<collplan_embedded::Gf2m<8, 0x11D>>(Field::gf256(), all256);
  kernels_match<collplan_embedded::Gf2m<16, 0x1100B>>(Field::gf65536(), {0, 1, 2, 3, 0x100, 0x1234, 0x8000, 0xffff});
  kernels_match<collplan_embedded::Prime<65537>>(Field::prime(65537), {0, 1, 2, 65535, 65536});
  kernels_match<collplan_embedded::Prime<2147483647>>(Field::prime(2147483647), {0, 1, 2, 12345678, 2147483646});
  kernels_match<collplan_embedded::Prime<2>>(Field::prime(2), {0, 1});
}

TEST_CASE("emit-cpp: the templates compile on their own as strict C++17", "[emit]") {
  const auto d = scratch("templates");
  const std::string cmd = cxx() + " -I" + src("runtime/embedded") + " -I" + src("templates") + " -c " +
                          src("templates/rank.template.cpp") + " -o " + (d / "t.o").string();
  const auto r = run_cmd(cmd);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.status == 0);
}

TEST_CASE("emit-cpp: emitted code passes pedantic warnings without exceptions or RTTI (gcc and clang)", "[emit]") {
  // What embedded toolchains are strict about; clang++ too when installed.
  const std::string strict = " -std=c++17 -Wall -Wextra -Werror -Wpedantic -Wshadow -Wconversion -Wsign-conversion "
                             "-Wold-style-cast -Wcast-align -Wundef -fno-exceptions -fno-rtti -fsyntax-only";
  std::vector<std::string> compilers = {COLLPLAN_CXX};
  if (run_cmd("command -v clang++").status == 0) compilers.push_back("clang++");
  const Field f = Field::prime(65537);
  const auto d = scratch("strict");
  backend::EmitCppOptions o;
  o.name = "strict_p";
  backend::write_files(backend::emit_cpp(backend::view_of(compiled(make_encode_spec(5, 2, 2, f, matrix_random(5, 1, f)),
                                                                   "postal-prepare-shoot")), o),
                       d.string());
  o.name = "strict_g";
  Spec b = spec_of(OpKind::Broadcast, 4, 1, 1, Field::gf65536(), "postal-broadcast");
  b.blocks = 3;
  backend::write_files(backend::emit_cpp(backend::view_of(compiled(b, "postal-broadcast")), o), d.string());
  std::string files;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().extension() == ".cpp") files += " " + e.path().string();
  for (const auto& c : compilers) {
    const std::string cmd = c + strict + " -I" + d.string() + " -I" + src("runtime/embedded") + files;
    const auto r = run_cmd(cmd);
    INFO(cmd << "\n" << r.output);
    CHECK(r.status == 0);
  }
}

// The rank template's sample is rank 0 of a two-rank encode; it is compiled
// into this test binary (tests/CMakeLists.txt), so it must also run.
namespace collplan_template {
collplan_embedded::Result rank_0(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs,
                                 size_t len, void* workspace);
}

namespace {
class ScriptedChannel final : public collplan_embedded::Channel {
 public:
  std::vector<unsigned char> sent, reply;
  uint32_t sent_port = 99, sent_peer = 99;
  bool fail_recv = false;
  bool send(uint32_t port, uint32_t peer, const void* data, size_t bytes) override {
    sent_port = port;
    sent_peer = peer;
    sent.assign(static_cast<const unsigned char*>(data), static_cast<const unsigned char*>(data) + bytes);
    return true;
  }
  bool recv(uint32_t, uint32_t, void* data, size_t bytes) override {
    if (fail_recv || bytes != reply.size()) return false;
    std::memcpy(data, reply.data(), bytes);
    return true;
  }
};
}  // namespace

TEST_CASE("emit-cpp: the rank template's sample runs: s2 = s0 + 3*s1, errors name step, peer and port", "[emit]") {
  const Field f = Field::gf256();
  std::vector<unsigned char> x = {1, 2, 200, 0}, y(4);
  ScriptedChannel ch;
  ch.reply = {5, 6, 7, 8};
  const void* in[] = {x.data()};
  void* out[] = {y.data()};
  uint32_t ws[4] = {};
  auto res = collplan_template::rank_0(ch, in, out, 4, ws);
  REQUIRE(res.ok());
  CHECK(ch.sent == x);
  CHECK(ch.sent_port == 0);
  CHECK(ch.sent_peer == 1);
  for (size_t i = 0; i < 4; ++i) CHECK(y[i] == f.add(x[i], f.mul(3, ch.reply[i])));
  ch.fail_recv = true;
  res = collplan_template::rank_0(ch, in, out, 4, ws);
  CHECK(res.error == collplan_embedded::Error::recv_failed);
  CHECK(res.step == 1);
  CHECK(res.peer == 1);
  CHECK(res.port == 0);
  CHECK(collplan_template::rank_0(ch, in, out, 0, ws).error == collplan_embedded::Error::bad_argument);
}

TEST_CASE("emit-cpp: template filling refuses unknown, unclosed and unused regions", "[emit]") {
  const std::string t = "a\n// @collplan:begin x\nsample\n// @collplan:end x\nb\n";
  CHECK(backend::fill_template(t, {{"x", "X\n"}}) == "a\nX\nb\n");
  CHECK_THROWS_AS(backend::fill_template(t, {}), InternalError);
  CHECK_THROWS_AS(backend::fill_template(t, {{"x", ""}, {"y", ""}}), InternalError);
  CHECK_THROWS_AS(backend::fill_template("// @collplan:begin x\n", {{"x", ""}}), InternalError);
  CHECK_THROWS_AS(backend::fill_template("// @collplan:end x\n", {}), InternalError);
}

TEST_CASE("emit-cpp: bad names and ranks are user errors naming the value", "[emit]") {
  const ir::Plan plan = compiled(make_encode_spec(4, 1, 1, Field::gf256(), matrix_random(4, 7, Field::gf256())), "prepare-shoot");
  backend::EmitCppOptions o;
  o.name = "9lives";
  CHECK_THROWS_WITH(backend::emit_cpp(backend::view_of(plan), o), Catch::Contains("'9lives'"));
  o.name = "ok";
  o.ranks = {4};
  CHECK_THROWS_WITH(backend::emit_cpp(backend::view_of(plan), o), Catch::Contains("--rank 4 does not exist (valid: 0..3)"));
  o.ranks = {1, 1};
  CHECK_THROWS_WITH(backend::emit_cpp(backend::view_of(plan), o), Catch::Contains("names rank 1 twice"));
  o.ranks = {2};
  const auto files = backend::emit_cpp(backend::view_of(plan), o);
  REQUIRE(files.size() == 2);
  CHECK(files[0].name == "ok.h");
  CHECK(files[1].name == "ok_rank2.cpp");
  // The header describes and dispatches only the emitted rank.
  CHECK(files[0].text.find("rank_3(") == std::string::npos);
  CHECK(files[0].text.find("case 3:") == std::string::npos);
  CHECK(files[0].text.find("case 2:") != std::string::npos);
  CHECK(files[0].text.find("kEmittedRanks[kNumEmitted] = {2};") != std::string::npos);
  // A subset, given in any order, is emitted in rank order.
  o.ranks = {3, 0};
  const auto two = backend::emit_cpp(backend::view_of(plan), o);
  REQUIRE(two.size() == 3);
  CHECK(two[1].name == "ok_rank0.cpp");
  CHECK(two[2].name == "ok_rank3.cpp");
  CHECK(two[0].text.find("kEmittedRanks[kNumEmitted] = {0, 3};") != std::string::npos);
}

// ---- same bytes: one case per generator family ------------------------------

// Each same-bytes case runs in both tiers: in the quick tier the emitted code
// is built as a user builds it (run-time dispatch), in the slow tier ([.slow])
// once for every other kernel path this machine runs (other_kernel_paths():
// SCALAR and the x86 SIMD paths forced, NEON under qemu-aarch64). `body`
// names the function that holds the case and takes the paths.
#define SAME_BYTES_CASE(body, what)                                                              \
  static void body(const std::vector<KernelPath>& paths);                                        \
  TEST_CASE("emit-cpp same bytes: " what, "[emit][diff][heavy]") { body(kernel_paths(false)); }         \
  TEST_CASE("emit-cpp same bytes on every kernel path: " what, "[emit][diff][.slow]") {          \
    body(other_kernel_paths());                                                                  \
  }                                                                                              \
  static void body(const std::vector<KernelPath>& paths)

SAME_BYTES_CASE(same_bytes_prepare_shoot, "prepare-shoot encode K=6 p=2 gf256") {
  same_bytes(compiled(make_encode_spec(6, 2, 1, Field::gf256(), matrix_random(6, 3, Field::gf256())), "prepare-shoot"),
             37, "prepare-shoot", paths);
}

SAME_BYTES_CASE(same_bytes_postal_allgather, "postal-allgather encode K=5 lambda=2 gf65536") {
  same_bytes(compiled(make_encode_spec(5, 1, 2, Field::gf65536(), matrix_random(5, 4, Field::gf65536())),
                      "postal-allgather"),
             33, "postal-allgather", paths);
}

SAME_BYTES_CASE(same_bytes_postal_prepare_shoot, "postal-prepare-shoot encode K=7 lambda=3 prime:65537") {
  const Field f = Field::prime(65537);
  same_bytes(compiled(make_encode_spec(7, 1, 3, f, matrix_random(7, 5, f)), "postal-prepare-shoot"), 21,
             "postal-prepare-shoot", paths);
}

SAME_BYTES_CASE(same_bytes_postal_prefix, "postal-prefix K=6 p=2 lambda=2 prime:2^31-1") {
  same_bytes(compiled(spec_of(OpKind::Prefix, 6, 2, 2, Field::prime(2147483647), "postal-prefix"), "postal-prefix"), 19,
             "postal-prefix", paths);
}

SAME_BYTES_CASE(same_bytes_postal_broadcast, "postal-broadcast K=6 blocks=3 lambda=2 gf256") {
  Spec s = spec_of(OpKind::Broadcast, 6, 1, 2, Field::gf256(), "postal-broadcast");
  s.blocks = 3;
  s.root = 2;
  same_bytes(compiled(s, "postal-broadcast"), 50, "postal-broadcast", paths);
}

namespace {

// Block operations: {generator, op, K, p, lambda, field, blocks, root, len}.
struct BlockCase {
  const char* generator;
  OpKind op;
  uint32_t K, p, lambda;
  Field field;
  uint32_t blocks, root;
  size_t len;
};

void same_bytes_blocks(const std::vector<BlockCase>& cases,
                       const std::vector<KernelPath>& paths = kernel_paths(false)) {
  for (const auto& c : cases)
    same_bytes(compiled(block_spec(c.op, c.K, c.p, c.lambda, c.field, c.blocks, c.root), c.generator), c.len,
               c.generator, paths);
}

}  // namespace

SAME_BYTES_CASE(same_bytes_trees, "tree-broadcast, tree-reduce, pipelined-broadcast, pipelined-reduce") {
  same_bytes_blocks({{"tree-broadcast", OpKind::Broadcast, 7, 2, 2, Field::gf65536(), 3, 4, 23},
                     {"tree-reduce", OpKind::Reduce, 6, 1, 1, Field::prime(65537), 2, 5, 17},
                     {"pipelined-broadcast", OpKind::Broadcast, 6, 2, 1, Field::gf256(), 4, 1, 29},
                     {"pipelined-reduce", OpKind::Reduce, 5, 1, 2, Field::prime(2147483647), 3, 3, 13}}, paths);
}

// Decentralized plans run on N ranks; sinks have no inputs, systematic
// sources no outputs.
SAME_BYTES_CASE(same_bytes_decentralized_grid, "decentralized-grid N=7 K=4 (K >= R) and N=9 K=3 (K < R)") {
  same_bytes(compiled(dec_spec(7, 4, 1, true, Field::gf256()), "decentralized-grid"),
             31, "decentralized-grid-KgeR", paths);
  same_bytes(compiled(dec_spec(9, 3, 2, true, Field::prime(65537)), "decentralized-grid"), 11,
             "decentralized-grid-KltR", paths);
}

SAME_BYTES_CASE(same_bytes_decentralized_grouped, "decentralized-grouped N=10 K=3 gf65536") {
  same_bytes(compiled(dec_spec(10, 3, 1, false, Field::gf65536()), "decentralized-grouped"),
             19, "decentralized-grouped", paths);
}

SAME_BYTES_CASE(same_bytes_decentralized_grid_blocks,
                "decentralized-grid in 4 blocks with rows streamed by circulant-broadcast") {
  Spec s = dec_spec(12, 3, 1, true, Field::gf256());
  s.blocks = 4;
  pipeline::CompileOptions opt;
  opt.algorithm = "decentralized-grid";
  opt.cost_model = passes::CostModel{1.0, 1.0, 1000};  // bandwidth-bound: the rows stream
  const ir::Plan plan = pipeline::compile(s, opt).plan;
  REQUIRE_THAT(plan.spec.algorithm, Catch::Contains("circulant-broadcast"));
  same_bytes(plan, 13, "decentralized-grid-blocks", paths);
  Spec e = make_encode_spec(6, 2, 1, Field::gf256(), matrix_random(6, 3, Field::gf256()));
  e.blocks = 3;  // a widened encode
  same_bytes(compiled(e, "prepare-shoot"), 7, "encode-widened", paths);
}

SAME_BYTES_CASE(same_bytes_decentralized_padded, "decentralized-padded N=6 K=4 systematic gf256") {
  same_bytes(compiled(dec_spec(6, 4, 2, true, Field::gf256()), "decentralized-padded"),
             21, "decentralized-padded", paths);
}

SAME_BYTES_CASE(same_bytes_decentralized_naive, "decentralized-naive N=8 K=3 p=2 prime:2^31-1") {
  same_bytes(compiled(dec_spec(8, 3, 2, true, Field::prime(2147483647)), "decentralized-naive"), 9,
             "decentralized-naive", paths);
}

// Structured matrices: K = 8 over GF(257) (8 | 256), radix 2.
SAME_BYTES_CASE(same_bytes_repair, "repair-central, -tree, -pipelined, -decentralized: RS and LRC repair, decode") {
  // Small codes: each plan is an emitted program to compile.
  const Spec rep = test::repair_spec("repair", 6, 4, "1,5", Field::gf65536(), "rs", true, 1, 1, 2);
  const Spec dec = test::repair_spec("decode", 5, 3, "0", Field::prime(257), "rs", false, 2, 1, 1);
  for (const char* alg : {"repair-central", "repair-tree", "repair-pipelined", "repair-decentralized", "repair-lagrange"})
    same_bytes(compiled(rep, alg), 13, std::string(alg) + "-repair", paths);
  same_bytes(compiled(dec, "repair-central"), 13, "repair-central-decode", paths);
  // GF(2^8): an LRC's local repair (data 1 from its group 0, 2 and parity 4).
  same_bytes(compiled(test::repair_spec("repair", 7, 4, "1", Field::gf256(), "lrc:2"), "repair-tree"), 13,
             "repair-tree-lrc", paths);
}

SAME_BYTES_CASE(same_bytes_dft, "dft and inverse-dft K=8 P=2 prime:257") {
  const Field f = Field::prime(257);
  same_bytes(compiled(make_encode_spec(8, 1, 1, f, matrix_dft(8, 2, f)), "dft"), 15, "dft", paths);
  same_bytes(compiled(make_encode_spec(8, 1, 1, f, matrix_dft(8, 2, f, true)), "inverse-dft"),
             15, "inverse-dft", paths);
}

SAME_BYTES_CASE(same_bytes_draw_loose, "draw-loose and inverse-draw-loose K=6 P=2 p=2 prime:7681") {
  const Field f = Field::prime(7681);
  same_bytes(compiled(make_encode_spec(6, 2, 1, f, matrix_draw_loose(6, 2, {}, f)), "draw-loose"),
             12, "draw-loose", paths);
  same_bytes(compiled(make_encode_spec(6, 2, 1, f, matrix_draw_loose(6, 2, {}, f, true)), "inverse-draw-loose"), 12,
             "inverse-draw-loose", paths);
}

SAME_BYTES_CASE(same_bytes_searched, "searched K=13 p=2 gf256 (a schedule from the search table)") {
  const Field f = Field::gf256();
  same_bytes(compiled(make_encode_spec(13, 2, 1, f, matrix_random(13, 3, f)), "searched"), 12, "searched", paths);
}

SAME_BYTES_CASE(same_bytes_lagrange, "lagrange K=5 P=5 gf256") {
  const Field f = Field::gf256();
  const auto [a, b] = two_point_sets(f, 5, 5);
  same_bytes(compiled(make_encode_spec(5, 1, 1, f, matrix_lagrange(a, b, f)), "lagrange"), 14, "lagrange", paths);
}

SAME_BYTES_CASE(same_bytes_cauchy, "cauchy and rs-systematic matrices K=8 p=2 prime:257") {
  const Field f = Field::prime(257);
  const auto [a, b] = two_point_sets(f, 8, 2);
  std::vector<Elem> c(8), d(8);
  for (uint32_t i = 0; i < 8; ++i) {
    c[i] = 3 + i;
    d[i] = 100 + 7 * i;
  }
  same_bytes(compiled(make_encode_spec(8, 2, 1, f, matrix_four_lists("cauchy", {a, b, c, d}, f)), "cauchy"), 10,
             "cauchy", paths);
  same_bytes(compiled(make_encode_spec(8, 2, 1, f, matrix_four_lists("rs-systematic", {a, b, c, d}, f)), "cauchy"), 10,
             "cauchy-rs", paths);
}

// Circulant schedules: p = 1, lambda = 1.
SAME_BYTES_CASE(same_bytes_circulant, "circulant-broadcast, -allgather, -allreduce, -reduce") {
  same_bytes_blocks({{"circulant-broadcast", OpKind::Broadcast, 7, 1, 1, Field::gf256(), 4, 3, 18},
                     {"circulant-allgather", OpKind::Allgather, 6, 1, 1, Field::gf65536(), 2, 0, 11},
                     {"circulant-allreduce", OpKind::Allreduce, 7, 1, 1, Field::prime(65537), 3, 0, 16},
                     {"circulant-reduce", OpKind::Reduce, 6, 1, 1, Field::prime(2147483647), 3, 5, 7}}, paths);
}

SAME_BYTES_CASE(same_bytes_circulant_allgatherv, "circulant-allgatherv K=5 counts 2,0,3,1,0 blocks=2 gf256") {
  Spec s = block_spec(OpKind::Allgatherv, 5, 1, 1, Field::gf256(), 2, 0);
  s.counts = {2, 0, 3, 1, 0};
  same_bytes(compiled(s, "circulant-allgatherv"), 9, "circulant-allgatherv", paths);
}

// The p-port collectives: reduce-scatter, allgather (dissemination and
// recursive doubling), the allreduces.
SAME_BYTES_CASE(same_bytes_dissemination, "dissemination and reduce-scatter generators") {
  same_bytes_blocks({{"dissemination-allgather", OpKind::Allgather, 7, 3, 2, Field::gf256(), 2, 0, 13},
                     {"dissemination-reduce-scatter", OpKind::ReduceScatter, 6, 2, 1, Field::gf65536(), 2, 0, 9},
                     {"circulant-reduce-scatter", OpKind::ReduceScatter, 5, 1, 1, Field::prime(65537), 1, 0, 11},
                     {"dissemination-allreduce", OpKind::Allreduce, 9, 2, 1, Field::prime(2147483647), 2, 0, 7},
                     {"reduce-scatter-allgather", OpKind::Allreduce, 6, 1, 1, Field::gf256(), 9, 0, 17},
                     {"recursive-doubling-allgather", OpKind::Allgather, 9, 2, 2, Field::gf65536(), 2, 0, 11},
                     {"recursive-halving-doubling", OpKind::Allreduce, 8, 1, 1, Field::prime(65537), 11, 0, 9},
                     {"recursive-halving", OpKind::ReduceScatter, 9, 2, 2, Field::gf256(), 2, 0, 13}}, paths);
}

// The postal tree reversed, and reduce then broadcast on it.
SAME_BYTES_CASE(same_bytes_postal_reduce, "postal-reduce and postal-allreduce") {
  same_bytes_blocks({{"postal-reduce", OpKind::Reduce, 7, 2, 2, Field::gf65536(), 3, 4, 13},
                     {"postal-reduce", OpKind::Reduce, 6, 1, 5, Field::gf256(), 1, 0, 9},
                     {"postal-allreduce", OpKind::Allreduce, 6, 1, 5, Field::prime(65537), 2, 0, 11},
                     {"postal-allreduce", OpKind::Allreduce, 9, 3, 2, Field::gf256(), 1, 0, 7}}, paths);
}

SAME_BYTES_CASE(same_bytes_direct, "direct-allgather and direct-reduce-scatter") {
  same_bytes_blocks({{"direct-allgather", OpKind::Allgather, 7, 2, 3, Field::gf65536(), 2, 0, 13},
                     {"direct-reduce-scatter", OpKind::ReduceScatter, 6, 1, 5, Field::prime(65537), 2, 0, 9}}, paths);
}

TEST_CASE("emit-cpp same bytes: every registered generator is covered above", "[emit]") {
  // A new generator must get a same-bytes case: this list is the cases above.
  const std::vector<std::string> covered = {"prepare-shoot", "postal-allgather", "postal-prepare-shoot", "postal-prefix",
                                            "postal-broadcast", "tree-broadcast", "tree-reduce", "pipelined-broadcast",
                                            "pipelined-reduce", "decentralized-grid", "decentralized-grouped",
                                            "decentralized-padded", "decentralized-naive", "dft", "inverse-dft",
                                            "draw-loose", "inverse-draw-loose", "lagrange", "cauchy",
                                            "circulant-broadcast", "circulant-allgather", "circulant-allreduce",
                                            "circulant-allgatherv", "circulant-reduce", "dissemination-allgather",
                                            "dissemination-reduce-scatter", "circulant-reduce-scatter",
                                            "dissemination-allreduce", "reduce-scatter-allgather", "recursive-doubling-allgather",
                                            "recursive-halving-doubling", "recursive-halving", "postal-reduce", "postal-allreduce", "direct-allgather",
                                            "direct-reduce-scatter", "searched",
                                            "repair-decentralized", "repair-tree", "repair-pipelined",
                                            "repair-central", "repair-lagrange"};
  for (const auto& g : gen::generators()) {
    INFO("generator " << g.name << " has no same-bytes case in test_emit_cpp.cpp");
    CHECK(std::find(covered.begin(), covered.end(), g.name) != covered.end());
  }
}

TEST_CASE("emit-cpp same bytes, grid: every family over fields, K, p, lambda", "[.slow][emit][diff]") {
  const std::vector<std::pair<Field, std::string>> fields = {
      {Field::gf256(), "gf256"}, {Field::gf65536(), "gf65536"}, {Field::prime(65537), "p65537"}, {Field::prime(2147483647), "p31"}};
  int n = 0;
  for (const auto& [f, fname] : fields)
    for (uint32_t K : {3u, 9u})
      for (auto [p, lambda] : {std::pair{1u, 1u}, std::pair{2u, 3u}}) {
        const std::string tag = fmt::format("{}-K{}-p{}-l{}", fname, K, p, lambda);
        const size_t len = 5 + (n++ % 7);
        if (lambda == 1)
          same_bytes(compiled(make_encode_spec(K, p, lambda, f, matrix_random(K, n, f)), "prepare-shoot"), len, "ps-" + tag);
        same_bytes(compiled(make_encode_spec(K, p, lambda, f, matrix_random(K, n, f)), "postal-allgather"), len, "pa-" + tag);
        same_bytes(compiled(make_encode_spec(K, p, lambda, f, matrix_random(K, n, f)), "postal-prepare-shoot"), len,
                   "pps-" + tag);
        Spec pre = spec_of(OpKind::Prefix, K, p, lambda, f, "postal-prefix");
        pre.exclusive = (n % 2) == 0;
        same_bytes(compiled(pre, "postal-prefix"), len, "pre-" + tag);
        pre.counts.assign(K, 2);
        pre.counts[0] = 1;
        same_bytes(compiled(pre, "postal-prefix"), len, "preB-" + tag);
        Spec b = spec_of(OpKind::Broadcast, K, p, lambda, f, "postal-broadcast");
        b.blocks = 1 + n % 4;
        b.root = static_cast<uint32_t>(n) % K;
        same_bytes(compiled(b, "postal-broadcast"), len, "bc-" + tag);
      }
}

TEST_CASE("emit-cpp same bytes, grid: trees, decentralized, structured matrices, circulant", "[.slow][emit][diff]") {
  const std::vector<Field> fields = {Field::gf256(), Field::gf65536(), Field::prime(65537), Field::prime(2147483647)};
  int n = 0;
  for (uint32_t K : {3u, 9u})
    for (auto [p, lambda] : {std::pair{1u, 1u}, std::pair{2u, 3u}}) {
      const Field& f = fields[n % fields.size()];
      const uint32_t blocks = 1 + n % 4, root = static_cast<uint32_t>(n) % K;
      const size_t len = 5 + (n++ % 7);
      same_bytes_blocks({{"tree-broadcast", OpKind::Broadcast, K, p, lambda, f, blocks, root, len},
                         {"tree-reduce", OpKind::Reduce, K, p, lambda, f, blocks, root, len},
                         {"pipelined-broadcast", OpKind::Broadcast, K, p, lambda, f, blocks + 1, root, len},
                         {"pipelined-reduce", OpKind::Reduce, K, p, lambda, f, blocks + 1, root, len}});
    }
  for (auto [N, K] : {std::pair{5u, 2u}, std::pair{8u, 5u}, std::pair{12u, 3u}}) {
    const Field& f = fields[n % fields.size()];
    const uint32_t p = 1 + n % 2;
    const size_t len = 5 + (n++ % 7);
    const std::string tag = fmt::format("-N{}-K{}", N, K);
    same_bytes(compiled(dec_spec(N, K, p, true, f), "decentralized-grid"), len, "grid" + tag);
    same_bytes(compiled(dec_spec(N, K, p, false, f), "decentralized-grouped"), len, "grouped" + tag);
    same_bytes(compiled(dec_spec(N, K, p, n % 2 == 0, f), "decentralized-padded"), len, "padded" + tag);
    same_bytes(compiled(dec_spec(N, K, p, true, f), "decentralized-naive"), len, "naive" + tag);
  }
  // {field, K, radix P, p}: P | gcd(K, q-1).
  struct Structured {
    Field f;
    uint32_t K, P, p;
  };
  for (const auto& [f, K, P, p] : std::vector<Structured>{{Field::prime(65537), 16, 2, 1},
                                                          {Field::prime(65537), 16, 4, 3},
                                                          {Field::gf256(), 5, 5, 2}}) {
    const std::string tag = fmt::format("-{}-K{}-P{}-p{}", f.size(), K, P, p);
    same_bytes(compiled(make_encode_spec(K, p, 1, f, matrix_dft(K, P, f)), "dft"), 9, "dft" + tag);
    same_bytes(compiled(make_encode_spec(K, p, 1, f, matrix_dft(K, P, f, true)), "inverse-dft"), 9, "idft" + tag);
  }
  for (const auto& [f, K, P, p] :
       std::vector<Structured>{{Field::prime(7681), 12, 2, 1}, {Field::gf65536(), 10, 5, 2}}) {
    const std::string tag = fmt::format("-{}-K{}-P{}-p{}", f.size(), K, P, p);
    same_bytes(compiled(make_encode_spec(K, p, 1, f, matrix_draw_loose(K, P, {}, f)), "draw-loose"), 6, "dl" + tag);
    same_bytes(compiled(make_encode_spec(K, p, 1, f, matrix_draw_loose(K, P, {}, f, true)), "inverse-draw-loose"), 6,
               "idl" + tag);
    const auto [a, b] = two_point_sets(f, K, P);
    std::vector<Elem> c(K), d(K);
    SplitMix64 rng(K * P);
    for (uint32_t i = 0; i < K; ++i) {
      c[i] = rng.nonzero(f);
      d[i] = rng.nonzero(f);
    }
    same_bytes(compiled(make_encode_spec(K, p, 1, f, matrix_lagrange(a, b, f)), "lagrange"), 6, "lagrange" + tag);
    same_bytes(compiled(make_encode_spec(K, p, 1, f, matrix_four_lists("cauchy", {a, b, c, d}, f)), "cauchy"), 6,
               "cauchy" + tag);
    same_bytes(compiled(make_encode_spec(K, p, 1, f, matrix_four_lists("rs-systematic", {a, b, c, d}, f)), "cauchy"),
               6, "rs" + tag);
  }
  for (uint32_t K : {2u, 5u, 12u}) {
    const Field& f = fields[n % fields.size()];
    const uint32_t blocks = 1 + n % 3, root = K - 1;
    const size_t len = 5 + (n++ % 7);
    same_bytes_blocks({{"circulant-broadcast", OpKind::Broadcast, K, 1, 1, f, blocks + 1, root, len},
                       {"circulant-allgather", OpKind::Allgather, K, 1, 1, f, blocks, 0, len},
                       {"circulant-allreduce", OpKind::Allreduce, K, 1, 1, f, blocks, 0, len},
                       {"circulant-reduce", OpKind::Reduce, K, 1, 1, f, blocks + 1, root, len}});
    Spec v = block_spec(OpKind::Allgatherv, K, 1, 1, f, blocks, 0);
    for (uint32_t j = 0; j < K; ++j) v.counts.push_back((j * 7 + K) % 4);
    v.counts[0] = 1;
    same_bytes(compiled(v, "circulant-allgatherv"), len, fmt::format("agv-K{}", K));
  }
}

// ---- kernel paths, the kernel hook, small targets ----------------------------

namespace {

// kernel_check.cpp (every kernel against shift-and-add / % q references) built
// for `path` with `compiler` and run.
void kernel_check(const KernelPath& path, const std::string& compiler) {
  const auto d = scratch("kernel-check-" + path.name);
  const std::string exe = (d / "kc").string();
  const std::string cmd = compiler + " -std=c++17 -O2 -Wall -Wextra -Werror " + path.flags + " -I" +
                          src("runtime/embedded") + " " + src("tests/emit/kernel_check.cpp") + " -o " + exe;
  auto r = run_cmd(cmd);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.status == 0);
  r = run_cmd(path.runner + exe);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("0 mismatches"));
}

}  // namespace

TEST_CASE("emit-cpp: every kernel path of collplan_kernels.h gives the reference products (gcc, clang, neon)", "[emit]") {
  for (const auto& p : kernel_paths(true)) {
    INFO("path " << p.name);
    kernel_check(p, COLLPLAN_CXX);
    if (have_tool("clang++")) kernel_check(p, "clang++");
  }
  if (const auto neon = neon_path()) kernel_check(*neon, neon->compiler);
  else WARN("NEON path not checked: aarch64-linux-gnu-g++ or qemu-aarch64 missing (scripts/setup.sh installs them)");
}

TEST_CASE("emit-cpp same bytes on every kernel path: one plan per field (x86 paths and neon)", "[emit][diff]") {
  auto paths = kernel_paths(true);
  if (const auto neon = neon_path()) paths.push_back(*neon);
  same_bytes(compiled(make_encode_spec(9, 2, 1, Field::gf256(), matrix_random(9, 1, Field::gf256())), "prepare-shoot"),
             70, "paths-gf256", paths);
  same_bytes(compiled(make_encode_spec(7, 1, 2, Field::gf65536(), matrix_random(7, 2, Field::gf65536())),
                      "postal-prepare-shoot"),
             45, "paths-gf65536", paths);
  same_bytes(compiled(make_encode_spec(6, 3, 1, Field::prime(65537), matrix_random(6, 3, Field::prime(65537))),
                      "prepare-shoot"),
             21, "paths-p65537", paths);
  same_bytes(compiled(dec_spec(8, 3, 2, true, Field::prime(2147483647)), "decentralized-grid"), 13, "paths-p31", paths);
}

TEST_CASE("emit-cpp: the kernel hook routes combinations through ISA-L, same bytes", "[emit][diff]") {
  const ir::Plan plan =
      compiled(make_encode_spec(8, 2, 1, Field::gf256(), matrix_random(8, 4, Field::gf256())), "prepare-shoot");
  const auto dir = scratch("isal-hook");
  backend::write_files(backend::emit_cpp(backend::view_of(plan)), dir.string());
  // The hook file goes with the rank sources into the harness build.
  fs::copy_file(src("tests/emit/isal_hook.cpp"), dir / "isal_hook.cpp");
  build_emitted(dir, {"isal", "", "-Wl,--no-as-needed -lisal", ""});
  for (size_t len : {size_t{40}, size_t{1000}}) {  // under 64 bytes the hook declines
    const auto in = random_inputs(plan, len, 77 + len);
    write_bytes(dir / "in.bin", in);
    const CmdResult r = run_cmd((dir / "run_isal").string() + " " + std::to_string(len) + " " +
                                (dir / "in.bin").string() + " " + (dir / "out.bin").string());
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(read_bytes(dir / "out.bin") == engine_outputs(plan, len, in));
    if (len < 64) CHECK_THAT(r.output, Catch::Contains("isal hook: 0 combinations"));
    else CHECK_THAT(r.output, Catch::Contains(" 0 declined"));
    CHECK_THAT(r.output, !Catch::Contains("isal hook: 0 combinations, 0 declined"));
  }
}

TEST_CASE("emit-cpp: one rank builds without the C++ library, exceptions or RTTI, and its Cortex-M4 text size",
          "[emit]") {
  const auto d = scratch("freestanding");
  const ir::Plan plan =
      compiled(make_encode_spec(16, 2, 1, Field::gf256(), matrix_random(16, 5, Field::gf256())), "prepare-shoot");
  backend::EmitCppOptions o;
  o.ranks = {3};
  o.name = "fw";
  backend::write_files(backend::emit_cpp(backend::view_of(plan), o), d.string());
  // -nostdinc++: no C++ library header is reachable, only the C headers
  // (stdint.h, stddef.h, string.h) and the compiler's intrinsics.
  const std::string flags = " -std=c++17 -Os -nostdinc++ -fno-exceptions -fno-rtti -fno-threadsafe-statics -Wall -Wextra "
                            "-Werror -I" + d.string() + " -I" + src("runtime/embedded") + " -c " +
                            (d / "fw_rank3.cpp").string() + " -o ";
  const auto undefined = [](const std::string& nm_output) {
    std::vector<std::string> out;
    std::istringstream in(nm_output);
    std::string kind, sym;
    while (in >> kind >> sym) out.push_back(sym);
    return out;
  };
  // Host: the only outside symbols are the C library's mem* functions and,
  // for run-time dispatch, libgcc's CPU model.
  auto r = run_cmd(std::string(COLLPLAN_CXX) + flags + (d / "host.o").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  r = run_cmd("nm -u " + (d / "host.o").string());
  for (const auto& sym : undefined(r.output)) {
    INFO("undefined symbol " << sym);
    CHECK((sym == "memcpy" || sym == "memset" || sym == "memmove" || sym.rfind("__cpu_", 0) == 0 ||
           sym == "_GLOBAL_OFFSET_TABLE_"));
  }
  if (!have_tool("arm-none-eabi-g++")) {
    WARN("Cortex-M4 build not checked: arm-none-eabi-g++ missing (scripts/setup.sh installs gcc-arm-none-eabi)");
    return;
  }
  r = run_cmd("arm-none-eabi-g++ -mcpu=cortex-m4 -mthumb" + flags + (d / "m4.o").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  r = run_cmd("nm -u " + (d / "m4.o").string());
  for (const auto& sym : undefined(r.output)) {
    INFO("undefined symbol " << sym);
    CHECK((sym == "memcpy" || sym == "memset" || sym == "memmove" || sym.rfind("__aeabi_", 0) == 0));
  }
  r = run_cmd("arm-none-eabi-size " + (d / "m4.o").string());
  REQUIRE(r.status == 0);
  std::istringstream in(r.output.substr(r.output.find('\n') + 1));
  size_t text = 0, data = 0, bss = 0;
  in >> text >> data >> bss;
  // The scalar kernels, one rank's program and its prepared coefficients
  // (32 bytes of nibble tables per term) in flash; in RAM only the kernel
  // hook (two pointers).
  CHECK(text > 0);
  CHECK(text < 12000);
  CHECK(data == 0);
  CHECK(bss <= 8);
  WARN("Cortex-M4 -Os: K = 16 encode rank 3 (GF(2^8), " << plan.ranks[3].steps.size() << " steps): text " << text
                                                           << " B, data " << data << " B, bss " << bss << " B");
}
