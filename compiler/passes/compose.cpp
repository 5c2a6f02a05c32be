#include "passes/compose.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "matrix/matrix.h"
#include "support/error.h"

namespace collplan::passes {

using ir::Plan;
using ir::Program;
using ir::Rank;
using ir::SlotId;
using ir::Step;

namespace {

void require_encode(const Spec& s, const char* what) {
  if (s.op != OpKind::Encode)
    user_error("{}: op = {} cannot be composed: composition supports encode plans only", what, op_name(s.op));
}

// The shape every function relies on: K programs, one input and one output
// slot each.
void require_encode_plan(const Plan& plan, const char* what) {
  require_encode(plan.spec, what);
  if (plan.ranks.size() != plan.spec.K)
    user_error("{}: plan has {} programs for K = {}", what, plan.ranks.size(), plan.spec.K);
  for (const Program& prog : plan.ranks)
    if (prog.inputs.size() != 1 || prog.outputs.size() != 1)
      user_error("{}: rank {} has {} inputs and {} outputs; an encode plan has 1 of each", what, prog.rank,
                 prog.inputs.size(), prog.outputs.size());
}

void require_same_model(const Spec& a, const Spec& b, const std::string& what) {
  if (a.p != b.p) user_error("{}: p = {} differs from p = {}", what, b.p, a.p);
  if (a.lambda != b.lambda) user_error("{}: lambda = {} differs from lambda = {}", what, b.lambda, a.lambda);
  if (!(a.field == b.field)) user_error("{}: field {} differs from field {}", what, b.field.name(), a.field.name());
}

void check_factors(const Plan& plan, const std::vector<Elem>& factors, const char* what) {
  if (factors.size() != plan.spec.K)
    user_error("{}: {} factors given for K = {} ranks", what, factors.size(), plan.spec.K);
  for (size_t k = 0; k < factors.size(); ++k) {
    if (factors[k] == 0) user_error("{}: factor {} = 0; every factor must be non-zero", what, k);
    if (!plan.spec.field.valid(factors[k]))
      user_error("{}: factor {} = {} is not an element of {} (valid: 1..{})", what, k, factors[k],
                 plan.spec.field.name(), plan.spec.field.size() - 1);
  }
}

void drop_matrix_cols(Plan& plan) {
  for (Program& prog : plan.ranks)
    for (Step& st : prog.steps)
      for (ir::Op& op : st.ops) op.matrix_col = ir::kNoCol;
}

// Appends out := c·out after everything else the rank does.
void append_output_scale(Plan& plan, Program& prog, Elem c) {
  if (plan.num_steps == 0) plan.num_steps = 1;
  const SlotId out = prog.outputs[0];
  prog.at(plan.num_steps).ops.push_back(ir::make_op(prog, out, {ir::Term{out, c}}));
}

}  // namespace

Plan compose_sequence(const Plan& first, const Plan& second, const MatrixSpec* result) {
  require_encode_plan(first, "compose_sequence: first plan");
  require_encode_plan(second, "compose_sequence: second plan");
  if (first.spec.K != second.spec.K)
    user_error("compose_sequence: second plan has K = {} but first has K = {}", second.spec.K, first.spec.K);
  require_same_model(first.spec, second.spec, "compose_sequence: second plan");
  const Field& f = first.spec.field;
  const uint32_t K = first.spec.K;

  Plan out;
  out.spec = first.spec;
  if (result) {
    out.spec.matrix = *result;
  } else {
    const Matrix a1 = materialize(first.spec.matrix, f);
    const Matrix a2 = materialize(second.spec.matrix, f);
    Matrix prod = Matrix::zeros(K, K);
    for (uint32_t i = 0; i < K; ++i)
      for (uint32_t m = 0; m < K; ++m) {
        const Elem x = a1.at(i, m);
        if (x == 0) continue;
        for (uint32_t j = 0; j < K; ++j) prod.at(i, j) = f.add(prod.at(i, j), f.mul(x, a2.at(m, j)));
      }
    out.spec.matrix = matrix_explicit(std::move(prod), f);
  }
  out.spec.algorithm = first.spec.algorithm + "+" + second.spec.algorithm;
  const uint32_t shift = first.num_steps;
  out.num_steps = first.num_steps + second.num_steps;
  out.ranks = first.ranks;

  for (uint32_t k = 0; k < K; ++k) {
    Program& prog = out.ranks[k];
    const Program& sec = second.ranks[k];
    const uint32_t base = prog.num_slots;
    const SlotId joint = prog.outputs[0];
    const SlotId sec_in = sec.inputs[0];
    // second's input slot is first's output slot; every other slot of second
    // is fresh. No message of first is in flight after first.num_steps (the
    // checker guarantees it for the verified input plans), so the two
    // programs cannot interfere.
    auto map = [&](SlotId s) { return s == sec_in ? joint : base + s; };
    prog.num_slots = base + sec.num_slots;
    for (const Step& st : sec.steps) {
      Step ns{st.t + shift, {}, {}, {}};
      for (const ir::Send& s : st.sends) {
        ir::Send m = s;
        for (ir::Combo& c : m.payload)
          for (ir::Term& t : c.terms) t.slot = map(t.slot);
        ns.sends.push_back(std::move(m));
      }
      for (const ir::Recv& r : st.recvs) {
        ir::Recv m = r;
        m.sent_at += shift;
        for (SlotId& s : m.into) s = map(s);
        ns.recvs.push_back(std::move(m));
      }
      for (const ir::Op& o : st.ops) {
        ir::Op m = o;
        m.dst = map(m.dst);
        for (ir::Term& t : m.terms) t.slot = map(t.slot);
        ns.ops.push_back(std::move(m));
      }
      prog.steps.push_back(std::move(ns));
    }
    prog.outputs[0] = map(sec.outputs[0]);
  }
  drop_matrix_cols(out);
  return out;
}

Plan compose_parallel(const Spec& whole, const std::vector<Plan>& parts,
                      const std::vector<std::vector<Rank>>& rank_maps) {
  require_encode(whole, "compose_parallel: whole spec");
  if (rank_maps.size() != parts.size())
    user_error("compose_parallel: {} rank maps given for {} parts", rank_maps.size(), parts.size());
  std::vector<int64_t> owner(whole.K, -1);
  uint32_t num_steps = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string what = fmt::format("compose_parallel: part {}", i);
    require_encode_plan(parts[i], what.c_str());
    require_same_model(whole, parts[i].spec, what);
    if (rank_maps[i].size() != parts[i].spec.K)
      user_error("{}: rank map has {} entries for K = {}", what, rank_maps[i].size(), parts[i].spec.K);
    for (size_t j = 0; j < rank_maps[i].size(); ++j) {
      const Rank r = rank_maps[i][j];
      if (r >= whole.K)
        user_error("{}: local rank {} maps to rank {}, out of range 0..{}", what, j, r, whole.K - 1);
      if (owner[r] >= 0)
        user_error("{}: local rank {} maps to rank {}, already used by part {}", what, j, r, owner[r]);
      owner[r] = static_cast<int64_t>(i);
    }
    num_steps = std::max(num_steps, parts[i].num_steps);
  }

