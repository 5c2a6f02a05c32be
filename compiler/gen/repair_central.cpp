// Central repair and decode, the baseline storage systems use: each
// receiving rank reads the whole chunks of the helpers it needs and
// decodes locally (one rank reads K chunks, as an erasure-coded store's
// repair node does).
//
// Helpers i < h, receivers j < m, E = max(h, m). Edge (helper i, receiver j)
// gets colour c = (i + j) mod E, distinct at each helper and at each
// receiver, and is sent in step ⌊c/p⌋ + 1 through port c mod p: each port of
// each rank carries at most one message per step. An edge is skipped when
// the receiver is that helper (it reads its own input) or needs nothing of
// it. C1 = ⌈E/p⌉ + λ − 1, C2 = n·⌈E/p⌉ (every message is a whole chunk).
#include <algorithm>

#include <fmt/format.h>

#include "gen/repair.h"
#include "gen/repair_build.h"

namespace collplan::gen {

namespace {

// Does receiver `rank` need helper i (a non-zero coefficient in one of its
// output symbols)?
bool needs(const RepairMap& m, uint32_t rank, uint32_t i) {
  for (uint32_t o = 0; o < m.out_rank.size(); ++o)
    if (m.out_rank[o] == rank && m.F.at(i, o) != 0) return true;
  return false;
}

}  // namespace

ir::Plan repair_central(const Spec& spec) {
  using namespace ir;
  detail::RepairAssembly a = detail::repair_start(spec, "repair-central");
  const std::vector<uint32_t> recv = detail::receivers(a.map);
  const uint32_t h = static_cast<uint32_t>(spec.helpers.size()), m = static_cast<uint32_t>(recv.size());
  const uint32_t p = spec.p, lam = spec.lambda, E = std::max(h, m), n = a.n;
  const uint32_t send_steps = (E + p - 1) / p;
  a.plan.num_steps = send_steps + lam - 1;
  // got[j][i]: the slots receiver j holds helper i's chunk in (its own input
  // when it is helper i).
  std::vector<std::vector<std::vector<passes::Held>>> got(m, std::vector<std::vector<passes::Held>>(h));
  for (uint32_t c = 0; c < E; ++c) {
    const StepNo t = c / p + 1, tr = t + lam - 1;
    const Port port = c % p;
    for (uint32_t i = 0; i < h; ++i) {
      const uint32_t j = (c + E - i % E) % E;  // i + j ≡ c (mod E)
      if (j >= m) continue;
      const uint32_t from = spec.helpers[i], to = recv[j];
      if (from == to) {
        got[j][i] = a.held[from];
        continue;
      }
      if (!needs(a.map, to, i)) continue;
      Program& src = a.plan.ranks[from];
      std::vector<Combo> payload;
      for (const passes::Held& v : a.held[from]) payload.push_back(unit(v.slot));
      src.at_any(t).sends.push_back(make_send(a.plan, src, port, to, std::move(payload)));
      Program& dst = a.plan.ranks[to];
      std::vector<SlotId> into;
      for (uint32_t b = 0; b < n; ++b) into.push_back(dst.new_slot());
      dst.at_any(tr).recvs.push_back(make_recv(a.plan, dst, tr, port, from, into));
      for (uint32_t b = 0; b < n; ++b) got[j][i].push_back(passes::Held{into[b], 1});
    }
  }
  for (uint32_t o = 0; o < a.map.out_rank.size(); ++o) {
    const uint32_t rank = a.map.out_rank[o];
    const uint32_t j = static_cast<uint32_t>(std::find(recv.begin(), recv.end(), rank) - recv.begin());
    Program& dst = a.plan.ranks[rank];
    for (uint32_t b = 0; b < n; ++b) {
      std::vector<Term> terms;
      for (uint32_t i = 0; i < h; ++i)
        if (const Elem c = a.map.F.at(i, o); c != 0)
          terms.push_back(Term{got[j][i][b].slot, spec.field.mul(c, got[j][i][b].coeff)});
      const SlotId out = dst.new_slot();
      dst.at_any(a.plan.num_steps).ops.push_back(make_op(dst, out, std::move(terms)));
      a.out[o].push_back(passes::Held{out, 1});
    }
  }
  a.phases.push_back(fmt::format("steps 1-{}: each of the {} receivers reads the chunks of the helpers it needs "
                                 "(of {}), {} per step, and decodes locally",
                                 a.plan.num_steps, m, h, p));
  return detail::repair_finish(a);
}

PostalSplitCost repair_central_estimate(const Spec& spec) {
  const uint32_t h = static_cast<uint32_t>(spec.helpers.size());
  uint32_t m = 0, last = UINT32_MAX;
  if (spec.op == OpKind::Repair) {
    m = static_cast<uint32_t>(spec.lost.size());
  } else {
    std::vector<uint32_t> to = spec.to;
    std::sort(to.begin(), to.end());
    for (uint32_t r : to)
      if (r != last) ++m, last = r;
  }
  const uint32_t E = std::max(h, m), s = (E + spec.p - 1) / spec.p;
  return {0, 0, s + spec.lambda - 1, uint64_t{s} * spec.blocks};
}

}  // namespace collplan::gen
