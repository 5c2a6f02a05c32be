#include "passes/verify.h"

#include <cmath>
#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <unordered_map>
#include <span>

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

// The randomized check with up to kLanes trials at a time: lanes [lane0,
// lane0 + W) of the drawn vectors, side by side in one fixed-size value per
// slot; more trials take more passes (verify_random.h).
template <class Arith>
struct PackedRandomCheck {
  using T = typename Arith::T;
  using Value = Lanes<T>;
  const Arith& ar;
  const Postcondition& pc;
  const Plan& plan;
  const RandomizedInputs& in;
  uint32_t lane0, W;
  std::vector<Elem> scratch;

  Value undefined() { return {}; }
  Value input(Rank k, uint32_t i) { return input_lanes<T>(pc, *in.expected, k, i, lane0, W); }
  Value eval(Rank, std::span<const Term> terms, std::span<const Value> slots) {
    return eval_lanes(ar, terms, slots, W);
  }
  void on_end(Rank k, std::span<const Value> slots) {
    check_output_lanes(pc, *in.expected, k, plan.ranks[k].outputs, slots, lane0, W, scratch);
  }
};

template <class Arith>
void check_packed(const Plan& plan, const Postcondition& pc, const Arith& ar, const RandomizedInputs& in) {
  for (uint32_t lane0 = 0; lane0 < in.trials; lane0 += kLanes) {
    PackedRandomCheck<Arith> dom{ar, pc, plan, in, lane0, std::min(kLanes, in.trials - lane0), {}};
    simulate(plan, dom);
  }
}

// Exact evaluation domain: each slot is its coefficient vector over all
// inputs, held sparse (the non-zero (input, coefficient) pairs in input
// order). A value of one term is held inline and a value passed on unchanged
// is shared, so a plain collective (every coefficient 1, every message a
// copy or a sum) costs about the size of its postcondition, whatever K.
// Coefficients add in the field: a term counted twice in characteristic 2
// cancels, as the plan's arithmetic would cancel it.
using Entry = Postcondition::Entry;
constexpr uint32_t kNoInput = UINT32_MAX;

struct SparseValue {
  std::shared_ptr<const Entry[]> many;  // two or more entries (one allocation)
  Entry one{kNoInput, 0};               // exactly one entry (many empty); with many, one.input is their count
  size_t size() const { return many ? one.input : one.input != kNoInput ? 1 : 0; }
  const Entry* begin() const { return many ? many.get() : &one; }
  const Entry* end() const { return begin() + size(); }
};

// Thrown when the exact check would build more entries than its budget.
struct OverBudget {};

struct SparseDomain {
  using Value = SparseValue;
  const Field& f;
  const Postcondition& pc;
  uint64_t budget;    // entries the evaluation may build in all
  uint64_t built = 0;
  std::vector<Entry> buf, merged;
  std::vector<size_t> bounds, next_bounds;

