#include "passes/verify.h"

#include <array>
#include <cmath>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/validate.h"
#include "matrix/postcondition.h"
#include "passes/verify_random.h"
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

// The randomized check at the end of rank k's program: lane(v, w) is slot
// value v on random input vector w, expected holds W vectors of num_outputs.
template <class Value, class Lane>
void check_random_outputs(const Plan& plan, const Postcondition& pc, const std::vector<Elem>& expected, uint32_t W,
                          Rank k, const std::vector<Value>& slots, Lane lane) {
  const Program& prog = plan.ranks[k];
  for (uint32_t j = 0; j < prog.outputs.size(); ++j) {
    const uint32_t col = pc.output_offset[k] + j;
    const Value& v = slots[prog.outputs[j]];
    for (uint32_t w = 0; w < W; ++w) {
      const Elem e = expected[static_cast<size_t>(w) * pc.num_outputs() + col];
      if (lane(v, w) != e)
        algebra_error("rank {} output {} (slot {}) is wrong: on random input vector {} it is {}, the postcondition gives {}",
                     k, j, prog.outputs[j], w, lane(v, w), e);
    }
  }
}

struct RandomCheck : LinearDomain {
  const Plan& plan;
  const std::vector<Elem>& expected;  // W vectors of num_outputs
  void on_end(Rank k, const std::vector<Value>& slots) {
    check_random_outputs(plan, pc, expected, W, k, slots, [](const Value& v, uint32_t w) { return v[w]; });
  }
};

// The randomized check with up to kLanes trials: a slot's values on all
// trials side by side in one fixed-size value, so the simulation allocates
// nothing per slot or per combination, and the field's arithmetic
// specialised by Arith. Lanes from W on stay 0.
constexpr uint32_t kLanes = 8;

template <class T>
struct Lanes {
  std::array<T, kLanes> v{};
};

// GF(2^8): addition is xor, a product one lookup in the 64 KiB table.
struct Gf256Arith {
  using T = uint8_t;
  std::vector<uint8_t> table;  // table[c·256 + x] = c·x
  explicit Gf256Arith(const Field& f) : table(256 * 256) {
    for (Elem c = 0; c < 256; ++c)
      for (Elem x = 0; x < 256; ++x) table[c * 256 + x] = static_cast<uint8_t>(f.mul(c, x));
  }
  void add(Lanes<T>& acc, const Lanes<T>& x, uint32_t) const {
    for (uint32_t w = 0; w < kLanes; ++w) acc.v[w] ^= x.v[w];
  }
  void mul_add(Lanes<T>& acc, Elem c, const Lanes<T>& x, uint32_t) const {
    const uint8_t* row = &table[static_cast<size_t>(c) * 256];
    for (uint32_t w = 0; w < kLanes; ++w) acc.v[w] ^= row[x.v[w]];
  }
};

// Any field, through its own operations.
struct FieldArith {
  using T = Elem;
  const Field& f;
  void add(Lanes<T>& acc, const Lanes<T>& x, uint32_t W) const {
    for (uint32_t w = 0; w < W; ++w) acc.v[w] = f.add(acc.v[w], x.v[w]);
  }
  void mul_add(Lanes<T>& acc, Elem c, const Lanes<T>& x, uint32_t W) const {
    for (uint32_t w = 0; w < W; ++w)
      if (x.v[w]) acc.v[w] = f.add(acc.v[w], f.mul(c, x.v[w]));
  }
};

template <class Arith>
struct PackedRandomCheck {
  using T = typename Arith::T;
  using Value = Lanes<T>;
  const Arith& ar;
  const Postcondition& pc;
  const Plan& plan;
  const RandomizedInputs& in;
  uint32_t W;

  Value undefined() { return {}; }
  Value input(Rank k, uint32_t i) {
    const uint32_t g = pc.input_offset[k] + i;
    Value v;
    for (uint32_t w = 0; w < W; ++w) v.v[w] = static_cast<T>(in.xs[static_cast<size_t>(w) * pc.num_inputs() + g]);
    return v;
  }
  Value eval(Rank, const std::vector<Term>& terms, const std::vector<Value>& slots) {
    Value acc;
    for (const Term& t : terms) {
      if (t.coeff == 0) continue;
      if (t.coeff == 1)
        ar.add(acc, slots[t.slot], W);
      else
        ar.mul_add(acc, t.coeff, slots[t.slot], W);
    }
    return acc;
  }
  void on_end(Rank k, const std::vector<Value>& slots) {
    check_random_outputs(plan, pc, in.expected, W, k, slots, [](const Value& v, uint32_t w) { return Elem{v.v[w]}; });
  }
};

