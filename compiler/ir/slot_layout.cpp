#include "ir/slot_layout.h"

#include <algorithm>
#include <limits>

namespace collplan::ir {

std::vector<uint32_t> slot_layout(const ir::Program& prog) {
  const uint32_t n = prog.num_slots;
  constexpr uint32_t none = std::numeric_limits<uint32_t>::max();
  std::vector<std::vector<uint32_t>> wants;
  for (const ir::Step& st : prog.steps) {
    for (const ir::Send& s : st.sends) {
      std::vector<uint32_t> v;
      for (const ir::Combo& c : s.payload) {
        if (c.terms.size() != 1 || c.terms[0].coeff != 1) {
          v.clear();
          break;
        }
        v.push_back(c.terms[0].slot);
      }
      if (v.size() >= 2) wants.push_back(std::move(v));
    }
    for (const ir::Recv& r : st.recvs)
      if (r.into.size() >= 2) wants.emplace_back(r.into.begin(), r.into.end());
  }
  std::stable_sort(wants.begin(), wants.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<uint32_t> next(n, none), prev(n, none);
  std::vector<std::pair<uint32_t, uint32_t>> added;
  for (const auto& w : wants) {
    added.clear();
    bool ok = true;
    for (size_t i = 0; i + 1 < w.size() && ok; ++i) {
      const uint32_t a = w[i], b = w[i + 1];
      if (next[a] == b) continue;
      if (a == b || next[a] != none || prev[b] != none) {
        ok = false;
        break;
      }
      uint32_t h = a;  // a → b closes a cycle iff b already heads a's chain
      while (prev[h] != none) h = prev[h];
      if (h == b) {
        ok = false;
        break;
      }
      next[a] = b;
      prev[b] = a;
      added.emplace_back(a, b);
    }
    if (!ok)
      for (auto [a, b] : added) next[a] = prev[b] = none;
  }
  std::vector<uint32_t> pos(n, none);
  uint32_t row = 0;
  for (uint32_t s = 0; s < n; ++s)
    if (prev[s] == none)
      for (uint32_t c = s; c != none; c = next[c]) pos[c] = row++;
  return pos;
}

ir::Program relabel(const ir::Program& prog, const std::vector<uint32_t>& pos) {
  ir::Program p = prog;
  for (uint32_t& s : p.inputs) s = pos[s];
  for (uint32_t& s : p.outputs) s = pos[s];
  for (ir::Step& st : p.steps) {
    for (ir::Send& s : st.sends)
      for (ir::Combo& c : s.payload)
        for (ir::Term& t : c.terms) t.slot = pos[t.slot];
    for (ir::Recv& r : st.recvs)
      for (uint32_t& x : r.into) x = pos[x];
    for (ir::Op& o : st.ops) {
      o.dst = pos[o.dst];
      for (ir::Term& t : o.terms) t.slot = pos[t.slot];
    }
  }
  return p;
}

std::vector<uint32_t> caller_homes(const ir::Program& prog) {
  std::vector<uint32_t> home(prog.num_slots, kNoHome);
  std::vector<uint8_t> written(prog.num_slots, 0), listed(prog.num_slots, 0);
  for (const ir::Step& st : prog.steps) {
    for (const ir::Recv& r : st.recvs)
      for (SlotId x : r.into) written[x] = 1;
    for (const ir::Op& o : st.ops) written[o.dst] = 1;
  }
  for (SlotId x : prog.inputs) listed[x] = static_cast<uint8_t>(std::min(listed[x] + 1, 2));
  const uint32_t n_in = static_cast<uint32_t>(prog.inputs.size());
  for (uint32_t j = 0; j < prog.outputs.size(); ++j)
    if (home[prog.outputs[j]] == kNoHome) home[prog.outputs[j]] = n_in + j;
  for (uint32_t i = 0; i < n_in; ++i) {
    const SlotId x = prog.inputs[i];
    // Listed twice, the later input wins: both are copied in order.
    if (home[x] == kNoHome && !written[x] && listed[x] == 1) home[x] = i;
  }
  return home;
}

}  // namespace collplan::ir
