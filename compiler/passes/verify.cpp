#include "passes/verify.h"

#include <cmath>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/validate.h"
#include "matrix/postcondition.h"
#include "ir/simulate.h"
#include "support/error.h"

namespace collplan::passes {

const char* mode_name(VerifyMode m) {
  switch (m) {
    case VerifyMode::Auto: return "auto";
    case VerifyMode::Exact: return "exact";
    case VerifyMode::Randomized: return "randomized";
  }
  return "?";
}

std::string VerifyReport::describe() const {
  if (mode == VerifyMode::Exact) return "exact (coefficient vectors over all inputs)";
  return fmt::format("randomized, {} trials (seed {:#x}), false-accept probability <= 2^{:.1f}", trials, seed, error_log2);
}

namespace {

using namespace ir;

// A whole plan's postcondition, built only once the plan has the rank
// count and every program the input and output counts the spec gives it
// (rank_ios: from the spec alone, O(ranks)). The map can have 2^28 entries;
// a small file that claims a large operation is refused in time
// proportional to the file, whichever entry point reads it.
Postcondition checked_postcondition(const Plan& plan) {
  ir::check_io_counts(plan);
  return postcondition(plan.spec);
}

}  // namespace

void verify_rank_structure(const Spec& spec, uint32_t num_steps, const Program& prog, uint32_t max_ranks) {
  // The counts from the spec alone (a broadcast's map has K·n columns); an
  // encode's matrix is still checked against the header's digest.
  validate_spec_basics(spec, max_ranks);
  if (spec.op == OpKind::Encode || is_code_op(spec.op)) (void)coded_matrix(spec);
  ir::verify_rank_structure(spec, num_steps, prog, max_ranks);
}

namespace {

// Linear evaluation domain: each slot is a vector of W field elements.
struct LinearDomain {
  using Value = std::vector<Elem>;
  const Field& f;
  const Postcondition& pc;
  uint32_t W;
  const std::vector<Elem>* random_inputs;  // randomized: W values per global input; exact: nullptr

  Value undefined() { return {}; }
  Value input(Rank k, uint32_t i) {
    const uint32_t g = pc.input_offset[k] + i;
    Value v(W, 0);
    if (random_inputs)
      for (uint32_t w = 0; w < W; ++w) v[w] = (*random_inputs)[static_cast<size_t>(w) * pc.num_inputs() + g];
    else
      v[g] = 1;
    return v;
  }
  Value eval(Rank, const std::vector<Term>& terms, const std::vector<Value>& slots) {
    Value acc(W, 0);
    for (const Term& t : terms) {
      if (t.coeff == 0) continue;
      const Value& v = slots[t.slot];
      if (t.coeff == 1)
        for (uint32_t w = 0; w < W; ++w) acc[w] = f.add(acc[w], v[w]);
      else
        for (uint32_t w = 0; w < W; ++w)
          if (v[w]) acc[w] = f.add(acc[w], f.mul(t.coeff, v[w]));
    }
    return acc;
  }
};

struct ExactCheck : LinearDomain {
  const Plan& plan;
  void on_end(Rank k, const std::vector<Value>& slots) {
    const Program& prog = plan.ranks[k];
    for (uint32_t j = 0; j < prog.outputs.size(); ++j) {
      const uint32_t col = pc.output_offset[k] + j;
      const Value& v = slots[prog.outputs[j]];
      for (uint32_t i = 0; i < pc.num_inputs(); ++i)
        if (v[i] != pc.map.at(i, col)) {
          uint32_t src = 0;
          while (pc.input_offset[src + 1] <= i) ++src;
          algebra_error("rank {} output {} (slot {}) is wrong: its coefficient on input {} (rank {} input {}) is {}, the postcondition needs {}",
                       k, j, prog.outputs[j], i, src, i - pc.input_offset[src], v[i], pc.map.at(i, col));
        }
    }
  }
};

struct RandomCheck : LinearDomain {
  const Plan& plan;
  const std::vector<Elem>& expected;  // W vectors of num_outputs
  void on_end(Rank k, const std::vector<Value>& slots) {
    const Program& prog = plan.ranks[k];
    for (uint32_t j = 0; j < prog.outputs.size(); ++j) {
      const uint32_t col = pc.output_offset[k] + j;
      const Value& v = slots[prog.outputs[j]];
      for (uint32_t w = 0; w < W; ++w) {
        const Elem e = expected[static_cast<size_t>(w) * pc.num_outputs() + col];
        if (v[w] != e)
          algebra_error("rank {} output {} (slot {}) is wrong: on random input vector {} it is {}, the postcondition gives {}",
                       k, j, prog.outputs[j], w, v[w], e);
      }
    }
  }
};

}  // namespace

VerifyReport verify(const Plan& plan, const VerifyOptions& opt) { return verify(plan, checked_postcondition(plan), opt); }

VerifyReport verify(const Plan& plan, const Postcondition& pc, const VerifyOptions& opt) {
  ir::verify_structure(plan, pc.inputs_per_rank, pc.outputs_per_rank);
  const Field& f = plan.spec.field;
  VerifyReport rep;
  rep.mode = opt.mode;
  if (rep.mode == VerifyMode::Auto) {
    uint64_t max_slots = 0;
    for (const Program& p : plan.ranks) max_slots = std::max<uint64_t>(max_slots, p.num_slots);
    const uint64_t cells = max_slots * plan.ranks.size() * pc.num_inputs();
    rep.mode = cells <= (1ull << 25) ? VerifyMode::Exact : VerifyMode::Randomized;
  }
  if (rep.mode == VerifyMode::Exact) {
    rep.error_log2 = -INFINITY;
    ExactCheck dom{{f, pc, pc.num_inputs(), nullptr}, plan};
    simulate(plan, dom);
    return rep;
  }
  const double bits = std::log2(static_cast<double>(f.size()));
  rep.trials = opt.trials ? opt.trials : static_cast<uint32_t>(std::ceil(40.0 / bits));
  rep.seed = opt.seed;
  rep.error_log2 = -bits * rep.trials;
  SplitMix64 rng(opt.seed);
  std::vector<Elem> xs(static_cast<size_t>(rep.trials) * pc.num_inputs());
  for (auto& x : xs) x = rng.uniform(f);
  const std::vector<Elem> expected = mul_batch(f, pc.map, xs, rep.trials);
  RandomCheck dom{{f, pc, rep.trials, &xs}, plan, expected};
  simulate(plan, dom);
  return rep;
}

}  // namespace collplan::passes
