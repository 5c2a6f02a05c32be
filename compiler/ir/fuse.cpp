#include "ir/fuse.h"

#include <algorithm>

namespace collplan::ir {

namespace {

bool reads_slot(std::span<const Term> terms, SlotId s) {
  return std::any_of(terms.begin(), terms.end(), [&](const Term& t) { return t.slot == s; });
}

void distinct_slots(std::span<const Term> terms, std::vector<SlotId>& out) {
  for (const Term& t : terms)
    if (std::find(out.begin(), out.end(), t.slot) == out.end()) out.push_back(t.slot);
}

}  // namespace

bool dot_worthy(std::span<const Term> nz) {
  return nz.size() >= 2 && !std::all_of(nz.begin(), nz.end(), [](const Term& t) { return t.coeff == 1; });
}

bool joins_fused_run(std::span<const Op* const> run, const Op& op, size_t max_sources) {
  if (run.empty()) return false;
  std::vector<SlotId> src, mine;
  size_t used = 0;  // coefficients the ops really have (distinct slots per op)
  for (const Op* g : run) {
    if (g->dst == op.dst || reads_slot(op.terms, g->dst)) return false;
    std::vector<SlotId> d;
    distinct_slots(g->terms, d);
    used += d.size();
    distinct_slots(g->terms, src);
  }
  if (std::find(src.begin(), src.end(), op.dst) != src.end()) return false;
  distinct_slots(op.terms, mine);
  used += mine.size();
  distinct_slots(op.terms, src);
  // A union wider than one kernel call is split into calls over source
  // chunks; the engine sums those through scratch rows it has only if some
  // single combination is that wide.
  size_t widest = op.terms.size();
  for (const Op* g : run) widest = std::max(widest, g->terms.size());
  if (src.size() > std::max(max_sources, widest)) return false;
  return 2 * src.size() * (run.size() + 1) <= 3 * used;
}

FusedRun fuse(std::span<const Op* const> run, const Field& field) {
  FusedRun f;
  for (const Op* o : run) distinct_slots(o->terms, f.sources);
  const size_t k = f.sources.size();
  f.coeffs.assign(run.size() * k, 0);
  for (size_t j = 0; j < run.size(); ++j)
    for (const Term& t : run[j]->terms) {
      Elem& c = f.coeffs[j * k + static_cast<size_t>(std::find(f.sources.begin(), f.sources.end(), t.slot) - f.sources.begin())];
      c = field.add(c, t.coeff);  // a slot named twice: its coefficients add
    }
  return f;
}

}  // namespace collplan::ir
