#include "passes/verify_reduction.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/simulate.h"
#include "passes/verify.h"
#include "support/error.h"

namespace collplan::passes {

namespace {

using namespace ir;

using Items = std::vector<uint32_t>;  // sorted, no duplicates while exact holds

// Tree ids: 0 is "no value", leaves have the top bit set (result, item),
// nodes count up from 1 (index + 1 into TreeTable::nodes).
constexpr uint64_t kNoTree = 0;
constexpr uint64_t kLeafBit = uint64_t{1} << 63;

struct RValue {
  enum Kind : uint8_t { undefined, none, set } kind = undefined;
  uint32_t result = 0;
  std::shared_ptr<const Items> items;  // kind == set; shared by copies
  uint64_t tree = kNoTree;
};

bool is_interval(const Items& v) { return !v.empty() && v.back() - v.front() + 1 == v.size(); }

// "{0..3,5,7..9}": runs of consecutive items, at most 8 of them shown.
std::string show_items(const Items& v) {
  std::string s = "{";
  size_t runs = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (runs++ == 8) {
      s += ",...";
      break;
    }
    if (i) s += ",";
    s += j == i ? fmt::format("{}", v[i]) : fmt::format("{}..{}", v[i], v[j]);
    i = j + 1;
  }
  return s + "}";
}

struct TreeTable {
  std::vector<std::pair<uint64_t, uint64_t>> nodes;
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const {
      return std::hash<uint64_t>()(p.first * 0x9E3779B97F4A7C15ull ^ p.second);
    }
  };
  std::unordered_map<std::pair<uint64_t, uint64_t>, uint64_t, PairHash> ids;

  static uint64_t leaf(uint32_t result, uint32_t item) {
    return kLeafBit | (uint64_t{result} << 32) | item;
  }
  uint64_t node(uint64_t a, uint64_t b) {
    if (b < a) std::swap(a, b);  // operands of one node commute bitwise
    auto [it, fresh] = ids.try_emplace({a, b}, nodes.size() + 1);
    if (fresh) nodes.emplace_back(a, b);
    return it->second;
  }
  // The tree as text, cut at about `budget` characters (a chain of K nodes
  // would otherwise print K levels).
  void render(uint64_t id, std::string& out, size_t budget) const {
    if (out.size() > budget) {
      out += "…";
      return;
    }
    if (id == kNoTree) {
      out += "no value";
    } else if (id & kLeafBit) {
      out += fmt::format("x{}", static_cast<uint32_t>(id));
    } else {
      const auto& [a, b] = nodes[id - 1];
      out += "(";
      render(a, out, budget);
      out += "⊕";
      render(b, out, budget);
      out += ")";
    }
  }
  std::string show(uint64_t id) const {
    std::string s;
    render(id, s, 100);
    return s;
  }
};

struct ReductionDomain {
  using Value = RValue;

  const Plan& plan;
  uint32_t K = 0, n = 1;
  std::vector<uint32_t> prefix_offset;  // prefix: global item of rank k's input 0
  TreeTable trees;
  std::string not_exact, not_ordered, not_consistent;

  // Where the combination being evaluated sits, for messages (simulate calls
  // the on_op / on_send_slots hook right before the evaluations).
  Rank at_rank = 0;
  const Step* at_step = nullptr;
  bool at_send = false;
  size_t at_index = 0, at_element = 0;

  explicit ReductionDomain(const Plan& p) : plan(p), K(static_cast<uint32_t>(p.ranks.size())), n(p.spec.blocks) {
    if (plan.spec.op == OpKind::Prefix) {
      prefix_offset.assign(K + 1, 0);
      for (uint32_t k = 0; k < K; ++k)
        prefix_offset[k + 1] = prefix_offset[k] + (plan.spec.counts.empty() ? 1u : plan.spec.counts[k]);
    }
  }

  bool prefix() const { return plan.spec.op == OpKind::Prefix; }

  // What a value is made of, in the words of the operation.
  std::string show(const Value& v) const {
    if (v.kind == Value::none) return "no value";
    if (v.kind != Value::set) return "undefined";
    if (!v.items) return "a value";  // sets are no longer tracked once exact has failed
    if (prefix()) return "items " + show_items(*v.items);
    return fmt::format("block {} of ranks {}", v.result, show_items(*v.items));
  }

