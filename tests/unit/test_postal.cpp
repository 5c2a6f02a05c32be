// Postal-model generators (gen/postal.h): the G table and the U/W sets
// against the paper's worked example, the paper's value tables reproduced
// step by step, exhaustive exact verification of prefix (Algorithms A and B,
// inclusive and exclusive) and broadcast, operand order (every value a
// contiguous interval of inputs, combined left to right), user errors, and
// the checker rejecting a prefix plan that uses a value before it arrives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "gen/postal.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#if __has_include("passes/verify_order.h")
#include "passes/verify_order.h"
#define COLLPLAN_TEST_VERIFY_ORDER 1
#endif
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::ceil_div;
using test::user_error_of;
using test::verify_exact;
using ir::SlotId;

namespace {

Spec prefix_spec(uint32_t K, uint32_t p, uint32_t lambda, const Field& f, std::vector<uint32_t> counts = {},
                 bool exclusive = false) {
  Spec s;
  s.op = OpKind::Prefix;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.field = f;
  s.counts = std::move(counts);
  s.exclusive = exclusive;
  s.algorithm = "postal-prefix";
  return s;
}

Spec bcast_spec(uint32_t K, uint32_t p, uint32_t lambda, const Field& f, uint32_t root, uint32_t blocks = 1) {
  Spec s;
  s.op = OpKind::Broadcast;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.field = f;
  s.root = root;
  s.blocks = blocks;
  s.algorithm = "postal-broadcast";
  return s;
}

// ─── Interval simulation ────────────────────────────────────────────────────
// Runs a prefix plan with every value an interval lo..hi of global item
// indices (lo > hi: empty), the way a non-commutative operator sees it: a
// combination must have unit coefficients and adjacent intervals in
// increasing order. Records, after every step, the smallest item each rank
// knows about (its "reach"), which is what the paper's tables show.
struct Iv {
  int64_t lo = 0, hi = -1;
  bool empty() const { return lo > hi; }
};

struct IntervalRun {
  std::string error;                             // empty when the plan is order-correct
  std::vector<std::vector<int64_t>> reach;       // [t][rank] after step t (t = 0..num_steps); −1 = nothing
  std::vector<std::vector<std::vector<Iv>>> slots;  // [t][rank][slot] after step t (unwritten: empty)
  std::vector<std::vector<Iv>> outputs;          // [rank][j]
};

IntervalRun run_intervals(const ir::Plan& plan) {
  IntervalRun r;
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  std::vector<uint32_t> first(K + 1, 0);
  for (uint32_t k = 0; k < K; ++k) first[k + 1] = first[k] + static_cast<uint32_t>(plan.ranks[k].inputs.size());
  std::vector<std::vector<std::optional<Iv>>> val(K);
  for (uint32_t k = 0; k < K; ++k) {
    val[k].resize(plan.ranks[k].num_slots);
    for (uint32_t i = 0; i < plan.ranks[k].inputs.size(); ++i)
      val[k][plan.ranks[k].inputs[i]] = Iv{first[k] + i, first[k] + i};
  }
  auto fail = [&](std::string msg) {
    if (r.error.empty()) r.error = std::move(msg);
  };
  auto combine = [&](uint32_t k, uint32_t t, std::span<const ir::Term> terms) {
    Iv acc;
    for (const ir::Term& term : terms) {
      if (term.coeff != 1) fail(fmt::format("rank {} step {}: coefficient {} is not a unit", k, t, term.coeff));
      if (term.slot >= val[k].size() || !val[k][term.slot]) {
        fail(fmt::format("rank {} step {}: slot {} read before written", k, t, term.slot));
        continue;
      }
      const Iv v = *val[k][term.slot];
      if (v.empty()) continue;
      if (acc.empty()) {
        acc = v;
      } else if (acc.hi + 1 == v.lo) {
        acc.hi = v.hi;
      } else {
        fail(fmt::format("rank {} step {}: {}:{} ⊕ {}:{} is not in input order", k, t, acc.lo, acc.hi, v.lo, v.hi));
      }
    }
    return acc;
  };
  auto snapshot = [&]() {
    std::vector<int64_t> reach(K, -1);
    std::vector<std::vector<Iv>> sl(K);
    for (uint32_t k = 0; k < K; ++k) {
      for (const auto& v : val[k]) {
        sl[k].push_back(v ? *v : Iv{});
        if (v && !v->empty() && (reach[k] < 0 || v->lo < reach[k])) reach[k] = v->lo;
      }
    }
    r.reach.push_back(reach);
    r.slots.push_back(sl);
  };
  snapshot();
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, std::vector<Iv>> inflight;  // from, to, port, sent_at
  std::vector<size_t> next(K, 0);
  for (uint32_t t = 1; t <= plan.num_steps; ++t) {
    std::vector<const ir::Step*> cur(K, nullptr);
    for (uint32_t k = 0; k < K; ++k) {
      const auto& steps = plan.ranks[k].steps;
      if (next[k] < steps.size() && steps[next[k]].t == t) cur[k] = &steps[next[k]++];
    }
    for (uint32_t k = 0; k < K; ++k)
      if (cur[k])
        for (const ir::Send& s : cur[k]->sends) {
          std::vector<Iv> msg;
          for (const ir::Combo& c : s.payload) msg.push_back(combine(k, t, c.terms));
          inflight[{k, s.to, s.port, t}] = msg;
        }
    for (uint32_t k = 0; k < K; ++k) {
      if (!cur[k]) continue;
      for (const ir::Recv& rc : cur[k]->recvs) {
        auto it = inflight.find({rc.from, k, rc.port, rc.sent_at});
        if (it == inflight.end() || rc.sent_at + plan.spec.lambda - 1 != t) {
          fail(fmt::format("rank {} step {}: nothing to receive from {}", k, t, rc.from));
          continue;
        }
        for (size_t i = 0; i < rc.into.size() && i < it->second.size(); ++i) val[k][rc.into[i]] = it->second[i];
        inflight.erase(it);
      }
      for (const ir::Op& op : cur[k]->ops) val[k][op.dst] = combine(k, t, op.terms);
    }
    snapshot();
  }
  if (!inflight.empty()) fail("messages left in flight");
  r.outputs.resize(K);
  for (uint32_t k = 0; k < K; ++k)
    for (SlotId s : plan.ranks[k].outputs) r.outputs[k].push_back(val[k][s] ? *val[k][s] : Iv{0, -2});
  return r;
}

// Every output of a prefix plan is exactly 0..g (inclusive) or 0..g−1.
void require_prefix_intervals(const ir::Plan& plan) {
  const IntervalRun r = run_intervals(plan);
  REQUIRE(r.error == "");
  int64_t g = 0;
  for (uint32_t k = 0; k < plan.ranks.size(); ++k)
    for (const Iv& v : r.outputs[k]) {
      INFO("rank " << k << " item " << g << " holds " << v.lo << ":" << v.hi);
      if (plan.spec.exclusive && g == 0) {
        REQUIRE(v.empty());
        REQUIRE(v.hi != -2);  // written (the zero element), not missing
      } else {
        REQUIRE(v.lo == 0);
        REQUIRE(v.hi == (plan.spec.exclusive ? g - 1 : g));
      }
      ++g;
    }
}

// "a:b" as printed in the paper ("a" when a == b).
std::string iv_str(int64_t lo, int64_t hi) { return lo == hi ? std::to_string(lo) : fmt::format("{}:{}", lo, hi); }

std::vector<Field> fields() { return {Field::gf256(), Field::prime(65537)}; }

// The P values of the Algorithm B grid for n items.
std::vector<uint32_t> b_ranks(uint32_t n) {
  std::vector<uint32_t> Ps;
  for (uint32_t P : {2u, 3u, 5u, 7u, ceil_div(n, 2), n - 1})
    if (P >= 2 && P < n && std::find(Ps.begin(), Ps.end(), P) == Ps.end()) Ps.push_back(P);
  return Ps;
}

void check_prefix(const Spec& s) {
  INFO(s.field.name() << " K=" << s.K << " p=" << s.p << " lambda=" << s.lambda << " items="
                      << (s.counts.empty() ? s.K : std::accumulate(s.counts.begin(), s.counts.end(), 0u))
                      << (s.exclusive ? " exclusive" : " inclusive"));
  const ir::Plan plan = gen::postal_prefix(s);
  REQUIRE(plan.num_steps == passes::postal_steps_bound(s.K, s.p, s.lambda));
  const auto c = passes::cost(plan);
  REQUIRE(c.C1 == plan.num_steps);
  // One-element messages in steps 1..m−λ+1 (rank 0's value goes out in
  // every one of them unless rank 0 holds no items).
  if (s.counts.empty() || s.counts[0] > 0) REQUIRE(c.C2 == plan.num_steps - s.lambda + 1);
  REQUIRE_NOTHROW(verify_exact(plan));
  require_prefix_intervals(plan);
#ifdef COLLPLAN_TEST_VERIFY_ORDER
  REQUIRE_NOTHROW(passes::verify_order(plan));
#endif
}

void check_broadcast(const Spec& s) {
  INFO(s.field.name() << " K=" << s.K << " p=" << s.p << " lambda=" << s.lambda << " root=" << s.root
                      << " blocks=" << s.blocks);
  const ir::Plan plan = gen::postal_broadcast(s);
  const uint32_t m = passes::postal_steps_bound(s.K, s.p, s.lambda);
  REQUIRE(plan.num_steps == m);
  const auto c = passes::cost(plan);
  REQUIRE(c.C1 == m);
  REQUIRE(c.C2 == uint64_t{s.blocks} * (m - s.lambda + 1));
  REQUIRE_NOTHROW(verify_exact(plan));
}

// The Step record of `prog` for step t, inserted in order when absent.
ir::Step& step_at(ir::Program& prog, uint32_t t) {
  auto it = std::lower_bound(prog.steps.begin(), prog.steps.end(), t,
                             [](const ir::Step& s, uint32_t v) { return s.t < v; });
  if (it == prog.steps.end() || it->t != t) it = prog.steps.insert(it, ir::Step{t, {}, {}, {}});
  return *it;
}

}  // namespace

