// The postconditions of the plain collectives as functions of the spec
// (matrix/postcondition.h: column(), Evaluator) and the sparse exact check
// (passes/verify.cpp) against an independent dense reference
// (tests/support/dense_check.h), on every generator of those operations;
// mutated plans are rejected by all three checks, at small and at large K.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "dense_check.h"
#include "gen/registry.h"
#include "matrix/postcondition.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;

namespace {

constexpr OpKind kUncoded[] = {OpKind::Broadcast, OpKind::Reduce,        OpKind::Allgather, OpKind::Allgatherv,
                               OpKind::Allreduce, OpKind::ReduceScatter, OpKind::Prefix};

// out := out + c·in + c·in at rank k's first output, in the last step: a
// change of 2c·x, which cancels exactly when the field has characteristic 2.
ir::Plan add_twice(ir::Plan plan, uint32_t k, Elem c) {
  ir::Program& pr = plan.ranks[k];
  const ir::SlotId out = pr.outputs.at(0), in = pr.inputs.at(0);
  pr.at_any(plan.num_steps).ops.push_back(ir::Op{out, {{out, 1}, {in, c}, {in, c}}});
  return plan;
}

// out := out + in at rank k's first output: always a wrong plan.
ir::Plan add_once(ir::Plan plan, uint32_t k) {
  ir::Program& pr = plan.ranks[k];
  const ir::SlotId out = pr.outputs.at(0), in = pr.inputs.at(0);
  pr.at_any(plan.num_steps).ops.push_back(ir::Op{out, {{out, 1}, {in, 1}}});
  return plan;
}

// A rank with an input and an output (every operation has one).
uint32_t io_rank(const ir::Plan& plan) {
  for (uint32_t k = 0; k < plan.ranks.size(); ++k)
    if (!plan.ranks[k].inputs.empty() && !plan.ranks[k].outputs.empty()) return k;
  FAIL("no rank with both inputs and outputs");
  return 0;
}

bool rejected(const ir::Plan& plan, passes::VerifyMode mode) {
  try {
    passes::verify(plan, passes::VerifyOptions{mode, 0, 7});
  } catch (const VerifyError&) {
    return true;
  }
  return false;
}

// Every generator of the plain collectives over a grid: the sparse exact
// check and the dense reference accept its plan, and reject it once a term
// is added to an output.
void grid(uint32_t maxK, uint32_t maxP, uint32_t maxN, uint32_t maxLambda) {
  size_t plans = 0;
  for (OpKind op : kUncoded)
    for (const auto& g : gen::generators()) {
      if (!g.computes(op)) continue;
      for (uint32_t K = 2; K <= maxK; ++K)
        for (uint32_t p = 1; p <= maxP; ++p)
          for (uint32_t n = 1; n <= maxN; ++n)
            for (uint32_t lambda = 1; lambda <= maxLambda; ++lambda) {
              const Spec s = test::plain_spec(op, K, p, n, lambda, Field::gf256());
              const passes::CostModel cm;
              if (g.why_not && !g.why_not(s, cm).empty()) continue;
              INFO(g.name << " K=" << K << " p=" << p << " n=" << n << " lambda=" << lambda);
              const ir::Plan plan = g.build(s, cm);
              CHECK(passes::verify(plan, test::kExact).mode == passes::VerifyMode::Exact);
              CHECK(test::dense_check(plan).empty());
              const ir::Plan bad = add_once(plan, io_rank(plan));
              CHECK(rejected(bad, passes::VerifyMode::Exact));
              CHECK_FALSE(test::dense_check(bad).empty());
              ++plans;
            }
    }
  CHECK(plans > 0);
}

}  // namespace

