// The recursive-doubling allgather and the recursive halving-doubling
// allreduce (gen/recursive_doubling.h): every plan through the exact checker
// over an exhaustive small grid, C1 and C2 against the closed forms and the
// lower bounds, the property they exist for (every message is consecutive
// ranks' or chunks' blocks in rank order, so one piece in rank-ordered
// buffers), replays, refusals, and the choice of `--algorithm auto`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gen/dissemination.h"
#include "gen/recursive_doubling.h"
#include "gen/registry.h"
#include "passes/cost.h"
#include "passes/verify.h"
#include "pipeline/pipeline.h"
#include "runtime/check/replay.h"
#include "runtime/transport/threads.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;

namespace {

Spec spec_of(uint32_t K, uint32_t p, uint32_t n, uint32_t lambda = 1) {
  return test::plain_spec(OpKind::Allgather, K, p, n, lambda, Field::gf256());
}

// For each send, the output index of each payload slot at the sender: a
// run first, first + 1, ... in rank-major block order (outputs[a·n + b] is
// rank a's block b); and the same for the receive's slots at the receiver.
void check_runs(const ir::Plan& plan) {
  for (const ir::Program& prog : plan.ranks) {
    std::vector<uint32_t> out_of(prog.num_slots, UINT32_MAX);
    for (uint32_t j = 0; j < prog.outputs.size(); ++j) out_of[prog.outputs[j]] = j;
    auto is_run = [&](const std::vector<uint32_t>& slots) {
      for (size_t e = 0; e < slots.size(); ++e)
        if (out_of[slots[0]] == UINT32_MAX || out_of[slots[e]] != out_of[slots[0]] + e) return false;
      return true;
    };
    for (const ir::Step& st : prog.steps) {
      for (const ir::Send& s : st.sends) {
        std::vector<uint32_t> slots;
        for (const ir::Combo& c : s.payload) {
          REQUIRE(c.terms.size() == 1);
          slots.push_back(c.terms[0].slot);
        }
        INFO("rank " << prog.rank << " step " << st.t << " send to " << s.to);
        CHECK(is_run(slots));
      }
      for (const ir::Recv& r : st.recvs) {
        INFO("rank " << prog.rank << " step " << st.t << " receive from " << r.from);
        CHECK(is_run(std::vector<uint32_t>(r.into.begin(), r.into.end())));
      }
    }
  }
}

// Replays `plan` once on threads with each rank's inputs in one buffer and
// its outputs in another, as MPI's send and receive buffers, and returns
// the messages the engines handed to the transport in more than one piece
// (what an MPI transport sends as a derived datatype).
size_t messages_in_pieces(const ir::Plan& plan, size_t len) {
  const size_t K = plan.ranks.size(), row = len * plan.spec.field.elem_bytes();
  std::vector<std::vector<unsigned char>> in(K), out(K);
  std::vector<std::vector<const void*>> in_ptr(K);
  std::vector<std::vector<void*>> out_ptr(K);
  for (size_t r = 0; r < K; ++r) {
    in[r].assign(plan.ranks[r].inputs.size() * row, 1);
    out[r].assign(plan.ranks[r].outputs.size() * row, 0);
    for (size_t i = 0; i < plan.ranks[r].inputs.size(); ++i) in_ptr[r].push_back(in[r].data() + i * row);
    for (size_t j = 0; j < plan.ranks[r].outputs.size(); ++j) out_ptr[r].push_back(out[r].data() + j * row);
  }
  rt::ThreadsRunner runner(plan);
  runner.run(len, in_ptr, out_ptr);
  size_t split = 0;
  for (ir::Rank r = 0; r < K; ++r) split += runner.engine(r).stats().split_messages;
  return split;
}

}  // namespace

TEST_CASE("recursive-doubling allgather: exact, optimal, one run per message, K = (p+1)^m", "[recursive-doubling]") {
  size_t plans = 0;
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint64_t K = p + 1, m = 1; K <= 64; K *= p + 1, ++m)
      for (uint32_t n : {1u, 2u, 3u, 4u})
        for (uint32_t lambda : {1u, 2u, 3u}) {
          INFO(fmt::format("K = {}, p = {}, n = {}, lambda = {}", K, p, n, lambda));
          const Spec s = spec_of(static_cast<uint32_t>(K), p, n, lambda);
          const gen::GeneratorInfo& g = gen::find_generator("recursive-doubling-allgather");
          REQUIRE(g.why_not(s, {}).empty());
          const ir::Plan plan = g.build(s, {});
          REQUIRE_NOTHROW(passes::verify(plan, kExact));
          const passes::CostReport c = passes::cost(plan);
          CHECK(c.C1 == lambda * m);
          CHECK(c.C2 == n * (K - 1) / p);
          CHECK(c.C2 == c.lb_C2);  // the receive-volume bound, met
          if (lambda == 1) CHECK(c.C1 == c.lb_C1);
          const auto e = g.estimate(s, {});
          CHECK(e.C1 == c.C1);
          CHECK(e.C2 == c.C2);
          check_runs(plan);
          for (uint32_t r = 0; r < K; r += K > 9 ? 5 : 1) CHECK(g.build_rank(s, r).program == plan.ranks[r]);
          if (K <= 16) {
            const auto rep = rt::replay_and_compare(plan, 13, 5, 1);
            CHECK(rep.equal);
          }
          ++plans;
        }
  CHECK(plans == 4 * 3 * (6 + 3 + 3 + 2));  // K = 2..64 for p = 1; 3, 9, 27; 4, 16, 64; 5, 25
}

