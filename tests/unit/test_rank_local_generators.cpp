// Rank-local compiles of the non-circulant generators (gen/rank_local.h;
// gen/dissemination.h, gen/trees.h, gen/postal.h): over grids of small
// specs, every rank built alone equals that rank of the whole plan the same
// generator builds, with the same step count, for every p, λ, n, root and
// (allgatherv) counts the generator takes. The circulant generators'
// grid is in test_rank_local.cpp.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "circulant_spec.h"
#include "gen/registry.h"
#include "passes/alloc_slots.h"
#include "passes/verify.h"
#include "pipeline/pipeline.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::user_error_of;

namespace {

// The generators this file covers: every build_rank hook outside the
// circulant family's own tests.
const std::vector<std::string> kGenerators = {
    "dissemination-allgather", "dissemination-reduce-scatter", "circulant-reduce-scatter", "dissemination-allreduce",
    "reduce-scatter-allgather", "tree-broadcast",                "tree-reduce",              "pipelined-broadcast",
    "pipelined-reduce",        "postal-broadcast",             "postal-prefix",            "recursive-doubling-allgather",
    "recursive-halving-doubling", "postal-reduce", "postal-allreduce", "direct-allgather", "direct-reduce-scatter",
    "recursive-halving"};

bool rooted(OpKind op) { return op == OpKind::Broadcast || op == OpKind::Reduce; }

// The specs of one grid point: prefix takes items through counts (none:
// Algorithm A; with zeros: B) and is inclusive or exclusive, with n = 1.
std::vector<Spec> variants(OpKind op, uint32_t K, uint32_t n, uint32_t root);

// Counts with zeros (some ranks hold nothing), never all zero.
std::vector<uint32_t> counts_for(uint32_t K, uint32_t seed) {
  std::vector<uint32_t> c;
  for (uint32_t j = 0; j < K; ++j) c.push_back((j * 7 + seed) % 4);
  if (c[0] + c[1] == 0) c[1] = 2;
  return c;
}

std::vector<Spec> variants(OpKind op, uint32_t K, uint32_t n, uint32_t root) {
  if (op == OpKind::Prefix) {
    if (n != 1) return {};
    std::vector<Spec> out;
    for (bool b : {false, true})
      for (bool exclusive : {false, true}) {
        Spec s = test::block_spec(op, K, 1, 0, b ? counts_for(K, K) : std::vector<uint32_t>{});
        s.exclusive = exclusive;
        out.push_back(s);
      }
    return out;
  }
  return {test::block_spec(op, K, n, root, op == OpKind::Allgatherv ? counts_for(K, n) : std::vector<uint32_t>{})};
}

struct Grid {
  uint32_t max_K;
  std::vector<uint32_t> blocks;
  uint32_t all_roots_up_to;  // every root for K up to this, else a few
};

// Every rank of `spec` built alone against the whole plan.
void compare_all_ranks(const gen::GeneratorInfo& g, const Spec& spec) {
  const ir::Plan whole = g.build(spec, {});
  ir::Plan shrunk = whole;
  passes::alloc_slots(shrunk);
  for (uint32_t r = 0; r < spec.K; ++r) {
    INFO(g.name << " K = " << spec.K << " p = " << spec.p << " lambda = " << spec.lambda << " n = " << spec.blocks
                << " root = " << spec.root << " rank = " << r);
    ir::RankPlan rp = g.build_rank(spec, r);
    REQUIRE(rp.spec == whole.spec);
    REQUIRE(rp.num_steps == whole.num_steps);
    REQUIRE(rp.program == whole.ranks[r]);
    passes::verify_rank_structure(rp.spec, rp.num_steps, rp.program, kMaxRankLocalRanks);
    pipeline::run_rank_pass("alloc-slots", rp.program);
    REQUIRE(rp.program == shrunk.ranks[r]);
  }
}

uint64_t run_grid(const Grid& grid) {
  uint64_t specs = 0;
  for (const std::string& name : kGenerators) {
    const gen::GeneratorInfo& g = gen::find_generator(name);
    REQUIRE(g.build_rank);
    for (OpKind op : g.ops)
      for (uint32_t K = 2; K <= grid.max_K; ++K)
        for (uint32_t p = 1; p <= 3; ++p)
          for (uint32_t lambda = 1; lambda <= 3; ++lambda)
            for (uint32_t n : grid.blocks) {
              std::vector<uint32_t> roots{0};
              if (rooted(op)) {
                if (K <= grid.all_roots_up_to) {
                  roots.clear();
                  for (uint32_t x = 0; x < K; ++x) roots.push_back(x);
                } else {
                  roots = {0, 1, K / 2 + 1, K - 1};
                }
              }
              for (uint32_t root : roots)
                for (Spec spec : variants(op, K, n, root)) {
                  spec.p = p;
                  spec.lambda = lambda;
                  spec.algorithm = g.name;
                  if (g.why_not && !g.why_not(spec, {}).empty()) continue;  // circulant-reduce-scatter: p = λ = 1
                  compare_all_ranks(g, spec);
                  ++specs;
                }
            }
  }
  return specs;
}

}  // namespace

