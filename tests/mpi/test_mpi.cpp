// MPI transport tests: run under mpirun with any number of ranks K >= 2
// (ctest registers several K; see tests/CMakeLists.txt).
//
// Every rank compiles the same plans for K, replays them through
// collplan::mpi with the inputs replay_and_compare would draw, and compares
// its outputs byte for byte with the direct computation of the spec's
// postcondition. Then the setup errors: a plan for another rank count and
// ranks holding different plans must give the same UserError on every rank.
// A failure on any rank fails the test on every rank (exit status 1).
// Last, the rank-local compile: each process builds only its own circulant
// broadcast program (gen::circulant_broadcast_local, never the other ranks')
// and replays it through the MPI transport; every rank must end with the
// root's bytes. And OpProgram (runtime/op_program.h): each process replays
// only its own rank's program of an allreduce or reduce-scatter plan with
// the MPI_SUM kernel of runtime/reduce_ops.h over rt::MpiTransport, on
// vectors whose length does not divide into the plan's blocks, and compares
// with MPI_Allreduce / MPI_Reduce_scatter_block on the same data.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gen/circulant_plans.h"
#include "gen/recursive_doubling.h"
#include "gen/registry.h"
#include "matrix/matrix.h"
#include "pipeline/pipeline.h"
#include "repair_spec.h"
#include "runtime/engine.h"
#include "runtime/op_program.h"
#include "runtime/reduce_ops.h"
#include "runtime/check/replay.h"
#include "runtime/transport/mpi.h"
#include "support/error.h"

using namespace collplan;