TEST_CASE("recursive-doubling allgatherv: exact, one run per message, C2 the largest aligned run", "[recursive-doubling]") {
  size_t plans = 0;
  for (uint32_t p = 1; p <= 3; ++p)
    for (uint64_t K = p + 1, m = 1; K <= 64; K *= p + 1, ++m)
      for (uint32_t seed = 0; seed < 3; ++seed)
        for (uint32_t lambda : {1u, 2u}) {
          Spec s = spec_of(static_cast<uint32_t>(K), p, 1, lambda);
          s.op = OpKind::Allgatherv;
          s.counts.assign(K, 0);
          for (uint32_t a = 0; a < K; ++a) s.counts[a] = (a * 7 + seed * 3) % (seed + 3);  // zeros included
          s.counts[K - 1] += 1;                                                              // not all zero
          INFO(fmt::format("K = {}, p = {}, seed = {}, lambda = {}", K, p, seed, lambda));
          const gen::GeneratorInfo& g = gen::find_generator("recursive-doubling-allgather");
          const ir::Plan plan = g.build(s, {});
          REQUIRE_NOTHROW(passes::verify(plan, kExact));
          const passes::CostReport c = passes::cost(plan);
          CHECK(c.C1 == lambda * m);
          // C2 from the definition: per round, the largest count sum over
          // the aligned runs of D ranks.
          uint64_t C2 = 0;
          for (uint64_t D = 1; D < K; D *= p + 1) {
            uint64_t largest = 0;
            for (uint64_t g0 = 0; g0 < K; g0 += D) {
              uint64_t sum = 0;
              for (uint64_t a = g0; a < g0 + D; ++a) sum += s.counts[a];
              largest = std::max(largest, sum);
            }
            C2 += largest;
          }
          CHECK(c.C2 == C2);
          CHECK(g.estimate(s, {}).C2 == c.C2);
          CHECK(c.C2 >= c.lb_C2);
          check_runs(plan);
          for (uint32_t r = 0; r < K; r += K > 9 ? 5 : 1) CHECK(g.build_rank(s, r).program == plan.ranks[r]);
          if (K <= 16) CHECK(rt::replay_and_compare(plan, 13, 3, 1).equal);
          ++plans;
        }
  CHECK(plans == 3 * 2 * (6 + 3 + 3));
}

TEST_CASE("recursive-doubling allgather: refuses K that is no power of p+1 and other operations", "[recursive-doubling]") {
  const gen::GeneratorInfo& g = gen::find_generator("recursive-doubling-allgather");
  for (auto [K, p] : {std::pair{12u, 1u}, std::pair{6u, 2u}, std::pair{8u, 2u}, std::pair{3u, 1u}}) {
    INFO("K = " << K << ", p = " << p);
    const std::string why = g.why_not(spec_of(K, p, 1), {});
    CHECK_THAT(why, Catch::Contains(fmt::format("K a power of p+1 = {} (K = {})", p + 1, K)));
    CHECK_THROWS_WITH(g.build(spec_of(K, p, 1), {}), Catch::Contains("dissemination-allgather takes any K"));
    CHECK_THROWS_AS(g.build_rank(spec_of(K, p, 1), 0), UserError);
  }
  Spec v = spec_of(4, 1, 1);
  v.op = OpKind::Allreduce;
  CHECK_THROWS_WITH(g.build(v, {}), Catch::Contains("computes 'allgather' or 'allgatherv', not 'allreduce'"));
  CHECK_THROWS_WITH(g.build_rank(spec_of(4, 1, 1), 4), Catch::Contains("rank 4 is not a processor"));
}

