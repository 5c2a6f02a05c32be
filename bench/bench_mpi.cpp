// Plans replayed over MPI against MPI's own collectives, in one mpirun.
// Run it with scripts/bench_mpi.sh (mpirun -np K, oversubscribed on small
// machines) rather than directly.
//
// For the communicator's size K and each vector size ℓ (bytes; GF(2^8), so
// ℓ elements) it times, interleaved within every repetition (barrier, run,
// slowest rank's time by MPI_MAX), median over the repetitions:
//   encode    the compiled all-to-all encode plan (collplan::mpi::Collective)
//             vs the natural MPI baselines, which first multiply x_k by row k
//             of A locally (K products) and then either
//               rs:  MPI_Reduce_scatter_block(MPI_BXOR), or
//               a2a: MPI_Alltoall + XOR of the K received blocks;
//             "best MPI" is the faster of the two; and vs
//               hand: a hand-written MPI loop of the same plan (per step:
//             combine payloads into buffers, Isend/Irecv, Waitall, copy
//             received elements into slots, run the ops; no engine), which
//             measures the engine's overhead (target: <= 5 %;
//             docs/benchmarks.md).
//   bcast     broadcast plans vs MPI_Bcast of ℓ bytes: postal-broadcast
//             (λ = 1; 1 block, and 4 blocks of ℓ/4; and λ = K − 1, the star,
//             for a machine whose latency is long against the time to post
//             a message), circulant-broadcast with
//             n = `--blocks auto` (gen::circulant_auto_blocks under the
//             ping-pong α, β below) and pipelined-broadcast (a chain; n the
//             argmin of the same model over its C1, C2 estimate);
//   allgv     circulant-allgatherv with irregular counts (rank j: 1 + 3j mod 4
//             elements of ℓ bytes, n = 2) and (K a power of two)
//             recursive-doubling-allgather, direct-allgather (λ = K − 1)
//             vs MPI_Allgatherv;
//   allg      circulant-, dissemination-, (K a power of two)
//             recursive-doubling- and (λ = K − 1) direct-allgather vs
//             MPI_Allgather (ℓ bytes per rank);
//   allred    circulant-allreduce and dissemination-allreduce (latency-
//             optimal), reduce-scatter-allgather and (K a power of two)
//             recursive-halving-doubling (bandwidth-optimal, n = K chunks),
//             postal-allreduce with λ = K − 1 (two stars)
//             vs MPI_Allreduce(MPI_BXOR) of ℓ bytes;
//   redscat   circulant- and dissemination-reduce-scatter, (K a power of
//             two) recursive-halving, direct-reduce-scatter with λ = K − 1 vs
//             MPI_Reduce_scatter_block(MPI_BXOR), ℓ bytes per block;
//   reduce    tree-reduce (n = 1), circulant-reduce and pipelined-reduce
//             (n = 4), postal-reduce with λ = K − 1 (the star) vs
//             MPI_Reduce(MPI_BXOR) to rank 0;
//   scan      postal-prefix (inclusive) vs MPI_Scan(MPI_BXOR);
//   wrap      (not in the default set) no plan: the dissemination allgather
//             by hand, messages as one run vs wrapped in two pieces
//             (bench_wrap below), vs MPI_Allgather.
// Beside each time: C1, bytes sent by the busiest rank (C2·ℓ for the plan;
// for the baselines what each algorithm must send at least, (K−1)·ℓ), and the
// modeled time α·C1 + β·bytes with α, β from a ping-pong between ranks 0 and
// 1 measured at start. Every plan's output is compared with its baseline's
// byte for byte before timing; a difference aborts the benchmark.
//
// COLLPLAN_LATE_SENDS=0 in the environment: every plan's sends complete in
// the step they are due (rt::EngineOptions::late_sends = false), to compare
// with the default in alternating runs.
//
// Output: human-readable rows (each plan's with its engine copies: the
// largest staged and delivered bytes over the ranks, as `collplan run
// --stats` counts them), and one "RESULT ..." line per time and per plan /
// baseline ratio for scripts/bench_mpi.sh to aggregate over whole runs.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_blocks.h"
#include "gen/recursive_doubling.h"
#include "matrix/matrix.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "runtime/gf/gf_kernels.h"
#include "runtime/transport/mpi.h"

using namespace collplan;