  Plan out = ir::make_plan(whole, num_steps);
  if (out.spec.algorithm.empty()) {
    std::string names;
    for (const Plan& p : parts) names += (names.empty() ? "" : ",") + p.spec.algorithm;
    out.spec.algorithm = "parallel(" + names + ")";
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::vector<Rank>& map = rank_maps[i];
    for (size_t j = 0; j < map.size(); ++j) {
      Program prog = parts[i].ranks[j];
      prog.rank = map[j];
      for (Step& st : prog.steps) {
        for (ir::Send& s : st.sends) s.to = map[s.to];
        for (ir::Recv& r : st.recvs) r.from = map[r.from];
        // A column mark names a column of the part's matrix; that column is
        // column map[c] of the whole (block-structured) matrix.
        for (ir::Op& o : st.ops) {
          if (o.matrix_col == ir::kNoCol) continue;
          if (o.matrix_col >= map.size())
            user_error("compose_parallel: part {} rank {}: matrix_col = {} is not a column of its {}x{} matrix", i, j,
                       o.matrix_col, map.size(), map.size());
          o.matrix_col = map[o.matrix_col];
        }
      }
      out.ranks[map[j]] = std::move(prog);
    }
  }
  for (uint32_t k = 0; k < whole.K; ++k) {
    if (owner[k] >= 0) continue;
    Program& prog = out.ranks[k];
    const SlotId s = prog.new_slot();
    prog.inputs = {s};
    prog.outputs = {s};
  }
  return out;
}

