// Postal model: steps against the lower bound min{t : G(t) >= K} and modeled
// time (C1·beta + C2·len·tau) for all-to-all encode across lambda = 1..8 and
// K up to 4096 (p = 2): the C1-optimal postal all-gather, the cost model's
// postal split, and the synchronous prepare-and-shoot stretched to lambda
// steps per round (the baseline). Costs are the closed forms the compiler
// chooses by (checked against built plans in tests/unit/test_postal_encode.cpp);
// the last column builds and verifies the chosen plan for K <= 256.
#include <chrono>
#include <cstdio>

#include "gen/postal.h"
#include "gen/postal_encode.h"
#include "gen/prepare_shoot.h"
#include "matrix/matrix.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"

using namespace collplan;

int main() {
  const uint32_t p = 2;
  for (const passes::CostModel cm : {passes::CostModel{1.0, 1.0, 1}, passes::CostModel{100.0, 1.0, 1}}) {
    std::printf("\nencode, p = %u, cost model beta = %.0f, tau = %.0f, len = %llu\n", p, cm.beta, cm.tau,
                static_cast<unsigned long long>(cm.len));
    std::printf("%5s %3s %6s | %14s %7s | %18s %7s | %14s %7s | %7s %9s\n", "K", "lam", "bound", "allgather C1/C2",
                "time", "split m: C1/C2", "time", "p&s(str) C1/C2", "time", "speedup", "verified");
    for (uint32_t K : {16u, 256u, 4096u})
      for (uint32_t lambda = 1; lambda <= 8; ++lambda) {
        const uint32_t bound = passes::postal_steps_bound(K, p, lambda);
        const auto ag = gen::postal_split_cost(K, p, lambda, K);
        const uint32_t m = gen::choose_postal_split(K, p, lambda, cm);
        const auto sp = gen::postal_split_cost(K, p, lambda, m);
        const auto sh = gen::prepare_shoot_shape(K, p);
        const uint32_t ps_c1 = sh.C1() * lambda;
        const uint64_t ps_c2 = sh.C2_zero_dropped();
        const double t_ag = cm.time(ag.C1, ag.C2), t_sp = cm.time(sp.C1, sp.C2), t_ps = cm.time(ps_c1, ps_c2);
        const double best = std::min(t_ag, t_sp);
        std::string verified = "-";
        if (K <= 256) {
          pipeline::CompileOptions opt;
          opt.cost_model = cm;
          const auto res = pipeline::compile(make_encode_spec(K, p, lambda, Field::gf256(), matrix_random(K, lambda, Field::gf256())), opt);
          verified = "C1=" + std::to_string(res.cost.C1);
        }
        char a[32], b[32], c[32];
        std::snprintf(a, sizeof a, "%u/%llu", ag.C1, static_cast<unsigned long long>(ag.C2));
        std::snprintf(b, sizeof b, "%u: %u/%llu", m, sp.C1, static_cast<unsigned long long>(sp.C2));
        std::snprintf(c, sizeof c, "%u/%llu", ps_c1, static_cast<unsigned long long>(ps_c2));
        std::printf("%5u %3u %6u | %14s %7.0f | %18s %7.0f | %14s %7.0f | %6.2fx %9s\n", K, lambda, bound, a, t_ag, b,
                    t_sp, c, t_ps, t_ps / best, verified.c_str());
      }
  }
  std::printf("\nspeedup = stretched prepare-and-shoot time / best postal time; 'verified' = C1 of the plan\n"
              "--algorithm auto compiled and verified (K <= 256).\n");

  // Prefix (Algorithm A) and broadcast (1 block): built plans, their steps
  // against the bound, and the (p+1)-nomial tree of the synchronous model
  // stretched to lambda steps per round as the lambda-oblivious baseline.
  std::printf("\nprefix (Algorithm A) and broadcast, p = %u, built plans (modeled time with beta = tau = len = 1)\n", p);
  std::printf("%5s %3s %6s | %13s %6s | %13s %6s | %13s %8s\n", "K", "lam", "bound", "prefix C1/C2", "time",
              "bcast C1/C2", "time", "tree(str) C1", "bcast x");
  for (uint32_t K : {16u, 256u, 4096u})
    for (uint32_t lambda = 1; lambda <= 8; ++lambda) {
      const uint32_t bound = passes::postal_steps_bound(K, p, lambda);
      Spec s;
      s.K = K;
      s.p = p;
      s.lambda = lambda;
      s.field = Field::gf256();
      s.op = OpKind::Prefix;
      const auto pc = passes::cost(gen::postal_prefix(s));
      s.op = OpKind::Broadcast;
      const auto bc = passes::cost(gen::postal_broadcast(s));
      const uint32_t tree = lambda * passes::lemma1_bound(K, p);
      char a[32], b[32];
      std::snprintf(a, sizeof a, "%u/%llu", pc.C1, static_cast<unsigned long long>(pc.C2));
      std::snprintf(b, sizeof b, "%u/%llu", bc.C1, static_cast<unsigned long long>(bc.C2));
      std::printf("%5u %3u %6u | %13s %6llu | %13s %6llu | %13u %7.2fx\n", K, lambda, bound, a,
                  static_cast<unsigned long long>(pc.C1 + pc.C2), b, static_cast<unsigned long long>(bc.C1 + bc.C2),
                  tree, double(tree + tree / lambda) / double(bc.C1 + bc.C2));
    }
  std::printf("bcast x = modeled time of the stretched (p+1)-nomial tree (C1 = lambda*ceil(log_{p+1}K),\n"
              "C2 = ceil(log_{p+1}K)) / the postal broadcast's.\n");
  return 0;
}
