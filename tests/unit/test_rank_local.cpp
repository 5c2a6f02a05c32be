// Rank-local compile (gen/circulant_plans.h, GeneratorInfo::build_rank,
// `collplan compile --rank`, ir/binary.h's rank-local files): one rank built
// alone equals that rank of the whole plan the same generator builds, with
// and without the per-rank passes; the rank-local file round-trips, is
// refused where a whole plan is needed, and checks; the limits on K.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "circulant_spec.h"
#include "gen/circulant_plans.h"
#include "gen/registry.h"
#include "ir/binary.h"
#include "ir/text.h"
#include "matrix/postcondition.h"
#include "passes/alloc_slots.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::TempFile;
using test::user_error_of;

namespace {

// Roots only where the operation has one; allgatherv counts with zeros.
Spec circ_spec(OpKind op, uint32_t K, uint32_t n, uint32_t root = 0) {
  std::vector<uint32_t> counts;
  if (op == OpKind::Allgatherv) {
    for (uint32_t j = 0; j < K; ++j) counts.push_back((j * 7 + root) % 5);  // some ranks hold nothing
    if (counts[0] + counts[1] == 0) counts[1] = 1;
  }
  return test::block_spec(op, K, n, op == OpKind::Broadcast || op == OpKind::Reduce ? root % K : 0,
                          std::move(counts));
}

const gen::GeneratorInfo& circ_generator(OpKind op) {
  for (const auto& g : gen::generators())
    if (g.build_rank && g.name.starts_with("circulant-") && g.ops.at(0) == op) return g;
  FAIL("no rank-local generator for " << op_name(op));
  throw;
}

constexpr OpKind kCirculantOps[] = {OpKind::Broadcast, OpKind::Reduce, OpKind::Allgather, OpKind::Allreduce,
                                    OpKind::Allgatherv};

}  // namespace

TEST_CASE("rank-local: every circulant generator's rank equals that rank of its whole plan", "[rank-local]") {
  for (OpKind op : kCirculantOps) {
    const gen::GeneratorInfo& g = circ_generator(op);
    for (uint32_t K = 2; K <= 40; ++K)
      for (uint32_t n : {1u, 2u, 5u})
        for (uint32_t root : {0u, 1u, K - 1, K / 2 + 1}) {
          Spec spec = circ_spec(op, K, n, root);
          spec.algorithm = g.name;
          const ir::Plan whole = g.build(spec, {});
          ir::Plan shrunk = whole;
          passes::alloc_slots(shrunk);
          for (uint32_t r = 0; r < K; ++r) {
            INFO(g.name << " K = " << K << " n = " << n << " root = " << spec.root << " rank = " << r);
            ir::RankPlan rp = g.build_rank(spec, r);
            REQUIRE(rp.spec == whole.spec);
            REQUIRE(rp.num_steps == whole.num_steps);
            REQUIRE(rp.program == whole.ranks[r]);
            // The per-rank pass gives the rank of the whole plan after it.
            pipeline::run_rank_pass("alloc-slots", rp.program);
            REQUIRE(rp.program == shrunk.ranks[r]);
            passes::verify_rank_structure(rp.spec, rp.num_steps, rp.program, kMaxRankLocalRanks);
          }
          if (op != OpKind::Broadcast && op != OpKind::Reduce) break;  // the root matters to these only
        }
  }
}

TEST_CASE("rank-local: the default pipeline's drop-zeros changes no circulant plan", "[rank-local]") {
  // So a rank compiled alone with the per-rank passes equals that rank of
  // the whole plan compiled with the default passes.
  for (OpKind op : kCirculantOps)
    for (uint32_t K : {2u, 7u, 20u, 33u}) {
      Spec spec = circ_spec(op, K, 3, 1);
      pipeline::CompileOptions opt;
      opt.algorithm = circ_generator(op).name;
      const ir::Plan full = pipeline::compile(spec, opt).plan;
      spec.algorithm = opt.algorithm;
      for (uint32_t r = 0; r < K; ++r) {
        ir::RankPlan rp = circ_generator(op).build_rank(spec, r);
        for (const auto& p : pipeline::per_rank_passes(opt.passes)) pipeline::run_rank_pass(p, rp.program);
        INFO(opt.algorithm << " K = " << K << " rank " << r);
        CHECK(rp.program == full.ranks[r]);
      }
    }
}