namespace {

rt::EngineOptions engine_options() {
  rt::EngineOptions o;
  const char* late = std::getenv("COLLPLAN_LATE_SENDS");
  o.late_sends = !late || std::strcmp(late, "0") != 0;
  return o;
}

int g_rank = 0, g_size = 0;

double slowest(double t) {
  double m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Method {
  std::string name;
  std::function<void()> run;
  uint32_t C1 = 0;
  double bytes = 0;  // sent by the busiest rank
  std::vector<double> times;
  const rt::Engine* engine = nullptr;  // a plan's: its copy figures are printed beside it
};

// Times the methods interleaved: each repetition runs each once (starting
// with a different one each time), slowest rank's time each.
void measure(std::vector<Method>& ms, int reps) {
  for (auto& m : ms) m.run();  // warm-up
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < ms.size(); ++i) {
      Method& m = ms[(i + static_cast<size_t>(r)) % ms.size()];
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      m.run();
      m.times.push_back(slowest(MPI_Wtime() - t0));
    }
}

// α (s per message) and β (s per byte) from ping-pongs between ranks 0 and 1.
void calibrate(double& alpha, double& beta) {
  // Median of single round trips: robust to the descheduling an
  // oversubscribed machine inflicts on a few of them.
  auto pingpong = [](size_t bytes, int iters) {
    std::vector<char> buf(bytes);
    std::vector<double> rtt;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters; ++i) {
      const double t0 = MPI_Wtime();
      if (g_rank == 0) {
        MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (g_rank == 1) {
        MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
      rtt.push_back(MPI_Wtime() - t0);
    }
    double t = median(rtt) / 2;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
  };
  alpha = pingpong(1, 200);
  const size_t big = 1 << 20;
  beta = std::max(pingpong(big, 21) - alpha, 0.0) / big;
}

// A hand-written MPI loop of one rank's program (λ = 1): no engine, no
// transport interface, the plan's steps walked directly with the same GF
// kernels. Buffers are allocated once.
class HandLoop {
 public:
  HandLoop(const ir::Plan& plan, size_t len) : f_(plan.spec.field), prog_(plan.ranks[g_rank]), len_(len) {
    const size_t row = len * f_.elem_bytes();
    slots_.assign(prog_.num_slots, std::vector<unsigned char>(row));
    tmp_.resize(row);
    for (const ir::Step& st : prog_.steps) {
      for (const ir::Send& s : st.sends) sbuf_.emplace_back(s.payload.size() * row);
      for (const ir::Recv& r : st.recvs) rbuf_.emplace_back(r.into.size() * row);
    }
    reqs_.resize(16);
  }

  void run(const unsigned char* in, unsigned char* out) {
    const size_t row = len_ * f_.elem_bytes();
    for (size_t i = 0; i < prog_.inputs.size(); ++i) std::memcpy(slots_[prog_.inputs[i]].data(), in + i * row, row);
    size_t sb = 0, rb = 0;
    for (const ir::Step& st : prog_.steps) {
      int nreq = 0;
      if (reqs_.size() < st.sends.size() + st.recvs.size()) reqs_.resize(st.sends.size() + st.recvs.size());
      for (const ir::Send& s : st.sends) {
        unsigned char* buf = sbuf_[sb++].data();
        for (size_t e = 0; e < s.payload.size(); ++e) combine(s.payload[e].terms, buf + e * row);
        MPI_Isend(buf, static_cast<int>(s.payload.size() * row), MPI_BYTE, static_cast<int>(s.to),
                  static_cast<int>(s.port), MPI_COMM_WORLD, &reqs_[nreq++]);
      }
      const size_t rb0 = rb;
      for (const ir::Recv& r : st.recvs)
        MPI_Irecv(rbuf_[rb++].data(), static_cast<int>(r.into.size() * row), MPI_BYTE, static_cast<int>(r.from),
                  static_cast<int>(r.port), MPI_COMM_WORLD, &reqs_[nreq++]);
      MPI_Waitall(nreq, reqs_.data(), MPI_STATUSES_IGNORE);
      for (size_t i = 0; i < st.recvs.size(); ++i)
        for (size_t e = 0; e < st.recvs[i].into.size(); ++e)
          std::memcpy(slots_[st.recvs[i].into[e]].data(), rbuf_[rb0 + i].data() + e * row, row);
      for (const ir::Op& op : st.ops) {
        combine(op.terms, tmp_.data());
        std::memcpy(slots_[op.dst].data(), tmp_.data(), row);
      }
    }
    for (size_t j = 0; j < prog_.outputs.size(); ++j) std::memcpy(out + j * row, slots_[prog_.outputs[j]].data(), row);
  }

 private:
  void combine(std::span<const ir::Term> terms, unsigned char* dst) {
    if (terms.empty()) {
      std::memset(dst, 0, len_ * f_.elem_bytes());
      return;
    }
    gf::mul(f_, terms[0].coeff, slots_[terms[0].slot].data(), dst, len_);
    for (size_t i = 1; i < terms.size(); ++i) gf::mad(f_, terms[i].coeff, slots_[terms[i].slot].data(), dst, len_);
  }

  const Field f_;
  const ir::Program& prog_;
  size_t len_;
  std::vector<std::vector<unsigned char>> slots_, sbuf_, rbuf_;
  std::vector<unsigned char> tmp_;
  std::vector<MPI_Request> reqs_;
};

void report(const char* what, size_t len, const std::vector<Method>& ms, double alpha, double beta,
            const std::string& ratios) {
  // A plan's engine copies of its last run (`collplan run --stats`), the
  // largest over the ranks: staged by the engine itself, and delivered.
  std::vector<std::string> copies(ms.size());
  for (size_t i = 0; i < ms.size(); ++i) {
    if (!ms[i].engine) continue;
    const auto& st = ms[i].engine->stats();
    uint64_t mine[2] = {st.staged_bytes, st.delivered_bytes}, most[2] = {0, 0};
    MPI_Reduce(mine, most, 2, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    char b[96];
    std::snprintf(b, sizeof b, "  engine copies: %llu bytes staged, %llu bytes delivered",
                  static_cast<unsigned long long>(most[0]), static_cast<unsigned long long>(most[1]));
    copies[i] = b;
  }
  if (g_rank != 0) return;
  for (size_t i = 0; i < ms.size(); ++i) {
    const Method& m = ms[i];
    const double med = median(m.times);
    std::printf("%-7s K=%-3d len=%-8zu %-30s %10.3f ms   C1=%-3u sent/rank=%9.0f KiB  model=%9.3f ms%s\n", what, g_size,
                len, m.name.c_str(), med * 1e3, m.C1, m.bytes / 1024, (alpha * m.C1 + beta * m.bytes) * 1e3,
                copies[i].c_str());
    std::string key = m.name;  // one word for the RESULT line
    std::replace(key.begin(), key.end(), ' ', '_');
    std::printf("RESULT %s %d %zu %s %.9f\n", what, g_size, len, key.c_str(), med);
  }
  std::printf("%s\n", ratios.c_str());
}

void bench_encode(size_t len, int reps, double alpha, double beta) {
  const uint32_t K = static_cast<uint32_t>(g_size);
  const Field f = Field::gf256();
  const Spec spec = make_encode_spec(K, 1, 1, f, matrix_random(K, 42, f));
  const auto res = pipeline::compile(spec, pipeline::CompileOptions{});
  const ir::Plan& plan = res.plan;
  const Matrix A = materialize(spec.matrix, f);

  std::vector<unsigned char> x(len), y_plan(len), y_rs(len), y_a2a(len), y_hand(len), prod(K * len), recv(K * len);
  for (size_t i = 0; i < len; ++i) x[i] = static_cast<unsigned char>((i * 131 + g_rank * 7919 + 17) & 0xFF);
  mpi::Collective coll(plan, MPI_COMM_WORLD, engine_options());
  HandLoop hand(plan, len);
  // Local products: x_k times row k of A (contribution to every rank's output).
  auto products = [&] {
    for (uint32_t j = 0; j < K; ++j) gf::mul(f, A.at(static_cast<uint32_t>(g_rank), j), x.data(), prod.data() + j * len, len);
  };
  std::vector<Method> ms;
  const double plan_bytes = static_cast<double>(res.cost.C2) * len;
  const double base_bytes = static_cast<double>(K - 1) * len;
  const auto log2K = static_cast<uint32_t>(std::ceil(std::log2(K)));
  ms.push_back({"plan (" + plan.spec.algorithm + ")", [&] { coll.run(x.data(), y_plan.data(), len); }, res.cost.C1,
                plan_bytes, {}, &coll.engine()});
  ms.push_back({"hand-written loop", [&] { hand.run(x.data(), y_hand.data()); }, res.cost.C1, plan_bytes, {}});
  ms.push_back({"mpi reduce_scatter", [&] {
                  products();
                  MPI_Reduce_scatter_block(prod.data(), y_rs.data(), static_cast<int>(len), MPI_BYTE, MPI_BXOR,
                                           MPI_COMM_WORLD);
                },
                log2K, base_bytes, {}});
  ms.push_back({"mpi alltoall+xor", [&] {
                  products();
                  MPI_Alltoall(prod.data(), static_cast<int>(len), MPI_BYTE, recv.data(), static_cast<int>(len), MPI_BYTE,
                               MPI_COMM_WORLD);
                  std::memcpy(y_a2a.data(), recv.data(), len);
                  for (uint32_t j = 1; j < K; ++j) gf::add(f, recv.data() + j * len, y_a2a.data(), len);
                },
                K - 1, base_bytes, {}});
  for (auto& m : ms) m.run();
  int bad = !(y_plan == y_rs && y_plan == y_a2a && y_plan == y_hand), any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    if (g_rank == 0) std::fprintf(stderr, "bench_mpi: encode K=%u len=%zu: outputs differ between methods\n", K, len);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  measure(ms, reps);
  const double plan_t = median(ms[0].times), hand_t = median(ms[1].times);
  const double best = std::min(median(ms[2].times), median(ms[3].times));
  char line[256];
  std::snprintf(line, sizeof line,
                "  -> plan/best-MPI = %.2f (best MPI: %s; < 1 means the plan is faster); engine overhead "
                "plan/hand = %.3f",
                plan_t / best, median(ms[2].times) < median(ms[3].times) ? "reduce_scatter" : "alltoall+xor",
                plan_t / hand_t);
  report("encode", len, ms, alpha, beta, line);
  if (g_rank == 0) {
    std::printf("RESULT ratio_best %d %zu plan/best %.6f\n", g_size, len, plan_t / best);
    std::printf("RESULT ratio_hand %d %zu plan/hand %.6f\n", g_size, len, plan_t / hand_t);
  }
}

// One compiled plan, bound to the communicator, with its buffers: `in` holds
// this rank's inputs and `out` its outputs, `count` bytes each.
struct PlanRun {
  std::unique_ptr<mpi::Collective> coll;
  std::vector<unsigned char> in, out;
  size_t count = 0;
};

// Compiles `spec` with `algorithm` and adds it to `ms` as `name`; the run
// replays it from run.in to run.out (sized here; the caller fills run.in).
PlanRun& add_plan(std::vector<Method>& ms, std::vector<std::unique_ptr<PlanRun>>& runs, const std::string& name,
                  const Spec& spec, const std::string& algorithm, size_t count) {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  const auto res = pipeline::compile(spec, opt);
  runs.push_back(std::make_unique<PlanRun>());
  PlanRun* r = runs.back().get();
  r->coll = std::make_unique<mpi::Collective>(res.plan, MPI_COMM_WORLD, engine_options());
  r->count = count;
  r->in.resize(r->coll->num_inputs() * count);
  r->out.resize(r->coll->num_outputs() * count);
  ms.push_back({name, [r] { r->coll->run(r->in.data(), r->out.data(), r->count); }, res.cost.C1,
                static_cast<double>(res.cost.C2) * count, {}, &r->coll->engine()});
  return *r;
}

// Aborts the benchmark unless every rank's `ok` holds.
void require_all(bool ok, const char* what, size_t len) {
  int bad = !ok, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    if (g_rank == 0) std::fprintf(stderr, "bench_mpi: %s K=%d len=%zu: outputs differ between methods\n", what, g_size, len);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// Times ms (the last one the MPI baseline) and prints each plan's ratio to it.
void measure_and_report(const char* what, size_t len, std::vector<Method>& ms, int reps, double alpha, double beta,
                        const char* baseline) {
  measure(ms, reps);
  std::string line = std::string("  -> plan/") + baseline + ":";
  for (size_t i = 0; i + 1 < ms.size(); ++i) {
    char r[128];
    const double ratio = median(ms[i].times) / median(ms.back().times);
    std::snprintf(r, sizeof r, " %s %.2f", ms[i].name.c_str(), ratio);
    line += r;
  }
  report(what, len, ms, alpha, beta, line);
  // One RESULT line per plan and ratio, so scripts/bench_mpi.sh's summary
  // gives the median ratio over its whole runs for every operation.
  if (g_rank == 0)
    for (size_t i = 0; i + 1 < ms.size(); ++i) {
      std::string key = ms[i].name + "/" + baseline;
      std::replace(key.begin(), key.end(), ' ', '_');
      std::printf("RESULT ratio_%s %d %zu %s %.6f\n", what, g_size, len, key.c_str(),
                  median(ms[i].times) / median(ms.back().times));
    }
}

// Postal (1 and 4 blocks), circulant (n = --blocks auto under the measured
// α, β) and pipelined (chain, n = model argmin) broadcasts vs MPI_Bcast. A
// length n does not divide is padded to n·⌈ℓ/n⌉; ℓ bytes are compared.
void bench_bcast(size_t len, int reps, double alpha, double beta) {
  const uint32_t K = static_cast<uint32_t>(g_size);
  std::vector<Method> ms;
  std::vector<std::unique_ptr<PlanRun>> runs;
  std::vector<unsigned char> root_data(len), b(len);
  for (size_t i = 0; i < len; ++i) root_data[i] = static_cast<unsigned char>(i * 37 + 11);
  auto add = [&](const std::string& name, const std::string& algorithm, uint32_t blocks, uint32_t lambda = 1) {
    const size_t blk = (len + blocks - 1) / blocks;
    Spec spec = bench::broadcast_spec(K, blocks);
    spec.lambda = lambda;
    PlanRun& r = add_plan(ms, runs, name + " n=" + std::to_string(blocks), spec, algorithm, blk);
    if (g_rank == 0) std::memcpy(r.in.data(), root_data.data(), len);
  };
  for (uint32_t blocks : {1u, 4u})
    if (len % blocks == 0) add("postal", "postal-broadcast", blocks);
  add("postal lambda=K-1", "postal-broadcast", 1, K - 1);  // the star: the root sends to every rank
  add("circulant", "circulant-broadcast", bench::circulant_blocks(K, len, alpha, beta));
  add("pipelined", "pipelined-broadcast", bench::model_blocks("pipelined-broadcast", K, len, alpha, beta));
  ms.push_back({"mpi bcast", [&] {
                  if (g_rank == 0) std::memcpy(b.data(), root_data.data(), len);
                  MPI_Bcast(b.data(), static_cast<int>(len), MPI_BYTE, 0, MPI_COMM_WORLD);
                },
                static_cast<uint32_t>(std::ceil(std::log2(K))), static_cast<double>(len), {}});
  for (auto& m : ms) m.run();
  bool ok = b == root_data;
  for (const auto& r : runs) ok = ok && std::equal(root_data.begin(), root_data.end(), r->out.begin());
  require_all(ok, "bcast", len);
  measure_and_report("bcast", len, ms, reps, alpha, beta, "MPI_Bcast");
}

// Irregular allgatherv: rank j contributes counts[j] = 1 + (3j mod 4) plan
// elements of ℓ bytes (1..4 ℓ, so ranks differ up to 4×), circulant-
// allgatherv with n = 2 pieces per root, vs MPI_Allgatherv of the same bytes.
void bench_allgatherv(size_t len, int reps, double alpha, double beta) {
  const uint32_t K = static_cast<uint32_t>(g_size);
  Spec s;
  s.op = OpKind::Allgatherv;
  s.K = K;
  s.field = Field::gf256();
  s.blocks = 2;
  std::vector<int> rcounts(K), displs(K);
  size_t total = 0;
  for (uint32_t j = 0; j < K; ++j) {
    s.counts.push_back(1 + (3 * j) % 4);
    rcounts[j] = static_cast<int>(s.counts[j] * len);
    displs[j] = static_cast<int>(total);
    total += s.counts[j] * len;
  }
  std::vector<Method> ms;
  std::vector<std::unique_ptr<PlanRun>> runs;
  PlanRun& r = add_plan(ms, runs, "circulant-allgatherv n=2", s, "circulant-allgatherv", len);
  for (size_t i = 0; i < r.in.size(); ++i) r.in[i] = static_cast<unsigned char>((i * 131 + g_rank * 7919 + 17) & 0xFF);
  if (gen::recursive_doubling_why_not(s).empty()) {  // K a power of two: n = 1, every message one run
    Spec one = s;
    one.blocks = 1;
    add_plan(ms, runs, "recursive-doubling-allgather", one, "recursive-doubling-allgather", len).in = r.in;
  }
  Spec direct = s;  // every message in flight at once, each one rank's run
  direct.blocks = 1;
  direct.lambda = K - 1;
  add_plan(ms, runs, "direct-allgather lambda=K-1", direct, "direct-allgather", len).in = r.in;
  std::vector<unsigned char> b(total);
  ms.push_back({"mpi allgatherv", [&] {
                  MPI_Allgatherv(r.in.data(), rcounts[g_rank], MPI_BYTE, b.data(), rcounts.data(), displs.data(),
                                 MPI_BYTE, MPI_COMM_WORLD);
                },
                static_cast<uint32_t>(std::ceil(std::log2(K))), static_cast<double>(total - rcounts[g_rank]), {}});
  for (auto& m : ms) m.run();
  bool ok = true;
  for (const auto& run : runs) ok = ok && run->out == b;
  require_all(ok, "allgatherv", len);
  measure_and_report("allgv", len, ms, reps, alpha, beta, "MPI_Allgatherv");
}

// Allgather: circulant-allgather, dissemination-allgather and (K a power of
// two) recursive-doubling-allgather (n = 1, ℓ bytes per rank) vs
// MPI_Allgather. Allreduce of ℓ bytes vs
// MPI_Allreduce(MPI_BXOR) (GF(2^8) addition is XOR): the latency-optimal
// circulant- and dissemination-allreduce (n = 1, the whole vector per
// message) and the
// bandwidth-optimal reduce-scatter-allgather and, K a power of two,
// recursive-halving-doubling (n = K chunks of ⌈ℓ/K⌉ bytes,
// ℓ padded to K⌈ℓ/K⌉ and ℓ bytes compared).
void bench_allgather_allreduce(size_t len, int reps, double alpha, double beta) {
  const uint32_t K = static_cast<uint32_t>(g_size);
  const auto log2K = static_cast<uint32_t>(std::ceil(std::log2(K)));
  auto spec_of = [&](OpKind op, uint32_t n) {
    Spec s;
    s.op = op;
    s.K = K;
    s.field = Field::gf256();
    s.blocks = n;
    return s;
  };
  auto fill = [&](std::vector<unsigned char>& v, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 131 + g_rank * 7919 + 17) & 0xFF);
  };
  {
    std::vector<Method> ms;
    std::vector<std::unique_ptr<PlanRun>> runs;
    for (const char* alg : {"circulant-allgather", "dissemination-allgather", "recursive-doubling-allgather"}) {
      if (!gen::recursive_doubling_why_not(spec_of(OpKind::Allgather, 1)).empty() &&
          std::string(alg) == "recursive-doubling-allgather")
        continue;  // K not a power of two
      fill(add_plan(ms, runs, alg, spec_of(OpKind::Allgather, 1), alg, len).in, len);
    }
    Spec direct = spec_of(OpKind::Allgather, 1);  // every message in flight at once
    direct.lambda = K - 1;
    fill(add_plan(ms, runs, "direct-allgather lambda=K-1", direct, "direct-allgather", len).in, len);
    std::vector<unsigned char> b(runs[0]->out.size());
    ms.push_back({"mpi allgather", [&] {
                    MPI_Allgather(runs[0]->in.data(), static_cast<int>(len), MPI_BYTE, b.data(),
                                  static_cast<int>(len), MPI_BYTE, MPI_COMM_WORLD);
                  },
                  log2K, static_cast<double>(K - 1) * len, {}});
    for (auto& m : ms) m.run();
    bool ok = true;
    for (const auto& r : runs) ok = ok && r->out == b;
    require_all(ok, "allgather", len);
    measure_and_report("allg", len, ms, reps, alpha, beta, "MPI_Allgather");
  }
  {
    std::vector<Method> ms;
    std::vector<std::unique_ptr<PlanRun>> runs;
    for (const char* alg : {"circulant-allreduce", "dissemination-allreduce"})
      fill(add_plan(ms, runs, alg, spec_of(OpKind::Allreduce, 1), alg, len).in, len);
    const size_t chunk = (len + K - 1) / K;
    PlanRun& rsag = add_plan(ms, runs, "reduce-scatter-allgather n=K", spec_of(OpKind::Allreduce, K),
                             "reduce-scatter-allgather", chunk);
    fill(rsag.in, len);
    if (gen::recursive_doubling_why_not(spec_of(OpKind::Allreduce, K)).empty())  // K a power of two
      fill(add_plan(ms, runs, "recursive-halving-doubling n=K", spec_of(OpKind::Allreduce, K),
                    "recursive-halving-doubling", chunk)
               .in,
           len);
    Spec star = spec_of(OpKind::Allreduce, 1);  // two stars: every rank to 0, 0 to every rank
    star.lambda = K - 1;
    fill(add_plan(ms, runs, "postal-allreduce lambda=K-1", star, "postal-allreduce", len).in, len);
    std::vector<unsigned char> b(len);
    ms.push_back({"mpi allreduce bxor", [&] {
                    MPI_Allreduce(runs[0]->in.data(), b.data(), static_cast<int>(len), MPI_BYTE, MPI_BXOR,
                                  MPI_COMM_WORLD);
                  },
                  log2K, 2.0 * (K - 1) / K * len, {}});
    for (auto& m : ms) m.run();
    bool ok = true;
    for (const auto& r : runs) ok = ok && std::equal(b.begin(), b.end(), r->out.begin());
    require_all(ok, "allreduce", len);
    measure_and_report("allred", len, ms, reps, alpha, beta, "MPI_Allreduce");
  }
}

// Reduce-scatter: every rank holds K blocks of ℓ bytes, rank k gets the XOR
// over all ranks of their block k (GF(2^8) sums): circulant-reduce-scatter
// and dissemination-reduce-scatter vs MPI_Reduce_scatter_block(MPI_BXOR).
void bench_reduce_scatter(size_t len, int reps, double alpha, double beta) {
  const uint32_t K = static_cast<uint32_t>(g_size);
  Spec s;
  s.op = OpKind::ReduceScatter;
  s.K = K;
  s.field = Field::gf256();
  std::vector<Method> ms;
  std::vector<std::unique_ptr<PlanRun>> runs;
  for (const char* alg :
       {"circulant-reduce-scatter", "dissemination-reduce-scatter", "recursive-halving", "direct-reduce-scatter"}) {
    if (std::string(alg) == "recursive-halving" && !gen::recursive_doubling_why_not(s).empty()) continue;  // K not 2^m
    Spec sp = s;
    if (std::string(alg) == "direct-reduce-scatter") sp.lambda = K - 1;  // every message in flight at once
    PlanRun& r = add_plan(ms, runs, std::string(alg) + (sp.lambda > 1 ? " lambda=K-1" : ""), sp, alg, len);
    for (size_t i = 0; i < r.in.size(); ++i) r.in[i] = static_cast<unsigned char>((i * 131 + g_rank * 7919 + 17) & 0xFF);
  }
  std::vector<unsigned char> b(len);
  ms.push_back({"mpi reduce_scatter_block bxor", [&] {
                  MPI_Reduce_scatter_block(runs[0]->in.data(), b.data(), static_cast<int>(len), MPI_BYTE, MPI_BXOR,
                                           MPI_COMM_WORLD);
                },
                static_cast<uint32_t>(std::ceil(std::log2(K))), static_cast<double>(K - 1) * len, {}});
  for (auto& m : ms) m.run();
  bool ok = true;
  for (const auto& r : runs) ok = ok && r->out == b;
  require_all(ok, "reduce-scatter", len);
  measure_and_report("redscat", len, ms, reps, alpha, beta, "MPI_Reduce_scatter_block");
}

// Reduce of ℓ bytes to rank 0 vs MPI_Reduce(MPI_BXOR): tree-reduce (n = 1),
// circulant-reduce and pipelined-reduce (n = 4 each: fixed, unlike the
// broadcasts' model choice, which follows the ping-pong and so moves
// between runs on a loaded machine, leaving no figure to take a median of).
// A length n does not divide is padded to n·⌈ℓ/n⌉; ℓ bytes are compared.
void bench_reduce(size_t len, int reps, double alpha, double beta) {
  const uint32_t K = static_cast<uint32_t>(g_size);
  std::vector<Method> ms;
  std::vector<std::unique_ptr<PlanRun>> runs;
  auto add = [&](const std::string& algorithm, uint32_t blocks, uint32_t lambda = 1) {
    Spec s = bench::broadcast_spec(K, blocks);
    s.op = OpKind::Reduce;
    s.lambda = lambda;
    const size_t blk = (len + blocks - 1) / blocks;
    PlanRun& r = add_plan(ms, runs, algorithm + (lambda > 1 ? " lambda=K-1" : "") + " n=" + std::to_string(blocks),
                          s, algorithm, blk);
    for (size_t i = 0; i < len; ++i) r.in[i] = static_cast<unsigned char>((i * 131 + g_rank * 7919 + 17) & 0xFF);
  };
  add("tree-reduce", 1);
  add("circulant-reduce", 4);
  add("pipelined-reduce", 4);
  add("postal-reduce", 1, K - 1);  // the star: every rank sends to the root
  std::vector<unsigned char> b(len);
  ms.push_back({"mpi reduce bxor", [&] {
                  MPI_Reduce(runs[0]->in.data(), b.data(), static_cast<int>(len), MPI_BYTE, MPI_BXOR, 0,
                             MPI_COMM_WORLD);
                },
                static_cast<uint32_t>(std::ceil(std::log2(K))), static_cast<double>(len), {}});
  for (auto& m : ms) m.run();
  bool ok = true;
  if (g_rank == 0)
    for (const auto& r : runs) ok = ok && std::equal(b.begin(), b.end(), r->out.begin());
  require_all(ok, "reduce", len);
  measure_and_report("reduce", len, ms, reps, alpha, beta, "MPI_Reduce");
}

// Inclusive scan of ℓ bytes vs MPI_Scan(MPI_BXOR): postal-prefix (λ = 1,
// ⌈log2 K⌉ steps), rank k gets the XOR of ranks 0..k's vectors.
void bench_scan(size_t len, int reps, double alpha, double beta) {
  Spec s;
  s.op = OpKind::Prefix;
  s.K = static_cast<uint32_t>(g_size);
  s.field = Field::gf256();
  std::vector<Method> ms;
  std::vector<std::unique_ptr<PlanRun>> runs;
  PlanRun& r = add_plan(ms, runs, "postal-prefix", s, "postal-prefix", len);
  for (size_t i = 0; i < len; ++i) r.in[i] = static_cast<unsigned char>((i * 131 + g_rank * 7919 + 17) & 0xFF);
  std::vector<unsigned char> b(len);
  ms.push_back({"mpi scan bxor", [&] {
                  MPI_Scan(r.in.data(), b.data(), static_cast<int>(len), MPI_BYTE, MPI_BXOR, MPI_COMM_WORLD);
                },
                static_cast<uint32_t>(std::ceil(std::log2(g_size))), static_cast<double>(len), {}});
  for (auto& m : ms) m.run();
  require_all(r.out == b, "scan", len);
  measure_and_report("scan", len, ms, reps, alpha, beta, "MPI_Scan");
}

// Wrapped messages: the dissemination allgather written by hand over MPI
// (no collplan), ℓ bytes per rank, in two layouts that move the same bytes
// in the same messages: "rotated", rank r's blocks at positions relative to
// r (every message one contiguous run, Bruck's layout before its final
// rotation), and "rank order", blocks at their rank's offset as
// MPI_Allgather's receive buffer holds them (a message that passes rank
// K − 1 is two pieces, one MPI_Type_create_hindexed type), against
// MPI_Allgather. The difference is what a derived datatype costs over MPI
// (docs/benchmarks.md, "Wrapped messages").
void bench_wrap(size_t len, int reps, double alpha, double beta) {
  const int K = g_size, r = g_rank;
  std::vector<unsigned char> rot(len * K), ord(len * K), mpi(len * K), mine(len);
  for (size_t i = 0; i < len; ++i) mine[i] = static_cast<unsigned char>((i * 131 + r * 7919 + 17) & 0xFF);
  // Positions [0, d) to r − d, positions [d, 2d) from r + d, d doubling
  // (the last round the K − d positions left).
  auto round_trip = [&](unsigned char* base, bool rank_order) {
    std::memcpy(base + (rank_order ? r * len : 0), mine.data(), len);
    for (int d = 1; d < K; d *= 2) {
      const int cnt = std::min(d, K - d), to = (r - d + K) % K, from = (r + d) % K;
      MPI_Request q[2];
      auto post = [&](int first_pos, bool send, MPI_Request* rq) {
        const int peer = send ? to : from;
        if (!rank_order) {
          unsigned char* p = base + static_cast<size_t>(first_pos) * len;
          if (send) MPI_Isend(p, static_cast<int>(cnt * len), MPI_BYTE, peer, d, MPI_COMM_WORLD, rq);
          else MPI_Irecv(p, static_cast<int>(cnt * len), MPI_BYTE, peer, d, MPI_COMM_WORLD, rq);
          return;
        }
        const int a = (r + first_pos) % K;  // the run's first rank
        unsigned char* p = base + static_cast<size_t>(a) * len;
        if (a + cnt <= K) {
          if (send) MPI_Isend(p, static_cast<int>(cnt * len), MPI_BYTE, peer, d, MPI_COMM_WORLD, rq);
          else MPI_Irecv(p, static_cast<int>(cnt * len), MPI_BYTE, peer, d, MPI_COMM_WORLD, rq);
          return;
        }
        const int n1 = K - a;
        int lens[2] = {static_cast<int>(n1 * len), static_cast<int>((cnt - n1) * len)};
        MPI_Aint disp[2] = {0, -static_cast<MPI_Aint>(a * len)};
        MPI_Datatype t;
        MPI_Type_create_hindexed(2, lens, disp, MPI_BYTE, &t);
        MPI_Type_commit(&t);
        if (send) MPI_Isend(p, 1, t, peer, d, MPI_COMM_WORLD, rq);
        else MPI_Irecv(p, 1, t, peer, d, MPI_COMM_WORLD, rq);
        MPI_Type_free(&t);
      };
      post(d, false, &q[0]);
      post(0, true, &q[1]);
      MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    }
  };
  std::vector<Method> ms;
  const auto log2K = static_cast<uint32_t>(std::ceil(std::log2(K)));
  const double bytes = static_cast<double>(K - 1) * len;
  ms.push_back({"dissemination rank order (wrapped)", [&] { round_trip(ord.data(), true); }, log2K, bytes, {}});
  ms.push_back({"dissemination rotated", [&] { round_trip(rot.data(), false); }, log2K, bytes, {}});
  ms.push_back({"mpi allgather", [&] {
                  MPI_Allgather(mine.data(), static_cast<int>(len), MPI_BYTE, mpi.data(), static_cast<int>(len),
                                MPI_BYTE, MPI_COMM_WORLD);
                },
                log2K, bytes, {}});
  for (auto& m : ms) m.run();
  bool ok = ord == mpi;
  for (int j = 0; j < K && ok; ++j)
    ok = std::memcmp(rot.data() + static_cast<size_t>(j) * len, mpi.data() + static_cast<size_t>((r + j) % K) * len,
                     len) == 0;
  require_all(ok, "wrap", len);
  measure_and_report("wrap", len, ms, reps, alpha, beta, "MPI_Allgather");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  // bench_mpi [reps] [len,len,...] [group,group,...]
  // Groups (default all but wrap): encode, bcast, allgv, allg (allgather
  // and allreduce), redscat (reduce-scatter), reduce, scan, wrap (the
  // hand-written layouts above): fewer groups, more repetitions in the same
  // time.
  const std::string groups =
      argc > 3 ? std::string(",") + argv[3] + "," : ",encode,bcast,allgv,allg,redscat,reduce,scan,";
  auto want = [&](const char* g) { return groups.find(std::string(",") + g + ",") != std::string::npos; };
  for (size_t b = 1, e; b < groups.size(); b = e + 1) {
    e = groups.find(',', b);
    const std::string g = groups.substr(b, e - b);
    if (g != "encode" && g != "bcast" && g != "allgv" && g != "allg" && g != "redscat" && g != "reduce" &&
        g != "scan" && g != "wrap") {
      if (g_rank == 0)
        std::fprintf(stderr, "bench_mpi: unknown group '%s' (valid: encode, bcast, allgv, allg, redscat, reduce, scan, wrap)\n",
                     g.c_str());
      MPI_Finalize();
      return 2;
    }
  }
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 21;
  std::vector<size_t> lens = {1024, 65536, 1 << 20};
  if (argc > 2) {
    lens.clear();
    for (const char* p = argv[2]; *p;) {
      lens.push_back(std::strtoull(p, const_cast<char**>(&p), 10));
      if (*p == ',') ++p;
    }
  }
  if (g_size < 2) {
    std::fprintf(stderr, "bench_mpi: run under mpirun with at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  double alpha = 0, beta = 0;
  calibrate(alpha, beta);
  if (g_rank == 0)
    std::printf("bench_mpi: K=%d, %d repetitions (median, slowest rank), ping-pong alpha=%.2f us beta=%.3f ns/B\n",
                g_size, reps, alpha * 1e6, beta * 1e9);
  try {
    if (want("encode"))
      for (size_t len : lens) bench_encode(len, reps, alpha, beta);
    if (want("bcast"))
      for (size_t len : lens) bench_bcast(len, reps, alpha, beta);
    if (want("allgv"))
      for (size_t len : lens) bench_allgatherv(len, reps, alpha, beta);
    if (want("allg"))
      for (size_t len : lens) bench_allgather_allreduce(len, reps, alpha, beta);
    if (want("redscat"))
      for (size_t len : lens) bench_reduce_scatter(len, reps, alpha, beta);
    if (want("reduce"))
      for (size_t len : lens) bench_reduce(len, reps, alpha, beta);
    if (want("scan"))
      for (size_t len : lens) bench_scan(len, reps, alpha, beta);
    if (want("wrap"))
      for (size_t len : lens) bench_wrap(len, reps, alpha, beta);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mpi: rank %d: %s\n", g_rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Finalize();
  return 0;
}