namespace {

// The first half of both scalings: checks, then the plan's matrix becomes
// `result` or diag-scaled A (by columns when `by_column`: A·diag(c), else by
// rows: diag(c)·A).
void scale_matrix(Plan& plan, const std::vector<Elem>& factors, const MatrixSpec* result, bool by_column,
                  const char* what) {
  require_encode_plan(plan, what);
  check_factors(plan, factors, what);
  if (result) {
    plan.spec.matrix = *result;
    return;
  }
  const Field& f = plan.spec.field;
  Matrix a = materialize(plan.spec.matrix, f);
  for (uint32_t i = 0; i < a.rows; ++i)
    for (uint32_t j = 0; j < a.cols; ++j) a.at(i, j) = f.mul(a.at(i, j), factors[by_column ? j : i]);
  plan.spec.matrix = matrix_explicit(std::move(a), f);
}

}  // namespace

void scale_outputs(Plan& plan, const std::vector<Elem>& factors, const MatrixSpec* result) {
  scale_matrix(plan, factors, result, /*by_column=*/true, "scale_outputs");
  for (Program& prog : plan.ranks) append_output_scale(plan, prog, factors[prog.rank]);
  plan.spec.algorithm += "+scale-outputs";
  drop_matrix_cols(plan);
}

void scale_inputs(Plan& plan, const std::vector<Elem>& factors, const MatrixSpec* result) {
  scale_matrix(plan, factors, result, /*by_column=*/false, "scale_inputs");
  const Field& f = plan.spec.field;

  for (Program& prog : plan.ranks) {
    const Elem c = factors[prog.rank];
    const SlotId in = prog.inputs[0];
    auto fold = [&](auto& terms) {
      for (ir::Term& t : terms)
        if (t.slot == in) t.coeff = f.mul(t.coeff, c);
    };
    // Walk in the model's order; stop folding once the slot is overwritten
    // (later reads see the new value, which must not be scaled).
    bool holds_input = true;
    for (Step& st : prog.steps) {
      if (!holds_input) break;
      for (ir::Send& s : st.sends)
        for (ir::Combo& cb : s.payload) fold(cb.terms);
      for (const ir::Recv& r : st.recvs)
        if (std::find(r.into.begin(), r.into.end(), in) != r.into.end()) holds_input = false;
      for (ir::Op& o : st.ops) {
        if (!holds_input) break;
        fold(o.terms);
        if (o.dst == in) holds_input = false;
      }
    }
    // The output is read after the last step: if it is still the untouched
    // input slot, the scaled value must be produced explicitly.
    if (holds_input && prog.outputs[0] == in) append_output_scale(plan, prog, c);
  }
  plan.spec.algorithm += "+scale-inputs";
  drop_matrix_cols(plan);
}


