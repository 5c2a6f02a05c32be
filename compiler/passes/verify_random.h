// The randomized check's vectors, drawn once and shared by several
// verifications (the pipeline's: after the generator and after each pass).
//
// The random input vectors and their images under the postcondition depend
// on the postcondition, the field and the VerifyOptions only, not on the
// plan. For an encode of K ranks the images cost K^2·trials field
// operations, as much as simulating the plan, and need the K×K map, which a
// caller can release once they are drawn and no exact check can follow. The
// evaluator keeps references to the postcondition's offsets: the
// Postcondition must outlive it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "matrix/postcondition.h"
#include "passes/verify.h"
#include "support/error.h"

namespace collplan::passes {

struct RandomizedInputs {
  uint32_t trials = 0;  // 0: not drawn yet
  uint64_t seed = 0;
  // The `trials` vectors over all inputs (expected->inputs(), input-major)
  // and the postcondition applied to them: the dense images for a coded
  // map, O(trials · inputs) sums for the plain collectives.
  std::shared_ptr<const Evaluator> expected;
};

// verify(plan, pc, opt), with the randomized check's vectors taken from
// *drawn, which is filled first when empty (trials == 0). The same pc,
// field and options must come with the same *drawn. Once *drawn is filled,
// a randomized check reads pc's offsets and counts but not pc.map.
VerifyReport verify(const ir::Plan& plan, const Postcondition& pc, const VerifyOptions& opt, RandomizedInputs* drawn);

// The vectors for opt (opt.trials, or enough for a 2^-40 bound), drawn from
// opt.seed trial by trial, and their images under pc.
RandomizedInputs randomized_inputs(const Field& f, const Postcondition& pc, const VerifyOptions& opt);

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

// Σ terms over slots, on W lanes.
template <class Arith>
Lanes<typename Arith::T> eval_lanes(const Arith& ar, std::span<const ir::Term> terms,
                                    std::span<const Lanes<typename Arith::T>> slots, uint32_t W) {
  Lanes<typename Arith::T> acc;
  for (const ir::Term& t : terms) {
    if (t.coeff == 0) continue;
    if (t.coeff == 1)
      ar.add(acc, slots[t.slot], W);
    else
      ar.mul_add(acc, t.coeff, slots[t.slot], W);
  }
  return acc;
}

// Rank k's input i on lanes [lane0, lane0 + W) of the drawn vectors.
template <class T>
Lanes<T> input_lanes(const Postcondition& pc, const Evaluator& ex, ir::Rank k, uint32_t i, uint32_t lane0,
                     uint32_t W) {
  Lanes<T> v;
  const Elem* x = &ex.inputs()[(static_cast<size_t>(pc.input_offset[k]) + i) * ex.lanes() + lane0];
  for (uint32_t w = 0; w < W; ++w) v.v[w] = static_cast<T>(x[w]);
  return v;
}

// The end of rank k's program: each output slot's lanes [0, W) against the
// postcondition's value on drawn vectors [lane0, lane0 + W).
template <class T>
void check_output_lanes(const Postcondition& pc, const Evaluator& ex, ir::Rank k, std::span<const ir::SlotId> outputs,
                        std::span<const Lanes<T>> slots, uint32_t lane0, uint32_t W, std::vector<Elem>& scratch) {
  scratch.resize(ex.lanes());
  for (uint32_t j = 0; j < outputs.size(); ++j) {
    ex.output(pc.output_col(k, j), scratch.data());
    const Lanes<T>& v = slots[outputs[j]];
    for (uint32_t w = 0; w < W; ++w)
      if (Elem{v.v[w]} != scratch[lane0 + w])
        algebra_error("rank {} output {} (slot {}) is wrong: on random input vector {} it is {}, the postcondition "
                      "gives {}",
                      k, j, outputs[j], lane0 + w, Elem{v.v[w]}, scratch[lane0 + w]);
  }
}

// Whether verify() can take the exact path for any plan of `ranks`
// programs against pc (auto mode: when ranks·slots·inputs <= 2^25 for the
// plan's largest slot count, which is at least 1). When it cannot, a caller
// holding a filled RandomizedInputs no longer needs pc.map.
bool may_verify_exactly(const Postcondition& pc, uint64_t ranks, const VerifyOptions& opt);

}  // namespace collplan::passes
