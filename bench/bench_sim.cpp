// Plans vs MPI's collectives on a simulated cluster (SimGrid), K = 64, 256,
// 1024 hosts: 10 Gbit/s links, 1 µs host-to-host latency, a crossbar (the
// platform and model of runtime/sim/sim_replay.h).
//
//   bench_sim [--max-k K] [--smpi-timeout SECONDS] [--only bcast]
//
// encode (GF(2^8), a random K×K matrix): the compiled plan (passes::compile,
//   `auto`: prepare-and-shoot) replayed by the S4U replay, against
//     rs   SMPI: local products, MPI_Reduce_scatter_block(MPI_BXOR)
//     a2a  SMPI: local products, MPI_Alltoall, XOR of the K blocks
//     pw   modeled: Open MPI's pairwise alltoall (step i: send to r+i,
//          receive from r−i) + XOR, written as a plan (verified at K = 64)
//          and replayed by the same S4U replay
//   "best MPI" is the fastest of those measured.
// bcast: broadcast plans against SMPI's MPI_Bcast with the algorithm the
//   ompi selector picks, and forced to SMPI's binomial tree
//   (--cfg=smpi/bcast:binomial_tree); best MPI = the faster. The plans:
//     postal      postal-broadcast, λ = 1 (a binomial tree in which every
//                 informed rank sends in every step; more blocks would travel
//                 in one message per step and change nothing);
//     circulant   circulant-broadcast, n = `--blocks auto` under the
//                 platform's β = latency, τ = 1/bandwidth;
//     pipelined   pipelined-broadcast (a chain for p = 1), n the argmin of
//                 the same model over its C1/C2 estimate.
// SMPI runs smpirun with --cfg=smpi/coll-selector:ompi (Open MPI's decision
// rules and algorithms) on the same platform file and network options. SMPI
// is slow for some cases (MPI_Alltoall with K = 256 takes minutes, its
// reduce-scatter allocates K·K·ℓ bytes of real memory), so rs runs only while
// K·K·ℓ <= 1 GiB, a2a only for K <= 64, and every smpirun is cut at the
// timeout; skipped figures print as "-".
// Simulated times are deterministic: one run each, no repetitions.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "bench_blocks.h"
#include "matrix/matrix.h"
#include "passes/pipeline.h"
#include "passes/verify.h"
#include "runtime/sim/sim_replay.h"

using namespace collplan;

namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
int g_smpi_timeout = 300;
std::string g_dir;  // temporary directory with the platform and host files

std::string fmt_time(double s) { return std::isnan(s) ? "-" : fmt::format("{:.1f}", s * 1e6); }

// One smpirun of bench/smpi/baselines.cpp; NaN when SMPI is not built or the
// run failed or timed out.
double smpi(const char* method, uint32_t K, size_t len, const char* extra_cfg = "") {
#if defined(COLLPLAN_SMPIRUN) && defined(COLLPLAN_SMPI_BASELINES)
  std::string cmd = fmt::format("timeout {} {} -np {} -platform {}/platform{}.xml -hostfile {}/hosts{}",
                                g_smpi_timeout, COLLPLAN_SMPIRUN, K, g_dir, K, g_dir, K);
  cmd += " --cfg=smpi/coll-selector:ompi --cfg=smpi/simulate-computation:no --log=root.thres:critical ";
  cmd += extra_cfg;
  for (const char* const* c = sim::network_config(); *c; ++c) cmd += std::string(" ") + *c;
  cmd += fmt::format(" {} {} {} 2>/dev/null", COLLPLAN_SMPI_BASELINES, method, len);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return kNone;
  char line[256];
  double t = kNone;
  while (std::fgets(line, sizeof line, p)) {
    char m[16];
    unsigned k = 0;
    size_t l = 0;
    double v = 0;
    if (std::sscanf(line, "SMPI %15s %u %zu %lf", m, &k, &l, &v) == 4 && k == K && l == len) t = v;
  }
  ::pclose(p);
  return t;
#else
  (void)method, (void)K, (void)len, (void)extra_cfg;
  return kNone;
#endif
}