  std::string where() const {
    if (at_send) {
      const Send& s = at_step->sends[at_index];
      return fmt::format("rank {} step {} send {} (port {} to rank {}, element {})", at_rank, at_step->t, at_index,
                         s.port, s.to, at_element);
    }
    return fmt::format("rank {} step {} op {} (slot {} := ...)", at_rank, at_step->t, at_index,
                       at_step->ops[at_index].dst);
  }

  void on_send_slots(Rank k, const Step& st, size_t si, std::span<const Value>) {
    at_rank = k, at_step = &st, at_send = true, at_index = si, at_element = 0;
  }
  void on_op(Rank k, const Step& st, size_t oi, std::span<const Value>) {
    at_rank = k, at_step = &st, at_send = false, at_index = oi, at_element = 0;
  }

  Value undefined() { return {}; }
  Value input(Rank k, uint32_t i) {
    Value v;
    v.kind = Value::set;
    const uint32_t item = prefix() ? prefix_offset[k] + i : k;
    v.result = prefix() ? 0 : i;
    v.items = std::make_shared<const Items>(Items{item});
    v.tree = TreeTable::leaf(v.result, item);
    return v;
  }

  void fail_exact(const std::string& what) {
    if (not_exact.empty()) not_exact = what;
  }
  void fail_ordered(const std::string& what) {
    if (not_ordered.empty()) not_ordered = what;
  }

  Value eval(Rank, std::span<const Term> terms, std::span<const Value> slots) {
    Value out = eval_combo(terms, slots);
    ++at_element;  // the next payload element of the same send
    return out;
  }