// ─── The paper's definitions and worked example (n = 10, p = 2, λ = 3) ────

TEST_CASE("postal G, U and W match the paper's example", "[postal]") {
  const auto G = gen::postal_G(2, 3, 10);
  REQUIRE(G == std::vector<uint64_t>{1, 1, 1, 3, 5, 7, 13});  // §3.1: m = 6
  // λ = 1: G(t) = (p+1)^t.
  REQUIRE(gen::postal_G(3, 1, 64) == std::vector<uint64_t>{1, 4, 16, 64});
  REQUIRE(gen::postal_G(3, 1, 1) == std::vector<uint64_t>{1});
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t lambda = 1; lambda <= 5; ++lambda)
      for (uint64_t n = 2; n <= 300; ++n)
        REQUIRE(gen::postal_G(p, lambda, n).size() - 1 == passes::postal_steps_bound(n, p, lambda));

  using V = std::vector<uint32_t>;
  // The construction of T_0 (§3.1, Fig. 1).
  CHECK(gen::postal_U(G, 2, 3, 10, 0, 1) == V{1, 2});
  CHECK(gen::postal_U(G, 2, 3, 10, 0, 2) == V{3, 4});
  CHECK(gen::postal_U(G, 2, 3, 10, 0, 3) == V{5, 6});
  CHECK(gen::postal_U(G, 2, 3, 10, 0, 4) == V{7});
  CHECK(gen::postal_U(G, 2, 3, 10, 1, 4) == V{8});
  CHECK(gen::postal_U(G, 2, 3, 10, 2, 4) == V{9});
  for (uint32_t x = 0; x < 10; ++x) {
    CHECK(gen::postal_U(G, 2, 3, 10, x, 5).empty());
    CHECK(gen::postal_U(G, 2, 3, 10, x, 6).empty());
  }
  // §3.2's example: U_{i,1} = {i+1, i+2}, U_{8,1} = {9}; U_{6,2} = {9};
  // U_{4,3} = {9}; U_{i,4} = {i+7} for i < 3.
  CHECK(gen::postal_U(G, 2, 3, 10, 5, 1) == V{6, 7});
  CHECK(gen::postal_U(G, 2, 3, 10, 8, 1) == V{9});
  CHECK(gen::postal_U(G, 2, 3, 10, 6, 2) == V{9});
  CHECK(gen::postal_U(G, 2, 3, 10, 4, 3) == V{9});
  CHECK(gen::postal_U(G, 2, 3, 10, 3, 4).empty());
  // W, listed by port t (decreasing sender). W_{1,3} is printed as {10} in
  // the paper; it is {0}: rank 1 hears in step 3 from 1 − G(2) = 0 (a paper
  // error, docs/paper-errata.md).
  CHECK(gen::postal_W(G, 2, 3, 0, 3).empty());
  CHECK(gen::postal_W(G, 2, 3, 1, 3) == V{0});
  CHECK(gen::postal_W(G, 2, 3, 7, 3) == V{6, 5});
  for (uint32_t i = 0; i < 3; ++i) CHECK(gen::postal_W(G, 2, 3, i, 4).empty());
  CHECK(gen::postal_W(G, 2, 3, 3, 4) == V{0});
  CHECK(gen::postal_W(G, 2, 3, 8, 4) == V{5, 4});
  CHECK(gen::postal_W(G, 2, 3, 5, 5) == V{0});
  CHECK(gen::postal_W(G, 2, 3, 9, 5) == V{4, 3});
  for (uint32_t i = 0; i < 7; ++i) CHECK(gen::postal_W(G, 2, 3, i, 6).empty());
  for (uint32_t i = 7; i < 10; ++i) CHECK(gen::postal_W(G, 2, 3, i, 6) == V{i - 7});
  // U and W describe the same messages: y ∈ U_{x,j} on port t iff x is
  // W_{y,j+λ−1}'s entry t.
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t lambda = 1; lambda <= 5; ++lambda)
      for (uint32_t n : {2u, 9u, 10u, 31u, 100u}) {
        const auto g = gen::postal_G(p, lambda, n);
        const uint32_t m = static_cast<uint32_t>(g.size() - 1);
        std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, int> seen;  // x, y, t, j
        for (uint32_t j = 1; j + lambda - 1 <= m; ++j)
          for (uint32_t x = 0; x < n; ++x) {
            const auto U = gen::postal_U(g, p, lambda, n, x, j);
            for (uint32_t t = 0; t < U.size(); ++t) seen[{x, U[t], t, j}] += 1;
          }
        for (uint32_t j = lambda; j <= m; ++j)
          for (uint32_t y = 0; y < n; ++y) {
            const auto W = gen::postal_W(g, p, lambda, y, j);
            for (uint32_t t = 0; t < W.size(); ++t) seen[{W[t], y, t, j - lambda + 1}] -= 1;
          }
        for (const auto& [key, c] : seen) REQUIRE(c == 0);
      }
}

