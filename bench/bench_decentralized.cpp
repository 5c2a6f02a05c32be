// Decentralized encoding of [N, K] codes (docs/decentralized.md): C1, C2
// and modeled time of the journal's grid framework against two baselines
// built in the same run as real, verified plans:
//   naive   every source sends x_k to every sink, p at a time;
//   padded  one all-to-all encode among all N ranks (matrix padded to N×N).
// Systematic random codes over GF(2^8), p = 2, N ∈ {16, 64, 256, 1024},
// K/N ∈ {1/8, 1/4, 1/2, 3/4, 7/8}; then non-systematic codes, grouped
// against padded. Every plan goes through pipeline::compile (generator,
// verification, drop-zeros, alloc-slots, verification), so the figures are
// those of the delivered plans. Time = C1·beta + C2·len·tau with beta = 100,
// tau = 1, len = 1 (start-up dominated) and beta = 1, tau = 1, len = 100
// (bandwidth dominated).
// Last, long vectors (`--blocks n`, p = 1): the grid with its row phase
// streamed in n blocks (circulant schedule) against the same grid moving
// whole vectors (n = 1), for a vector of m = 2^16 elements per source,
// beta = 1000, tau = 1 per element; time = C1·beta + C2·(m/n)·tau.
#include <chrono>
#include <cstdio>
#include <string>

#include "matrix/codes.h"
#include "matrix/postcondition.h"
#include "pipeline/pipeline.h"

using namespace collplan;

namespace {

struct Row {
  uint32_t C1 = 0;
  uint64_t C2 = 0;
};

Row build(const Spec& s, const std::string& algorithm) {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  const auto res = pipeline::compile(s, opt);
  return {res.cost.C1, res.cost.C2};
}

double t_lat(const Row& r) { return r.C1 * 100.0 + static_cast<double>(r.C2); }
double t_bw(const Row& r) { return r.C1 * 1.0 + static_cast<double>(r.C2) * 100.0; }

}  // namespace

int main() {
  const uint32_t p = 2;
  const Field f = Field::gf256();
  const auto t0 = std::chrono::steady_clock::now();
  std::printf("systematic [N, K] codes, random A over GF(2^8), p = %u; C1/C2 of the delivered plans\n", p);
  std::printf("time_lat = 100*C1 + C2, time_bw = C1 + 100*C2; ratios = baseline time / grid time\n");
  std::printf("%5s %5s | %10s | %10s %6s %6s | %10s %6s %6s | %s\n", "N", "K", "grid C1/C2", "naive", "lat", "bw",
              "padded", "lat", "bw", "auto picks");
  for (uint32_t N : {16u, 64u, 256u, 1024u})
    for (uint32_t eighths : {1u, 2u, 4u, 6u, 7u}) {
      const uint32_t K = N * eighths / 8;
      const Spec s = make_decentralized_spec(N, K, p, 1, f, code_matrix("random", N, K, true, N + K, f));
      const Row g = build(s, "decentralized-grid"), nv = build(s, "decentralized-naive"),
                pd = build(s, "decentralized-padded");
      pipeline::CompileOptions opt;
      const std::string chosen = pipeline::compile(s, opt).plan.spec.algorithm;
      char a[24], b[24], c[24];
      std::snprintf(a, sizeof a, "%u/%llu", g.C1, static_cast<unsigned long long>(g.C2));
      std::snprintf(b, sizeof b, "%u/%llu", nv.C1, static_cast<unsigned long long>(nv.C2));
      std::snprintf(c, sizeof c, "%u/%llu", pd.C1, static_cast<unsigned long long>(pd.C2));
      std::printf("%5u %5u | %10s | %10s %5.1fx %5.1fx | %10s %5.2fx %5.2fx | %s\n", N, K, a, b, t_lat(nv) / t_lat(g),
                  t_bw(nv) / t_bw(g), c, t_lat(pd) / t_lat(g), t_bw(pd) / t_bw(g),
                  chosen.substr(0, chosen.find(' ')).c_str());
    }

  std::printf("\nnon-systematic [N, K] codes, random G: grouped (broadcast + group encodes) against padded\n");
  std::printf("%5s %5s | %12s | %12s %6s %6s | %s\n", "N", "K", "grouped C1/C2", "padded", "lat", "bw", "auto picks");
  for (uint32_t N : {16u, 64u, 256u, 1024u})
    for (uint32_t div : {2u, 4u, 8u}) {
      const uint32_t K = N / div;
      const Spec s = make_decentralized_spec(N, K, p, 1, f, code_matrix("random", N, K, false, N * K, f));
      const Row g = build(s, "decentralized-grouped"), pd = build(s, "decentralized-padded");
      pipeline::CompileOptions opt;
      const std::string chosen = pipeline::compile(s, opt).plan.spec.algorithm;
      char a[24], c[24];
      std::snprintf(a, sizeof a, "%u/%llu", g.C1, static_cast<unsigned long long>(g.C2));
      std::snprintf(c, sizeof c, "%u/%llu", pd.C1, static_cast<unsigned long long>(pd.C2));
      std::printf("%5u %5u | %12s | %12s %5.2fx %5.2fx | %s\n", N, K, a, c, t_lat(pd) / t_lat(g), t_bw(pd) / t_bw(g),
                  chosen.substr(0, chosen.find(' ')).c_str());
    }
  std::printf("\nlong vectors, p = 1, m = 65536 elements per source, beta = 1000, tau = 1: the grid with n blocks "
              "(rows streamed where the cost model says so) against n = 1 (whole vectors)\n");
  std::printf("%5s %5s %4s | %10s %12s %7s | %s\n", "N", "K", "n", "C1/C2", "time", "vs n=1", "row phase");
  const uint64_t m = 65536;
  for (auto [N, K] : {std::pair{256u, 32u}, {1024u, 128u}, {1024u, 8u}, {1024u, 1016u}}) {
    double base = 0;
    for (uint32_t n : {1u, 4u, 16u, 64u}) {
      if (uint64_t{K} * n * (N - K) * n > kMaxPostconditionEntries) continue;  // the checker's dense map
      Spec s = make_decentralized_spec(N, K, 1, 1, f, code_matrix("random", N, K, true, N * K + 1, f));
      s.blocks = n;
      pipeline::CompileOptions opt;
      opt.algorithm = "decentralized-grid";
      opt.cost_model = passes::CostModel{1000.0, 1.0, m / n};
      const auto res = pipeline::compile(s, opt);
      const double t = opt.cost_model.time(res.cost.C1, res.cost.C2);
      if (n == 1) base = t;
      const std::string& alg = res.plan.spec.algorithm;
      const std::string row = alg.find("circulant") != std::string::npos   ? "circulant"
                              : alg.find("pipelined") != std::string::npos ? "pipelined chain"
                                                                           : "tree, whole vectors";
      char a[24];
      std::snprintf(a, sizeof a, "%u/%llu", res.cost.C1, static_cast<unsigned long long>(res.cost.C2));
      std::printf("%5u %5u %4u | %10s %12.0f %6.2fx | %s\n", N, K, n, a, t, base / t, row.c_str());
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\nall plans compiled and verified in %.1f s\n", secs);
  return 0;
}