TEST_CASE("postcondition: column() and the evaluator describe the same map", "[postcondition]") {
  for (const Field& f : {Field::gf256(), Field::prime(65537)})
    for (OpKind op : kUncoded)
      for (uint32_t K : {2u, 3u, 7u})
        for (uint32_t n : {1u, 3u}) {
          const Spec s = test::plain_spec(op, K, 1, n, 1, f);
          INFO(op_name(op) << " K=" << K << " n=" << n << " field " << f.name());
          const Postcondition pc = postcondition(s);
          CHECK_FALSE(pc.dense);
          const uint32_t W = 3;
          SplitMix64 rng(K * 100 + n);
          std::vector<Elem> x(size_t{pc.num_inputs()} * W);
          for (auto& v : x) v = rng.uniform(f);
          const Evaluator ev(f, pc, x, W);
          std::vector<Postcondition::Entry> col;
          std::vector<Elem> y(W);
          uint64_t nonzeros = 0;
          for (uint32_t c = 0; c < pc.num_outputs(); ++c) {
            pc.column(c, col);
            nonzeros += col.size();
            for (size_t e = 1; e < col.size(); ++e) CHECK(col[e - 1].input < col[e].input);
            ev.output(c, y.data());
            for (uint32_t w = 0; w < W; ++w) {
              Elem want = 0;
              for (const auto& e : col) want = f.add(want, f.mul(e.coeff, x[size_t{e.input} * W + w]));
              CHECK(y[w] == want);
            }
          }
          CHECK(pc.nonzeros() == nonzeros);
        }
}

TEST_CASE("sparse exact check: every plain-collective generator, K <= 9, p <= 3, n <= 2, lambda <= 2, "
          "agrees with the dense reference",
          "[checker][sparse]") {
  grid(9, 3, 2, 2);
}

TEST_CASE("sparse exact check: every plain-collective generator, every K <= 64, p <= 4, n <= 4",
          "[checker][sparse][.slow]") {
  grid(64, 4, 4, 1);
}

TEST_CASE("sparse exact check: a term added twice cancels in characteristic 2 only", "[checker][sparse]") {
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(2), Field::prime(3), Field::prime(65537)}) {
    INFO("field " << f.name());
    const bool char2 = f.name() == "gf256" || f.name() == "gf65536" || f.name() == "prime:2";
    const Spec s = test::plain_spec(OpKind::Allreduce, 6, 2, 2, 1, f);
    const ir::Plan plan = gen::find_generator("dissemination-allreduce").build(s, passes::CostModel{});
    const ir::Plan twice = add_twice(plan, 3, 1);
    CHECK(rejected(twice, passes::VerifyMode::Exact) == !char2);
    CHECK(test::dense_check(twice).empty() == char2);
    if (!char2) CHECK(rejected(twice, passes::VerifyMode::Randomized));
  }
}

TEST_CASE("sparse exact check: large K is proven, and a wrong plan there is caught and located",
          "[checker][sparse][heavy]") {
  // The dense map of an allgather or a reduce-scatter of 1024 ranks would
  // have 2^30 entries, of an allreduce of 128 ranks in 128 blocks 2^28.
  struct Case {
    const char* generator;
    OpKind op;
    uint32_t K, n;
  };
  for (const Case& c : {Case{"dissemination-allgather", OpKind::Allgather, 1024, 1},
                        Case{"dissemination-reduce-scatter", OpKind::ReduceScatter, 1024, 1},
                        Case{"reduce-scatter-allgather", OpKind::Allreduce, 128, 128},
                        Case{"postal-prefix", OpKind::Prefix, 2048, 1}}) {
    INFO(c.generator << " K=" << c.K);
    const Spec s = test::plain_spec(c.op, c.K, 2, c.n, 1, Field::gf256());
    const ir::Plan plan = gen::find_generator(c.generator).build(s, passes::CostModel{});
    CHECK(passes::verify(plan).mode == passes::VerifyMode::Exact);  // auto proves it
    const uint32_t k = c.K - 1;
    try {
      passes::verify(add_once(plan, k));
      FAIL("a wrong plan was accepted");
    } catch (const VerifyError& e) {
      CHECK_THAT(e.what(), Catch::Contains("rank " + std::to_string(k) + " output 0"));
    }
    CHECK(rejected(add_once(plan, k), passes::VerifyMode::Randomized));
  }
}

TEST_CASE("auto falls back to the randomized check where the exact one would be too large", "[checker][sparse]") {
  // An allreduce of 2^14 ranks has 2^28 non-zeros in its postcondition,
  // over auto's limit of 2^23: the check is randomized.
  const Spec s = test::plain_spec(OpKind::Allreduce, 16384, 1, 1, 1, Field::gf256());
  const ir::Plan plan = gen::find_generator("dissemination-allreduce").build(s, passes::CostModel{});
  const passes::VerifyReport r = passes::verify(plan);
  CHECK(r.mode == passes::VerifyMode::Randomized);
  CHECK(r.error_log2 <= -40);
  CHECK(rejected(add_once(plan, 9999), passes::VerifyMode::Randomized));
}