TEST_CASE("postal prefix A reproduces the paper's tables C_0..C_6 (n = 10, p = 2, lambda = 3)", "[postal]") {
  // §3.2: C_j after step j, transcribed from the paper.
  const std::vector<std::vector<std::string>> C = {
      {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
      {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
      {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
      {"0", "0:1", "0:2", "1:3", "2:4", "3:5", "4:6", "5:7", "6:8", "7:9"},
      {"0", "0:1", "0:2", "0:3", "0:4", "1:5", "2:6", "3:7", "4:8", "5:9"},
      {"0", "0:1", "0:2", "0:3", "0:4", "0:5", "0:6", "1:7", "2:8", "3:9"},
      {"0", "0:1", "0:2", "0:3", "0:4", "0:5", "0:6", "0:7", "0:8", "0:9"},
  };
  for (const Field& f : fields()) {
    const ir::Plan plan = gen::postal_prefix(prefix_spec(10, 2, 3, f));
    REQUIRE(plan.num_steps == 6);
    REQUIRE_NOTHROW(verify_exact(plan));
    const IntervalRun r = run_intervals(plan);
    REQUIRE(r.error == "");
    for (uint32_t j = 0; j <= 6; ++j)
      for (uint32_t i = 0; i < 10; ++i) {
        INFO("after step " << j << ", PE " << i);
        CHECK(iv_str(r.reach[j][i], i) == C[j][i]);
        // c(i) itself is a slot of PE i holding exactly that interval.
        const auto& sl = r.slots[j][i];
        CHECK(std::any_of(sl.begin(), sl.end(), [&](const Iv& v) { return v.lo == r.reach[j][i] && v.hi == i; }));
      }
    // Sends only in steps 1..m−λ+1 = 4, one element each (C2 = 4).
    const auto c = passes::cost(plan);
    CHECK(c.step_sizes == std::vector<uint64_t>{1, 1, 1, 1, 0, 0});
  }
}

TEST_CASE("postal prefix B reproduces the paper's tables (n = 80 on P = 10, p = 2, lambda = 3)", "[postal]") {
  // §4: C_j (block totals) and D_j (through each block's first item),
  // transcribed as the interval start of every PE after step j; C_0 = D_0's
  // starts are the blocks themselves.
  const std::vector<std::vector<int64_t>> start = {
      {0, 8, 16, 24, 32, 40, 48, 56, 64, 72},  // C_0 = <0:7, 8:15, …>, D_0 = <0, 8, …>
      {0, 8, 16, 24, 32, 40, 48, 56, 64, 72},  // C_1, D_1
      {0, 8, 16, 24, 32, 40, 48, 56, 64, 72},  // C_2, D_2
      {0, 0, 0, 8, 16, 24, 32, 40, 48, 56},    // C_3 = <0:7, 0:15, 0:23, 8:31, …>, D_3 = <0, 0:8, 0:16, 8:24, …>
      {0, 0, 0, 0, 0, 8, 16, 24, 32, 40},      // C_4, D_4
      {0, 0, 0, 0, 0, 0, 0, 8, 16, 24},        // C_5, D_5
      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0},          // C_6, D_6
  };
  // Spot-check the transcription against the paper's printed strings.
  REQUIRE(iv_str(start[3][3], 3 * 8 + 7) == "8:31");
  REQUIRE(iv_str(start[3][1], 8) == "0:8");
  REQUIRE(iv_str(start[4][9], 9 * 8 + 7) == "40:79");
  REQUIRE(iv_str(start[5][8], 8 * 8) == "16:64");

  REQUIRE(gen::postal_block_counts(80, 10) == std::vector<uint32_t>(10, 8));
  REQUIRE(gen::postal_block_counts(75, 10) == std::vector<uint32_t>{8, 8, 8, 8, 8, 7, 7, 7, 7, 7});  // §4's example

  for (bool exclusive : {false, true}) {
    const ir::Plan plan = gen::postal_prefix(prefix_spec(10, 2, 3, Field::prime(65537), gen::postal_block_counts(80, 10), exclusive));
    REQUIRE(plan.num_steps == 6);
    REQUIRE_NOTHROW(verify_exact(plan));
    require_prefix_intervals(plan);
    // What PE i can form after step j: everything from its reach to its
    // block's end (c) or first item (d). The generator keeps the received
    // part x(i) = reach..8i−1 in a slot at every step (d = x ⊕ v(8i)).
    const IntervalRun r = run_intervals(plan);
    for (uint32_t j = 0; j <= 6; ++j)
      for (uint32_t i = 0; i < 10; ++i) {
        INFO("after step " << j << ", PE " << i);
        CHECK(r.reach[j][i] == start[j][i]);
        if (start[j][i] < 8 * i) {
          const auto& sl = r.slots[j][i];
          CHECK(std::any_of(sl.begin(), sl.end(), [&](const Iv& v) { return v.lo == start[j][i] && v.hi == 8 * i - 1; }));
        }
      }
  }
}

// ─── Exhaustive grids ───────────────────────────────────────────────────────

TEST_CASE("postal prefix A: steps = bound, exact and in operand order (sampled grid)", "[postal][heavy]") {
  for (const Field& f : fields())
    for (uint32_t p = 1; p <= 4; ++p)
      for (uint32_t lambda = 1; lambda <= 5; ++lambda)
        for (uint32_t n = 2; n <= 200; n += (n < 40 ? 1 : 23))
          for (bool exclusive : {false, true}) check_prefix(prefix_spec(n, p, lambda, f, {}, exclusive));
}

TEST_CASE("postal prefix A: every n <= 200, p <= 4, lambda <= 5", "[postal][.slow]") {
  for (const Field& f : fields())
    for (uint32_t p = 1; p <= 4; ++p)
      for (uint32_t lambda = 1; lambda <= 5; ++lambda)
        for (uint32_t n = 2; n <= 200; ++n)
          for (bool exclusive : {false, true}) check_prefix(prefix_spec(n, p, lambda, f, {}, exclusive));
}

TEST_CASE("postal prefix B: steps = bound on P ranks, exact and in operand order (sampled grid)", "[postal][heavy]") {
  const Field f = Field::prime(65537);
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t lambda = 1; lambda <= 5; ++lambda)
      for (uint32_t n = 3; n <= 200; n += (n < 24 ? 1 : 29))
        for (uint32_t P : b_ranks(n))
          for (bool exclusive : {false, true})
            check_prefix(prefix_spec(P, p, lambda, f, gen::postal_block_counts(n, P), exclusive));
}

TEST_CASE("postal prefix B: every n <= 200, P in {2,3,5,7,n/2,n-1}, p <= 4, lambda <= 5", "[postal][.slow]") {
  for (const Field& f : fields())
    for (uint32_t p = 1; p <= 4; ++p)
      for (uint32_t lambda = 1; lambda <= 5; ++lambda)
        for (uint32_t n = 3; n <= 200; ++n)
          for (uint32_t P : b_ranks(n))
            for (bool exclusive : {false, true})
              check_prefix(prefix_spec(P, p, lambda, f, gen::postal_block_counts(n, P), exclusive));
}

TEST_CASE("postal prefix B: irregular counts, ranks with no items", "[postal]") {
  const std::vector<std::vector<uint32_t>> cases = {
      {0, 3}, {3, 0}, {0, 0, 1}, {1, 0, 0}, {0, 2, 0, 5, 0, 0, 1}, {4, 0, 0, 0, 0, 0, 0, 0, 0, 2},
      {1, 2, 3, 4, 5, 6, 7, 8}, {9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9}, {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}};
  for (const auto& counts : cases)
    for (uint32_t p = 1; p <= 3; ++p)
      for (uint32_t lambda = 1; lambda <= 4; ++lambda)
        for (bool exclusive : {false, true})
          check_prefix(prefix_spec(static_cast<uint32_t>(counts.size()), p, lambda, Field::gf256(), counts, exclusive));
  // One item per rank through Algorithm B is the same scan as Algorithm A.
  for (bool exclusive : {false, true})
    check_prefix(prefix_spec(13, 2, 2, Field::gf256(), std::vector<uint32_t>(13, 1), exclusive));
}

TEST_CASE("postal broadcast: steps = bound, exact, three roots (sampled grid)", "[postal]") {
  const Field f = Field::gf256();
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t lambda = 1; lambda <= 5; ++lambda)
      for (uint32_t K = 2; K <= 300; K += (K < 50 ? 1 : 37))
        for (uint32_t root : {0u, K / 2, K - 1}) check_broadcast(bcast_spec(K, p, lambda, f, root));
  // Several blocks travel as one message of n elements.
  for (uint32_t blocks : {2u, 5u})
    for (uint32_t K : {2u, 7u, 30u})
      for (uint32_t lambda : {1u, 3u}) check_broadcast(bcast_spec(K, 2, lambda, Field::prime(65537), K / 3, blocks));
}

