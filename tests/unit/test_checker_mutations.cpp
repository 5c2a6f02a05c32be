// The checker must reject every mutated plan, with a message that names the
// rank and the step, slot, port or output that is wrong (the plan semantics
// of compiler/ir/plan.h; docs/design.md, "Verification").
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "gen/prepare_shoot.h"
#include "matrix/matrix.h"
#include "passes/drop_zeros.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using ir::Plan;
using test::kExact;

namespace {

Plan valid_plan(uint32_t K, uint32_t p, uint32_t lambda, const Field& f, bool zero_drop) {
  Plan plan = gen::prepare_shoot(make_encode_spec(K, p, lambda, f, matrix_random(K, K * 31 + p, f)));
  if (zero_drop) passes::drop_zeros(plan);
  return plan;
}

// Plans after drop-zeros have no dead ops, so every op and every coefficient
// matters; the raw generator output (which keeps the paper's zero shoot
// variables) is mutated only where a change must show.
struct Case {
  Plan plan;
  bool all_ops_live;  // drop-zeros ran: every op's result reaches an output
};

std::vector<Case> corpus() {
  return {{valid_plan(5, 2, 1, Field::gf256(), true), true},
          {valid_plan(9, 1, 1, Field::gf256(), false), false},
          {valid_plan(16, 3, 2, Field::gf65536(), true), true},
          {valid_plan(27, 2, 1, Field::prime(65537), true), true},
          {valid_plan(3, 4, 3, Field::prime(2147483647), false), false},
          {valid_plan(12, 1, 1, Field::prime(257), true), true}};
}

// Requires the checker to reject `plan`, with a message that locates the
// fault. Exact mode, so a wrong coefficient is always caught.
void require_rejected(const Plan& plan, const std::string& what) {
  INFO("mutation: " << what);
  bool threw = false;
  std::string msg;
  try {
    passes::verify(plan, kExact);
  } catch (const VerifyError& e) {
    threw = true;
    msg = e.what();
  } catch (const UserError& e) {  // e.g. a bad spec in the header
    threw = true;
    msg = e.what();
  }
  REQUIRE(threw);
  INFO("message: " << msg);
  const bool locates = msg.find("rank ") != std::string::npos || msg.find("matrix") != std::string::npos ||
                       msg.find("steps") != std::string::npos;
  REQUIRE(locates);
}

// Calls fn(plan_copy, description) for every position a mutation applies to.
template <class Fn>
void each_step(const Plan& base, Fn&& fn) {
  for (size_t k = 0; k < base.ranks.size(); ++k)
    for (size_t si = 0; si < base.ranks[k].steps.size(); ++si) fn(k, si);
}

}  // namespace

TEST_CASE("the unmutated corpus verifies", "[checker]") {
  for (const Case& c : corpus()) REQUIRE_NOTHROW(passes::verify(c.plan, kExact));
}