TEST_CASE("recursive-doubling allgather: auto takes it where K is a power of p+1, the dissemination elsewhere",
          "[recursive-doubling]") {
  // Same C1 and C2 as the dissemination allgather where both apply: auto
  // prefers the one whose messages are single runs.
  for (auto [K, p] : {std::pair{2u, 1u}, std::pair{8u, 1u}, std::pair{16u, 1u}, std::pair{9u, 2u}, std::pair{64u, 3u}})
    CHECK(gen::choose_generator(spec_of(K, p, 2), {}).name == "recursive-doubling-allgather");
  for (auto [K, p] : {std::pair{12u, 1u}, std::pair{5u, 2u}})
    CHECK(gen::choose_generator(spec_of(K, p, 2), {}).name != "recursive-doubling-allgather");
}

TEST_CASE("recursive halving-doubling allreduce: exact, one run per message, C2 of the dissemination one",
          "[recursive-doubling]") {
  size_t plans = 0;
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint64_t K = p + 1, m = 1; K <= 64; K *= p + 1, ++m)
      for (uint32_t n : {1u, 2u, static_cast<uint32_t>(K) - 1, static_cast<uint32_t>(K), static_cast<uint32_t>(K) + 3,
                         3 * static_cast<uint32_t>(K)})
        for (uint32_t lambda : {1u, 2u, 3u}) {
          if (n == 0) continue;
          INFO(fmt::format("K = {}, p = {}, n = {}, lambda = {}", K, p, n, lambda));
          Spec s = spec_of(static_cast<uint32_t>(K), p, n, lambda);
          s.op = OpKind::Allreduce;
          const gen::GeneratorInfo& g = gen::find_generator("recursive-halving-doubling");
          REQUIRE(g.why_not(s, {}).empty());
          const ir::Plan plan = g.build(s, {});
          REQUIRE_NOTHROW(passes::verify(plan, kExact));
          const passes::CostReport c = passes::cost(plan);
          CHECK(c.C1 == 2 * lambda * m);
          const auto e = g.estimate(s, {});
          CHECK(e.C1 == c.C1);
          CHECK(e.C2 == c.C2);
          // The same C1 and C2 as the dissemination reduce-scatter-allgather.
          const auto d = gen::find_generator("reduce-scatter-allgather").estimate(s, {});
          CHECK(d.C1 == c.C1);
          CHECK(d.C2 == c.C2);
          if (n % K == 0) CHECK(c.C2 == 2 * (K - 1) / p * (n / K));
          if (K <= 16) CHECK(messages_in_pieces(plan, 5) == 0);
          for (uint32_t r = 0; r < K; r += K > 9 ? 5 : 1) CHECK(g.build_rank(s, r).program == plan.ranks[r]);
          if (K <= 16) CHECK(rt::replay_and_compare(plan, 13, 7, 1).equal);
          ++plans;
        }
  CHECK(plans == 6 * 3 * (6 + 3 + 3 + 2));
}

TEST_CASE("recursive halving-doubling allreduce: refusals and auto's choice", "[recursive-doubling]") {
  const gen::GeneratorInfo& g = gen::find_generator("recursive-halving-doubling");
  Spec s = spec_of(12, 1, 12);
  s.op = OpKind::Allreduce;
  CHECK_THAT(g.why_not(s, {}), Catch::Contains("K a power of p+1 = 2 (K = 12)"));
  CHECK_THROWS_WITH(g.build(s, {}), Catch::Contains("reduce-scatter-allgather takes any K"));
  CHECK(gen::choose_generator(s, {}).name != "recursive-halving-doubling");
  CHECK_THROWS_WITH(g.build(spec_of(8, 1, 8), {}), Catch::Contains("computes 'allreduce', not 'allgather'"));
  // Long vectors (n = K blocks, a large cost length): the bandwidth-optimal
  // allreduce, and this one where it ties the dissemination's.
  passes::CostModel cm;
  cm.len = 1 << 20;
  for (auto [K, p] : {std::pair{8u, 1u}, std::pair{16u, 1u}, std::pair{9u, 2u}}) {
    Spec a = spec_of(K, p, K);
    a.op = OpKind::Allreduce;
    CHECK(gen::choose_generator(a, cm).name == "recursive-halving-doubling");
  }
}