TEST_CASE("postal broadcast: every K <= 300, p <= 4, lambda <= 5, three roots", "[postal][.slow]") {
  const Field f = Field::gf256();
  for (uint32_t p = 1; p <= 4; ++p)
    for (uint32_t lambda = 1; lambda <= 5; ++lambda)
      for (uint32_t K = 2; K <= 300; ++K)
        for (uint32_t root : {0u, K / 2, K - 1}) check_broadcast(bcast_spec(K, p, lambda, f, root, 1 + K % 3));
}

TEST_CASE("postal prefix: a swapped operand pair passes over a field but not in operand order", "[postal]") {
  // The interval run above is what the grids rely on for operand order, so
  // it must see a swap that the linear checker cannot.
  for (bool counts : {false, true}) {
    const ir::Plan plan = gen::postal_prefix(
        prefix_spec(10, 2, 3, Field::prime(65537), counts ? gen::postal_block_counts(80, 10) : std::vector<uint32_t>{}));
    ir::Plan bad = plan;
    bool swapped = false;
    for (ir::Step& st : bad.ranks[9].steps)
      for (ir::Op& op : st.ops)
        if (!swapped && op.terms.size() >= 2) {
          std::swap(op.terms.front(), op.terms.back());
          swapped = true;
        }
    REQUIRE(swapped);
    REQUIRE_NOTHROW(verify_exact(bad));
    REQUIRE(run_intervals(plan).error == "");
    CHECK_THAT(run_intervals(bad).error, Catch::Contains("rank 9") && Catch::Contains("not in input order"));
#ifdef COLLPLAN_TEST_VERIFY_ORDER
    CHECK_THROWS_AS(passes::verify_order(bad), VerifyError);
#endif
  }
}