std::vector<std::vector<Held>> place(Plan& whole, const Plan& part, const std::vector<Rank>& rank_map,
                                     uint32_t step_offset, const std::vector<std::vector<Held>>& inputs) {
  require_same_model(whole.spec, part.spec, fmt::format("place: part ({})", op_name(part.spec.op)));
  const uint32_t W = num_ranks(whole.spec);
  if (rank_map.size() != part.ranks.size())
    user_error("place: rank map has {} entries for a part of {} ranks", rank_map.size(), part.ranks.size());
  if (inputs.size() != part.ranks.size())
    user_error("place: {} input lists given for a part of {} ranks", inputs.size(), part.ranks.size());
  std::vector<bool> used(W, false);
  for (size_t j = 0; j < rank_map.size(); ++j) {
    if (rank_map[j] >= W) user_error("place: local rank {} maps to rank {}, out of range 0..{}", j, rank_map[j], W - 1);
    if (used[rank_map[j]]) user_error("place: rank {} appears twice in the rank map", rank_map[j]);
    used[rank_map[j]] = true;
    if (inputs[j].size() != part.ranks[j].inputs.size())
      user_error("place: local rank {} has {} inputs, {} values bound", j, part.ranks[j].inputs.size(),
                 inputs[j].size());
  }
  const Field& f = whole.spec.field;
  whole.num_steps = std::max(whole.num_steps, part.num_steps + step_offset);
  std::vector<std::vector<Held>> outs(part.ranks.size());
  for (size_t j = 0; j < part.ranks.size(); ++j) {
    const Program& src = part.ranks[j];
    Program& dst = whole.ranks[rank_map[j]];
    const SlotId base = dst.num_slots;
    dst.num_slots += src.num_slots;
    for (const Held& v : inputs[j])
      if (v.coeff != 0 && v.slot >= base)
        user_error("place: rank {} has no slot {} to bind an input to", rank_map[j], v.slot);
    // bound[s]: the value part slot s stands for while it still holds its
    // input (unset once written, or for non-input slots).
    std::vector<const Held*> bound(src.num_slots, nullptr);
    for (size_t i = 0; i < src.inputs.size(); ++i) bound[src.inputs[i]] = &inputs[j][i];
    auto map_terms = [&](std::span<const ir::Term> terms) {
      std::vector<ir::Term> out;
      for (const ir::Term& t : terms) {
        if (const Held* v = bound[t.slot]) {
          if (v->coeff != 0) out.push_back(ir::Term{v->slot, f.mul(t.coeff, v->coeff)});
        } else {
          out.push_back(ir::Term{base + t.slot, t.coeff});
        }
      }
      return out;
    };
    for (const Step& st : src.steps) {
      Step& ns = dst.at_any(st.t + step_offset);
      for (const ir::Send& s : st.sends) {
        ir::Send m{s.port, rank_map[s.to], {}};
        for (const ir::Combo& c : s.payload) m.payload.push_back(ir::Combo{map_terms(c.terms)});
        ns.sends.push_back(std::move(m));
      }
      for (const ir::Recv& r : st.recvs) {
        ir::Recv m{r.port, rank_map[r.from], r.sent_at + step_offset, {}};
        for (SlotId s : r.into) {
          m.into.push_back(base + s);
          bound[s] = nullptr;
        }
        ns.recvs.push_back(std::move(m));
      }
      for (const ir::Op& o : st.ops) {
        ns.ops.push_back(ir::Op{base + o.dst, map_terms(o.terms), ir::kNoCol});
        bound[o.dst] = nullptr;
      }
    }
    for (SlotId o : src.outputs) outs[j].push_back(bound[o] ? *bound[o] : Held{base + o, 1});
  }
  return outs;
}

SlotId materialize_held(Plan& plan, Rank rank, const Held& v, uint32_t at) {
  if (v.coeff == 1) return v.slot;
  COLLPLAN_ASSERT(at >= 1 && at <= plan.num_steps, fmt::format("materialize_held: step {} of {}", at, plan.num_steps));
  Program& prog = plan.ranks[rank];
  const SlotId s = prog.new_slot();
  std::vector<ir::Term> terms;
  if (v.coeff != 0) terms.push_back(ir::Term{v.slot, v.coeff});
  prog.at_any(at).ops.push_back(ir::make_op(prog, s, std::move(terms)));
  return s;
}

}  // namespace collplan::passes
