// Tree repair (partial-parallel repair) and pipelined repair (repair
// pipelining): each output symbol is a sum of the helpers' scaled chunks,
// c_out = Σ_h F[h][o]·c_h, i.e. a reduce onto the receiver whose inputs are
// bound to the scaled chunks (the factor folds into the reads, no step).
//
//   tree       the (p+1)-nomial reduce (gen/tree_reduce.cpp) of the g = h'+1
//              ranks (receiver + the h' helpers with a non-zero F[h][o]):
//              C1 = λ·⌈log_{p+1} g⌉, C2 = n·⌈log_{p+1} g⌉ per symbol.
//   pipelined  the p-ary chain reduce (gen/pipelined_reduce.cpp): block b
//              leaves the chain's far end in step b and each helper adds its
//              scaled block b as it passes: C1 = n − 1 + D·λ, C2 = n + (D −
//              1)·min(n, λ) for depth D (D = h' for p = 1): one symbol costs
//              about the time of sending one chunk when n ≫ h'.
// The symbols are placed one after the other (a helper serves every symbol,
// so two reduces at once would share its ports). A receiver that is itself
// a helper starts with its own scaled chunk; otherwise with zero.
#include <algorithm>

#include <fmt/format.h>

#include "gen/registry.h"
#include "gen/repair.h"
#include "gen/repair_build.h"
#include "gen/trees.h"

namespace collplan::gen {

namespace {

// The ranks of symbol o's reduce: the receiver first (the reduce's root,
// local rank 0), then the helpers it needs.
std::vector<uint32_t> symbol_group(const Spec& spec, const RepairMap& m, uint32_t o) {
  std::vector<uint32_t> g{m.out_rank[o]};
  for (uint32_t i = 0; i < spec.helpers.size(); ++i)
    if (m.F.at(i, o) != 0 && spec.helpers[i] != m.out_rank[o]) g.push_back(spec.helpers[i]);
  return g;
}

Spec reduce_spec(const Spec& whole, uint32_t size) {
  Spec s;
  s.op = OpKind::Reduce;
  s.K = size;
  s.p = whole.p;
  s.lambda = whole.lambda;
  s.field = whole.field;
  s.root = 0;
  s.blocks = whole.blocks;
  return s;
}

}  // namespace

ir::Plan repair_reduce(const Spec& spec, bool pipelined, const passes::CostModel& cm) {
  const char* name = pipelined ? "repair-pipelined" : "repair-tree";
  detail::RepairAssembly a = detail::repair_start(spec, name);
  const Field& f = spec.field;
  const GeneratorInfo& part_gen = find_generator(pipelined ? "pipelined-reduce" : "tree-reduce");
  for (uint32_t o = 0; o < a.map.out_rank.size(); ++o) {
    const std::vector<uint32_t> grp = symbol_group(spec, a.map, o);
    const uint32_t root = grp[0];
    // The receiver's start value: its own scaled chunk when it is a helper.
    std::vector<passes::Held> start(a.n, passes::Held::zero());
    if (const int32_t i = a.helper_index[root]; i >= 0 && a.map.F.at(i, o) != 0)
      for (uint32_t b = 0; b < a.n; ++b) start[b] = passes::Held{a.held[root][b].slot, a.map.F.at(i, o)};
    if (grp.size() == 1) {  // nothing to receive
      a.out[o] = start;
      continue;
    }
    Spec rs = reduce_spec(spec, static_cast<uint32_t>(grp.size()));
    rs.algorithm = part_gen.name;
    const ir::Plan part = part_gen.build(rs, cm);
    std::vector<std::vector<passes::Held>> in(grp.size());
    in[0] = start;
    for (size_t k = 1; k < grp.size(); ++k) {
      const Elem c = a.map.F.at(a.helper_index[grp[k]], o);
      for (const passes::Held& v : a.held[grp[k]]) in[k].push_back(passes::Held{v.slot, f.mul(v.coeff, c)});
    }
    const uint32_t offset = a.plan.num_steps;
    const auto out = passes::place(a.plan, part, grp, offset, in);
    a.plan.num_steps = offset + part.num_steps;
    a.out[o] = out[0];
    a.phases.push_back(fmt::format("steps {}-{}: {} of rank {}'s symbol from {} helpers", offset + 1,
                                   a.plan.num_steps, part_gen.name, root, grp.size() - 1));
  }
  return detail::repair_finish(a);
}

PostalSplitCost repair_reduce_estimate(const Spec& spec, bool pipelined) {
  // Every output symbol reduces over (at most) all helpers plus its receiver.
  const uint64_t m = spec.op == OpKind::Repair ? spec.lost.size() : spec.K;
  const uint64_t g = spec.helpers.size() + 1, n = spec.blocks;
  uint64_t C1 = 0, C2 = 0;
  if (pipelined) {
    const uint32_t D = pary_depth(g, spec.p);
    C1 = n - 1 + uint64_t{D} * spec.lambda;
    C2 = D == 0 ? 0 : n + uint64_t{D - 1} * std::min<uint64_t>(n, spec.lambda);
  } else {
    const uint32_t T = nomial_rounds(g, spec.p);
    C1 = uint64_t{T} * spec.lambda;
    C2 = n * T;
  }
  return {0, 0, static_cast<uint32_t>(std::min<uint64_t>(m * C1, UINT32_MAX)), m * C2};
}

}  // namespace collplan::gen