TEST_CASE("postal plans stay correct through the default passes", "[postal]") {
  for (uint32_t lambda : {1u, 2u, 4u})
    for (uint32_t K : {2u, 9u, 33u}) {
      std::vector<Spec> specs = {prefix_spec(K, 2, lambda, Field::gf256()),
                                 prefix_spec(K, 2, lambda, Field::gf256(), {}, true),
                                 prefix_spec(K, 3, lambda, Field::gf256(), gen::postal_block_counts(3 * K + 1, K), true),
                                 bcast_spec(K, 2, lambda, Field::gf256(), K / 2, 3)};
      for (const Spec& s : specs) {
        INFO(op_name(s.op) << " K=" << K << " lambda=" << lambda << (s.exclusive ? " exclusive" : ""));
        ir::Plan plan = s.op == OpKind::Prefix ? gen::postal_prefix(s) : gen::postal_broadcast(s);
        const uint32_t steps = plan.num_steps;
        for (const char* pass : {"drop-zeros", "alloc-slots"}) {
          pipeline::run_pass(pass, plan);
          REQUIRE_NOTHROW(verify_exact(plan));
#ifdef COLLPLAN_TEST_VERIFY_ORDER
          if (s.op == OpKind::Prefix) REQUIRE_NOTHROW(passes::verify_order(plan));
#endif
        }
        CHECK(passes::cost(plan).C1 == steps);
      }
    }
}