  Value undefined() { return {}; }
  Value input(Rank k, uint32_t i) { return Value{nullptr, Entry{pc.input_offset[k] + i, 1}}; }
  Value make(std::vector<Entry>& v) {
    built += v.size();
    if (built > budget) throw OverBudget{};
    if (v.empty()) return {};
    if (v.size() == 1) return Value{nullptr, v[0]};
    std::shared_ptr<Entry[]> many = std::make_shared_for_overwrite<Entry[]>(v.size());
    std::copy(v.begin(), v.end(), many.get());
    return Value{std::move(many), Entry{static_cast<uint32_t>(v.size()), 0}};
  }
  Elem scaled(Elem c, Elem e) const { return c == 1 ? e : f.mul(c, e); }
  Value eval(Rank, std::span<const Term> terms, std::span<const Value> slots) {
    const Term *only = nullptr, *first = nullptr;
    size_t live = 0, total = 0;
    for (const Term& t : terms)
      if (t.coeff != 0 && slots[t.slot].size() != 0) {
        if (!first) first = &t;
        ++live, only = &t, total += slots[t.slot].size();
      }
    if (live == 0) return {};
    if (live == 1 && only->coeff == 1) return slots[only->slot];  // shared, not copied
    if (live == 2) return sum_of_two(*first, *only, slots, total);
    buf.clear();
    buf.reserve(total);
    bounds.assign(1, 0);
    for (const Term& t : terms) {
      if (t.coeff == 0 || slots[t.slot].size() == 0) continue;
      for (const Entry& e : slots[t.slot]) buf.push_back({e.input, t.coeff == 1 ? e.coeff : f.mul(t.coeff, e.coeff)});
      bounds.push_back(buf.size());
    }
    if (live > 1) {
      merge_runs();
      size_t w = 0;
      for (size_t r = 0; r < buf.size();) {
        Entry acc = buf[r++];
        while (r < buf.size() && buf[r].input == acc.input) acc.coeff = f.add(acc.coeff, buf[r++].coeff);
        if (acc.coeff != 0) buf[w++] = acc;
      }
      buf.resize(w);
    }
    return make(buf);
  }
  // a·x + b·y in one merge of the two input-ordered values, equal inputs
  // added (the most common combination: a partial sum and what arrived).
  Value sum_of_two(const Term& a, const Term& b, std::span<const Value> slots, size_t total) {
    const Value &x = slots[a.slot], &y = slots[b.slot];
    const Entry *i = x.begin(), *ie = x.end(), *j = y.begin(), *je = y.end();
    buf.clear();
    buf.reserve(total);
    while (i != ie && j != je) {
      if (i->input < j->input) {
        buf.push_back({i->input, scaled(a.coeff, i->coeff)});
        ++i;
      } else if (j->input < i->input) {
        buf.push_back({j->input, scaled(b.coeff, j->coeff)});
        ++j;
      } else {
        const Elem c = f.add(scaled(a.coeff, i->coeff), scaled(b.coeff, j->coeff));
        if (c != 0) buf.push_back({i->input, c});
        ++i, ++j;
      }
    }
    for (; i != ie; ++i) buf.push_back({i->input, scaled(a.coeff, i->coeff)});
    for (; j != je; ++j) buf.push_back({j->input, scaled(b.coeff, j->coeff)});
    return make(buf);
  }
  // buf holds sorted runs [bounds[i], bounds[i+1]) (every value is kept in
  // input order, and a non-zero coefficient keeps it so); merged pairwise
  // until one run is left: O(entries · log runs), where sorting the whole
  // was O(entries · log entries) and most of an allreduce's exact check.
  void merge_runs() {
    const auto by_input = [](const Entry& a, const Entry& b) { return a.input < b.input; };
    while (bounds.size() > 2) {
      merged.resize(buf.size());
      next_bounds.assign(1, 0);
      size_t i = 0;
      for (; i + 2 < bounds.size(); i += 2) {
        std::merge(buf.begin() + bounds[i], buf.begin() + bounds[i + 1], buf.begin() + bounds[i + 1],
                   buf.begin() + bounds[i + 2], merged.begin() + bounds[i], by_input);
        next_bounds.push_back(bounds[i + 2]);
      }
      if (i + 1 < bounds.size()) {  // an odd run left over
        std::copy(buf.begin() + bounds[i], buf.begin() + bounds[i + 1], merged.begin() + bounds[i]);
        next_bounds.push_back(bounds[i + 1]);
      }
      buf.swap(merged);
      bounds.swap(next_bounds);
    }
  }
};

struct ExactCheck : SparseDomain {
  const Plan& plan;
  std::vector<Entry> want;
  void on_end(Rank k, std::span<const Value> slots) {
    const Program& prog = plan.ranks[k];
    for (uint32_t j = 0; j < prog.outputs.size(); ++j) {
      pc.column(pc.output_col(k, j), want);
      const Value& v = slots[prog.outputs[j]];
      const Entry *a = v.begin(), *ae = v.end();
      const Entry *b = want.data(), *be = want.data() + want.size();
      while (a != ae || b != be) {
        // The first input where the two differ: its coefficient in each.
        uint32_t i;
        Elem have = 0, need = 0;
        if (b == be || (a != ae && a->input < b->input)) {
          i = a->input, have = a->coeff, ++a;
        } else if (a == ae || b->input < a->input) {
          i = b->input, need = b->coeff, ++b;
        } else {
          i = a->input, have = a->coeff, need = b->coeff, ++a, ++b;
        }
        if (have == need) continue;
        const uint32_t src = static_cast<uint32_t>(
            std::upper_bound(pc.input_offset.begin(), pc.input_offset.end(), i) - pc.input_offset.begin() - 1);
        algebra_error("rank {} output {} (slot {}) is wrong: its coefficient on input {} (rank {} input {}) is {}, the postcondition needs {}",
                     k, j, prog.outputs[j], i, src, i - pc.input_offset[src], have, need);
      }
    }
  }
};