namespace {

int g_rank = 0, g_size = 0;
int g_failures = 0, g_checks = 0;

void fail(const std::string& what) {
  ++g_failures;
  std::fprintf(stderr, "[rank %d] FAILED: %s\n", g_rank, what.c_str());
}

Spec encode(uint32_t K, uint32_t p, uint32_t lambda, const Field& f, uint64_t seed) {
  return make_encode_spec(K, p, lambda, f, matrix_random(K, seed, f));
}

Spec broadcast(uint32_t K, uint32_t p, uint32_t lambda, uint32_t root, uint32_t blocks) {
  Spec s;
  s.op = OpKind::Broadcast;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.field = Field::gf256();
  s.root = root;
  s.blocks = blocks;
  return s;
}

Spec prefix(uint32_t K, uint32_t lambda, const Field& f) {
  Spec s;
  s.op = OpKind::Prefix;
  s.K = K;
  s.lambda = lambda;
  s.field = f;
  return s;
}

ir::Plan compile(const Spec& s, const std::string& algorithm) {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  return pipeline::compile(s, opt).plan;
}

// Replays `plan` through mpi::Collective at several lengths and compares.
// Each length runs four times, each with new data: on buffers A, on A
// again, on other buffers B, on A. The transport keeps persistent requests
// per message and starts them again where buffer and length match: the
// second run starts the first run's requests and must move its own data;
// the third and fourth must make new ones.
void check_replay(const std::string& name, const ir::Plan& plan, rt::EngineOptions eopt = {}) {
  mpi::Collective coll(plan, MPI_COMM_WORLD, eopt);
  const size_t eb = coll.elem_size();
  for (size_t len : {size_t{1}, size_t{7}, size_t{4099}}) {
    std::vector<unsigned char> send_a, recv_a, send_b, recv_b;
    for (int rep = 0; rep < 4; ++rep) {
      ++g_checks;
      const uint64_t seed = 1000 + len + 77 * static_cast<uint64_t>(rep);
      const rt::RankReplayData d = rt::rank_replay_data(plan, static_cast<ir::Rank>(g_rank), len, seed);
      std::vector<unsigned char>& send = rep == 2 ? send_b : send_a;
      std::vector<unsigned char>& recv = rep == 2 ? recv_b : recv_a;
      send.resize(d.inputs.size() * len * eb);  // the same size again: the same address
      recv.assign(d.expected.size() * len * eb, 0xA5);
      for (size_t i = 0; i < d.inputs.size(); ++i)
        std::memcpy(send.data() + i * len * eb, d.inputs[i].data(), len * eb);
      coll.run(send.data(), recv.data(), len);
      std::vector<std::vector<unsigned char>> out(d.expected.size());
      for (size_t j = 0; j < out.size(); ++j)
        out[j].assign(recv.begin() + static_cast<ptrdiff_t>(j * len * eb),
                      recv.begin() + static_cast<ptrdiff_t>((j + 1) * len * eb));
      const std::string m = rt::first_mismatch(plan.spec.field, static_cast<ir::Rank>(g_rank), d.expected, out);
      if (!m.empty()) fail(fmt::format("{} len {} run {}: {}", name, len, rep, m));
    }
  }
  bool talks = false;
  for (const ir::Step& st : plan.ranks[static_cast<size_t>(g_rank)].steps) talks |= !st.sends.empty() || !st.recvs.empty();
  ++g_checks;
  if (talks && coll.transport().persistent_starts() == 0)
    fail(fmt::format("{}: no persistent request was started again over 12 runs", name));
}

// A block operation's spec (allgather, allgatherv, reduce, allreduce).
Spec blocks_spec(OpKind op, uint32_t K, uint32_t blocks) {
  Spec s;
  s.op = op;
  s.K = K;
  s.field = Field::gf256();
  s.blocks = blocks;
  s.root = K - 1;  // reduce
  if (op == OpKind::Allgatherv)
    for (uint32_t j = 0; j < K; ++j) s.counts.push_back(1 + (3 * j) % 4);
  return s;
}

long g_split = 0;     // messages check_split() handed to MPI in pieces
long g_gathered = 0;  // and those the engine staged for a transport taking 1

// Replays `plan` on an Engine with the outputs back to back in reverse order,
// so that every message of several output slots reaches MPI in pieces (one
// hindexed datatype), and compares.
void check_split(const std::string& name, const ir::Plan& plan,
                 uint32_t max_pieces = rt::MpiTransport::kDefaultMaxPieces, size_t len = 4099) {
  rt::Engine eng(plan, static_cast<ir::Rank>(g_rank));
  rt::MpiTransport tr(MPI_COMM_WORLD, max_pieces);
  const size_t eb = eng.elem_bytes(), row = len * eb;
  ++g_checks;
  const rt::RankReplayData d = rt::rank_replay_data(plan, static_cast<ir::Rank>(g_rank), len, 7);
  std::vector<unsigned char> recv(d.expected.size() * row, 0xA5);
  std::vector<const void*> in;
  std::vector<void*> out;
  for (const auto& v : d.inputs) in.push_back(v.data());
  for (size_t j = 0; j < d.expected.size(); ++j) out.push_back(recv.data() + (d.expected.size() - 1 - j) * row);
  eng.run(tr, in.data(), out.data(), len);
  g_split += eng.stats().split_messages;
  g_gathered += eng.stats().gathered_messages;
  std::vector<std::vector<unsigned char>> got;
  for (void* p : out) got.emplace_back(static_cast<unsigned char*>(p), static_cast<unsigned char*>(p) + row);
  const std::string m = rt::first_mismatch(plan.spec.field, static_cast<ir::Rank>(g_rank), d.expected, got);
  if (!m.empty()) fail(fmt::format("{} (outputs reversed): {}", name, m));
}

// `body` must throw a UserError containing `needle` on every rank.
void check_error(const std::string& name, const std::function<void()>& body, const std::string& needle) {
  ++g_checks;
  try {
    body();
    fail(name + ": no error");
  } catch (const UserError& e) {
    if (std::string(e.what()).find(needle) == std::string::npos)
      fail(fmt::format("{}: error '{}' does not contain '{}'", name, e.what(), needle));
  }
}

// Each process compiles only its own rank of a circulant broadcast and
// replays it; the root's block b holds bytes every rank can compute, so each
// checks its own outputs byte for byte.
void check_rank_local_broadcast(uint32_t root, uint32_t n) {
  Spec s = broadcast(static_cast<uint32_t>(g_size), 1, 1, root, n);
  s.algorithm = "circulant-broadcast";
  const ir::RankPlan rp = gen::circulant_broadcast_local(s, static_cast<uint32_t>(g_rank));
  rt::Engine eng(rp.spec, rp.num_steps, rp.program);
  rt::MpiTransport tr(MPI_COMM_WORLD);
  auto root_byte = [&](size_t b, size_t e) { return static_cast<unsigned char>((b * 131 + e * 7 + root) % 256); };
  for (size_t len : {size_t{1}, size_t{4099}}) {
    ++g_checks;
    std::vector<std::vector<unsigned char>> in(eng.num_inputs(), std::vector<unsigned char>(len));
    std::vector<std::vector<unsigned char>> out(eng.num_outputs(), std::vector<unsigned char>(len, 0xA5));
    for (size_t b = 0; b < in.size(); ++b)
      for (size_t e = 0; e < len; ++e) in[b][e] = root_byte(b, e);
    std::vector<const void*> ip;
    std::vector<void*> op;
    for (auto& v : in) ip.push_back(v.data());
    for (auto& v : out) op.push_back(v.data());
    eng.run(tr, ip.data(), op.data(), len);
    if (out.size() != n) fail(fmt::format("rank-local broadcast root {} n {}: {} outputs", root, n, out.size()));
    for (size_t b = 0; b < out.size(); ++b)
      for (size_t e = 0; e < len; ++e)
        if (out[b][e] != root_byte(b, e)) {
          fail(fmt::format("rank-local broadcast root {} n {} len {}: block {} byte {} is {:#04x}, the root's is "
                           "{:#04x}",
                           root, n, len, b, e, out[b][e], root_byte(b, e)));
          return;
        }
  }
}

// The pieces of block b when a vector of m elements is cut into blocks of
// `count` (the last ones shorter, or empty).
template <class T>
std::pair<T*, size_t> block_piece(T* base, size_t m, size_t count, size_t b) {
  const size_t off = std::min(b * count, m);
  return {base + off, std::min(count, m - off) * sizeof(T)};
}

// One rank's program of `plan` (an allreduce or reduce-scatter), replayed
// with OpProgram and ⊕ = MPI_SUM's kernel over MPI, against MPI itself.
template <class T>
void check_op_program(const std::string& name, const ir::Plan& plan, rt::ElemType type, MPI_Datatype dt) {
  const size_t K = static_cast<size_t>(g_size);
  const size_t n = plan.spec.blocks;
  const bool rs = plan.spec.op == OpKind::ReduceScatter;
  rt::OpProgram prog(plan.spec, plan.num_steps, plan.ranks[static_cast<size_t>(g_rank)]);
  rt::MpiTransport tr(MPI_COMM_WORLD);
  const rt::UserOp op{rt::reduce_kernel(rt::ReduceOp::sum, type), nullptr, sizeof(T)};
  std::mt19937_64 rng(static_cast<uint64_t>(g_rank) * 7919 + n);
  for (size_t m : {size_t{1}, 3 * n, 1000 + 7 * n + 1}) {  // per rank's block: fewer elements than blocks, even, ragged
    ++g_checks;
    const size_t count = (m + n - 1) / n;
    // Small integers: every order of summation gives the same value.
    std::vector<T> send((rs ? K : 1) * m), got(m, T(-1)), want(m, T(-2));
    for (T& x : send) x = static_cast<T>(static_cast<int>(rng() % 20001) - 10000);
    std::vector<rt::InPiece> in;
    std::vector<rt::OutPiece> out;
    for (size_t k = 0; k < (rs ? K : 1); ++k)
      for (size_t b = 0; b < n; ++b) {
        const auto [data, bytes] = block_piece(send.data() + k * m, m, count, b);
        in.push_back({data, bytes});
      }
    for (size_t b = 0; b < n; ++b) {
      const auto [data, bytes] = block_piece(got.data(), m, count, b);
      out.push_back({data, bytes});
    }
    try {
      prog.run(tr, op, count, in.data(), in.size(), out.data(), out.size());
    } catch (const std::exception& e) {
      fail(fmt::format("op program {} m={}: {}", name, m, e.what()));
      return;
    }
    if (rs)
      MPI_Reduce_scatter_block(send.data(), want.data(), static_cast<int>(m), dt, MPI_SUM, MPI_COMM_WORLD);
    else
      MPI_Allreduce(send.data(), want.data(), static_cast<int>(m), dt, MPI_SUM, MPI_COMM_WORLD);
    if (std::memcmp(got.data(), want.data(), m * sizeof(T)) != 0)
      for (size_t e = 0; e < m; ++e)
        if (std::memcmp(&got[e], &want[e], sizeof(T)) != 0) {
          fail(fmt::format("op program {} m={}: element {} is {}, MPI gives {}", name, m, e, got[e], want[e]));
          break;
        }
  }
}

// Two replays of an allreduce plan pending at once over one communicator
// (MpiTransport::Shared, slots 0 and 1), started in one order and advanced
// alternately with OpProgram::progress until both end; each against MPI.
void check_op_program_nb(const ir::Plan& plan) {
  const size_t n = plan.spec.blocks;
  MPI_Comm shared;
  MPI_Comm_dup(MPI_COMM_WORLD, &shared);
  const auto& mine = plan.ranks[static_cast<size_t>(g_rank)];
  rt::OpProgram a(plan.spec, plan.num_steps, mine), b(plan.spec, plan.num_steps, mine);
  rt::MpiTransport ta(rt::MpiTransport::Shared{shared, 0, 2}), tb(rt::MpiTransport::Shared{shared, 1, 2});
  const rt::UserOp op{rt::reduce_kernel(rt::ReduceOp::sum, rt::ElemType::i32), nullptr, sizeof(int32_t)};
  const size_t m = 1000 + 7 * n + 1, count = (m + n - 1) / n;
  std::mt19937_64 rng(static_cast<uint64_t>(g_rank) * 31 + n);
  std::vector<int32_t> xa(m), xb(m), ga(m, -1), gb(m, -1), wa(m), wb(m);
  for (int32_t& x : xa) x = static_cast<int32_t>(rng() % 20001) - 10000;
  for (int32_t& x : xb) x = static_cast<int32_t>(rng() % 20001) - 10000;
  auto pieces = [&](std::vector<int32_t>& src, std::vector<int32_t>& dst, std::vector<rt::InPiece>& in,
                    std::vector<rt::OutPiece>& out) {
    for (size_t blk = 0; blk < n; ++blk) {
      const auto [d, bytes] = block_piece(src.data(), m, count, blk);
      in.push_back({d, bytes});
      const auto [o, obytes] = block_piece(dst.data(), m, count, blk);
      out.push_back({o, obytes});
    }
  };
  std::vector<rt::InPiece> ia, ib;
  std::vector<rt::OutPiece> oa, ob;
  pieces(xa, ga, ia, oa);
  pieces(xb, gb, ib, ob);
  ++g_checks;
  try {
    a.start(ta, op, count, ia.data(), oa.data());
    b.start(tb, op, count, ib.data(), ob.data());
    bool da = false, db = false;
    while (!da || !db) {
      if (!db) db = b.progress();  // b first: the other order than they started
      if (!da) da = a.progress();
    }
    if (a.running() || b.running()) fail("non-blocking replay: running() after the end");
  } catch (const std::exception& e) {
    fail(fmt::format("non-blocking op program {}: {}", plan.spec.blocks, e.what()));
    MPI_Comm_free(&shared);
    return;
  }
  MPI_Allreduce(xa.data(), wa.data(), static_cast<int>(m), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(xb.data(), wb.data(), static_cast<int>(m), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
  if (ga != wa || gb != wb) fail(fmt::format("non-blocking op program (n = {}): result differs from MPI_Allreduce", n));
  // progress() without a replay is a UserError.
  ++g_checks;
  try {
    a.progress();
    fail("progress() without a replay did not throw");
  } catch (const UserError&) {
  }
  MPI_Comm_free(&shared);
}


}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const uint32_t K = static_cast<uint32_t>(g_size);
  try {
    if (K < 2) throw UserError("run with at least 2 ranks");
    // Plan families: universal encode in all three field kinds, with several
    // ports; the postal variants (λ > 1: messages in flight over steps);
    // broadcast trees from a non-zero root with several blocks; prefix.
    check_replay("prepare-shoot gf256 p=1", compile(encode(K, 1, 1, Field::gf256(), 11), "prepare-shoot"));
    check_replay("prepare-shoot gf65536 p=2", compile(encode(K, 2, 1, Field::gf65536(), 12), "prepare-shoot"));
    check_replay("prepare-shoot prime p=3 lambda=2",
                 compile(encode(K, 3, 2, Field::prime(2147483647), 13), "prepare-shoot"));
    check_replay("prepare-shoot gf256 staged", compile(encode(K, 2, 1, Field::gf256(), 14), "prepare-shoot"),
                 rt::EngineOptions{false, false});
    check_replay("postal-allgather lambda=3", compile(encode(K, 1, 3, Field::gf256(), 15), "postal-allgather"));
    check_replay("postal-prepare-shoot lambda=2",
                 compile(encode(K, 2, 2, Field::prime(65537), 16), "postal-prepare-shoot"));
    check_replay("postal-broadcast root=K-1 blocks=3 lambda=2",
                 compile(broadcast(K, 1, 2, K - 1, 3), "postal-broadcast"));
    check_replay("postal-broadcast p=2", compile(broadcast(K, 2, 1, 0, 1), "postal-broadcast"));
    check_replay("postal-prefix lambda=2", compile(prefix(K, 2, Field::prime(65537)), "postal-prefix"));

    // The p-port collectives: reduce-scatter, allgather(v), both allreduces.
    auto block_op = [&](OpKind op, uint32_t p, uint32_t lambda, uint32_t n, const Field& f) {
      Spec s;
      s.op = op;
      s.K = K;
      s.p = p;
      s.lambda = lambda;
      s.blocks = n;
      s.field = f;
      if (op == OpKind::Allgatherv)
        for (uint32_t r = 0; r < K; ++r) s.counts.push_back((r * 3 + 1) % 4);
      return s;
    };
    check_replay("dissemination-reduce-scatter p=2",
                 compile(block_op(OpKind::ReduceScatter, 2, 1, 2, Field::gf256()), "dissemination-reduce-scatter"));
    check_replay("circulant-reduce-scatter gf65536",
                 compile(block_op(OpKind::ReduceScatter, 1, 1, 1, Field::gf65536()), "circulant-reduce-scatter"));
    check_replay("dissemination-allgather p=3 lambda=2",
                 compile(block_op(OpKind::Allgather, 3, 2, 1, Field::gf256()), "dissemination-allgather"));
    check_replay("dissemination-allgather allgatherv p=2",
                 compile(block_op(OpKind::Allgatherv, 2, 1, 1, Field::gf256()), "dissemination-allgather"));
    // Recursive doubling where K is a power of p + 1 (np 2, 8, 16: p = 1;
    // np 3: p = 2).
    for (uint32_t p = 1; p <= 2; ++p) {
      const Spec rd = block_op(OpKind::Allgather, p, p, 2, Field::gf65536());
      if (!gen::recursive_doubling_why_not(rd).empty()) continue;
      check_replay(fmt::format("recursive-doubling-allgather p={} lambda={}", p, p),
                   compile(rd, "recursive-doubling-allgather"));
      check_replay(fmt::format("recursive-doubling-allgather allgatherv p={}", p),
                   compile(block_op(OpKind::Allgatherv, p, 1, 1, Field::gf256()), "recursive-doubling-allgather"));
      check_replay(fmt::format("recursive-halving p={} lambda=2", p),
                   compile(block_op(OpKind::ReduceScatter, p, 2, 2, Field::gf65536()), "recursive-halving"));
      check_replay(fmt::format("recursive-halving-doubling p={} n=K+3", p),
                   compile(block_op(OpKind::Allreduce, p, 1, K + 3, Field::gf256()), "recursive-halving-doubling"));
    }
    check_replay("circulant-allgatherv p=3 (striped)",
                 compile(block_op(OpKind::Allgatherv, 3, 1, 2, Field::gf256()), "circulant-allgatherv"));
    check_replay("dissemination-allreduce p=3 lambda=2",
                 compile(block_op(OpKind::Allreduce, 3, 2, 2, Field::prime(65537)), "dissemination-allreduce"));
    check_replay("reduce-scatter-allgather n=K+3",
                 compile(block_op(OpKind::Allreduce, 1, 1, K + 3, Field::gf256()), "reduce-scatter-allgather"));
    // The stars (λ = K − 1) and a postal tree with two ports; the reduce
    // into the last rank.
    check_replay("postal-allreduce lambda=K-1",
                 compile(block_op(OpKind::Allreduce, 1, std::max(K - 1, 1u), 2, Field::gf256()), "postal-allreduce"));
    check_replay("postal-allreduce p=2 lambda=2",
                 compile(block_op(OpKind::Allreduce, 2, 2, 1, Field::prime(65537)), "postal-allreduce"));
    check_replay("direct-allgather allgatherv lambda=K-1",
                 compile(block_op(OpKind::Allgatherv, 1, std::max(K - 1, 1u), 1, Field::gf256()), "direct-allgather"));
    check_replay("direct-reduce-scatter p=2 lambda=2",
                 compile(block_op(OpKind::ReduceScatter, 2, 2, 2, Field::gf65536()), "direct-reduce-scatter"));
    {
      Spec r = block_op(OpKind::Reduce, 1, std::max(K - 1, 1u), 3, Field::gf65536());
      r.root = K - 1;
      check_replay("postal-reduce root=K-1 lambda=K-1", compile(r, "postal-reduce"));
    }
    // Every send completed when due (EngineOptions::late_sends off), as
    // before sends from slots could complete later.
    check_replay("postal-broadcast, sends completed when due", compile(broadcast(K, 1, 1, 0, 2), "postal-broadcast"),
                 rt::EngineOptions{true, true, false});
    check_replay("postal-prefix, sends completed when due", compile(prefix(K, 2, Field::prime(65537)), "postal-prefix"),
                 rt::EngineOptions{true, true, false});
    // Block operations: received into the caller's buffer, messages that
    // wrap around it in pieces.
    for (const auto& [op, algorithm] :
         {std::pair{OpKind::Allgather, "circulant-allgather"}, std::pair{OpKind::Allgatherv, "circulant-allgatherv"},
          std::pair{OpKind::Allreduce, "circulant-allreduce"}, std::pair{OpKind::Reduce, "circulant-reduce"}}) {
      const ir::Plan plan = compile(blocks_spec(op, K, 2), algorithm);
      check_replay(algorithm, plan);
      check_replay(std::string(algorithm) + " staged", plan, rt::EngineOptions{false, true});
      check_split(algorithm, plan);
      check_split(std::string(algorithm) + " contiguous only", plan, 1);
    }
    // Messages of several MiB: cut into chunks whose boundaries fall inside
    // elements and across the pieces of wrapped messages (up to 8 ranks: at
    // 16 the inputs every rank draws take most of the test's time limit).
    if (K <= 8) {
      const ir::Plan plan = compile(blocks_spec(OpKind::Allgather, K, 2), "circulant-allgather");
      check_split("circulant-allgather, 600000-byte rows", plan, rt::MpiTransport::kDefaultMaxPieces, 600000);
      check_split("circulant-allgather, 600000-byte rows, contiguous only", plan, 1, 600000);
    }
    long split = 0;
    MPI_Allreduce(&g_split, &split, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    ++g_checks;
    if (split == 0) fail("no message reached MPI in pieces");
    long gathered = 0;
    MPI_Allreduce(&g_gathered, &gathered, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    ++g_checks;
    if (gathered == 0) fail("no split message was staged for a transport taking one piece");
    check_replay("circulant-broadcast", compile(broadcast(K, 1, 1, K / 2, 3), "circulant-broadcast"));

    // Repair and decode of an RS [K, K - 2] code (or [2, 1]) on the world's
    // ranks: single losses, a pair, a decode, every generator, three fields.
    for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)}) {
      const uint32_t dim = K > 2 ? K - 2 : 1;
      std::vector<std::pair<std::string, std::string>> cases = {
          {"repair", "0"}, {"repair", std::to_string(K - 1)}, {"repair", std::to_string(K / 2)}, {"decode", "1"}};
      if (K - dim >= 2) cases.push_back({"repair", fmt::format("0,{}", K - 1)});
      for (const auto& [op, lost] : cases) {
        const Spec s = test::repair_spec(op, K, dim, lost, f, "rs", true, 1, 1, 2);
        for (const gen::Candidate& c : gen::candidates(s, passes::CostModel{}))  // every generator that applies
          if (c.why_not.empty())
            check_replay(fmt::format("{} lost {} {} {}", op, lost, f.name(), c.generator->name),
                         compile(s, c.generator->name));
      }
    }

    // No staging over MPI (`collplan run --stats`): every generator of the
    // plain collectives, p = 1 and 2, through mpi::Collective (outputs back
    // to back, messages in pieces up to the transport's limit) copies
    // nothing of its own: inputs read in place, messages sent from and
    // received into their slots (docs/runtime.md, "Zero copy"). Prefix
    // three ways: inclusive, exclusive, and blocks of items (counts).
    size_t zero_staged_plans = 0, prefix_staged_plans = 0;
    enum class Prefix { none, inclusive, exclusive, counts };
    for (const auto& [op, prefix] :
         {std::pair{OpKind::Allgather, Prefix::none}, std::pair{OpKind::Allgatherv, Prefix::none},
          std::pair{OpKind::Broadcast, Prefix::none}, std::pair{OpKind::Reduce, Prefix::none},
          std::pair{OpKind::Allreduce, Prefix::none}, std::pair{OpKind::ReduceScatter, Prefix::none},
          std::pair{OpKind::Prefix, Prefix::inclusive}, std::pair{OpKind::Prefix, Prefix::exclusive},
          std::pair{OpKind::Prefix, Prefix::counts}})
      for (uint32_t p : {1u, 2u}) {
        Spec s;
        s.op = op;
        s.K = K;
        s.p = p;
        s.field = Field::gf256();
        if (op == OpKind::Prefix) {
          s.exclusive = prefix == Prefix::exclusive;
          if (prefix == Prefix::counts)
            for (uint32_t r = 0; r < K; ++r) s.counts.push_back(1 + r % 3);
        } else {
          s.blocks = 4;
          s.root = K / 2;
        }
        if (op == OpKind::Allgatherv)
          for (uint32_t r = 0; r < K; ++r) s.counts.push_back((r * 5 + 2) % 4);
        for (const gen::Candidate& c : gen::candidates(s, passes::CostModel{})) {
          if (!c.why_not.empty()) continue;
          const ir::Plan plan = compile(s, c.generator->name);
          mpi::Collective coll(plan, MPI_COMM_WORLD);
          const size_t len = 1000, eb = coll.elem_size();
          std::vector<unsigned char> send(coll.num_inputs() * len * eb, 3), recv(coll.num_outputs() * len * eb);
          coll.run(send.data(), recv.data(), len);
          ++g_checks;
          ++zero_staged_plans;
          if (op == OpKind::Prefix) ++prefix_staged_plans;
          const uint64_t staged = coll.engine().stats().staged_bytes;
          if (staged != 0)
            fail(fmt::format("{} p={} {}{}: the engine staged {} bytes (expected none)", op_name(op), p,
                             c.generator->name, s.exclusive ? " exclusive" : s.counts.empty() ? "" : " counts",
                             staged));
        }
      }
    ++g_checks;
    if (zero_staged_plans < 30 || prefix_staged_plans < 6)
      fail(fmt::format("only {} plans ({} prefix) checked for staging", zero_staged_plans, prefix_staged_plans));

    // OpProgram over MPI with MPI_SUM's kernel, against MPI itself.
    auto plain = [&](OpKind op, const char* algorithm, uint32_t p, uint32_t n) {
      Spec s;
      s.op = op;
      s.K = K;
      s.p = p;
      s.blocks = n;
      s.field = Field::prime(65537);
      return compile(s, algorithm);
    };
    for (const auto& [name, plan] : {
             std::pair{"dissemination-allreduce p=2", plain(OpKind::Allreduce, "dissemination-allreduce", 2, 1)},
             std::pair{"reduce-scatter-allgather n=K+1", plain(OpKind::Allreduce, "reduce-scatter-allgather", 1, K + 1)},
             std::pair{"circulant-allreduce n=2", plain(OpKind::Allreduce, "circulant-allreduce", 1, 2)},
             std::pair{"dissemination-reduce-scatter p=2 n=2",
                       plain(OpKind::ReduceScatter, "dissemination-reduce-scatter", 2, 2)},
             std::pair{"circulant-reduce-scatter", plain(OpKind::ReduceScatter, "circulant-reduce-scatter", 1, 1)}}) {
      check_op_program<int32_t>(std::string(name) + " int32", plan, rt::ElemType::i32, MPI_INT32_T);
      check_op_program<double>(std::string(name) + " double", plan, rt::ElemType::f64, MPI_DOUBLE);
    }
    // Non-blocking: two replays pending at once on one shared communicator
    // (tag slots 0 and 1), advanced by progress() (MpiTransport::test).
    check_op_program_nb(plain(OpKind::Allreduce, "reduce-scatter-allgather", 1, K + 1));
    check_op_program_nb(plain(OpKind::Allreduce, "dissemination-allreduce", 2, 1));

    // Rank-local compile: no process holds any other rank's program.
    check_rank_local_broadcast(0, 1);
    check_rank_local_broadcast(K - 1, 5);
    check_rank_local_broadcast(K / 2, 3);

    // Setup errors, raised on every rank.
    const ir::Plan wrong_k = compile(encode(K + 1, 1, 1, Field::gf256(), 17), "prepare-shoot");
    check_error("communicator size", [&] { mpi::Collective c(wrong_k, MPI_COMM_WORLD); },
                fmt::format("the communicator has {} ranks but the plan has {}", K, K + 1));
    // Rank 0 holds a plan for another matrix: same shape, different digest.
    const ir::Plan other = compile(encode(K, 1, 1, Field::gf256(), g_rank == 0 ? 18 : 19), "prepare-shoot");
    check_error("different plans", [&] { mpi::Collective c(other, MPI_COMM_WORLD); },
                "every rank must replay the same plan");
    const ir::Plan ok = compile(encode(K, 1, 1, Field::gf256(), 20), "prepare-shoot");
    std::vector<unsigned char> buf(64);
    check_error("element size", [&] { mpi::run(ok, buf.data(), buf.data(), 4, 2, MPI_COMM_WORLD); },
                "element size 2 does not match the plan's field gf256");
  } catch (const std::exception& e) {
    fail(std::string("unexpected exception: ") + e.what());
  }
  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("mpi tests on %d ranks: %d checks per rank, %d failures in all\n", g_size, g_checks, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
