// ir::simulate (ir/simulate.h) over a domain of counted integer values:
// the values it computes follow the plan under postal latency (messages in
// flight across steps, several ports), and once a rank has run its last
// step only its outputs still hold values — what lets the exact check drop
// a reduce's partial sums as the ranks finish.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "ir/simulate.h"
#include "test_util.h"

using namespace collplan;

namespace {

// A slot's value is an integer shared between slots (as the exact check
// shares a value passed on unchanged); `live` counts the integers alive.
struct CountingDomain {
  struct Tracked {
    int64_t v;
    int64_t* live;
    Tracked(int64_t value, int64_t* counter) : v(value), live(counter) { ++*live; }
    Tracked(const Tracked&) = delete;
    Tracked& operator=(const Tracked&) = delete;
    ~Tracked() { --*live; }
  };
  using Value = std::shared_ptr<const Tracked>;
  const ir::Plan& plan;
  int64_t live = 0;
  std::vector<std::vector<int64_t>> outputs;  // per rank, in output order
  std::vector<size_t> held_at_end;            // per rank: slots still holding a value

  Value undefined() { return nullptr; }
  // Rank k's input i is 1000·k + i + 1, so that every sum names its terms.
  Value input(ir::Rank k, uint32_t i) { return std::make_shared<const Tracked>(1000 * int64_t{k} + i + 1, &live); }
  Value eval(ir::Rank, std::span<const ir::Term> terms, std::span<const Value> slots) {
    if (terms.size() == 1 && terms[0].coeff == 1) return slots[terms[0].slot];  // passed on, shared
    int64_t sum = 0;
    for (const ir::Term& t : terms) {
      REQUIRE(slots[t.slot] != nullptr);  // nothing is read before it is written, nor after it is let go
      sum += int64_t{t.coeff} * slots[t.slot]->v;
    }
    return std::make_shared<const Tracked>(sum, &live);
  }
  void on_end(ir::Rank k, std::span<const Value> slots) {
    size_t held = 0;
    for (const Value& v : slots) held += v != nullptr;
    held_at_end[k] = held;
    for (ir::SlotId s : plan.ranks[k].outputs) {
      REQUIRE(slots[s] != nullptr);
      outputs[k].push_back(slots[s]->v);
    }
  }
};

// Runs `plan` and checks what every rank ends with: no slot but its
// (distinct) outputs holds a value.
CountingDomain run(const ir::Plan& plan) {
  CountingDomain dom{plan, 0, {}, {}};
  dom.outputs.resize(plan.ranks.size());
  dom.held_at_end.resize(plan.ranks.size());
  ir::simulate(plan, dom);
  for (uint32_t k = 0; k < plan.ranks.size(); ++k) {
    std::vector<ir::SlotId> outs(plan.ranks[k].outputs.begin(), plan.ranks[k].outputs.end());
    std::sort(outs.begin(), outs.end());
    outs.erase(std::unique(outs.begin(), outs.end()), outs.end());
    INFO("rank " << k);
    CHECK(dom.held_at_end[k] == outs.size());
  }
  CHECK(dom.live == 0);  // the simulation's own copies are gone with it
  return dom;
}

}  // namespace

TEST_CASE("simulate: a reduce under postal latency sums every input at the root and lets partial sums go",
          "[simulate]") {
  for (uint32_t lambda : {1u, 3u})
    for (uint32_t p : {1u, 2u}) {
      const Spec s = test::plain_spec(OpKind::Reduce, 23, p, 2, lambda, Field::prime(2147483647));
      const ir::Plan plan = test::build_with("tree-reduce", s);
      INFO("p = " << p << ", lambda = " << lambda);
      const CountingDomain dom = run(plan);
      for (uint32_t k = 0; k < s.K; ++k) {
        if (k != s.root) {
          CHECK(dom.outputs[k].empty());
          continue;
        }
        REQUIRE(dom.outputs[k].size() == s.blocks);
        for (uint32_t b = 0; b < s.blocks; ++b) {
          int64_t want = 0;
          for (uint32_t r = 0; r < s.K; ++r) want += 1000 * int64_t{r} + b + 1;
          CHECK(dom.outputs[k][b] == want);
        }
      }
    }
}

TEST_CASE("simulate: a broadcast under postal latency hands the root's blocks to every rank", "[simulate]") {
  for (uint32_t lambda : {1u, 2u, 4u})
    for (uint32_t p : {1u, 3u}) {
      const Spec s = test::plain_spec(OpKind::Broadcast, 29, p, 2, lambda, Field::gf256());
      const ir::Plan plan = test::build_with("postal-broadcast", s);
      INFO("p = " << p << ", lambda = " << lambda);
      const CountingDomain dom = run(plan);
      for (uint32_t k = 0; k < s.K; ++k) {
        REQUIRE(dom.outputs[k].size() == s.blocks);
        for (uint32_t b = 0; b < s.blocks; ++b) CHECK(dom.outputs[k][b] == 1000 * int64_t{s.root} + b + 1);
      }
    }
}