// ─── Errors and mutations ──────────────────────────────────────────────────

TEST_CASE("postal generators reject specs they cannot take, naming the value", "[postal]") {
  const Field f = Field::gf256();
  Spec wrong_op = prefix_spec(8, 2, 1, f);
  wrong_op.op = OpKind::Allreduce;
  CHECK_THAT(user_error_of([&] { gen::postal_prefix(wrong_op); }), Catch::Contains("allreduce"));
  CHECK_THAT(user_error_of([&] { gen::postal_broadcast(prefix_spec(8, 2, 1, f)); }), Catch::Contains("prefix"));
  CHECK_THAT(user_error_of([&] { gen::postal_prefix(prefix_spec(1, 2, 1, f)); }), Catch::Contains("K = 1"));
  CHECK_THAT(user_error_of([&] { gen::postal_broadcast(bcast_spec(1, 2, 1, f, 0)); }), Catch::Contains("K = 1"));
  CHECK_THAT(user_error_of([&] { gen::postal_prefix(prefix_spec(8, 0, 1, f)); }), Catch::Contains("p = 0"));
  CHECK_THAT(user_error_of([&] { gen::postal_prefix(prefix_spec(8, 1, 0, f)); }), Catch::Contains("lambda = 0"));
  CHECK_THAT(user_error_of([&] { gen::postal_broadcast(bcast_spec(8, 1, 1, f, 8)); }), Catch::Contains("root = 8"));
  CHECK_THAT(user_error_of([&] { gen::postal_broadcast(bcast_spec(8, 1, 1, f, 0, 0)); }), Catch::Contains("blocks = 0"));
  CHECK_THAT(user_error_of([&] { gen::postal_prefix(prefix_spec(3, 1, 1, f, {2, 2})); }), Catch::Contains("got 2 counts"));
  CHECK_THAT(user_error_of([&] { gen::postal_prefix(prefix_spec(3, 1, 1, f, {0, 0, 0})); }), Catch::Contains("0 items"));
  Spec excl_bcast = bcast_spec(4, 1, 1, f, 0);
  excl_bcast.exclusive = true;
  CHECK_THAT(user_error_of([&] { gen::postal_broadcast(excl_bcast); }), Catch::Contains("exclusive"));
}