// Open MPI's pairwise all-to-all + local XOR as an encode plan: rank r holds
// x_r; in step i = 1..K−1 it sends A[r][r+i]·x_r to r+i and receives
// A[r−i][r]·x_{r−i}; after the last step y_r = A[r][r]·x_r + Σ received.
ir::Plan pairwise_plan(const Spec& spec, const Matrix& A) {
  const uint32_t K = spec.K;
  ir::Plan plan = ir::make_plan(spec, K - 1);
  plan.spec.algorithm = "pairwise-alltoall";
  for (uint32_t r = 0; r < K; ++r) {
    ir::Program& pr = plan.ranks[r];
    const ir::SlotId x = pr.new_slot();
    pr.inputs = {x};
    std::vector<ir::Term> sum = {{x, A.at(r, r)}};
    for (uint32_t i = 1; i < K; ++i) {
      const uint32_t to = (r + i) % K, from = (r + K - i) % K;
      const ir::SlotId s = pr.new_slot();
      ir::Step& st = pr.at(i);
      st.sends.push_back(ir::make_send(plan, pr, 0, to, {ir::Combo{{{x, A.at(r, to)}}}}));
      st.recvs.push_back(ir::make_recv(plan, pr, i, 0, from, {s}));
      sum.push_back({s, 1});
    }
    const ir::SlotId y = pr.new_slot();
    pr.at(K - 1).ops.push_back(ir::make_op(pr, y, sum));
    pr.outputs = {y};
  }
  return plan;
}

void write_platform(const sim::Platform& pf) {
  std::ofstream(fmt::format("{}/platform{}.xml", g_dir, pf.hosts)) << sim::platform_xml(pf);
  std::ofstream h(fmt::format("{}/hosts{}", g_dir, pf.hosts));
  for (uint32_t i = 0; i < pf.hosts; ++i) h << "h" << i << "\n";
}

double min_of(std::initializer_list<double> v) {
  double m = kNone;
  for (double x : v)
    if (!std::isnan(x) && (std::isnan(m) || x < m)) m = x;
  return m;
}

void bench_encode(const sim::Platform& pf, const std::vector<size_t>& lens) {
  const uint32_t K = pf.hosts;
  const Field f = Field::gf256();
  const Spec spec = make_encode_spec(K, 1, 1, f, matrix_random(K, 42, f));
  const auto res = passes::compile(spec, passes::CompileOptions{});
  const ir::Plan pw = pairwise_plan(spec, materialize(spec.matrix, f));
  if (K <= 64) passes::verify(pw);  // the modeled baseline computes the same encode
  for (size_t len : lens) {
    const sim::SimResult plan = sim::simulate(res.plan, len, pf);
    const double t_pw = sim::simulate(pw, len, pf).time;
    const double t_rs = static_cast<double>(K) * K * len <= (1u << 30) ? smpi("rs", K, len) : kNone;
    const double t_a2a = K <= 64 ? smpi("a2a", K, len) : kNone;
    const double best = min_of({t_rs, t_a2a, t_pw});
    const double model = res.cost.C1 * pf.latency + static_cast<double>(res.cost.C2) * len / pf.bandwidth;
    fmt::print("encode  K={:<5} len={:<8} plan {:>9} us (C1={} C2={} a-b {:.1f} us)  rs {:>9}  a2a {:>9}  pw {:>9}  "
               "plan/best-MPI {:.3f}\n",
               K, len, fmt_time(plan.time), res.cost.C1, res.cost.C2, model * 1e6, fmt_time(t_rs), fmt_time(t_a2a),
               fmt_time(t_pw), plan.time / best);
    fmt::print("RESULT encode {} {} plan {:.9g} rs {:.9g} a2a {:.9g} pw {:.9g}\n", K, len, plan.time, t_rs, t_a2a, t_pw);
    std::fflush(stdout);
  }
}

// A broadcast plan compiled with `algorithm` and n blocks, simulated for a
// message of `len` bytes (blocks of ⌈len/n⌉ bytes).
struct BcastPlan {
  std::string algorithm;
  uint32_t blocks;
  passes::CompileResult res;
  double time(size_t len, const sim::Platform& pf) const {
    return sim::simulate(res.plan, (len + blocks - 1) / blocks, pf).time;
  }
};