TEST_CASE("rank-local generators: every rank alone equals that rank of the whole plan", "[rank-local]") {
  CHECK(run_grid({24, {1, 3}, 10}) > 0);
}

TEST_CASE("rank-local generators: the larger grid (K to 40, n 1..4, every root)", "[rank-local][.slow]") {
  CHECK(run_grid({40, {1, 2, 3, 4}, 40}) > 0);
}

TEST_CASE("rank-local generators: a rank alone with the per-rank passes equals the default-compiled plan's",
          "[rank-local]") {
  // The default pipeline's drop-zeros runs on whole plans only; these
  // generators build no zero terms, so it changes nothing and a rank
  // compiled alone is the rank of `collplan compile`'s plan.
  for (const std::string& name : kGenerators) {
    const gen::GeneratorInfo& g = gen::find_generator(name);
    for (OpKind op : g.ops)
      for (uint32_t K : {2u, 7u, 20u})
        for (uint32_t p : {1u, 2u}) {
          for (Spec spec : variants(op, K, op == OpKind::Prefix ? 1 : 3, 1)) {
            spec.p = p;
            if (g.why_not && !g.why_not(spec, {}).empty()) continue;
            pipeline::CompileOptions opt;
            opt.algorithm = g.name;
            const ir::Plan full = pipeline::compile(spec, opt).plan;
            spec.algorithm = g.name;
            for (uint32_t r = 0; r < K; ++r) {
              ir::RankPlan rp = g.build_rank(spec, r);
              for (const auto& pass : pipeline::per_rank_passes(opt.passes)) pipeline::run_rank_pass(pass, rp.program);
              INFO(name << " K = " << K << " p = " << p << " rank " << r);
              CHECK(rp.program == full.ranks[r]);
            }
          }
        }
  }
}

TEST_CASE("rank-local generators: huge K where one rank is small, the whole-plan cap where it is not",
          "[rank-local]") {
  const uint32_t K = kMaxRankLocalRanks;  // 2^31
  struct Big {
    std::string name;
    OpKind op;
    uint32_t p, lambda;
  };
  const std::vector<Big> bigs = {
      {"dissemination-allreduce", OpKind::Allreduce, 1, 1}, {"dissemination-allreduce", OpKind::Allreduce, 3, 2},
      {"tree-broadcast", OpKind::Broadcast, 2, 3},         {"tree-reduce", OpKind::Reduce, 1, 1},
      {"pipelined-broadcast", OpKind::Broadcast, 2, 1},    {"pipelined-broadcast", OpKind::Broadcast, 3, 2},
      {"pipelined-reduce", OpKind::Reduce, 3, 1},          {"pipelined-reduce", OpKind::Reduce, 2, 4},
      {"postal-broadcast", OpKind::Broadcast, 2, 3},       {"postal-prefix", OpKind::Prefix, 1, 1},
      {"postal-prefix", OpKind::Prefix, 3, 2},           {"postal-reduce", OpKind::Reduce, 2, 3},
      {"postal-allreduce", OpKind::Allreduce, 1, 4}};
  for (const Big& b : bigs) {
    Spec spec = test::block_spec(b.op, K, b.op == OpKind::Prefix ? 1 : 4, 7);
    spec.p = b.p;
    spec.lambda = b.lambda;
    const gen::GeneratorInfo& g = gen::find_generator(b.name);
    for (uint32_t r : {0u, 7u, 8u, 12345u, K - 1}) {
      INFO(b.name << " p = " << b.p << " lambda = " << b.lambda << " rank " << r);
      const ir::RankPlan rp = g.build_rank(spec, r);
      CHECK(rp.program.rank == r);
      passes::verify_rank_structure(rp.spec, rp.num_steps, rp.program, kMaxRankLocalRanks);
    }
    CHECK_THAT(user_error_of([&] { g.build_rank(spec, K); }), Catch::Contains("rank 2147483648 is not a processor"));
  }
  // A chain (p = 1) of 2^31 ranks takes more steps than a plan may.
  for (const char* name : {"pipelined-broadcast", "pipelined-reduce"}) {
    const gen::GeneratorInfo& g = gen::find_generator(name);
    const Spec chain = test::block_spec(g.ops.at(0), K, 4, 0);
    CHECK_THAT(user_error_of([&] { g.build_rank(chain, 3); }),
               Catch::Contains("2147483650 steps") && Catch::Contains("16777216"));
  }
  // The gathers and reduce-scatter-allgather walk all K positions in every
  // rank: the whole-plan cap stays.
  for (const char* name : {"dissemination-allgather", "reduce-scatter-allgather", "postal-prefix"}) {
    const gen::GeneratorInfo& g = gen::find_generator(name);
    Spec spec = test::block_spec(g.ops.at(0), kMaxPlanRanks + 1, 1);
    if (spec.op == OpKind::Prefix) {  // Algorithm B: its K counts keep the cap
      spec.counts.assign(spec.K, 0);
      spec.counts[0] = 1;
    }
    CHECK_THAT(user_error_of([&] { g.build_rank(spec, 0); }), Catch::Contains("K = 16777217 is too large"));
  }
}
