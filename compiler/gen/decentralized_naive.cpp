// Naive decentralized encoding of a systematic code, the baseline of the
// benchmark: every source sends x_k to every sink, p messages at a time;
// each sink sums Σ_k A[k][j]·x_k once all K have arrived.
//
// E = max(K, R). Edge (source k, sink j) gets colour c = (k + j) mod E: the
// colours at a source (over j < R) and at a sink (over k < K) are distinct,
// so sending colour c in step ⌊c/p⌋ + 1 through port c mod p uses each port
// of each rank at most once per step. C1 = ⌈E/p⌉ + λ − 1, C2 = n·⌈E/p⌉ (every
// message carries the n blocks of x_k).
#include <fmt/format.h>

#include "gen/decentralized_build.h"
#include "support/error.h"

namespace collplan::gen {

ir::Plan decentralized_naive(const Spec& spec) {
  using namespace ir;
  detail::Assembly a = detail::start(spec, "the decentralized naive generator");
  if (!a.systematic)
    user_error("decentralized-naive encodes systematic codes (a {}x{} matrix A); this spec has a {}x{} generator "
               "matrix G: use decentralized-grouped or decentralized-padded",
               a.K, a.R, a.K, a.N);
  const uint32_t K = a.K, R = a.R, p = spec.p, lam = spec.lambda, E = std::max(K, R);
  const uint32_t send_steps = (E + p - 1) / p;
  a.plan.num_steps = send_steps + lam - 1;
  a.layout = fmt::format("every source sends to each of the {} sinks directly, {} per step", R, p);
  const uint32_t n = a.n;
  std::vector<std::vector<std::vector<Term>>> sum(R, std::vector<std::vector<Term>>(n));  // per sink, per block
  // Colour by colour, so each rank's steps are requested in order.
  for (uint32_t c = 0; c < E; ++c) {
    const StepNo t = c / p + 1, tr = t + lam - 1;
    const Port port = c % p;
    for (uint32_t k = 0; k < K; ++k) {
      const uint32_t j = (c + E - k % E) % E;  // k + j ≡ c (mod E)
      if (j >= R) continue;
      Program& src = a.plan.ranks[k];
      std::vector<Combo> payload;
      for (const passes::Held& v : a.held[k]) payload.push_back(unit(v.slot));  // all n blocks of x_k
      src.at_any(t).sends.push_back(make_send(a.plan, src, port, K + j, std::move(payload)));
      Program& dst = a.plan.ranks[K + j];
      std::vector<SlotId> into;
      for (uint32_t b = 0; b < n; ++b) into.push_back(dst.new_slot());
      dst.at_any(tr).recvs.push_back(make_recv(a.plan, dst, tr, port, k, into));
      if (a.M.at(k, j) != 0)
        for (uint32_t b = 0; b < n; ++b) sum[j][b].push_back(Term{into[b], a.M.at(k, j)});
    }
  }
  for (uint32_t j = 0; j < R; ++j) {
    Program& dst = a.plan.ranks[K + j];
    for (uint32_t b = 0; b < n; ++b) {
      const SlotId out = dst.new_slot();
      dst.at_any(a.plan.num_steps).ops.push_back(make_op(dst, out, std::move(sum[j][b])));
      a.held[K + j][b] = passes::Held{out, 1};
    }
  }
  a.phases.push_back(fmt::format("steps 1-{}: direct sends, sums at the sinks", a.plan.num_steps));
  return detail::finish(a);
}

PostalSplitCost decentralized_naive_estimate(const Spec& spec) {
  if (!decentralized_systematic(spec) || spec.N <= spec.K) return detail::not_applicable();
  const uint32_t E = std::max(spec.K, spec.N - spec.K), s = (E + spec.p - 1) / spec.p;
  return {0, 0, s + spec.lambda - 1, uint64_t{s} * spec.blocks};  // nothing for drop-zeros to remove
}

}  // namespace collplan::gen