template <class Arith>
void check_packed(const Plan& plan, const Postcondition& pc, const Arith& ar, const RandomizedInputs& in) {
  PackedRandomCheck<Arith> dom{ar, pc, plan, in, in.trials};
  simulate(plan, dom);
}

// Auto mode's choice: exact while the coefficient vectors of all slots of
// all ranks fit 2^25 cells.
bool auto_exact(uint64_t max_slots, uint64_t ranks, uint64_t inputs) { return max_slots * ranks * inputs <= (1ull << 25); }

RandomizedInputs randomized_inputs(const Field& f, const Postcondition& pc, const VerifyOptions& opt) {
  const double bits = std::log2(static_cast<double>(f.size()));
  RandomizedInputs in;
  in.trials = opt.trials ? opt.trials : static_cast<uint32_t>(std::ceil(40.0 / bits));
  in.seed = opt.seed;
  SplitMix64 rng(opt.seed);
  in.xs.resize(static_cast<size_t>(in.trials) * pc.num_inputs());
  for (auto& x : in.xs) x = rng.uniform(f);
  in.expected = mul_batch(f, pc.map, in.xs, in.trials);
  return in;
}

}  // namespace

bool may_verify_exactly(const Postcondition& pc, uint64_t ranks, const VerifyOptions& opt) {
  if (opt.mode != VerifyMode::Auto) return opt.mode == VerifyMode::Exact;
  return auto_exact(1, ranks, pc.num_inputs());
}

VerifyReport verify(const Plan& plan, const VerifyOptions& opt) { return verify(plan, checked_postcondition(plan), opt); }

VerifyReport verify(const Plan& plan, const Postcondition& pc, const VerifyOptions& opt) {
  RandomizedInputs drawn;
  return verify(plan, pc, opt, &drawn);
}

VerifyReport verify(const Plan& plan, const Postcondition& pc, const VerifyOptions& opt, RandomizedInputs* drawn) {
  ir::verify_structure(plan, pc.inputs_per_rank, pc.outputs_per_rank);
  const Field& f = plan.spec.field;
  VerifyReport rep;
  rep.mode = opt.mode;
  if (rep.mode == VerifyMode::Auto) {
    uint64_t max_slots = 0;
    for (const Program& p : plan.ranks) max_slots = std::max<uint64_t>(max_slots, p.num_slots);
    rep.mode = auto_exact(max_slots, plan.ranks.size(), pc.num_inputs()) ? VerifyMode::Exact : VerifyMode::Randomized;
  }
  if (rep.mode == VerifyMode::Exact) {
    rep.error_log2 = -INFINITY;
    ExactCheck dom{{f, pc, pc.num_inputs(), nullptr}, plan};
    simulate(plan, dom);
    return rep;
  }
  if (drawn->trials == 0) *drawn = randomized_inputs(f, pc, opt);
  const RandomizedInputs& in = *drawn;
  COLLPLAN_ASSERT(in.seed == opt.seed && (!opt.trials || in.trials == opt.trials),
                  "verify: random inputs drawn for other options");
  const double bits = std::log2(static_cast<double>(f.size()));
  rep.trials = in.trials;
  rep.seed = in.seed;
  rep.error_log2 = -bits * rep.trials;
  if (rep.trials <= kLanes && f.kind() == FieldKind::GF2m && f.m() == 8) {
    check_packed(plan, pc, Gf256Arith(f), in);
  } else if (rep.trials <= kLanes) {
    check_packed(plan, pc, FieldArith{f}, in);
  } else {
    RandomCheck dom{{f, pc, rep.trials, &in.xs}, plan, in.expected};
    simulate(plan, dom);
  }
  return rep;
}

}  // namespace collplan::passes
