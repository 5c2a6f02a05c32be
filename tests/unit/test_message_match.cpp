// The two ways of matching a plan's messages (ir/validate.h) must agree:
// verify_structure looks each receive's send up in the sender's program,
// the streaming check gathers every message end in lists and sorts them.
// On valid plans and on plans with one message end changed, both accept or
// both refuse with the same message.
#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <string>

#include "gen/dissemination.h"
#include "gen/prepare_shoot.h"
#include "ir/validate.h"
#include "matrix/matrix.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using ir::Plan;

namespace {

// The message of the VerifyError `fn` raises, or none.
std::optional<std::string> refusal(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const VerifyError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// verify_structure's two halves as the streaming check runs them.
void match_by_lists(const Plan& plan) {
  const std::vector<RankIO> io = rank_ios(plan.spec);
  std::vector<ir::MessageEnd> sends, recvs;
  for (uint32_t k = 0; k < plan.ranks.size(); ++k)
    ir::check_rank_messages(plan.spec, plan.num_steps, plan.ranks[k], io[k].inputs, io[k].outputs, sends, recvs);
  ir::match_messages(plan.spec, sends, recvs);
}

void require_same_verdict(const Plan& plan, const std::string& what, bool must_refuse) {
  INFO("mutation: " << what);
  const auto whole = refusal([&] { ir::verify_structure(plan); });
  const auto lists = refusal([&] { match_by_lists(plan); });
  INFO("verify_structure: " << whole.value_or("accepted"));
  INFO("lists: " << lists.value_or("accepted"));
  CHECK(whole == lists);
  if (must_refuse) CHECK(whole.has_value());
}

Spec allreduce_spec(uint32_t K, uint32_t p, uint32_t lambda) {
  Spec s;
  s.op = OpKind::Allreduce;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.blocks = 1;
  s.field = Field::gf256();
  return s;
}

std::vector<Plan> corpus() {
  const Field f = Field::gf256();
  return {gen::dissemination_allreduce(allreduce_spec(6, 1, 1)), gen::dissemination_allreduce(allreduce_spec(9, 2, 2)),
          gen::prepare_shoot(make_encode_spec(7, 2, 2, f, matrix_random(7, 7 * 31 + 2, f))),
          gen::prepare_shoot(make_encode_spec(5, 1, 1, f, matrix_random(5, 5 * 31 + 1, f)))};
}

}  // namespace

TEST_CASE("whole-plan and streaming message matching agree on every message mutation", "[verify][messages]") {
  size_t mutations = 0;
  for (const Plan& base : corpus()) {
    require_same_verdict(base, "none", false);
    const uint32_t K = base.spec.K;
    for (size_t k = 0; k < base.ranks.size(); ++k) {
      // Another rank than r, and not k itself.
      auto other = [&](ir::Rank r) { return static_cast<ir::Rank>((r + 1) % K == k ? (r + 2) % K : (r + 1) % K); };
      for (size_t si = 0; si < base.ranks[k].steps.size(); ++si) {
        const std::string at = "rank " + std::to_string(k) + " step " + std::to_string(base.ranks[k].steps[si].t);
        // `change` edits a copy of the step; false: it does not apply.
        auto mutated = [&](const std::string& what, const std::function<bool(ir::Step&)>& change) {
          Plan m = base;
          if (!change(m.ranks[k].steps[si])) return;
          require_same_verdict(m, at + ": " + what, true);
          ++mutations;
        };
        for (size_t i = 0; i < base.ranks[k].steps[si].sends.size(); ++i) {
          mutated("send dropped", [&](ir::Step& st) { return st.sends.erase(st.sends.begin() + i), true; });
          mutated("send redirected", [&](ir::Step& st) { return st.sends[i].to = other(st.sends[i].to), true; });
          mutated("send grown", [&](ir::Step& st) {
            auto& g = st.sends[i].payload;
            return g.push_back(g.back()), true;
          });
        }
        for (size_t i = 0; i < base.ranks[k].steps[si].recvs.size(); ++i) {
          mutated("receive dropped", [&](ir::Step& st) { return st.recvs.erase(st.recvs.begin() + i), true; });
          mutated("receive from another rank",
                  [&](ir::Step& st) { return st.recvs[i].from = other(st.recvs[i].from), true; });
          mutated("receive shrunk", [&](ir::Step& st) {
            auto& into = st.recvs[i].into;
            return into.size() > 1 && (into.pop_back(), true);
          });
        }
      }
    }
  }
  CHECK(mutations > 100);
}
