// Combinations lowered to kernel calls: zero fills, copies, multiplies,
// adds, multiply-accumulates and dot products with prepared tables, with
// independent combinations over shared sources folded into one dot call.
#include <algorithm>

#include "ir/fuse.h"
#include "runtime/engine_internal.h"

namespace collplan::rt {

namespace {

bool same_sources(std::span<const ir::Term> a, std::span<const ir::Term> b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](const ir::Term& x, const ir::Term& y) { return x.slot == y.slot; });
}

bool reads_slot(std::span<const ir::Term> terms, uint32_t s) {
  return std::any_of(terms.begin(), terms.end(), [&](const ir::Term& t) { return t.slot == s; });
}

}  // namespace

// Terms with coefficient 0 contribute nothing over a field.
std::vector<ir::Term> Engine::Impl::nonzero(std::span<const ir::Term> terms) {
  std::vector<ir::Term> nz;
  for (const ir::Term& t : terms)
    if (t.coeff != 0) nz.push_back(t);
  return nz;
}

// How an op's nonzero terms use its dst: not at all (evaluate into dst), as
// one term only (scale and accumulate in place: a field sum may be taken in
// any order, so that term goes first), or more than once (evaluate in the
// scratch row).
Engine::Impl::DstUse Engine::Impl::dst_use(std::span<const ir::Term> nz, uint32_t dst) {
  size_t uses = 0;
  for (const ir::Term& t : nz) uses += t.slot == dst;
  if (uses == 0) return DstUse::none;
  return uses == 1 ? DstUse::first : DstUse::elsewhere;
}

uint32_t Engine::Impl::mad_table(Elem c) {
  auto [it, fresh] = mad_index.try_emplace(c, static_cast<uint32_t>(mads.size()));
  if (fresh) mads.push_back(gf::prepare_mad(field, c));
  return it->second;
}

// rows[j] = (destination row, coefficients over src_units). Split so that no
// kernel call exceeds kDotMaxSources × kDotMaxRows; source chunks after the
// first are summed through dot scratch rows.
void Engine::Impl::emit_dot(const std::vector<uint32_t>& src_units,
                            const std::vector<std::pair<uint32_t, std::vector<Elem>>>& rows) {
  const size_t k = src_units.size();
  for (size_t r0 = 0; r0 < rows.size(); r0 += kDotMaxRows) {
    const size_t m = std::min(kDotMaxRows, rows.size() - r0);
    for (size_t s0 = 0; s0 < k; s0 += kDotMaxSources) {
      const size_t kc = std::min(kDotMaxSources, k - s0);
      COLLPLAN_ASSERT(s0 == 0 || dot_scratch_rows > 0, "a split dot call without dot scratch rows");
      DotCall dc;
      dc.src_units.assign(src_units.begin() + s0, src_units.begin() + s0 + kc);
      std::vector<Elem> coeffs(m * kc);
      for (size_t j = 0; j < m; ++j) {
        for (size_t i = 0; i < kc; ++i) coeffs[j * kc + i] = rows[r0 + j].second[s0 + i];
        dc.dst_units.push_back(s0 == 0 ? rows[r0 + j].first : dot_scratch_unit + static_cast<uint32_t>(j));
      }
      dc.tables = gf::prepare_dot(field, kc, m, coeffs.data());
      emit(Code::dot, 0, 0, static_cast<uint32_t>(dots.size()));
      dots.push_back(std::move(dc));
      ++stats.dot_calls;
      if (s0 > 0)
        for (size_t j = 0; j < m; ++j) emit(Code::add, dot_scratch_unit + static_cast<uint32_t>(j), rows[r0 + j].first);
    }
  }
}

// target += Σ nz[from..]: adds for coefficient 1, multiply-accumulates
// otherwise.
void Engine::Impl::emit_accumulate(std::span<const ir::Term> nz, size_t from, uint32_t target) {
  for (size_t i = from; i < nz.size(); ++i) {
    if (nz[i].coeff == 1)
      emit(Code::add, nz[i].slot, target);
    else
      emit(Code::mad, nz[i].slot, target, mad_table(nz[i].coeff));
  }
}

