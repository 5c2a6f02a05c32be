// Plans vs MPI's collectives on a simulated cluster (SimGrid), K = 64, 256,
// 1024 hosts (and 4096 for encode, bcast and allreduce with --max-k 4096):
// 10 Gbit/s links, 1 µs host-to-host latency, a crossbar (the platform and
// model of runtime/sim/sim_replay.h).
//
//   bench_sim [--min-k K] [--max-k K] [--smpi-max-k K] [--smpi-timeout SECONDS]
//             [--only GROUP[,GROUP...]]
//   GROUP: encode, bcast, allgather, allreduce, reduce-scatter, repair
//   (default: all; repair runs on N = 16, 64, 256 hosts, see bench_repair)
//
// Above --smpi-max-k (default 1024) smpirun is not run (one SMPI broadcast at
// K = 1024 already takes minutes); modeled MPI baselines stand in, α-β
// formulas on the same platform parameters (see "Modeled MPI baselines"
// below): the binomial-tree broadcast ⌈log2 K⌉(α + ℓτ); the ompi
// selector's allreduce, recursive doubling log2 K·(α + ℓτ) below 10000
// bytes, else Rabenseifner's 2·log2 K·α + 2(K−1)/K·ℓτ, plus the charged
// reduction 2(K−1)/K·ℓ flops; the pairwise all-to-all encode
// (K−1)(ℓ/speed + α + ℓτ) + K·ℓ/speed. Each is
// printed beside SMPI (or the replayed pw plan) wherever that runs too, with
// the ratio, which is the model's check.
//
// encode (GF(2^8), a random K×K matrix): the compiled plan (pipeline::compile,
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
// allgather (ℓ bytes per rank): circulant-allgather and
//   dissemination-allgather, n = 1, vs SMPI's MPI_Allgather.
// allreduce (ℓ bytes, XOR = GF(2^8) addition): circulant-allreduce (n = 1,
//   latency-optimal) and reduce-scatter-allgather with n = K (chunks of
//   ⌈ℓ/K⌉ bytes, bandwidth-optimal) vs SMPI's MPI_Allreduce(MPI_BXOR).
// reduce-scatter (K blocks of ℓ bytes per rank, rank k gets the XOR of every
//   rank's block k): circulant-reduce-scatter and
//   dissemination-reduce-scatter vs SMPI's
//   MPI_Reduce_scatter_block(MPI_BXOR).
//   These six plans are built straight from their generators, not by
//   pipeline::compile, and each is verified before it is simulated, at every
//   K (exact where the sparse check is cheap, else randomized; a "#" line
//   says which).
//   Combination work is charged on both sides: the replay charges a sum of n
//   terms of B bytes n·B flops (a copy nothing), and the SMPI baselines
//   charge their reductions with the same model (smpi_execute_flops after
//   the call, as SMPI does not time the reduction itself): two buffers at a
//   time, 2 flops per byte, at the least any pairwise algorithm does per rank
//   on average — 2·(K−1)/K·ℓ for allreduce, 2·(K−1)·ℓ for reduce-scatter
//   (bench/smpi/baselines.cpp), nothing for allgather. These plans combine
//   pairwise too, so the work is charged alike and MPI is never charged more
//   than its algorithm would be.
//   The rows print each plan's C1, C2, message count, α-β time
//   C1·α + C2·(bytes per element)/bandwidth and charged flops per rank.
// SMPI runs smpirun with --cfg=smpi/coll-selector:ompi (Open MPI's decision
// rules and algorithms) on the same platform file and network options. SMPI
// is slow for some cases (MPI_Alltoall with K = 256 takes minutes, its
// reduce-scatter allocates K·K·ℓ bytes of real memory), so rs and the
// reduce-scatter baseline run only while K·K·ℓ <= 1 GiB, a2a only for
// K <= 64, and every smpirun is cut at the timeout; skipped figures print as
// "-".
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
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_blocks.h"
#include "matrix/matrix.h"
#include "gen/registry.h"
#include "matrix/repair.h"
#include "pipeline/pipeline.h"
#include "pipeline/spec_flags.h"
#include "passes/cost.h"
#include "passes/verify.h"
#include "runtime/sim/sim_replay.h"

using namespace collplan;

namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
int g_smpi_timeout = 300;
// Largest K at which smpirun runs (--smpi-max-k) and at which the pairwise
// plan is replayed rather than only modeled (its K·(K−1) messages: 16.8
// million at K = 4096).
uint32_t g_smpi_max_k = 1024;
constexpr uint32_t kReplayPairwiseMaxK = 1024;
std::string g_dir;  // temporary directory with the platform and host files

std::string fmt_time(double s) { return std::isnan(s) ? "-" : fmt::format("{:.1f}", s * 1e6); }
// A measured / modeled ratio, "-" where the measurement did not run.
std::string fmt_ratio(double r) { return std::isnan(r) ? "-" : fmt::format("{:.3f}", r); }

// One smpirun of bench/smpi/baselines.cpp; NaN when SMPI is not built or the
// run failed or timed out.
double smpi(const char* method, uint32_t K, size_t len, const char* extra_cfg = "") {
  if (K > g_smpi_max_k) return kNone;
#if defined(COLLPLAN_SMPIRUN) && defined(COLLPLAN_SMPI_BASELINES)
  std::string cmd = fmt::format("timeout {} {} -np {} -platform {}/platform{}.xml -hostfile {}/hosts{}",
                                g_smpi_timeout, COLLPLAN_SMPIRUN, K, g_dir, K, g_dir, K);
  // SMPI_SHARED_MALLOC maps every block of shared-malloc-blocksize bytes
  // separately: with the default 1 MiB, the K·ℓ receive buffers of an
  // allgather need K·K·ℓ/2^20 mappings, over Linux's vm.max_map_count
  // (65530) from K = 256, ℓ = 1 MiB. 1 GiB blocks need one per buffer; the
  // contents are never read, and the simulated times do not depend on it.
  cmd += " --cfg=smpi/coll-selector:ompi --cfg=smpi/simulate-computation:no --log=root.thres:critical";
  cmd += " --cfg=smpi/shared-malloc-blocksize:1073741824 ";
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

// ── Modeled MPI baselines ──────────────────────────────────────────────────
//
// Where SMPI is too slow (K = 4096: one smpirun at K = 1024 already takes
// minutes), MPI's algorithms are modeled by α-β formulas on the same platform
// parameters: α = pf.latency per message, τ = 1/pf.bandwidth per byte, and
// the combination work charged as the SMPI baselines charge it (flops at
// pf.speed, one flop per byte and term). A lone message on the simulated
// crossbar takes exactly α + B·τ (runtime/sim/sim_replay.h), and these
// algorithms send at most one message per rank and round, so the formulas
// are the contention-free simulated times. Each model is printed beside the
// SMPI figure (or the replayed plan) at every K where that also runs, with
// their ratio, so the model is checked where both exist.

// Binomial-tree broadcast (SMPI's bcast:binomial_tree, unsegmented):
// ⌈log2 K⌉ rounds of one full message, ⌈log2 K⌉·(α + ℓτ).
double model_binomial_bcast(uint32_t K, size_t len, const sim::Platform& pf) {
  return std::ceil(std::log2(static_cast<double>(K))) * (pf.latency + static_cast<double>(len) / pf.bandwidth);
}

// MPI_Allreduce as SMPI's ompi selector runs it at K = 256 and 1024 from
// 64 KiB: Rabenseifner's algorithm (recursive-halving reduce-scatter, then
// recursive-doubling allgather; K a power of two),
// 2·log2 K·α + 2(K−1)/K·ℓτ. Below 10000 bytes the selector runs recursive
// doubling at K = 64 and reduce + broadcast from K = 256, which SMPI takes
// 30–100 × its α-β time for (its broadcast of small messages, see the
// broadcast rows); the model takes recursive doubling there,
// log2 K·(α + ℓτ), the faster of the two, so it never favours the plans.
// Plus the reduction charged as bench/smpi/baselines.cpp charges it:
// 2(K−1)/K·ℓ flops.
double model_ompi_allreduce(uint32_t K, size_t len, const sim::Platform& pf, const char** name) {
  const double tau = 1 / pf.bandwidth, a = pf.latency, l = static_cast<double>(len), lg = std::ceil(std::log2(K));
  const double flops = 2.0 * (K - 1) / K * l / pf.speed;
  if (len < 10000) {
    *name = "rdb";
    return lg * (a + l * tau) + flops;
  }
  *name = "rabenseifner";
  return 2 * lg * a + 2.0 * (K - 1) / K * l * tau + flops;
}

// Open MPI's pairwise all-to-all + XOR (pairwise_plan above) as the replay
// runs it: in each of the K − 1 steps a rank computes its product for the
// peer (ℓ flops), then sends and receives ℓ bytes (α + ℓτ, the sends and
// receives of a step overlap on the split-duplex links); at the end it XORs
// K products (K·ℓ flops): (K−1)·(ℓ/speed + α + ℓτ) + K·ℓ/speed.
double model_pairwise_encode(uint32_t K, size_t len, const sim::Platform& pf) {
  const double l = static_cast<double>(len);
  return (K - 1) * (l / pf.speed + pf.latency + l / pf.bandwidth) + K * l / pf.speed;
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
  const auto res = pipeline::compile(spec, pipeline::CompileOptions{});
  fmt::print("# encode K={}: {} verified by pipeline::compile, {}\n", K, res.plan.spec.algorithm, res.verify.describe());
  const bool replay_pw = K <= kReplayPairwiseMaxK;
  const ir::Plan pw = replay_pw ? pairwise_plan(spec, materialize(spec.matrix, f)) : ir::Plan{};
  if (K <= 64) passes::verify(pw);  // the modeled baseline computes the same encode
  if (!replay_pw)
    fmt::print("# encode K={}: pw not replayed ({} messages), its alpha-beta model (pw-model) stands in\n", K,
               uint64_t{K} * (K - 1));
  for (size_t len : lens) {
    const sim::SimResult plan = sim::simulate(res.plan, len, pf);
    const double t_pw = replay_pw ? sim::simulate(pw, len, pf).time : kNone;
    const double m_pw = model_pairwise_encode(K, len, pf);
    const double t_rs = static_cast<double>(K) * K * len <= (1u << 30) ? smpi("rs", K, len) : kNone;
    const double t_a2a = K <= 64 ? smpi("a2a", K, len) : kNone;
    const double best = min_of({t_rs, t_a2a, replay_pw ? t_pw : m_pw});
    const double model = res.cost.C1 * pf.latency + static_cast<double>(res.cost.C2) * len / pf.bandwidth;
    fmt::print("encode  K={:<5} len={:<8} plan {:>9} us (C1={} C2={} a-b {:.1f} us)  rs {:>9}  a2a {:>9}  pw {:>9}  "
               "pw-model {:>9} (pw/pw-model {})  plan/best-MPI {:.3f}\n",
               K, len, fmt_time(plan.time), res.cost.C1, res.cost.C2, model * 1e6, fmt_time(t_rs), fmt_time(t_a2a),
               fmt_time(t_pw), fmt_time(m_pw), fmt_ratio(t_pw / m_pw), plan.time / best);
    fmt::print("RESULT encode {} {} plan {:.9g} rs {:.9g} a2a {:.9g} pw {:.9g} pw-model {:.9g}\n", K, len, plan.time,
               t_rs, t_a2a, t_pw, m_pw);
    std::fflush(stdout);
  }
}

// A broadcast plan compiled with `algorithm` and n blocks, simulated for a
// message of `len` bytes (blocks of ⌈len/n⌉ bytes).
struct BcastPlan {
  std::string algorithm;
  uint32_t blocks;
  pipeline::CompileResult res;
  double time(size_t len, const sim::Platform& pf) const {
    return sim::simulate(res.plan, (len + blocks - 1) / blocks, pf).time;
  }
};

BcastPlan bcast_plan(const std::string& algorithm, uint32_t K, uint32_t blocks) {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  BcastPlan b{algorithm, blocks, pipeline::compile(bench::broadcast_spec(K, blocks), opt)};
  fmt::print("# {} K={} n={}: verified by pipeline::compile, {}\n", algorithm, K, blocks, b.res.verify.describe());
  return b;
}

constexpr uint64_t kMaxPipelinedMessages = 4000000;

void bench_bcast(const sim::Platform& pf, const std::vector<size_t>& lens) {
  const uint32_t K = pf.hosts;
  const double tau = 1 / pf.bandwidth;  // s per byte; beta = pf.latency per message
  const BcastPlan postal = bcast_plan("postal-broadcast", K, 1);
  for (size_t len : lens) {
    const BcastPlan circ = bcast_plan("circulant-broadcast", K, bench::circulant_blocks(K, len, pf.latency, tau));
    // The pipelined chain sends K·n messages; past kMaxPipelinedMessages
    // (K = 4096, 1 MiB: n ≈ 1800) its replay takes gigabytes and tens of
    // minutes, so it is skipped there ("-"), with a "#" line.
    const uint32_t n_pipe = bench::model_blocks("pipelined-broadcast", K, len, pf.latency, tau);
    const bool run_pipe = uint64_t{K} * n_pipe <= kMaxPipelinedMessages;
    if (!run_pipe)
      fmt::print("# pipelined-broadcast K={} n={}: not run ({} messages > {})\n", K, n_pipe, uint64_t{K} * n_pipe,
                 kMaxPipelinedMessages);
    std::optional<BcastPlan> pipe;
    if (run_pipe) pipe = bcast_plan("pipelined-broadcast", K, n_pipe);
    const double t = postal.time(len, pf), t_circ = circ.time(len, pf), t_pipe = pipe ? pipe->time(len, pf) : kNone;
    const double t_ompi = smpi("bcast", K, len);
    const double t_bin = smpi("bcast", K, len, "--cfg=smpi/bcast:binomial_tree");
    const double m_bin = model_binomial_bcast(K, len, pf);
    // Without SMPI (K > --smpi-max-k) the modeled binomial tree is the best MPI.
    const double best = std::isnan(t_ompi) && std::isnan(t_bin) ? m_bin : min_of({t_ompi, t_bin});
    const double model = postal.res.cost.C1 * (pf.latency + static_cast<double>(len) / pf.bandwidth);
    fmt::print("bcast   K={:<5} len={:<8} postal {:>9} us (C1={} a-b {:.1f} us)  circulant n={} {:>9} us (C1={})  "
               "pipelined n={} {:>9} us (C1={})  MPI_Bcast {:>9}  binomial {:>9}  binomial-model {:>9} "
               "(binomial/model {})  /best-MPI: postal {:.3f} circulant {:.3f} pipelined {}\n",
               K, len, fmt_time(t), postal.res.cost.C1, model * 1e6, circ.blocks, fmt_time(t_circ),
               circ.res.cost.C1, n_pipe, fmt_time(t_pipe),
               pipe ? fmt::format("{}", pipe->res.cost.C1) : std::string("-"), fmt_time(t_ompi), fmt_time(t_bin),
               fmt_time(m_bin), fmt_ratio(t_bin / m_bin), t / best, t_circ / best, fmt_ratio(t_pipe / best));
    fmt::print("RESULT bcast {} {} plan {:.9g} circulant {:.9g} pipelined {:.9g} ompi {:.9g} binomial {:.9g} "
               "binomial-model {:.9g}\n",
               K, len, t, t_circ, t_pipe, t_ompi, t_bin, m_bin);
    std::fflush(stdout);
  }
}


// Allgather, reduce-scatter and allreduce plans come straight from their
// generator (gen::find_generator(name).build), without the optimisation
// passes, and are verified (passes::verify, auto: exact where cheap, else
// randomized) before they are simulated, at every K.
struct GenPlan {
  std::string algorithm;
  ir::Plan plan;
  passes::CostReport cost;
};

GenPlan gen_plan(const std::string& algorithm, OpKind op, uint32_t K, uint32_t blocks) {
  Spec s;
  s.op = op;
  s.K = K;
  s.field = Field::gf256();
  s.blocks = blocks;
  GenPlan g{algorithm, gen::find_generator(algorithm).build(s, passes::CostModel{}), {}};
  // Every plan is checked before it is simulated: exactly where the sparse
  // check is cheap, else randomized (the reduce-scatter-allgather plan with
  // n = K = 1024 has 2^30 non-zeros in its postcondition).
  const passes::VerifyReport rep = passes::verify(g.plan);
  fmt::print("# {} K={} n={}: verified, {}\n", algorithm, K, blocks, rep.describe());
  g.cost = passes::cost(g.plan);
  return g;
}

// One plan's figures for a row: the simulated time, the α-β time
// C1·α + C2·(bytes per element)/bandwidth and the charged combination work
// per rank (flops = bytes, the replay's model).
struct PlanRow {
  double time, model, flops_per_rank;
  uint64_t messages;
};

PlanRow run_plan(const GenPlan& g, size_t elem_bytes, const sim::Platform& pf) {
  const sim::SimResult r = sim::simulate(g.plan, elem_bytes, pf);
  return {r.time, g.cost.C1 * pf.latency + static_cast<double>(g.cost.C2) * elem_bytes / pf.bandwidth,
          r.flops / pf.hosts, r.messages};
}

std::string plan_text(const GenPlan& g, const PlanRow& r) {
  return fmt::format("{} {:>9} us (C1={} C2={} msgs={} a-b {:.1f} us, {:.0f} flop/rank)", g.algorithm,
                     fmt_time(r.time), g.cost.C1, g.cost.C2, r.messages, r.model * 1e6, r.flops_per_rank);
}

// Two plans of one operation against one SMPI collective, one row per ℓ.
void bench_pair(const char* group, const sim::Platform& pf, const std::vector<size_t>& lens, const GenPlan& a,
                const GenPlan& b, const char* smpi_method, const char* mpi_name,
                const std::function<size_t(size_t)>& elem_bytes_b, const std::function<bool(size_t)>& run_smpi,
                const std::function<double(size_t, const char**)>& mpi_model = nullptr) {
  const uint32_t K = pf.hosts;
  for (size_t len : lens) {
    const PlanRow ra = run_plan(a, len, pf), rb = run_plan(b, elem_bytes_b(len), pf);
    const double t_mpi = run_smpi(len) ? smpi(smpi_method, K, len) : kNone;
    std::string model_text;
    double best = t_mpi, m = kNone;
    if (mpi_model) {
      // The modeled MPI algorithm, beside SMPI where it ran (their ratio
      // checks the model), in its place where it did not.
      const char* alg = "";
      m = mpi_model(len, &alg);
      model_text = fmt::format("  model ({}) {:>9} us (SMPI/model {})", alg, fmt_time(m), fmt_ratio(t_mpi / m));
      if (std::isnan(t_mpi)) best = m;
    }
    fmt::print("{:<14} K={:<5} len={:<8} {}  {}  {} {:>9} us{}  /best-MPI: {:.3f} {:.3f}\n", group, K, len,
               plan_text(a, ra), plan_text(b, rb), mpi_name, fmt_time(t_mpi), model_text, ra.time / best,
               rb.time / best);
    fmt::print("RESULT {} {} {} {} {:.9g} {} {:.9g} ompi {:.9g} model {:.9g}\n", group, K, len, a.algorithm, ra.time,
               b.algorithm, rb.time, t_mpi, m);
    std::fflush(stdout);
  }
}

void bench_allgather(const sim::Platform& pf, const std::vector<size_t>& lens) {
  const uint32_t K = pf.hosts;
  bench_pair("allgather", pf, lens, gen_plan("circulant-allgather", OpKind::Allgather, K, 1),
             gen_plan("dissemination-allgather", OpKind::Allgather, K, 1), "allgather", "MPI_Allgather",
             [](size_t len) { return len; }, [](size_t) { return true; });
}

void bench_reduce_scatter(const sim::Platform& pf, const std::vector<size_t>& lens) {
  const uint32_t K = pf.hosts;
  bench_pair("reduce-scatter", pf, lens, gen_plan("circulant-reduce-scatter", OpKind::ReduceScatter, K, 1),
             gen_plan("dissemination-reduce-scatter", OpKind::ReduceScatter, K, 1), "redscat",
             "MPI_Reduce_scatter_block", [](size_t len) { return len; },
             [K](size_t len) { return static_cast<double>(K) * K * len <= (1u << 30); });
}

void bench_allreduce(const sim::Platform& pf, const std::vector<size_t>& lens) {
  const uint32_t K = pf.hosts;
  // reduce-scatter-allgather with n = K: chunks of ⌈ℓ/K⌉ bytes (ℓ padded to
  // a multiple of K).
  bench_pair("allreduce", pf, lens, gen_plan("circulant-allreduce", OpKind::Allreduce, K, 1),
             gen_plan("reduce-scatter-allgather", OpKind::Allreduce, K, K), "allreduce", "MPI_Allreduce",
             [K](size_t len) { return (len + K - 1) / K; }, [](size_t) { return true; },
             [K, &pf](size_t len, const char** alg) { return model_ompi_allreduce(K, len, pf, alg); });
}

// ── repair ──────────────────────────────────────────────────────────────────
//
// An RS [N, N−4] code over GF(2^8) (GF(2^16) for N = 256: RS needs N
// distinct non-zero points), systematic, chunks of c bytes; one lost
// data chunk, or four lost chunks (0, 1, 2 and N−1). The baseline is the
// centralized repair storage systems do (ISA-L-style decode at one node, as
// in Ceph's and HDFS's erasure coding): the first replacement reads the K
// helpers' chunks, decodes every lost chunk, and sends the others out. It
// is written as a plan (central_repair_plan below) and replayed by the same
// S4U replay, so both sides see the same network and computation model.

// The centralized baseline as a plan: helper i sends its chunk to the first
// lost rank L0 in step i + 1; after step K, L0 computes every lost symbol
// (F from matrix/repair.h) and in steps K + 1 .. K + r − 1 sends symbol j to
// lost rank L_j.
ir::Plan central_repair_plan(const Spec& spec) {
  const RepairMap m = repair_map(spec);
  const uint32_t h = static_cast<uint32_t>(spec.helpers.size()), r = static_cast<uint32_t>(spec.lost.size());
  ir::Plan plan = ir::make_plan(spec, h + r - 1);
  plan.spec.algorithm = "central-repair (one node decodes, ISA-L style)";
  for (uint32_t k = 0; k < spec.N; ++k)
    if (!std::binary_search(spec.lost.begin(), spec.lost.end(), k)) {
      ir::Program& pr = plan.ranks[k];
      pr.inputs = {pr.new_slot()};
    }
  const uint32_t L0 = spec.lost[0];
  ir::Program& node = plan.ranks[L0];
  std::vector<ir::SlotId> got(h);
  for (uint32_t i = 0; i < h; ++i) {
    ir::Program& src = plan.ranks[spec.helpers[i]];
    src.at(i + 1).sends.push_back(ir::make_send(plan, src, 0, L0, {ir::unit(src.inputs[0])}));
    got[i] = node.new_slot();
    node.at(i + 1).recvs.push_back(ir::make_recv(plan, node, i + 1, 0, spec.helpers[i], {got[i]}));
  }
  std::vector<ir::SlotId> sym(r);
  for (uint32_t j = 0; j < r; ++j) {
    std::vector<ir::Term> terms;
    for (uint32_t i = 0; i < h; ++i)
      if (m.F.at(i, j) != 0) terms.push_back({got[i], m.F.at(i, j)});
    sym[j] = node.new_slot();
    node.at(h).ops.push_back(ir::make_op(node, sym[j], terms));
  }
  node.outputs = {sym[0]};
  for (uint32_t j = 1; j < r; ++j) {
    node.at(h + j).sends.push_back(ir::make_send(plan, node, 0, spec.lost[j], {ir::unit(sym[j])}));
    ir::Program& dst = plan.ranks[spec.lost[j]];
    const ir::SlotId s = dst.new_slot();
    dst.at(h + j).recvs.push_back(ir::make_recv(plan, dst, h + j, 0, L0, {s}));
    dst.outputs = {s};
  }
  return plan;
}

Spec repair_bench_spec(uint32_t N, const std::string& lost, uint32_t blocks) {
  pipeline::SpecFlags sf;
  sf.op = "repair";
  sf.N = N;
  sf.K = N - 4;
  sf.code = "rs";
  sf.lost = lost;
  sf.blocks = blocks;
  sf.field = N <= 255 ? "gf256" : "gf65536";  // RS needs N distinct non-zero points
  return pipeline::build_spec(sf);
}

// The most bytes any rank receives, for plan elements of `elem_bytes`.
double max_received(const ir::Plan& plan, double elem_bytes) {
  double most = 0;
  for (const ir::Program& pr : plan.ranks) {
    double got = 0;
    for (const ir::Step& st : pr.steps)
      for (const ir::Recv& rv : st.recvs) got += static_cast<double>(rv.into.size()) * elem_bytes;
    most = std::max(most, got);
  }
  return most;
}

void bench_repair(const sim::Platform& pf, const std::vector<size_t>& chunks) {
  const uint32_t N = pf.hosts;
  const double tau = 1 / pf.bandwidth;
  for (const std::string& lost : {std::string("0"), fmt::format("0,1,2,{}", N - 1)}) {
    const Spec one = repair_bench_spec(N, lost, 1);
    const ir::Plan central = central_repair_plan(one);
    passes::verify(central, passes::VerifyOptions{passes::VerifyMode::Exact, 0, 1});
    const uint32_t r = static_cast<uint32_t>(one.lost.size()), h = static_cast<uint32_t>(one.helpers.size());
    // The generators' plans of one block are verified exactly; the
    // pipelined plans of many blocks (over the dense checker's limit at
    // large N) come from the same generator code, verified at N = 16 with 4
    // blocks.
    std::vector<std::pair<std::string, ir::Plan>> fixed;
    for (const char* alg : {"repair-central", "repair-tree", "repair-decentralized"}) {
      pipeline::CompileOptions opt;
      opt.algorithm = alg;
      fixed.emplace_back(alg, pipeline::compile(one, opt).plan);
    }
    if (N == 16) {
      pipeline::CompileOptions opt;
      opt.algorithm = "repair-pipelined";
      (void)pipeline::compile(repair_bench_spec(N, lost, 4), opt);  // verified exactly by compile
    }
    const size_t eb = one.field.elem_bytes();
    for (size_t c : chunks) {
      const size_t elems = c / eb;  // a chunk of c bytes as field elements
      const double t_central = sim::simulate(central, elems, pf).time,
                   b_central = max_received(central, static_cast<double>(c));
      const double one_chunk = pf.latency + static_cast<double>(c) * tau;
      fmt::print("repair  N={:<4} K={:<4} {} lost={:<10} chunk={:<9} central (one node decodes) {:>10} us, most "
                 "received {:.0f} MiB\n",
                 N, N - 4, one.field.name(), lost, c, fmt_time(t_central), b_central / (1 << 20));
      std::string result = fmt::format("RESULT repair {} {} {} central {:.9g}", N, r, c, t_central);
      for (const auto& [alg, plan] : fixed) {
        const double t = sim::simulate(plan, elems, pf).time, b = max_received(plan, static_cast<double>(c));
        const passes::CostReport cost = passes::cost(plan);
        fmt::print("        {:<22} n=1    {:>10} us (C1={} C2={})  /central {:.3f}  most received {:.0f} MiB ({:.2f}x "
                   "central's)\n",
                   alg, fmt_time(t), cost.C1, cost.C2, t / t_central, b / (1 << 20), b / b_central);
        result += fmt::format(" {} {:.9g}", alg, t);
      }
      // Pipelined: n by the alpha-beta model of its estimate, at most ~2M
      // messages in all (the simulation's memory and time).
      uint32_t best = 1;
      double best_t = std::numeric_limits<double>::infinity();
      const uint32_t cap = static_cast<uint32_t>(std::min<uint64_t>(elems, 2000000 / (uint64_t{r} * (h + 1))));
      const gen::PostalSplitCost e = gen::find_generator("repair-pipelined").estimate(one, {});  // n = 1
      for (uint32_t n = 1; n <= cap; n += (n < 64 ? 1 : n / 32)) {
        const double C1 = r * (n - 1.0) + e.C1, C2 = r * (n - 1.0) + static_cast<double>(e.C2);
        const double t = C1 * pf.latency + C2 * tau * static_cast<double>(eb * ((elems + n - 1) / n));
        if (t < best_t) best_t = t, best = n;
      }
      Spec sn = one;
      sn.blocks = best;
      const ir::Plan pipe = gen::find_generator("repair-pipelined").build(sn, passes::CostModel{});
      const size_t block = (elems + best - 1) / best;
      const double t_pipe = sim::simulate(pipe, block, pf).time,
                   b_pipe = max_received(pipe, static_cast<double>(block * eb));
      const passes::CostReport pc = passes::cost(pipe);
      fmt::print("        {:<22} n={:<4} {:>10} us (C1={} C2={})  /central {:.3f}  most received {:.0f} MiB ({:.2f}x "
                 "central's)  /one chunk's transfer {:.3f}\n",
                 "repair-pipelined", best, fmt_time(t_pipe), pc.C1, pc.C2, t_pipe / t_central, b_pipe / (1 << 20),
                 b_pipe / b_central, t_pipe / (r * one_chunk));
      fmt::print("{} repair-pipelined {:.9g} one-chunk {:.9g}\n", result, t_pipe, one_chunk);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: bench_sim [--min-k K] [--max-k K] [--smpi-max-k K] [--smpi-timeout SECONDS] [--only GROUP[,GROUP...]]\n"
      "  GROUP: encode, bcast, allgather, allreduce, reduce-scatter, repair (default: all)\n"
      "  --max-k K       run K = 64, 256, 1024 (and 4096: encode, bcast, allreduce) up to K (default 1024)\n"
      "  --min-k K       skip the host counts below K (default 64; repair is not affected)\n"
      "  --smpi-max-k K  run smpirun only up to K hosts (default 1024); above, modeled MPI baselines stand in\n"
      "  --smpi-timeout  cut every smpirun after SECONDS (default 300)\n";
  const std::vector<std::string> all_groups = {"encode",    "bcast",         "allgather",
                                               "allreduce", "reduce-scatter", "repair"};
  uint32_t max_k = 1024, min_k = 64;
  std::vector<std::string> groups = all_groups;
  for (int i = 1; i < argc; ++i) {
    if ((!std::strcmp(argv[i], "--max-k") || !std::strcmp(argv[i], "--min-k") || !std::strcmp(argv[i], "--smpi-max-k")) &&
        i + 1 < argc) {
      const char* opt = argv[i];
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 1 << 20) {
        std::fprintf(stderr, "bench_sim: %s '%s': expected a host count from 1 to %d\n%s", opt, argv[i], 1 << 20,
                     usage);
        return 2;
      }
      (!std::strcmp(opt, "--max-k")   ? max_k
       : !std::strcmp(opt, "--min-k") ? min_k
                                      : g_smpi_max_k) = static_cast<uint32_t>(v);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      groups.clear();
      std::istringstream in(argv[++i]);
      for (std::string g; std::getline(in, g, ',');) {
        if (std::find(all_groups.begin(), all_groups.end(), g) == all_groups.end()) {
          std::fprintf(stderr, "bench_sim: unknown group '%s'\n%s", g.c_str(), usage);
          return 2;
        }
        groups.push_back(g);
      }
    } else if (!std::strcmp(argv[i], "--smpi-timeout") && i + 1 < argc) {
      g_smpi_timeout = std::atoi(argv[++i]);
    } else {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  auto want = [&](const char* g) { return std::find(groups.begin(), groups.end(), g) != groups.end(); };
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
  for (uint32_t K : {64u, 256u, 1024u, 4096u}) {
    if (K > max_k) break;
    if (K < min_k) continue;
    sim::Platform pf = base;
    pf.hosts = K;
    write_platform(pf);
    if (K > g_smpi_max_k) fmt::print("# K={}: SMPI not run (--smpi-max-k {}), modeled MPI baselines\n", K, g_smpi_max_k);
    // K = 4096 is run for encode, broadcast and allreduce only.
    const bool big = K > 1024;
    if (want("encode")) bench_encode(pf, lens);
    if (want("bcast")) bench_bcast(pf, lens);
    if (want("allgather") && !big) bench_allgather(pf, lens);
    if (want("allreduce")) bench_allreduce(pf, lens);
    if (want("reduce-scatter") && !big) bench_reduce_scatter(pf, lens);
  }
  // Repair: N = 16, 64, 256 hosts (K = N − 4), chunks of 1 MiB and 64 MiB.
  if (want("repair"))
    for (uint32_t N : {16u, 64u, 256u}) {
      if (N > max_k) break;
      sim::Platform pf = base;
      pf.hosts = N;
      bench_repair(pf, {size_t{1} << 20, size_t{64} << 20});
    }
  std::filesystem::remove_all(g_dir);
  return 0;
}
