// `collplan check --streaming` (passes/verify_stream.h): a plan file checked
// rank by rank and step by step agrees with the whole-plan checker — on every
// generator's plans, on their cost figures, on wrong plans of every kind
// (algebra, unmatched and resized messages, a changed destination), over
// fields needing several passes of 8 trials — and refuses what it cannot do.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "gen/registry.h"
#include "ir/binary.h"
#include "passes/cost.h"
#include "passes/verify.h"
#include "passes/verify_stream.h"
#include "cli_runner.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;

namespace {

passes::StreamReport stream_check(const ir::Plan& plan, uint64_t seed = 11, uint32_t trials = 0) {
  test::TempFile f("stream.cplan");
  ir::write_binary(plan, f.path);
  const ir::MappedPlan mp(f.path);
  return passes::verify_streaming(mp, passes::VerifyOptions{passes::VerifyMode::Randomized, trials, seed});
}

// The kind of VerifyError the streaming check raises, or "" when it accepts.
std::string stream_fault(const ir::Plan& plan) {
  try {
    stream_check(plan);
  } catch (const VerifyError& e) {
    return e.kind() == PlanFault::Algebra ? "algebra" : e.kind() == PlanFault::Structure ? "structure" : "other";
  }
  return "";
}

std::string whole_fault(const ir::Plan& plan) {
  try {
    passes::verify(plan, passes::VerifyOptions{passes::VerifyMode::Randomized, 0, 11});
  } catch (const VerifyError& e) {
    return e.kind() == PlanFault::Algebra ? "algebra" : e.kind() == PlanFault::Structure ? "structure" : "other";
  }
  return "";
}

// The same figures as passes::cost on the whole plan.
void check_figures(const ir::Plan& plan, const passes::StreamReport& r) {
  const passes::CostReport c = passes::cost(plan);
  CHECK(r.figures.C1 == c.C1);
  CHECK(r.figures.step_sizes == c.step_sizes);
  CHECK(r.figures.messages == c.messages);
  CHECK(r.figures.elements == c.elements);
  const passes::CostReport done = passes::complete_cost(plan.spec, r.figures);
  CHECK(done.C2 == c.C2);
  CHECK(done.lb_C1 == c.lb_C1);
  CHECK(done.lb_C2 == c.lb_C2);
  uint64_t slots = 0;
  for (const auto& p : plan.ranks) slots += p.num_slots;
  CHECK(r.slots == slots);
}

// The first rank with a send, and that send.
std::pair<uint32_t, ir::Send*> first_send(ir::Plan& plan) {
  for (auto& prog : plan.ranks)
    for (auto& st : prog.steps)
      if (!st.sends.empty()) return {prog.rank, &st.sends[0]};
  return {0, nullptr};
}

// Wrong plans of several kinds made from a right one; each must be refused
// by the streaming check exactly as by the whole-plan check.
void check_mutants(const ir::Plan& plan) {
  {  // out := out + in at a rank's first output (out + out where it has no input)
    ir::Plan bad = plan;
    for (auto& pr : bad.ranks)
      if (!pr.outputs.empty()) {
        const ir::SlotId out = pr.outputs[0], in = pr.inputs.empty() ? out : pr.inputs[0];
        pr.at_any(bad.num_steps).ops.push_back(ir::Op{out, {{out, 1}, {in, 1}}});
        break;
      }
    CHECK(stream_fault(bad) == "algebra");
    CHECK(whole_fault(bad) == "algebra");
  }
  ir::Plan probe = plan;
  if (!first_send(probe).second) return;  // nothing is sent (K = 1 is not a plan; every plan here sends)
  {  // a message one element longer than its receive
    ir::Plan bad = plan;
    ir::Send* s = first_send(bad).second;
    s->payload.push_back(s->payload.back());
    CHECK(stream_fault(bad) == "structure");
    CHECK(whole_fault(bad) == "structure");
  }
  {  // a message sent to another rank than the one receiving it
    ir::Plan bad = plan;
    auto [k, s] = first_send(bad);
    const uint32_t R = static_cast<uint32_t>(bad.ranks.size());
    if (R > 2) {
      s->to = (s->to + 1) % R == k ? (s->to + 2) % R : (s->to + 1) % R;
      CHECK(stream_fault(bad) == "structure");
      CHECK(whole_fault(bad) == "structure");
    }
  }
  {  // a receive dropped
    ir::Plan bad = plan;
    for (auto& pr : bad.ranks)
      for (auto& st : pr.steps)
        if (!st.recvs.empty()) {
          st.recvs.pop_back();
          goto dropped;
        }
  dropped:
    CHECK(stream_fault(bad) == "structure");
    CHECK(whole_fault(bad) == "structure");
  }
}

constexpr OpKind kPlain[] = {OpKind::Broadcast, OpKind::Reduce,        OpKind::Allgather, OpKind::Allgatherv,
                             OpKind::Allreduce, OpKind::ReduceScatter, OpKind::Prefix};

}  // namespace