TEST_CASE("rank-local: only alloc-slots is a per-rank pass", "[rank-local]") {
  CHECK(pipeline::per_rank_passes({"drop-zeros", "alloc-slots"}) == std::vector<std::string>{"alloc-slots"});
  ir::Program p;
  CHECK_THAT(user_error_of([&] { pipeline::run_rank_pass("drop-zeros", p); }),
             Catch::Contains("needs every rank") && Catch::Contains("per-rank passes: alloc-slots"));
  CHECK_THAT(user_error_of([&] { pipeline::run_rank_pass("fold", p); }), Catch::Contains("unknown optimisation pass"));
}

TEST_CASE("rank-local: the registry's build_rank hooks", "[rank-local]") {
  // Every generator whose ranks need no other rank's program has one
  // (test_rank_local_generators.cpp covers the non-circulant ones).
  CHECK(gen::rank_local_generator_names() ==
        "postal-prefix, postal-broadcast, tree-broadcast, tree-reduce, postal-reduce, pipelined-broadcast, pipelined-reduce, "
        "circulant-broadcast, recursive-doubling-allgather, circulant-allgather, circulant-allreduce, circulant-allgatherv, circulant-reduce, "
        "dissemination-allgather, direct-allgather, recursive-halving, circulant-reduce-scatter, "
        "dissemination-reduce-scatter, "
        "direct-reduce-scatter, dissemination-allreduce, "
        "recursive-halving-doubling, reduce-scatter-allgather, postal-allreduce");
}

TEST_CASE("rank-local: per-rank input/output counts the operation defines, without the map", "[rank-local]") {
  // Broadcast root 2 of 5, n = 3: the root has the 3 inputs, everyone 3 outputs.
  Spec b = circ_spec(OpKind::Broadcast, 5, 3, 2);
  for (uint32_t k = 0; k < 5; ++k) {
    CHECK(rank_io(b, k).inputs == (k == b.root ? 3u : 0u));
    CHECK(rank_io(b, k).outputs == 3u);
  }
  Spec r = b;
  r.op = OpKind::Reduce;
  CHECK(rank_io(r, r.root).outputs == 3u);
  CHECK(rank_io(r, (r.root + 1) % 5).outputs == 0u);
  CHECK(rank_io(circ_spec(OpKind::Allgather, 5, 3, 2), 4).outputs == 15u);
  Spec v = circ_spec(OpKind::Allgatherv, 4, 2);
  v.counts = {1, 0, 3, 2};
  CHECK(rank_io(v, 1).inputs == 0u);
  CHECK(rank_io(v, 2).inputs == 3u);
  CHECK(rank_io(v, 0).outputs == 6u);
  Spec prefix = circ_spec(OpKind::Allreduce, 4, 1);
  prefix.op = OpKind::Prefix;
  CHECK(rank_io(prefix, 3).inputs == 1u);
  prefix.counts = {1, 0, 3, 2};
  CHECK(rank_io(prefix, 2).outputs == 3u);
  // At K = 2^31 (no map could be built) and for a rank out of range.
  Spec huge = circ_spec(OpKind::Broadcast, kMaxRankLocalRanks, 8);
  CHECK(rank_io(huge, kMaxRankLocalRanks - 1).outputs == 8u);
  CHECK_THROWS_WITH(rank_io(b, 5), Catch::Contains("rank 5") && Catch::Contains("0..4"));
}

TEST_CASE("rank-local: huge K for broadcast, reduce and allreduce, and the whole-plan cap for the gathers",
          "[rank-local]") {
  const uint32_t K = kMaxRankLocalRanks;  // 2^31
  for (OpKind op : {OpKind::Broadcast, OpKind::Reduce, OpKind::Allreduce}) {
    Spec spec = circ_spec(op, K, 8, 5);
    const auto& g = circ_generator(op);
    for (uint32_t r : {0u, 5u, 12345u, K - 1}) {
      const ir::RankPlan rp = g.build_rank(spec, r);
      CHECK(rp.program.rank == r);
      CHECK(rp.num_steps == (op == OpKind::Allreduce ? 31u : 8u - 1 + 31));
      passes::verify_rank_structure(rp.spec, rp.num_steps, rp.program, kMaxRankLocalRanks);
      CHECK_THROWS_AS(passes::verify_rank_structure(rp.spec, rp.num_steps, rp.program), UserError);
    }
    CHECK_THAT(user_error_of([&] { g.build_rank(spec, K); }),
               Catch::Contains("rank 2147483648 is not a processor") && Catch::Contains("valid ranks 0..2147483647"));
    CHECK_THAT(user_error_of([&] { g.build(spec, {}); }),
               Catch::Contains("K = 2147483648 is too large") && Catch::Contains("compile --rank"));
  }
  // One more than the circulant limit is refused everywhere.
  Spec over = circ_spec(OpKind::Broadcast, K, 1);
  over.K = K + 1;
  CHECK_THAT(user_error_of([&] { circ_generator(OpKind::Broadcast).build_rank(over, 0); }),
             Catch::Contains("K = 2147483649 is too large"));
  // Allgather's program holds K·n outputs: its cap stays, with the reason.
  const Spec ag = circ_spec(OpKind::Allgather, kMaxPlanRanks + 1, 1);
  CHECK_THAT(user_error_of([&] { circ_generator(OpKind::Allgather).build_rank(ag, 0); }),
             Catch::Contains("too large for a rank-local compile too") && Catch::Contains("K*n"));
  Spec agv = circ_spec(OpKind::Allgather, kMaxPlanRanks + 1, 1);
  agv.op = OpKind::Allgatherv;
  CHECK_THAT(user_error_of([&] { circ_generator(OpKind::Allgatherv).build_rank(agv, 0); }),
             Catch::Contains("too large for a rank-local compile too"));
}