TEST_CASE("checker rejects every mutation", "[checker][mutation]") {
  size_t mutations = 0;
  for (const Case& c : corpus()) {
    const Plan& base = c.plan;
    const uint32_t K = base.spec.K, P = base.spec.p;
    const Field& f = base.spec.field;
    each_step(base, [&](size_t k, size_t si) {
      const ir::Step& st = base.ranks[k].steps[si];
      const std::string at = "rank " + std::to_string(k) + " step " + std::to_string(st.t);
      for (size_t i = 0; i < st.sends.size(); ++i) {
        {  // send dropped
          Plan m = base;
          auto& v = m.ranks[k].steps[si].sends;
          v.erase(v.begin() + i);
          require_rejected(m, at + ": send dropped");
          ++mutations;
        }
        {  // send duplicated on the same port
          Plan m = base;
          auto& v = m.ranks[k].steps[si].sends;
          v.push_back(v[i]);
          require_rejected(m, at + ": send duplicated");
          ++mutations;
        }
        {  // wrong destination
          Plan m = base;
          auto& s = m.ranks[k].steps[si].sends[i];
          s.to = (s.to + 1) % K == k ? (s.to + 2) % K : (s.to + 1) % K;
          if (s.to != base.ranks[k].steps[si].sends[i].to) {
            require_rejected(m, at + ": wrong destination");
            ++mutations;
          }
        }
        {  // destination out of range / to itself
          Plan m = base;
          m.ranks[k].steps[si].sends[i].to = K + 3;
          require_rejected(m, at + ": destination out of range");
          Plan m2 = base;
          m2.ranks[k].steps[si].sends[i].to = static_cast<ir::Rank>(k);
          require_rejected(m2, at + ": send to itself");
          mutations += 2;
        }
        {  // wrong port (within range) and port out of range
          Plan m = base;
          auto& s = m.ranks[k].steps[si].sends[i];
          s.port = (s.port + 1) % P;
          if (P > 1) {
            require_rejected(m, at + ": wrong port");
            ++mutations;
          }
          Plan m2 = base;
          m2.ranks[k].steps[si].sends[i].port = P;
          require_rejected(m2, at + ": port out of range");
          ++mutations;
        }
        {  // payload element dropped / added
          Plan m = base;
          auto& pl = m.ranks[k].steps[si].sends[i].payload;
          pl.pop_back();
          require_rejected(m, at + ": payload element dropped");
          Plan m2 = base;
          auto& pl2 = m2.ranks[k].steps[si].sends[i].payload;
          pl2.push_back(pl2.front());
          require_rejected(m2, at + ": payload element added");
          mutations += 2;
        }
        {  // payload coefficient changed
          Plan m = base;
          auto& term = m.ranks[k].steps[si].sends[i].payload.front().terms.front();
          term.coeff = f.add(term.coeff, 1) == 0 ? 2 : f.add(term.coeff, 1);
          require_rejected(m, at + ": payload coefficient changed");
          ++mutations;
        }
        {  // payload reads a slot before it is written (an unused high slot)
          Plan m = base;
          auto& prog = m.ranks[k];
          const ir::SlotId fresh = prog.num_slots++;
          prog.steps[si].sends[i].payload.front().terms.front().slot = fresh;
          require_rejected(m, at + ": payload reads an unwritten slot");
          ++mutations;
        }
      }
      for (size_t i = 0; i < st.recvs.size(); ++i) {
        {  // receive dropped
          Plan m = base;
          auto& v = m.ranks[k].steps[si].recvs;
          v.erase(v.begin() + i);
          require_rejected(m, at + ": receive dropped");
          ++mutations;
        }
        {  // latency violated: sent_at shifted
          Plan m = base;
          m.ranks[k].steps[si].recvs[i].sent_at += 1;
          require_rejected(m, at + ": sent_at shifted");
          ++mutations;
        }
        {  // receive into a slot out of range
          Plan m = base;
          m.ranks[k].steps[si].recvs[i].into.front() = m.ranks[k].num_slots + 5;
          require_rejected(m, at + ": receive slot out of range");
          ++mutations;
        }
        {  // receive from the wrong rank
          Plan m = base;
          auto& r = m.ranks[k].steps[si].recvs[i];
          r.from = (r.from + 1) % K == k ? (r.from + 2) % K : (r.from + 1) % K;
          if (r.from != base.ranks[k].steps[si].recvs[i].from) {
            require_rejected(m, at + ": receive from the wrong rank");
            ++mutations;
          }
        }
      }
      for (size_t i = 0; i < st.ops.size(); ++i) {
        if (!c.all_ops_live) break;
        if (!st.ops[i].terms.empty()) {
          Plan m = base;
          auto& term = m.ranks[k].steps[si].ops[i].terms.back();
          term.coeff = f.add(term.coeff, 1);
          require_rejected(m, at + ": op coefficient changed");
          Plan m2 = base;
          m2.ranks[k].steps[si].ops[i].terms.back().coeff = static_cast<Elem>(f.size());
          require_rejected(m2, at + ": coefficient outside the field");
          mutations += 2;
        }
        {  // op dropped
          Plan m = base;
          auto& v = m.ranks[k].steps[si].ops;
          v.erase(v.begin() + i);
          require_rejected(m, at + ": op dropped");
          ++mutations;
        }
      }
      if (si + 1 < base.ranks[k].steps.size()) {  // steps swapped
        Plan m = base;
        auto& steps = m.ranks[k].steps;
        std::swap(steps[si].sends, steps[si + 1].sends);
        std::swap(steps[si].recvs, steps[si + 1].recvs);
        std::swap(steps[si].ops, steps[si + 1].ops);
        for (auto& r : steps[si].recvs) r.sent_at = steps[si].t - base.spec.lambda + 1;
        for (auto& r : steps[si + 1].recvs) r.sent_at = steps[si + 1].t - base.spec.lambda + 1;
        require_rejected(m, at + ": steps swapped with the next");
        ++mutations;
      }
    });
    {  // a message left in flight: the plan ends one step early
      Plan m = base;
      m.num_steps -= 1;
      for (auto& prog : m.ranks)
        if (!prog.steps.empty() && prog.steps.back().t > m.num_steps) prog.steps.back().t = m.num_steps;
      require_rejected(m, "plan shortened by one step");
      ++mutations;
    }
    for (size_t k = 0; k < base.ranks.size(); ++k) {  // outputs and inputs moved
      Plan m = base;
      m.ranks[k].outputs.front() = m.ranks[k].inputs.front();
      require_rejected(m, "rank " + std::to_string(k) + ": output slot replaced by the input slot");
      Plan m2 = base;
      m2.ranks[k].inputs.front() = m2.ranks[k].num_slots;
      require_rejected(m2, "rank " + std::to_string(k) + ": input slot out of range");
      mutations += 2;
    }
    {  // the header's matrix no longer matches the plan
      Plan m = base;
      m.spec.matrix = matrix_random(K, 999999, f);
      require_rejected(m, "matrix changed in the header");
      Plan m2 = base;
      m2.spec.matrix.digest.bytes[0] ^= 1;
      require_rejected(m2, "matrix digest corrupted");
      mutations += 2;
    }
    {  // a rank program missing
      Plan m = base;
      m.ranks.pop_back();
      require_rejected(m, "last rank's program removed");
      ++mutations;
    }
  }
  INFO("mutations tried: " << mutations);
  CHECK(mutations > 1000);
}

TEST_CASE("randomized mode also rejects a wrong coefficient", "[checker]") {
  Plan plan = valid_plan(200, 2, 1, Field::gf256(), true);
  auto& op = plan.ranks[17].steps.back().ops.front();
  op.terms.front().coeff ^= 0x5a;
  REQUIRE_THROWS_AS(passes::verify(plan, {passes::VerifyMode::Randomized, 0, 7}), VerifyError);
}
