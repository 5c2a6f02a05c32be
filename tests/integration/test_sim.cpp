// The simulated replay (runtime/sim/sim_replay.h), built only with SimGrid:
// simulated times of trivial plans equal the hand computation from the
// platform's latency, bandwidth and speed; the replay is deterministic;
// postal λ does not change a lone message's time but lets a rank's next send
// overlap a message in flight; bad platforms are refused.
#include <catch2/catch.hpp>

#ifdef COLLPLAN_HAVE_SIMGRID

#include <string>

#include "pipeline/pipeline.h"
#include "runtime/sim/sim_replay.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;

namespace {

ir::Plan broadcast_plan(uint32_t K, uint32_t p, uint32_t lambda) {
  Spec s;
  s.op = OpKind::Broadcast;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.field = Field::gf256();
  s.root = 0;
  return test::compiled(s);
}

// Relative tolerance: SimGrid's clock is a double and its solver works to
// about 1e-9 relative precision.
Approx close(double x) { return Approx(x).epsilon(1e-8); }

}  // namespace

TEST_CASE("sim: one message takes latency + bytes / bandwidth", "[sim]") {
  const sim::Platform pf{0, 1.25e9, 1e-6, 2e10};
  for (uint32_t lambda : {1u, 2u, 3u}) {
    const ir::Plan plan = broadcast_plan(2, 1, lambda);
    REQUIRE(plan.ranks[0].steps.size() == 1);
    REQUIRE(plan.ranks[0].steps[0].sends.size() == 1);
    for (size_t len : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
      const sim::SimResult r = sim::simulate(plan, len, pf);
      CHECK(r.messages == 1);
      CHECK(r.bytes == static_cast<double>(len));
      CHECK(r.flops == 0);
      CHECK(r.time == close(1e-6 + static_cast<double>(len) / 1.25e9));
    }
  }
}

TEST_CASE("sim: two messages from one rank share its link", "[sim]") {
  // Postal broadcast with p = 2 on 3 ranks: the root sends to both others in
  // step 1, both flows cross the root's up link.
  const ir::Plan plan = broadcast_plan(3, 2, 1);
  REQUIRE(plan.num_steps == 1);
  REQUIRE(plan.ranks[0].steps[0].sends.size() == 2);
  const double B = 1 << 20;
  const sim::SimResult r = sim::simulate(plan, 1 << 20, sim::Platform{0, 1e9, 4e-6, 2e10});
  CHECK(r.messages == 2);
  CHECK(r.time == close(4e-6 + 2 * B / 1e9));
}

TEST_CASE("sim: with lambda = 2 a rank's next send overlaps the message in flight", "[sim]") {
  // Postal broadcast, K = 3, λ = 2: the root sends to rank 1 in step 1 and
  // to rank 2 in step 2. The message of step 1 is waited for only in step 2,
  // after the send of step 2 is posted, so both flows share the root's up
  // link from time 0: both end at latency + 2B/bandwidth. With λ = 1 (K = 3
  // needs two steps too) the root waits in step 1: 2·(latency + B/bandwidth).
  const double B = 1 << 20, bw = 1.25e9, lat = 1e-6;
  const ir::Plan l2 = broadcast_plan(3, 1, 2);
  REQUIRE(l2.ranks[0].steps.size() == 2);
  REQUIRE(l2.ranks[0].steps[0].sends.size() == 1);
  REQUIRE(l2.ranks[0].steps[1].sends.size() == 1);
  CHECK(sim::simulate(l2, 1 << 20, sim::Platform{}).time == close(lat + 2 * B / bw));
  const ir::Plan l1 = broadcast_plan(3, 1, 1);
  REQUIRE(l1.num_steps == 2);
  CHECK(sim::simulate(l1, 1 << 20, sim::Platform{}).time == close(2 * (lat + B / bw)));
}

TEST_CASE("sim: combinations cost their terms at the host's speed", "[sim]") {
  ir::Plan plan = broadcast_plan(2, 1, 1);
  ir::Program& r1 = plan.ranks[1];
  const ir::SlotId s = r1.steps[0].recvs[0].into[0];
  const ir::SlotId d = r1.new_slot();
  // Two terms: 2 × row bytes flops; a lone unit term (a copy): none.
  r1.steps[0].ops.push_back(ir::make_op(r1, d, {{s, 2}, {s, 3}}));
  r1.steps[0].ops.push_back(ir::make_op(r1, d, {{s, 1}}));
  const size_t len = 4096;
  const sim::SimResult r = sim::simulate(plan, len, sim::Platform{0, 1.25e9, 1e-6, 1e9});
  CHECK(r.flops == 2.0 * len);
  CHECK(r.time == close(1e-6 + len / 1.25e9 + 2.0 * len / 1e9));
}

TEST_CASE("sim: the replay is deterministic and counts the plan's messages", "[sim]") {
  Spec s = make_encode_spec(64, 1, 1, Field::gf256(), matrix_random(64, 7, Field::gf256()));
  const auto res = pipeline::compile(s, pipeline::CompileOptions{});
  uint64_t messages = 0;
  for (const auto& prog : res.plan.ranks)
    for (const auto& st : prog.steps) messages += st.sends.size();
  const sim::SimResult a = sim::simulate(res.plan, 4096, sim::Platform{});
  const sim::SimResult b = sim::simulate(res.plan, 4096, sim::Platform{});
  CHECK(a.time == b.time);  // bit for bit
  CHECK(a.messages == messages);
  CHECK(a.flops > 0);
  // At least the modeled α-β time of one rank's critical path: every step's
  // largest message sent after the previous one arrived.
  CHECK(a.time >= res.cost.C1 * 1e-6 + static_cast<double>(res.cost.C2) * 4096 / 1.25e9);
}

TEST_CASE("sim: a platform too small or with no bandwidth is refused", "[sim]") {
  const ir::Plan plan = broadcast_plan(4, 1, 1);
  CHECK_THROWS_WITH(sim::simulate(plan, 8, sim::Platform{3, 1e9, 1e-6, 1e9}),
                    Catch::Contains("3 hosts") && Catch::Contains("4 ranks"));
  CHECK_THROWS_WITH(sim::simulate(plan, 8, sim::Platform{0, 0, 1e-6, 1e9}), Catch::Contains("bandwidth (0)"));
}

#endif  // COLLPLAN_HAVE_SIMGRID
