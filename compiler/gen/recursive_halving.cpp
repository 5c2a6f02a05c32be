// Reduce-scatter by recursive halving (Thakur, Rabenseifner, Gropp 2005),
// with p ports by recursive multiplying: for K = (p+1)^m. It is the first
// phase of the recursive halving-doubling allreduce
// (gen/recursive_halving_doubling.cpp), whose chunks are here the ranks'
// blocks: rank r's inputs a·n .. a·n + n − 1 (its blocks for rank a) are
// its partial sums of rank a's chunk.
//
// Round j = 0..m−1, S = K/(p+1)^(j+1): before round j rank r holds partial
// sums of the chunks of its run of S·(p+1) consecutive ranks, which splits
// by digit into p + 1 runs of S. r (digit c) sends the partner with digit c′
// (r + (c′ − c)·S) its sums of the partner's S chunks, through port
// (c′ − c − 1) mod (p+1), and adds what each partner sends of its own S
// chunks. After round m − 1 chunk r is summed over all ranks. With λ > 1
// every round takes λ steps. Every message is a run of consecutive ranks'
// blocks, one piece of a caller's buffer (the dissemination reduce-scatter's
// runs wrap past rank K − 1: docs/benchmarks.md, "Wrapped messages").
//
// C1 = λm. C2 = n·Σ_j S = n(K−1)/p: each port receives S·n elements in round
// j, and every rank must receive n(K−1) elements through p ports, so C2
// meets the receive-volume bound.
//
// The phase itself (recursive_halving_phase) is defined here for both.
#include <algorithm>

#include "gen/dissemination.h"
#include "gen/recursive_doubling.h"

namespace collplan::gen {

void recursive_halving_phase(const ir::Plan& ctx, ir::Program& prog, const std::vector<SlotRun>& sum) {
  using namespace ir;
  const Spec& spec = ctx.spec;
  const uint32_t K = spec.K, p = spec.p, lambda = spec.lambda, r = prog.rank;
  const auto m = static_cast<uint32_t>(recursive_rounds(K, p));
  uint64_t S = K;
  for (uint32_t j = 0; j < m; ++j) {
    S /= p + 1;
    const StepNo ts = 1 + j * lambda, tr = ts + lambda - 1;
    auto run_elements = [&](uint64_t first) {
      std::vector<SlotId> v;
      for (uint64_t a = first; a < first + S; ++a)
        for (uint32_t e = 0; e < sum[a].count; ++e) v.push_back(sum[a][e]);
      return v;
    };
    const std::vector<RecursivePartner> partners = recursive_partners(r, S, p);
    for (const RecursivePartner& q : partners) {
      std::vector<Combo> payload;
      for (SlotId s : run_elements(q.run)) payload.push_back(unit(s));
      if (!payload.empty()) prog.at(ts).sends.push_back(make_send(ctx, prog, q.to_port, q.rank, payload));
    }
    const std::vector<SlotId> own = run_elements(r - r % S);  // r's S chunks after this round
    if (own.empty()) continue;  // n < K: nothing of these chunks to add
    // Port q's contribution to element i of the run lands in got[q] + i.
    std::vector<std::pair<Port, SlotId>> got;
    for (const RecursivePartner& q : partners) {
      std::vector<SlotId> into(own.size());
      for (SlotId& s : into) s = prog.new_slot();
      got.emplace_back(q.from_port, into[0]);
      prog.at(tr).recvs.push_back(make_recv(ctx, prog, tr, q.from_port, q.rank, into));
    }
    std::sort(got.begin(), got.end());  // add in port order
    Step& st = prog.at(tr);
    for (size_t i = 0; i < own.size(); ++i) {
      std::vector<Term> terms{Term{own[i], 1}};
      for (const auto& [port, first] : got) terms.push_back(Term{static_cast<SlotId>(first + i), 1});
      st.ops.push_back(make_op(prog, own[i], std::move(terms)));
    }
  }
}

namespace {

// Rank r: its K·n inputs are the partial sums; chunk r, summed, is its
// output. O(K·n).
ir::Program rank_program(const ir::Plan& ctx, uint32_t r) {
  using namespace ir;
  const uint32_t K = ctx.spec.K, n = ctx.spec.blocks;
  Program prog;
  prog.rank = r;
  for (uint64_t i = 0; i < uint64_t{K} * n; ++i) prog.inputs.push_back(prog.new_slot());
  std::vector<SlotRun> sum(K);
  for (uint32_t a = 0; a < K; ++a) sum[a] = SlotRun{a * n, n};
  recursive_halving_phase(ctx, prog, sum);
  prog.outputs = sum[r].slots();
  return prog;
}

const RecursiveAlgorithm kHalving{"recursive-halving", {OpKind::ReduceScatter}, "dissemination-reduce-scatter", 1,
                                  rank_program};

}  // namespace

ir::Plan recursive_halving(const Spec& spec) { return recursive_whole_plan(spec, kHalving); }

ir::RankPlan recursive_halving_local(const Spec& spec, uint32_t rank) {
  return recursive_rank_plan(spec, kHalving, rank);
}

PostalSplitCost recursive_halving_cost(const Spec& spec) {
  const int m = recursive_rounds(spec.K, spec.p);
  if (spec.K < 2 || m < 0) return {0, 0, UINT32_MAX, UINT64_MAX};
  return {0, 0, static_cast<uint32_t>(m) * spec.lambda, uint64_t{spec.blocks} * (spec.K - 1) / spec.p};
}

}  // namespace collplan::gen
