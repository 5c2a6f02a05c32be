#include "passes/verify_order.h"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/simulate.h"
#include "passes/verify.h"
#include "support/error.h"

namespace collplan::passes {

namespace {

using namespace ir;

// One slot's value in the order domain (see the header's rules).
struct Interval {
  enum Kind : uint8_t { undefined, none, range, bad } kind = undefined;
  uint32_t lo = 0, hi = 0;
  uint32_t error = 0;  // bad: index into OrderDomain::errors
};

std::string show(const Interval& v) {
  switch (v.kind) {
    case Interval::none: return "no value";
    case Interval::range: return fmt::format("[{},{}]", v.lo, v.hi);
    default: return "undefined";
  }
}

struct OrderDomain {
  using Value = Interval;
  std::vector<uint32_t> input_offset;  // global item number of rank k's input 0
  // Descriptions of combination errors. A failing payload element is only
  // reported in on_send (which knows the send), so eval() parks the text here
  // and hands the index along in the value.
  std::vector<std::string> errors;

  Value undefined() { return {}; }
  Value input(Rank k, uint32_t i) {
    const uint32_t g = input_offset[k] + i;
    return {Interval::range, g, g, 0};
  }

  Value fail(std::string what) {
    errors.push_back(std::move(what));
    return {Interval::bad, 0, 0, static_cast<uint32_t>(errors.size() - 1)};
  }

  Value eval(Rank, std::span<const Term> terms, std::span<const Value> slots) {
    for (const Term& t : terms)
      if (t.coeff != 1)
        return fail(fmt::format("has coefficient {} on slot {}; an order-preserving plan uses only coefficient 1 "
                                "(slot_1 ⊕ slot_2 ⊕ ... for a user operator)",
                                t.coeff, t.slot));
    if (terms.empty()) return {Interval::none, 0, 0, 0};
    const Value& first = slots[terms[0].slot];
    if (first.kind == Interval::bad) return first;
    if (terms.size() == 1) return first;
    Value acc = first;
    for (size_t i = 1; i < terms.size(); ++i) {
      const Value& next = slots[terms[i].slot];
      if (next.kind == Interval::bad) return next;
      if (acc.kind != Interval::range || next.kind != Interval::range) {
        const SlotId s = acc.kind != Interval::range ? terms[0].slot : terms[i].slot;
        return fail(fmt::format("combines {} then {} (term {}, slot {}): slot {} holds no value (an exclusive "
                                "scan's empty result), which an operator without identity cannot combine",
                                show(acc), show(next), i, terms[i].slot, s));
      }
      if (next.lo != acc.hi + 1) {
        std::string why;
        if (next.hi < acc.lo)
          why = "out of order (the right operand's items come before the left's)";
        else if (next.lo <= acc.hi)
          why = fmt::format("overlapping (items {}..{} twice)", std::max(next.lo, acc.lo), std::min(next.hi, acc.hi));
        else
          why = fmt::format("not adjacent (items {}..{} missing)", acc.hi + 1, next.lo - 1);
        return fail(fmt::format("combines {} then {} (term {}, slot {}): {}", show(acc), show(next), i,
                                terms[i].slot, why));
      }
      acc.hi = next.hi;
    }
    return acc;
  }

  void on_op(Rank k, const Step& st, size_t oi, std::span<const Value> slots) {
    const Op& op = st.ops[oi];
    const Value v = eval(k, op.terms, slots);
    if (v.kind == Interval::bad)
      order_error("rank {} step {} op {} (slot {} := ...): {}", k, st.t, oi, op.dst, errors[v.error]);
  }

  void on_send(Rank k, const Step& st, size_t si, const std::vector<Value>& payload) {
    const Send& s = st.sends[si];
    for (size_t e = 0; e < payload.size(); ++e)
      if (payload[e].kind == Interval::bad)
        order_error("rank {} step {} send {} (port {} to rank {}, element {}): {}", k, st.t, si, s.port, s.to, e,
                     errors[payload[e].error]);
  }

  const Plan* plan = nullptr;
  void on_end(Rank k, std::span<const Value> slots) {
    const Program& prog = plan->ranks[k];
    for (uint32_t j = 0; j < prog.outputs.size(); ++j) {
      const uint32_t g = input_offset[k] + j;
      Value want{Interval::range, 0, g, 0};
      if (plan->spec.exclusive) {
        if (g == 0)
          want = {Interval::none, 0, 0, 0};
        else
          want.hi = g - 1;
      }
      const Value& got = slots[prog.outputs[j]];
      const bool ok = got.kind == want.kind && (want.kind != Interval::range || (got.lo == want.lo && got.hi == want.hi));
      if (!ok)
        order_error("rank {} output {} (slot {}, item {}) is {}, the {} prefix needs {}", k, j, prog.outputs[j], g,
                     show(got), plan->spec.exclusive ? "exclusive" : "inclusive", show(want));
    }
  }
};

}  // namespace

void verify_order(const Plan& plan) {
  if (plan.spec.op != OpKind::Prefix)
    user_error("the operand-order check applies to prefix plans only, this plan is {}", op_name(plan.spec.op));
  verify_structure(plan);  // also checks counts against the programs' inputs and outputs
  OrderDomain dom;
  dom.plan = &plan;
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  dom.input_offset.assign(K + 1, 0);
  for (uint32_t k = 0; k < K; ++k)
    dom.input_offset[k + 1] = dom.input_offset[k] + (plan.spec.counts.empty() ? 1u : plan.spec.counts[k]);
  simulate(plan, dom);
}

}  // namespace collplan::passes