  Value eval_combo(std::span<const Term> terms, std::span<const Value> slots) {
    for (const Term& t : terms)
      if (t.coeff != 1) {
        const std::string what = fmt::format(
            "{}: has coefficient {} on slot {}; a plan for an operator ⊕ uses only coefficient 1 (slot_1 ⊕ slot_2 ⊕ ...)",
            where(), t.coeff, t.slot);
        fail_exact(what);
        if (not_consistent.empty()) not_consistent = what;
      }
    if (terms.empty()) return Value{Value::none, 0, nullptr, kNoTree};
    if (terms.size() == 1) return slots[terms[0].slot];
    Value acc = slots[terms[0].slot];
    // While exact still holds, the item sets are tracked; after its first
    // failure only the trees are (the sets would cost for nothing).
    bool sets = not_exact.empty();
    for (size_t i = 1; i < terms.size(); ++i) {
      const Value& next = slots[terms[i].slot];
      acc.tree = trees.node(acc.tree, next.tree);
      if (!sets) continue;
      if (acc.kind != Value::set || next.kind != Value::set) {
        fail_exact(fmt::format("{}: combines {} with {} (term {}, slot {}): an operator without identity cannot "
                               "combine no value",
                               where(), show(acc), show(next), i, terms[i].slot));
        sets = false;
        continue;
      }
      if (acc.result != next.result) {
        fail_exact(fmt::format("{}: combines {} with {} (term {}, slot {}): items of two different blocks", where(),
                               show(acc), show(next), i, terms[i].slot));
        sets = false;
        continue;
      }
      const Items& a = *acc.items;
      const Items& b = *next.items;
      if (not_ordered.empty() && !(is_interval(a) && is_interval(b) && b.front() == a.back() + 1)) {
        std::string why;
        const char* unit = prefix() ? "items" : "ranks";
        if (!is_interval(a) || !is_interval(b))
          why = fmt::format("{} is not a contiguous run of {}", show_items(is_interval(a) ? b : a), unit);
        else if (b.back() < a.front())
          why = fmt::format("out of order (the right operand's {} come before the left's)", unit);
        else if (b.front() > a.back() + 1)
          why = fmt::format("not adjacent ({} {}..{} missing)", unit, a.back() + 1, b.front() - 1);
        else
          why = "overlapping";
        fail_ordered(fmt::format("{}: combines {} then {} (term {}, slot {}): {}", where(), show(acc), show(next), i,
                                 terms[i].slot, why));
      }
      Items twice;
      std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(twice));
      if (!twice.empty()) {
        fail_exact(fmt::format("{}: combines {} with {} (term {}, slot {}): {} {} twice (a field may cancel a repeated "
                               "term, an operator does not)",
                               where(), show(acc), show(next), i, terms[i].slot, prefix() ? "items" : "ranks",
                               show_items(twice)));
        sets = false;
        continue;
      }
      Items merged;
      merged.reserve(a.size() + b.size());
      std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(merged));
      acc.items = std::make_shared<const Items>(std::move(merged));
    }
    if (!sets) acc.items.reset();
    return acc;
  }

  // result → the first output holding it (rank, output, slot, tree).
  struct Holder {
    Rank rank;
    uint32_t output;
    SlotId slot;
    uint64_t tree;
  };
  std::unordered_map<uint64_t, Holder> holders;

  void on_end(Rank k, std::span<const Value> slots) {
    const Program& prog = plan.ranks[k];
    for (uint32_t j = 0; j < prog.outputs.size(); ++j) {
      const Value& got = slots[prog.outputs[j]];
      uint64_t result = j;
      if (plan.spec.op == OpKind::ReduceScatter) result = uint64_t{k} * n + j;
      if (prefix()) result = prefix_offset[k] + j;
      // exact: the required set of the required result.
      if (not_exact.empty()) {
        uint32_t want_result = static_cast<uint32_t>(result), lo = 0, hi = K - 1;
        bool want_none = false;
        if (prefix()) {
          want_result = 0;
          hi = static_cast<uint32_t>(result);
          if (plan.spec.exclusive) {
            if (hi == 0) want_none = true;
            else --hi;
          }
        }
        const std::string want = want_none ? "no value"
                                 : prefix() ? fmt::format("items {{{}..{}}}", lo, hi)
                                            : fmt::format("block {} of ranks {{{}..{}}}", want_result, lo, hi);
        const std::string here = prefix() ? fmt::format("rank {} output {} (slot {}, item {})", k, j, prog.outputs[j], result)
                                          : fmt::format("rank {} output {} (slot {}, block {})", k, j, prog.outputs[j],
                                                        want_result);
        const char* needs = prefix() ? (plan.spec.exclusive ? "the exclusive prefix" : "the inclusive prefix")
                                     : op_name(plan.spec.op);
        if (want_none) {
          if (got.kind != Value::none) fail_exact(fmt::format("{} holds {}, {} needs no value", here, show(got), needs));
        } else if (got.kind != Value::set) {
          fail_exact(fmt::format("{} holds {}, {} needs {}", here, show(got), needs, want));
        } else if (got.result != want_result) {
          fail_exact(fmt::format("{} holds {}, {} needs {}", here, show(got), needs, want));
        } else {
          const Items& v = *got.items;
          if (v.size() != hi - lo + 1u || v.front() != lo || v.back() != hi) {
            Items missing;
            for (uint32_t x = lo, i = 0; x <= hi; ++x) {
              while (i < v.size() && v[i] < x) ++i;
              if (i == v.size() || v[i] != x) missing.push_back(x);
            }
            fail_exact(fmt::format("{} holds {}, {} needs {}{}", here, show(got), needs, want,
                                   missing.empty() ? std::string(" (extra items)")
                                                   : fmt::format(" (missing {})", show_items(missing))));
          }
        }
      }
      // consistent: the same tree wherever the result appears.
      const Holder h{k, j, prog.outputs[j], got.tree};
      auto [it, fresh] = holders.try_emplace(result, h);
      if (!fresh && it->second.tree != got.tree && not_consistent.empty())
        not_consistent = fmt::format("rank {} output {} (slot {}, block {}) is {}, rank {} output {} (slot {}) is {}: "
                                     "floating-point results may differ in the last bits",
                                     k, j, prog.outputs[j], result, trees.show(got.tree), it->second.rank,
                                     it->second.output, it->second.slot, trees.show(it->second.tree));
    }
  }
};

}  // namespace

bool is_reduction_op(OpKind op) {
  return op == OpKind::Reduce || op == OpKind::Allreduce || op == OpKind::ReduceScatter || op == OpKind::Prefix;
}

ReductionProperties reduction_properties(const Plan& plan) {
  if (!is_reduction_op(plan.spec.op))
    user_error("the reduction-operator check applies to reduce, allreduce, reduce-scatter and prefix plans, this plan "
               "is {}",
               op_name(plan.spec.op));
  verify_structure(plan);  // also checks each rank's inputs and outputs against the spec
  ReductionDomain dom(plan);
  simulate(plan, dom);
  ReductionProperties rp;
  rp.exact = dom.not_exact.empty();
  rp.why_not_exact = dom.not_exact;
  rp.ordered = rp.exact && dom.not_ordered.empty();
  rp.why_not_ordered = rp.exact ? dom.not_ordered : "not exact: " + dom.not_exact;
  rp.consistent = dom.not_consistent.empty();
  rp.why_not_consistent = dom.not_consistent;
  return rp;
}

}  // namespace collplan::passes