TEST_CASE("rank-local: the file round-trips and is refused where a whole plan is needed", "[rank-local]") {
  for (OpKind op : kCirculantOps) {
    Spec spec = circ_spec(op, 13, 3, 4);
    spec.algorithm = circ_generator(op).name;
    const ir::Plan whole = circ_generator(op).build(spec, {});
    for (uint32_t r : {0u, 4u, 12u}) {
      const ir::RankPlan rp = circ_generator(op).build_rank(spec, r);
      TempFile f(fmt::format("{}-{}.cplan", op_name(op), r));
      ir::write_rank_local(rp, f.path);
      ir::PlanHeader h;
      CHECK(ir::read_rank(f.path, r, &h) == whole.ranks[r]);
      CHECK(h.compiled_alone);
      CHECK(h.only_rank == r);
      CHECK(h.spec == spec);
      CHECK(h.num_steps == whole.num_steps);
      CHECK(h.index.size() == 1);
      // Its hash is its own, not the plan's; deterministic.
      CHECK_FALSE(h.content_hash == ir::plan_digest(whole));
      CHECK(ir::encode_rank_local(rp) == ir::encode_rank_local(circ_generator(op).build_rank(spec, r)));
      CHECK_THAT(user_error_of([&] { ir::read_binary(f.path); }), Catch::Contains("compiled alone"));
      CHECK_THAT(user_error_of([&] { ir::read_rank(f.path, (r + 1) % 13); }),
                 Catch::Contains("holds only rank") && Catch::Contains("compile --rank"));
      // Printed as that rank of the whole plan prints.
      CHECK(ir::to_text(h.spec, h.num_steps, ir::read_rank(f.path, r)) == ir::to_text(whole, r));
      // Extracting its own rank copies it.
      TempFile g(fmt::format("{}-{}-x.cplan", op_name(op), r));
      ir::extract_rank(f.path, r, g.path);
      CHECK(ir::read_header(g.path).content_hash == h.content_hash);
    }
  }
}

TEST_CASE("rank-local: a damaged rank-local file is refused", "[rank-local]") {
  const ir::RankPlan rp = circ_generator(OpKind::Broadcast).build_rank(circ_spec(OpKind::Broadcast, 9, 2), 3);
  const std::vector<uint8_t> good = ir::encode_rank_local(rp);
  TempFile f("damaged.cplan");
  auto save = [&](const std::vector<uint8_t>& bytes) {
    FILE* out = std::fopen(f.path.c_str(), "wb");
    REQUIRE(out);
    std::fwrite(bytes.data(), 1, bytes.size(), out);
    std::fclose(out);
  };
  auto load = [&](const std::vector<uint8_t>& bytes) {
    save(bytes);
    return user_error_of([&] { ir::read_rank(f.path, 3); });
  };
  save(good);
  CHECK_NOTHROW(ir::read_rank(f.path, 3));
  std::vector<uint8_t> b = good;
  b.back() ^= 1;  // the blob: its hash in the index no longer matches
  CHECK_THAT(load(b), Catch::Contains("does not match its hash"));
  b = good;
  b.push_back(0);  // a rank-local file's size is its own
  CHECK_THAT(load(b), Catch::Contains("truncated or extended"));
  b = good;
  b[12] = 2;  // bit 1 without bit 0
  CHECK_THAT(load(b), Catch::Contains("flags = 0x2"));
  b = good;
  b[12] = 1;  // claimed as an extracted file: no K-entry index follows
  CHECK_THAT(load(b), Catch::Contains("damaged plan file"));
}