// Auto: the exact check where it is cheap. A coded plan's values are dense
// combinations, so its cost is about ranks · slots · inputs; a plain
// collective's values are small sets of inputs, so its cost is about the
// postcondition's non-zeros, with a budget on the entries actually built
// (past which auto falls back to the randomized check).
constexpr uint64_t kAutoExactCells = uint64_t{1} << 25;
// 2^23 non-zeros: an allgather of 2048 ranks (4·10^6 one-term outputs) is
// proven in about a second; a reduce-scatter or allreduce of 4096 ranks
// (2^24, whose partial sums hold several times that) would take tens of
// seconds and 10x the plan's memory, for a check the randomized mode does in
// a few seconds with a 2^-40 bound (docs/scale.md).
constexpr uint64_t kAutoExactNonzeros = uint64_t{1} << 23;
constexpr uint64_t kAutoExactBudget = uint64_t{1} << 26;
// An exact check asked for by name: bounded only so that it ends.
constexpr uint64_t kExactBudget = uint64_t{1} << 32;

// Auto for a coded plan: exact while the coefficient vectors of all slots
// of all ranks fit 2^25 cells.
bool auto_exact_coded(uint64_t max_slots, uint64_t ranks, uint64_t inputs) {
  return max_slots * ranks * inputs <= kAutoExactCells;
}

}  // namespace

RandomizedInputs randomized_inputs(const Field& f, const Postcondition& pc, const VerifyOptions& opt) {
  const double bits = std::log2(static_cast<double>(f.size()));
  RandomizedInputs in;
  in.trials = opt.trials ? opt.trials : static_cast<uint32_t>(std::ceil(40.0 / bits));
  in.seed = opt.seed;
  const uint32_t W = in.trials;
  SplitMix64 rng(opt.seed);
  const UniformDraw uniform(f);
  // Input-major (the evaluator's layout), drawn trial by trial so that a
  // seed gives the same vectors as it always has.
  std::vector<Elem> x(static_cast<size_t>(W) * pc.num_inputs());
  for (uint32_t w = 0; w < W; ++w)
    for (size_t g = 0; g < pc.num_inputs(); ++g) x[g * W + w] = uniform(rng);
  in.expected = std::make_shared<const Evaluator>(f, pc, std::move(x), W);
  return in;
}

bool may_verify_exactly(const Postcondition& pc, uint64_t ranks, const VerifyOptions& opt) {
  if (opt.mode != VerifyMode::Auto) return opt.mode == VerifyMode::Exact;
  return !pc.dense || auto_exact_coded(1, ranks, pc.num_inputs());
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
  uint64_t budget = kExactBudget;
  if (rep.mode == VerifyMode::Auto) {
    bool exact;
    if (pc.dense) {
      uint64_t max_slots = 0;
      for (const Program& p : plan.ranks) max_slots = std::max<uint64_t>(max_slots, p.num_slots);
      exact = auto_exact_coded(max_slots, plan.ranks.size(), pc.num_inputs());
    } else {
      exact = pc.nonzeros() <= kAutoExactNonzeros;
      budget = kAutoExactBudget;
    }
    rep.mode = exact ? VerifyMode::Exact : VerifyMode::Randomized;
  }
  if (rep.mode == VerifyMode::Exact) {
    try {
      ExactCheck dom{{f, pc, budget, 0, {}, {}, {}, {}}, plan, {}};
      simulate(plan, dom);
      rep.error_log2 = -INFINITY;
      return rep;
    } catch (const OverBudget&) {
      if (opt.mode == VerifyMode::Exact)
        user_error("the exact check of this plan would build more than 2^32 coefficient entries; use the randomized "
                   "check (check --mode randomized)");
      rep.mode = VerifyMode::Randomized;  // auto: too large to prove term by term
    }
  }
  if (drawn->trials == 0) *drawn = randomized_inputs(f, pc, opt);
  const RandomizedInputs& in = *drawn;
  COLLPLAN_ASSERT(in.seed == opt.seed && (!opt.trials || in.trials == opt.trials),
                  "verify: random inputs drawn for other options");
  const double bits = std::log2(static_cast<double>(f.size()));
  rep.trials = in.trials;
  rep.seed = in.seed;
  rep.error_log2 = -bits * rep.trials;
  if (f.kind() == FieldKind::GF2m && f.m() == 8)
    check_packed(plan, pc, Gf256Arith(f), in);
  else
    check_packed(plan, pc, FieldArith{f}, in);
  return rep;
}

}  // namespace collplan::passes