// target := Σ nz, where target is not among the sources (nz has no zero
// coefficients).
void Engine::Impl::emit_direct(std::span<const ir::Term> nz, uint32_t target, Code copy_code) {
  if (nz.empty()) {
    emit(Code::zero, 0, target);
  } else if (opt.use_dot && ir::dot_worthy(nz)) {
    std::vector<uint32_t> src;
    std::vector<Elem> co;
    for (const ir::Term& t : nz) {
      src.push_back(t.slot);
      co.push_back(t.coeff);
    }
    emit_dot(src, {{target, co}});
  } else {
    const ir::Term& f = nz.front();
    if (f.coeff == 1)
      // A sum's first term is arithmetic (there is no three-operand add);
      // a lone term is a copy, the plan's (an op) or staging (a payload).
      emit(nz.size() == 1 ? copy_code : Code::op_copy, f.slot, target);
    else
      emit(Code::mul, f.slot, target, mad_table(f.coeff));
    emit_accumulate(nz, 1, target);
  }
}

// One step's staged payload elements, each with its staging row. Elements
// with the same dot-worthy source list share one dot call, emitted after
// the others.
void Engine::Impl::emit_payloads(const std::vector<std::pair<const ir::Combo*, uint32_t>>& elems) {
  std::vector<std::pair<const ir::Terms*, std::vector<std::pair<uint32_t, std::vector<Elem>>>>> groups;
  for (const auto& [c, target] : elems) {
    const auto nz = nonzero(c->terms);
    if (!opt.use_dot || !ir::dot_worthy(nz)) {
      emit_direct(nz, target);
      continue;
    }
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& gr) { return same_sources(*gr.first, c->terms); });
    if (g == groups.end()) {
      groups.push_back({&c->terms, {}});
      g = groups.end() - 1;
    }
    std::vector<Elem> co;
    for (const ir::Term& term : c->terms) co.push_back(term.coeff);
    g->second.emplace_back(target, std::move(co));
  }
  for (const auto& [terms, rows] : groups) {
    std::vector<uint32_t> src;
    for (const ir::Term& term : *terms) src.push_back(term.slot);
    emit_dot(src, rows);
  }
}

// A pending run of consecutive dot-candidate ops becomes one dot call over
// the union of their sources (ir/fuse.h: which ops may run together, and
// why that is exact), so each source row is read once for all of them
// instead of once per op.
void Engine::Impl::flush_op_group(std::vector<const ir::Op*>& group) {
  if (group.empty()) return;
  const ir::FusedRun run = ir::fuse(group, field);
  std::vector<std::pair<uint32_t, std::vector<Elem>>> rows;
  const size_t k = run.sources.size();
  for (size_t j = 0; j < group.size(); ++j)
    rows.emplace_back(group[j]->dst, std::vector<Elem>(run.coeffs.begin() + j * k, run.coeffs.begin() + (j + 1) * k));
  emit_dot(run.sources, rows);
  group.clear();
}

void Engine::Impl::emit_op(const ir::Op& op, std::vector<const ir::Op*>& group) {
  std::vector<ir::Term> nz = nonzero(op.terms);
  const bool groupable = opt.use_dot && ir::dot_worthy(nz) && !reads_slot(op.terms, op.dst);
  if (groupable) {
    if (!ir::joins_fused_run(group, op, kDotMaxSources)) flush_op_group(group);
    group.push_back(&op);
    return;
  }
  flush_op_group(group);
  switch (dst_use(nz, op.dst)) {
    case DstUse::none:
      emit_direct(nz, op.dst, Code::op_copy);
      break;
    case DstUse::first: {
      // dst := c·dst + Σ rest: scale in place, then accumulate. Sound because
      // no other term reads dst (its one term moved to the front).
      const auto it = std::find_if(nz.begin(), nz.end(), [&](const ir::Term& t) { return t.slot == op.dst; });
      std::rotate(nz.begin(), it, it + 1);
      if (nz.front().coeff != 1) emit(Code::mul, op.dst, op.dst, mad_table(nz.front().coeff));
      emit_accumulate(nz, 1, op.dst);
      break;
    }
    case DstUse::elsewhere:
      emit_direct(nz, scratch_unit);
      emit(Code::copy, scratch_unit, op.dst);
      break;
  }
}

// One step's ops, in order.
void Engine::Impl::emit_ops(std::span<const ir::Op> ops) {
  std::vector<const ir::Op*> group;
  for (const ir::Op& o : ops) emit_op(o, group);
  flush_op_group(group);
}

}  // namespace collplan::rt
