// Plans of each generator family, built and compiled as `collplan compile`
// delivers them, replayed on the threads transport (runtime/check/replay.h): every
// output equals the direct computation of the spec's postcondition.
#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "circulant_spec.h"
#include "gen/registry.h"
#include "matrix/matrix.h"
#include "matrix/structured.h"
#include "pipeline/pipeline.h"
#include "runtime/check/replay.h"
#include "test_util.h"

using namespace collplan;
using test::block_spec;
using test::build_with;
using test::random_decentralized_spec;
using test::slice;

TEST_CASE("postal encode: compiled, optimised and replayed plans equal the direct computation", "[postal_encode]") {
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)})
    for (uint32_t lambda : {2u, 3u})
      for (uint32_t K : {5u, 12u, 27u})
        for (const char* alg : {"postal-allgather", "postal-prepare-shoot"}) {
          INFO(f.name() << " K=" << K << " lambda=" << lambda << " " << alg);
          pipeline::CompileOptions opt;
          opt.algorithm = alg;
          const auto res = pipeline::compile(make_encode_spec(K, 2, lambda, f, matrix_random(K, K + lambda, f)), opt);
          for (size_t len : {1u, 7u, 4099u}) {
            const auto rep = rt::replay_and_compare(res.plan, len, 5, 1);
            INFO(rep.first_mismatch);
            REQUIRE(rep.equal);
          }
        }
}

TEST_CASE("compile picks a decentralized generator, replay equals direct encoding", "[decentralized][runtime]") {
  for (auto [N, K, len] : {std::tuple{24u, 16u, 1000u}, {20u, 4u, 333u}, {9u, 5u, 1u}, {16u, 8u, 64u}})
    for (bool sys : {true, false}) {
      INFO("N=" << N << " K=" << K << " len=" << len << " sys=" << sys);
      Spec s = random_decentralized_spec(N, K, 2, sys, N * K);
      pipeline::CompileOptions opt;
      const auto res = pipeline::compile(s, opt);
      CHECK_THAT(res.plan.spec.algorithm, Catch::StartsWith("decentralized-"));
      const auto rep = rt::replay_and_compare(res.plan, len, 99, 1);
      CHECK(rep.equal);
      CHECK(rep.first_mismatch.empty());
    }
}

TEST_CASE("decentralized encode in n blocks: compile and replay equal direct encoding", "[blocks][runtime]") {
  for (auto [N, K, n] : {std::tuple{24u, 4u, 6u}, {20u, 16u, 3u}, {9u, 5u, 2u}})
    for (bool sys : {true, false}) {
      INFO("N=" << N << " K=" << K << " n=" << n << " sys=" << sys);
      pipeline::CompileOptions opt;
      opt.cost_model = passes::CostModel{1.0, 1.0, 4096};  // long blocks: streaming wins where it applies
      Spec s = random_decentralized_spec(N, K, 1, sys, N * K + n);
      s.blocks = n;
      const auto res = pipeline::compile(s, opt);
      CHECK(res.plan.ranks[K].outputs.size() == n);
      const auto rep = rt::replay_and_compare(res.plan, 100, 7, 1);
      CHECK(rep.equal);
    }
}

TEST_CASE("circulant plans replay equal to direct computation", "[circulant-plans]") {
  for (const Spec& s : {block_spec(OpKind::Broadcast, 13, 6, 5), block_spec(OpKind::Allgather, 11, 2),
                        block_spec(OpKind::Allreduce, 12, 3), block_spec(OpKind::Reduce, 14, 4, 9),
                        block_spec(OpKind::Allgatherv, 10, 3, 0, {2, 0, 5, 1, 0, 3, 4, 0, 1, 2})}) {
    INFO(op_name(s.op));
    pipeline::CompileOptions opt;
    opt.algorithm = std::string("circulant-") + op_name(s.op);
    const auto res = pipeline::compile(s, opt);
    const auto rep = rt::replay_and_compare(res.plan, 257, 9, 1);
    CHECK(rep.equal);
    CHECK(rep.first_mismatch.empty());
  }
}

TEST_CASE("p-port collectives replay equal to the direct computation", "[dissemination]") {
  struct Case {
    OpKind op;
    const char* algorithm;
    uint32_t K, p, n, lambda;
  };
  for (const Case& c : {Case{OpKind::Allgather, "dissemination-allgather", 11, 3, 2, 1},
                        Case{OpKind::Allgatherv, "dissemination-allgather", 9, 2, 1, 2},
                        Case{OpKind::Allgatherv, "circulant-allgatherv", 9, 3, 2, 1},
                        Case{OpKind::ReduceScatter, "dissemination-reduce-scatter", 10, 2, 3, 1},
                        Case{OpKind::ReduceScatter, "circulant-reduce-scatter", 13, 1, 2, 1},
                        Case{OpKind::Allreduce, "dissemination-allreduce", 12, 3, 2, 2},
                        Case{OpKind::Allreduce, "reduce-scatter-allgather", 7, 1, 9, 1},
                        Case{OpKind::Allreduce, "reduce-scatter-allgather", 10, 2, 23, 1}})
    for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)}) {
      INFO(c.algorithm << " K = " << c.K << " p = " << c.p << " field " << f.name());
      // Allgatherv: rank j holds (5j + 3) mod 4 blocks.
      Spec s = block_spec(c.op, c.K, c.n, 0,
                          c.op == OpKind::Allgatherv ? std::vector<uint32_t>{3, 0, 1, 2, 3, 0, 1, 2, 3} : std::vector<uint32_t>{});
      s.p = c.p;
      s.lambda = c.lambda;
      s.field = f;
      pipeline::CompileOptions opt;
      opt.algorithm = c.algorithm;
      const auto res = pipeline::compile(s, opt);
      const auto rep = rt::replay_and_compare(res.plan, 131, 7, 1);
      CHECK(rep.equal);
      CHECK(rep.first_mismatch.empty());
    }
}

TEST_CASE("structured: runtime replay of each family equals direct computation", "[structured]") {
  const Field f = Field::prime(7681);
  const uint32_t K = 24;
  const std::vector<Elem> sets = disjoint_point_sets(f, K, 2, 2);
  const std::vector<Elem> a = slice(sets, 0, K), b = slice(sets, 1, K), ones(K, 1);
  const std::vector<std::pair<std::string, MatrixSpec>> specs = {
      {"draw-loose", matrix_draw_loose(K, 2, {}, f)},
      {"inverse-draw-loose", matrix_draw_loose(K, 2, {}, f, true)},
      {"lagrange", matrix_lagrange(a, b, f)},
      {"cauchy", matrix_four_lists("cauchy", {a, b, ones, ones}, f)},
      {"cauchy", matrix_four_lists("rs-systematic", {a, b, ones, ones}, f)}};
  for (const auto& [name, ms] : specs) {
    INFO(ms.family);
    const ir::Plan plan = build_with(name, make_encode_spec(K, 2, 1, f, ms));
    CHECK(rt::replay_and_compare(plan, 33, 5, 1).equal);
  }
  const Field g = Field::gf256();
  const ir::Plan dft = build_with("dft", make_encode_spec(17, 1, 1, g, matrix_dft(17, 17, g)));
  CHECK(rt::replay_and_compare(dft, 64, 6, 1).equal);
}
