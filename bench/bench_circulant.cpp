// Circulant-graph schedules (gen/circulant.h, docs/circulant.md):
//  1. per-rank schedule computation (recv + send, Algorithms 2–5) against p
//     up to 2^31, with the ratio to q³ (the claimed O(log³p) growth);
//  2. verification rate (ranks/s) of the whole-p fast path against the
//     per-rank reference path measured in the same run;
//  3. the n-block broadcast (n from --blocks auto's rule) against the
//     binomial tree and scatter + allgather broadcasts, in elements moved
//     and modeled time C1·beta + C2·len·tau, for several m and beta/tau.
// Medians of 5 repetitions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gen/circulant.h"
#include "gen/circulant_check.h"
#include "gen/circulant_plans.h"
#include "matrix/matrix.h"
#include "passes/cost.h"

using namespace collplan;
using Clock = std::chrono::steady_clock;

namespace {

template <typename F>
double median_seconds(F&& f, int reps = 5) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  std::printf("1. per-rank schedule computation (recv + send of one rank, Algorithms 2-5), 2000 random ranks\n");
  std::printf("%12s %3s %14s %12s\n", "p", "q", "us per rank", "ns / q^3");
  for (uint32_t e = 4; e <= 31; e += 3) {
    for (uint64_t p : {uint64_t{1} << e, (uint64_t{1} << e) - 1}) {
      const gen::Circulant c(p);
      SplitMix64 rng(e);
      std::vector<uint64_t> ranks(2000);
      for (auto& r : ranks) r = rng.next() % p;
      volatile int sink = 0;
      const double s = median_seconds([&] {
        for (uint64_t r : ranks) sink = sink + c.schedule(r).send[0];
      });
      const double per = s / ranks.size();
      const double q3 = std::pow(static_cast<double>(c.q()), 3);
      std::printf("%12llu %3u %14.3f %12.2f\n", static_cast<unsigned long long>(p), c.q(), per * 1e6, per * 1e9 / q3);
    }
  }

  std::printf("\n2. verification of every rank of one p (checks R, S, C), one thread\n");
  std::printf("%8s | %16s | %16s | %8s\n", "p", "fast ranks/s", "reference r/s", "speedup");
  for (uint64_t p : {1000u, 4096u, 16384u, 131072u}) {
    gen::CirculantTable t;
    gen::CirculantScratch scratch;
    const gen::Circulant c(p);
    const double fast = median_seconds([&] {
      gen::circulant_table_fast(p, t, scratch);
      if (!gen::check_circulant_table(c, t).empty()) std::printf("INVALID p = %llu\n", static_cast<unsigned long long>(p));
    });
    double ref = 0;
    if (p <= 16384)
      ref = median_seconds(
          [&] {
            gen::circulant_table_reference(p, t);
            if (!gen::check_circulant_table(c, t).empty()) std::printf("INVALID\n");
          },
          p <= 4096 ? 3 : 1);
    if (ref > 0)
      std::printf("%8llu | %16.3g | %16.3g | %7.1fx\n", static_cast<unsigned long long>(p), p / fast, p / ref, ref / fast);
    else
      std::printf("%8llu | %16.3g | %16s | %8s\n", static_cast<unsigned long long>(p), p / fast, "-", "-");
  }

  std::printf("\n3. broadcast of m elements on K ranks (1 port): modeled time C1*beta + C2*len*tau and elements moved\n"
              "   circulant: n from --blocks auto, (n-1+q) steps of ceil(m/n); binomial: q steps of m;\n"
              "   scatter+allgather: binomial scatter then circulant allgather, 2q steps, 2(K-1)/K*m per rank\n");
  std::printf("%6s %9s %6s | %5s %12s %12s | %12s %12s | %12s %12s | %7s\n", "K", "m", "beta", "n", "circ time",
              "circ moved", "binom time", "binom moved", "s+ag time", "s+ag moved", "best/c");
  for (uint32_t K : {16u, 100u, 1024u})
    for (uint64_t m : {1000u, 100000u, 10000000u})
      for (double beta : {10.0, 1000.0}) {
        const double tau = 1;
        const uint32_t q = gen::Circulant(K).q();
        const uint32_t n = gen::circulant_auto_blocks(K, m, beta, tau);
        const uint64_t blk = (m + n - 1) / n;
        // The built plan's cost (C1, C2 in blocks; elements = blocks moved).
        Spec s;
        s.op = OpKind::Broadcast;
        s.K = K;
        s.blocks = n;
        const passes::CostReport c = passes::cost(gen::circulant_broadcast(s));
        const double t_c = c.C1 * beta + static_cast<double>(c.C2 * blk) * tau;
        const double moved_c = static_cast<double>(c.elements * blk);
        const double t_b = q * (beta + m * tau), moved_b = static_cast<double>(K - 1) * m;
        const double share = static_cast<double>(K - 1) / K * m;
        const double t_sa = 2 * q * beta + 2 * share * tau;
        const double moved_sa = q * m / 2.0 + (K - 1) * static_cast<double>(m);
        std::printf("%6u %9llu %6.0f | %5u %12.4g %12.4g | %12.4g %12.4g | %12.4g %12.4g | %6.2fx\n", K,
                    static_cast<unsigned long long>(m), beta, n, t_c, moved_c, t_b, moved_b, t_sa, moved_sa,
                    std::min(t_b, t_sa) / t_c);
      }
  std::printf("\nbest/c = the better baseline's modeled time / the circulant broadcast's (> 1: circulant faster).\n"
              "scatter+allgather moved is approximate (q*m/2 for the scatter at K a power of two).\n");
  return 0;
}