TEST_CASE("recursive-halving reduce-scatter: exact, optimal, one run per message", "[recursive-doubling]") {
  size_t plans = 0;
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint64_t K = p + 1, m = 1; K <= 64; K *= p + 1, ++m)
      for (uint32_t n : {1u, 2u, 3u})
        for (uint32_t lambda : {1u, 2u, 3u}) {
          INFO(fmt::format("K = {}, p = {}, n = {}, lambda = {}", K, p, n, lambda));
          Spec s = spec_of(static_cast<uint32_t>(K), p, n, lambda);
          s.op = OpKind::ReduceScatter;
          const gen::GeneratorInfo& g = gen::find_generator("recursive-halving");
          REQUIRE(g.why_not(s, {}).empty());
          const ir::Plan plan = g.build(s, {});
          REQUIRE_NOTHROW(passes::verify(plan, kExact));
          const passes::CostReport c = passes::cost(plan);
          CHECK(c.C1 == lambda * m);
          CHECK(c.C2 == n * (K - 1) / p);
          CHECK(c.C2 == c.lb_C2);  // the receive-volume bound, met
          if (lambda == 1) CHECK(c.C1 == c.lb_C1);
          const auto e = g.estimate(s, {});
          CHECK(e.C1 == c.C1);
          CHECK(e.C2 == c.C2);
          if (K <= 16) CHECK(messages_in_pieces(plan, 5) == 0);
          for (uint32_t r = 0; r < K; r += K > 9 ? 5 : 1) CHECK(g.build_rank(s, r).program == plan.ranks[r]);
          if (K <= 16) CHECK(rt::replay_and_compare(plan, 13, 7, 1).equal);
          ++plans;
        }
  CHECK(plans == 3 * 3 * (6 + 3 + 3 + 2));
}

TEST_CASE("recursive-halving reduce-scatter: refusals and auto's choice", "[recursive-doubling]") {
  const gen::GeneratorInfo& g = gen::find_generator("recursive-halving");
  Spec s = spec_of(12, 1, 1);
  s.op = OpKind::ReduceScatter;
  CHECK_THAT(g.why_not(s, {}), Catch::Contains("K a power of p+1 = 2 (K = 12)"));
  CHECK_THROWS_WITH(g.build(s, {}), Catch::Contains("dissemination-reduce-scatter takes any K"));
  CHECK(gen::choose_generator(s, {}).name != "recursive-halving");
  CHECK_THROWS_WITH(g.build(spec_of(8, 1, 1), {}), Catch::Contains("computes 'reduce-scatter', not 'allgather'"));
  // The same C1 and C2 as the circulant and dissemination reduce-scatters
  // where it applies: auto takes it on the tie.
  for (auto [K, p] : {std::pair{2u, 1u}, std::pair{8u, 1u}, std::pair{16u, 1u}, std::pair{9u, 2u}}) {
    Spec a = spec_of(K, p, 2);
    a.op = OpKind::ReduceScatter;
    CHECK(gen::choose_generator(a, {}).name == "recursive-halving");
  }
}

TEST_CASE("recursive schedules: every message one piece of the caller's buffers, where the dissemination ones wrap",
          "[recursive-doubling]") {
  for (uint32_t K : {4u, 8u, 16u}) {
    INFO("K = " << K);
    const Spec ag = spec_of(K, 1, 2);
    Spec v = ag;
    v.op = OpKind::Allgatherv;
    v.blocks = 1;
    for (uint32_t a = 0; a < K; ++a) v.counts.push_back(1 + (3 * a) % 4);
    Spec ar = spec_of(K, 1, K + 3);
    ar.op = OpKind::Allreduce;
    CHECK(messages_in_pieces(gen::find_generator("recursive-doubling-allgather").build(ag, {}), 7) == 0);
    CHECK(messages_in_pieces(gen::find_generator("recursive-doubling-allgather").build(v, {}), 7) == 0);
    CHECK(messages_in_pieces(gen::find_generator("recursive-halving-doubling").build(ar, {}), 7) == 0);
    // The allgathers also as `collplan compile` delivers them, after
    // drop-zeros and alloc-slots. (The allreduce's are not: alloc-slots
    // lets a phase-1 partial sum take a slot beside one that lives in the
    // caller's output buffer, so a few of its messages (K = 8: 9) span
    // the buffer and the arena; docs/collectives.md.)
    for (const Spec& s : {ag, v}) {
      pipeline::CompileOptions opt;
      opt.algorithm = "recursive-doubling-allgather";
      INFO(op_name(s.op));
      CHECK(messages_in_pieces(pipeline::compile(s, opt).plan, 7) == 0);
    }
    // The control: the same specs on the dissemination schedules.
    CHECK(messages_in_pieces(gen::find_generator("dissemination-allgather").build(ag, {}), 7) > 0);
    CHECK(messages_in_pieces(gen::find_generator("reduce-scatter-allgather").build(ar, {}), 7) > 0);
    Spec rs = spec_of(K, 1, 2);
    rs.op = OpKind::ReduceScatter;
    CHECK(messages_in_pieces(gen::find_generator("recursive-halving").build(rs, {}), 7) == 0);
    CHECK(messages_in_pieces(gen::find_generator("dissemination-reduce-scatter").build(rs, {}), 7) > 0);
  }
}