TEST_CASE("streaming check: every plain-collective generator agrees with the whole-plan check, K <= 7, p <= 2, "
          "n <= 2, lambda <= 2",
          "[checker][streaming]") {
  size_t plans = 0;
  for (OpKind op : kPlain)
    for (const auto& g : gen::generators()) {
      if (!g.computes(op)) continue;
      for (uint32_t K : {2u, 3u, 5u, 7u})
        for (uint32_t p = 1; p <= 2; ++p)
          for (uint32_t n = 1; n <= 2; ++n)
            for (uint32_t lambda = 1; lambda <= 2; ++lambda) {
              const Spec s = test::plain_spec(op, K, p, n, lambda, Field::gf256());
              const passes::CostModel cm;
              if (g.why_not && !g.why_not(s, cm).empty()) continue;
              INFO(g.name << " K=" << K << " p=" << p << " n=" << n << " lambda=" << lambda);
              const ir::Plan plan = g.build(s, cm);
              const passes::StreamReport r = stream_check(plan);
              CHECK(r.verify.mode == passes::VerifyMode::Randomized);
              check_figures(plan, r);
              if (K == 5 && n == 2) check_mutants(plan);
              ++plans;
            }
    }
  CHECK(plans > 100);
}

TEST_CASE("streaming check: coded operations (encode, decentralized encode, repair) and their mutants",
          "[checker][streaming]") {
  std::vector<ir::Plan> plans;
  for (uint32_t K : {3u, 6u, 9u})
    for (uint32_t lambda : {1u, 3u}) {
      plans.push_back(test::compiled(test::random_encode_spec(K, 2, Field::gf256(), K, lambda)));
      plans.push_back(test::compiled(test::random_encode_spec(K, 1, Field::prime(65537), K + 1, lambda)));
    }
  plans.push_back(test::compiled(test::random_decentralized_spec(8, 3, 2, true, 5)));
  plans.push_back(test::compiled(test::random_decentralized_spec(7, 4, 1, false, 6)));
  for (const ir::Plan& plan : plans) {
    INFO(op_name(plan.spec.op) << " K=" << plan.spec.K << " lambda=" << plan.spec.lambda << " "
                               << plan.spec.algorithm << " " << plan.spec.field.name());
    check_figures(plan, stream_check(plan));
    check_mutants(plan);
    // A coefficient changed: some output differs on almost every trial.
    ir::Plan bad = plan;
    for (auto& pr : bad.ranks)
      for (auto& st : pr.steps)
        for (auto& op : st.ops)
          for (auto& t : op.terms)
            if (t.coeff > 1) {
              t.coeff = bad.spec.field.add(t.coeff, 1);
              goto changed;
            }
  changed:
    if (bad == plan) continue;
    CHECK(stream_fault(bad) == whole_fault(bad));
  }
}