BcastPlan bcast_plan(const std::string& algorithm, uint32_t K, uint32_t blocks) {
  passes::CompileOptions opt;
  opt.algorithm = algorithm;
  return {algorithm, blocks, passes::compile(bench::broadcast_spec(K, blocks), opt)};
}

void bench_bcast(const sim::Platform& pf, const std::vector<size_t>& lens) {
  const uint32_t K = pf.hosts;
  const double tau = 1 / pf.bandwidth;  // s per byte; beta = pf.latency per message
  const BcastPlan postal = bcast_plan("postal-broadcast", K, 1);
  for (size_t len : lens) {
    const BcastPlan circ = bcast_plan("circulant-broadcast", K, bench::circulant_blocks(K, len, pf.latency, tau));
    const BcastPlan pipe = bcast_plan("pipelined-broadcast", K,
                                      bench::model_blocks("pipelined-broadcast", K, len, pf.latency, tau));
    const double t = postal.time(len, pf), t_circ = circ.time(len, pf), t_pipe = pipe.time(len, pf);
    const double t_ompi = smpi("bcast", K, len);
    const double t_bin = smpi("bcast", K, len, "--cfg=smpi/bcast:binomial_tree");
    const double best = min_of({t_ompi, t_bin});
    const double model = postal.res.cost.C1 * (pf.latency + static_cast<double>(len) / pf.bandwidth);
    fmt::print("bcast   K={:<5} len={:<8} postal {:>9} us (C1={} a-b {:.1f} us)  circulant n={} {:>9} us (C1={})  "
               "pipelined n={} {:>9} us (C1={})  MPI_Bcast {:>9}  binomial {:>9}  /best-MPI: postal {:.3f} "
               "circulant {:.3f} pipelined {:.3f}\n",
               K, len, fmt_time(t), postal.res.cost.C1, model * 1e6, circ.blocks, fmt_time(t_circ),
               circ.res.cost.C1, pipe.blocks, fmt_time(t_pipe), pipe.res.cost.C1, fmt_time(t_ompi), fmt_time(t_bin),
               t / best, t_circ / best, t_pipe / best);
    fmt::print("RESULT bcast {} {} plan {:.9g} circulant {:.9g} pipelined {:.9g} ompi {:.9g} binomial {:.9g}\n", K, len,
               t, t_circ, t_pipe, t_ompi, t_bin);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t max_k = 1024;
  bool only_bcast = false;  // skip the encode figures
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--max-k") && i + 1 < argc) {
      max_k = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc && !std::strcmp(argv[i + 1], "bcast")) {
      only_bcast = true;
      ++i;
    } else if (!std::strcmp(argv[i], "--smpi-timeout") && i + 1 < argc) {
      g_smpi_timeout = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_sim [--max-k K] [--smpi-timeout SECONDS] [--only bcast]\n");
      return 2;
    }
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "collplan-bench-sim-XXXXXX").string();
  char* dir = tmpl.data();
  if (!::mkdtemp(dir)) {
    std::perror("mkdtemp");
    return 1;
  }
  g_dir = dir;
  const sim::Platform base{0, 1.25e9, 1e-6, 2e10};
  fmt::print("simulated cluster: crossbar, {} Gbit/s links, {} us host to host, {} Gflop/s hosts (CM02, SimGrid); "
             "times in simulated us\n",
             base.bandwidth * 8 / 1e9, base.latency * 1e6, base.speed / 1e9);
#if !defined(COLLPLAN_SMPIRUN)
  fmt::print("SMPI (smpirun) not found: the SMPI baselines print as '-'\n");
#endif
  const std::vector<size_t> lens = {1024, 65536, 1 << 20};
  for (uint32_t K : {64u, 256u, 1024u}) {
    if (K > max_k) break;
    sim::Platform pf = base;
    pf.hosts = K;
    write_platform(pf);
    if (!only_bcast) bench_encode(pf, lens);
    bench_bcast(pf, lens);
  }
  std::filesystem::remove_all(g_dir);
  return 0;
}