TEST_CASE("the checker rejects a postal prefix plan that uses a value before it arrives", "[postal]") {
  for (uint32_t lambda : {1u, 3u})
    for (bool counts : {false, true}) {
      INFO("lambda=" << lambda << (counts ? " algorithm B" : " algorithm A"));
      const ir::Plan plan = gen::postal_prefix(
          prefix_spec(10, 2, lambda, Field::prime(65537), counts ? gen::postal_block_counts(31, 10) : std::vector<uint32_t>{}));
      REQUIRE_NOTHROW(verify_exact(plan));
      // The last rank's last receiving step (t >= 2 in both cases: K = 10
      // needs more than one step).
      const uint32_t k = 9;
      size_t si = plan.ranks[k].steps.size();
      while (si-- > 0 && plan.ranks[k].steps[si].recvs.empty()) {
      }
      REQUIRE(si < plan.ranks[k].steps.size());
      const uint32_t t = plan.ranks[k].steps[si].t;
      REQUIRE(t >= 2);
      REQUIRE(!plan.ranks[k].steps[si].ops.empty());

      // (1) The receive, and the ops that use it, one step early: the
      // message is taken one step before it arrives.
      {
        ir::Plan bad = plan;
        ir::Program& prog = bad.ranks[k];
        ir::Step moved = prog.steps[si];
        prog.steps[si].recvs.clear();
        prog.steps[si].ops.clear();
        ir::Step& early = step_at(prog, t - 1);
        for (const auto& r : moved.recvs) early.recvs.push_back(r);
        for (const auto& o : moved.ops) early.ops.push_back(o);
        CHECK_THROWS_AS(verify_exact(bad), VerifyError);
      }
      // (2) The same, with sent_at moved along (claiming a message sent one
      // step earlier, which was never sent).
      {
        ir::Plan bad = plan;
        ir::Program& prog = bad.ranks[k];
        ir::Step moved = prog.steps[si];
        prog.steps[si].recvs.clear();
        prog.steps[si].ops.clear();
        ir::Step& early = step_at(prog, t - 1);
        for (auto r : moved.recvs) {
          if (r.sent_at == 1) continue;  // nothing sent in step 0: keep the rest
          r.sent_at -= 1;
          early.recvs.push_back(r);
        }
        for (const auto& o : moved.ops) early.ops.push_back(o);
        CHECK_THROWS_AS(verify_exact(bad), VerifyError);
      }
      // (3) Only the ops one step early: they read a slot the receive has
      // not written yet.
      {
        ir::Plan bad = plan;
        ir::Program& prog = bad.ranks[k];
        auto ops = std::move(prog.steps[si].ops);
        prog.steps[si].ops.clear();
        ir::Step& early = step_at(prog, t - 1);
        early.ops.insert(early.ops.begin(), ops.begin(), ops.end());
        CHECK_THROWS_AS(verify_exact(bad), VerifyError);
      }
    }
}
