// A reference checker for the tests: the dense exact check the checker
// used to be. Every slot is its full coefficient vector over all inputs,
// and the outputs are compared with a dense map rebuilt column by column
// from Postcondition::column(). Independent of the sparse check in
// passes/verify.cpp (no shared evaluation code), so the two can be compared
// plan by plan; O(ranks · slots · inputs), for small plans only.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/simulate.h"
#include "matrix/postcondition.h"

namespace collplan::test {

// "" when every output of `plan` equals the postcondition, else the first
// wrong output ("rank R output J").
inline std::string dense_check(const ir::Plan& plan) {
  const Postcondition pc = postcondition(plan.spec);
  const Field& f = plan.spec.field;
  struct Dense {
    using Value = std::vector<Elem>;
    const Field& f;
    const Postcondition& pc;
    const ir::Plan& plan;
    std::string wrong;
    Value undefined() { return Value(pc.num_inputs(), 0); }
    Value input(ir::Rank k, uint32_t i) {
      Value v(pc.num_inputs(), 0);
      v[pc.input_offset[k] + i] = 1;
      return v;
    }
    Value eval(ir::Rank, std::span<const ir::Term> terms, std::span<const Value> slots) {
      Value acc(pc.num_inputs(), 0);
      for (const ir::Term& t : terms)
        for (size_t i = 0; i < acc.size(); ++i)
          if (const Elem v = slots[t.slot][i]; v != 0) acc[i] = f.add(acc[i], f.mul(t.coeff, v));
      return acc;
    }
    void on_end(ir::Rank k, std::span<const Value> slots) {
      std::vector<Postcondition::Entry> col;
      for (uint32_t j = 0; j < plan.ranks[k].outputs.size() && wrong.empty(); ++j) {
        pc.column(pc.output_offset[k] + j, col);
        Value want(pc.num_inputs(), 0);
        for (const auto& e : col) want[e.input] = e.coeff;
        if (slots[plan.ranks[k].outputs[j]] != want)
          wrong = "rank " + std::to_string(k) + " output " + std::to_string(j);
      }
    }
  } dom{f, pc, plan, {}};
  ir::simulate(plan, dom);
  return dom.wrong;
}

}  // namespace collplan::test