TEST_CASE("streaming check: small fields take several passes of 8 trials, with the whole-plan check's bound",
          "[checker][streaming]") {
  for (uint32_t q : {2u, 3u, 257u}) {
    const Spec s = test::plain_spec(OpKind::Allreduce, 6, 1, 2, 1, Field::prime(q));
    const ir::Plan plan = test::compiled(s);
    const passes::StreamReport r = stream_check(plan, 3);
    const passes::VerifyReport w = passes::verify(plan, passes::VerifyOptions{passes::VerifyMode::Randomized, 0, 3});
    INFO("q = " << q);
    CHECK(r.verify.trials == w.trials);
    CHECK(r.verify.error_log2 == w.error_log2);
    CHECK(r.passes == (w.trials + 7) / 8);
    CHECK(r.verify.error_log2 <= -40.0);
    check_mutants(plan);
  }
  // Trials asked for: 20 over gf256 is three passes.
  const ir::Plan plan = test::compiled(test::plain_spec(OpKind::Allgather, 5, 2, 1, 1, Field::gf256()));
  CHECK(stream_check(plan, 1, 20).passes == 3);
}

TEST_CASE("streaming check: refusals name what is wrong and the way out", "[checker][streaming]") {
  const ir::Plan plan = test::compiled(test::plain_spec(OpKind::Allgather, 4, 1, 1, 1, Field::gf256()));
  test::TempFile f("refuse.cplan");
  ir::write_binary(plan, f.path);
  {
    const ir::MappedPlan mp(f.path);
    const std::string msg = test::user_error_of(
        [&] { passes::verify_streaming(mp, passes::VerifyOptions{passes::VerifyMode::Exact, 0, 1}); });
    CHECK_THAT(msg, Catch::Contains("randomized") && Catch::Contains("--mode exact"));
  }
  {  // wrong counts are refused before the postcondition is built
    ir::Plan bad = plan;
    bad.ranks[1].outputs.pop_back();
    test::TempFile g("counts.cplan");
    ir::write_binary(bad, g.path);
    const ir::MappedPlan mp(g.path);
    CHECK_THROWS_WITH(passes::verify_streaming(mp), Catch::Contains("rank 1: has 3 output slots, allgather needs 4"));
  }
  test::TempFile one("one.cplan");
  ir::extract_rank(f.path, 2, one.path);
  CHECK_THAT(test::user_error_of([&] { ir::MappedPlan mp(one.path); }),
             Catch::Contains("only rank 2") && Catch::Contains("without --streaming"));
  // A damaged blob: its hash no longer matches.
  std::string bytes = test::read_file(f.path);
  bytes[bytes.size() - 3] ^= 0x40;
  test::write_file(f.path, bytes);
  const ir::MappedPlan mp(f.path);
  CHECK_THAT(test::user_error_of([&] { passes::verify_streaming(mp); }),
             Catch::Contains("damaged plan file") && Catch::Contains("rank 3"));
  test::TempFile empty("empty.cplan");
  test::write_file(empty.path, "");
  CHECK_THAT(test::user_error_of([&] { ir::MappedPlan m(empty.path); }), Catch::Contains("empty"));
}

TEST_CASE("check --streaming: the CLI report, JSON, and a JSON plan refused", "[cli][streaming]") {
  const auto d = test::scratch_dir("stream-cli");
  const std::string plan = (d / "ar.cplan").string(), json = (d / "ar.json").string();
  REQUIRE(test::run_collplan("compile --op allreduce --K 12 --p 2 --blocks 3 -o " + plan + " --json " + json).status ==
          0);
  auto r = test::run_collplan("check " + plan + " --streaming --seed 4");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("OK") && Catch::Contains("rank by rank") && Catch::Contains("step by step") &&
                        Catch::Contains("C1 ="));
  auto whole = test::run_collplan("check " + plan + " --mode randomized --seed 4");
  CHECK(whole.status == 0);
  r = test::run_collplan("check " + plan + " --streaming --format json");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("\"streaming\"") && Catch::Contains("\"digest\""));
  r = test::run_collplan("check " + json + " --streaming");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("binary plan files") && Catch::Contains("import"));
  r = test::run_collplan("check " + plan + " --streaming --mode exact");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--mode exact"));
}
