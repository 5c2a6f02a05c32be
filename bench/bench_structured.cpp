// Structured matrices (docs/structured-matrices.md) against the universal
// prepare-and-shoot on the same matrix, measured in the same run: C1, C2
// (after the default passes) and the modeled time C1·β + C2·τ at
// β/τ = 100, 1000, 10000, plus the compile time (generator + verifications
// + passes) of each.
//
// K ∈ {64, 256, 1024, 4096}, p ∈ {1, 2, 3}. Fields: GF(65537) (q−1 = 2^16)
// for the DFT, Lagrange and systematic RS; GF(7681) (q−1 = 2^9·3·5) for a
// draw-and-loose Vandermonde with M > 1 (Z = 512 for K >= 1024). RS and
// Lagrange points are the two disjoint draw-and-loose sets collplan chooses.
// Compile-time ratio = structured / prepare-and-shoot, single runs.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "gen/vandermonde_plans.h"
#include "matrix/matrix.h"
#include "matrix/structured.h"
#include "pipeline/pipeline.h"

using namespace collplan;
using Clock = std::chrono::steady_clock;

namespace {

struct Run {
  passes::CostReport cost;
  double seconds = 0;
  std::string algorithm;
};

Run compile(const Spec& s, const std::string& algorithm) {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  const auto t0 = Clock::now();
  const auto res = pipeline::compile(s, opt);
  return {res.cost, std::chrono::duration<double>(Clock::now() - t0).count(), res.plan.spec.algorithm};
}

MatrixSpec family(const std::string& name, const Field& f, uint32_t K, uint32_t p) {
  if (name == "dft") return matrix_dft(K, gen::default_radix(f, K, p, true), f);
  const uint32_t P = gen::default_radix(f, K, p, false);
  if (name == "vandermonde") return matrix_draw_loose(K, P, {}, f);
  const std::vector<Elem> sets = disjoint_point_sets(f, K, P, 2);
  const std::vector<Elem> a(sets.begin(), sets.begin() + K), b(sets.begin() + K, sets.end()), ones(K, 1);
  if (name == "lagrange") return matrix_lagrange(a, b, f);
  return matrix_four_lists("rs-systematic", {a, b, ones, ones}, f);
}

}  // namespace

int main() {
  struct Family {
    const char* name;
    const char* generator;
    Field field;
  };
  const std::vector<Family> families = {{"dft", "dft", Field::prime(65537)},
                                        {"vandermonde", "draw-loose", Field::prime(7681)},
                                        {"lagrange", "lagrange", Field::prime(65537)},
                                        {"rs", "cauchy", Field::prime(65537)}};
  std::printf("%-11s %5s %2s %-22s %4s %5s %4s %5s %9s %9s %9s %9s %9s %9s %8s %8s %6s\n", "matrix", "K", "p",
              "structured", "C1", "C2", "psC1", "psC2", "t100", "ps_t100", "t1000", "ps_t1000", "t10000", "ps_t10000",
              "comp_s", "ps_comp", "ratio");
  for (const Family& fam : families)
    for (uint32_t K : {64u, 256u, 1024u, 4096u})
      for (uint32_t p : {1u, 2u, 3u}) {
        const Spec s = make_encode_spec(K, p, 1, fam.field, family(fam.name, fam.field, K, p));
        const Run st = compile(s, fam.generator);
        const Run ps = compile(s, "prepare-shoot");
        auto t = [](const Run& r, double beta) { return r.cost.C1 * beta + static_cast<double>(r.cost.C2); };
        std::printf("%-11s %5u %2u %-22s %4u %5llu %4u %5llu %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %8.3f %8.3f %6.2f\n",
                    fam.name, K, p, st.algorithm.c_str(), st.cost.C1, static_cast<unsigned long long>(st.cost.C2),
                    ps.cost.C1, static_cast<unsigned long long>(ps.cost.C2), t(st, 100), t(ps, 100), t(st, 1000),
                    t(ps, 1000), t(st, 10000), t(ps, 10000), st.seconds, ps.seconds, st.seconds / ps.seconds);
        std::fflush(stdout);
      }
  std::printf("C1, C2: the structured plan after the default passes; psC1, psC2: prepare-and-shoot on the same matrix.\n"
              "tB = C1*B + C2 (tau = 1, len = 1): the modeled time at beta/tau = B. comp_s, ps_comp: compile seconds\n"
              "(generator, verification after it and after each pass); ratio = comp_s / ps_comp.\n");
  return 0;
}
