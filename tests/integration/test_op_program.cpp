// OpProgram (runtime/op_program.h): one rank's program replayed with an
// operator from runtime/reduce_ops.h, one OpProgram per rank, on the threads
// transport and on TCP over loopback. Plans of every plain operation the
// generators build (reduce, allreduce, reduce-scatter, prefix, broadcast,
// allgather), int32 and uint8 sums of random values (wrapping) and double
// sums of small integers (exact, so any order gives the same value), rows
// whose pieces fill them and pieces shorter than the row (zero-filled, as a
// count that does not divide into the plan's blocks needs), each output
// compared byte for byte with the sum its postcondition names. Then MPI_IN_PLACE
// aliasing, storage reuse, determinism of a double allreduce, and bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ir/binary.h"
#include "matrix/postcondition.h"
#include "runtime/op_program.h"
#include "runtime/reduce_ops.h"
#include "runtime/transport/tcp.h"
#include "runtime/transport/threads.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using rt::ElemType;
using rt::InPiece;
using rt::OutPiece;
using rt::ReduceOp;
using test::compiled;
using test::plain_spec;

namespace {

enum class Net { threads, tcp };
const char* net_name(Net n) { return n == Net::threads ? "threads" : "tcp"; }

// Builds one OpProgram per rank, then runs body(rank, program, transport) on
// one thread per rank over `net`. Returns each rank's UserError (empty: ok).
// A failing rank aborts the threads world, and its closed TCP connections
// fail its peers, so a failure never hangs the test. A body that runs more
// than once meets the others at `sync` between runs: a threads world keys
// messages by (sender, port, step), so one run's messages must not meet the
// next run's (ThreadsRunner does the same); a failing rank drops out of it.
std::vector<std::string> on_world(const ir::Plan& plan, Net net,
                                  const std::function<void(ir::Rank, rt::OpProgram&, rt::Transport&)>& body,
                                  std::barrier<>* sync = nullptr) {
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  std::vector<rt::OpProgram> progs;
  for (ir::Rank r = 0; r < K; ++r) progs.emplace_back(plan.spec, plan.num_steps, plan.ranks[r]);
  std::vector<std::string> errors(K);
  std::vector<std::thread> threads;
  if (net == Net::threads) {
    rt::ThreadsOptions opt;
    opt.timeout = std::chrono::milliseconds(20'000);
    rt::ThreadsWorld world(K, opt);
    for (ir::Rank r = 0; r < K; ++r) world.reserve(r, rt::mailbox_capacity(plan, r));
    for (ir::Rank r = 0; r < K; ++r)
      threads.emplace_back([&, r] {
        try {
          body(r, progs[r], world.endpoint(r));
        } catch (const UserError& e) {
          errors[r] = e.what();
          world.abort();
          if (sync) sync->arrive_and_drop();
        }
      });
    for (auto& t : threads) t.join();
    return errors;
  }
  std::vector<int> fds(K);
  std::vector<std::string> peers(K);
  for (ir::Rank r = 0; r < K; ++r) {
    uint16_t port = 0;
    fds[r] = rt::tcp_listen("127.0.0.1:0", &port);
    peers[r] = "127.0.0.1:" + std::to_string(port);
  }
  const Digest digest = ir::plan_digest(plan);
  for (ir::Rank r = 0; r < K; ++r)
    threads.emplace_back([&, r] {
      try {
        rt::TcpOptions opt;
        opt.connect_timeout = std::chrono::milliseconds(5000);
        opt.timeout = std::chrono::milliseconds(5000);
        rt::TcpTransport tr(peers, r, digest, opt, fds[r]);
        body(r, progs[r], tr);
      } catch (const UserError& e) {
        errors[r] = e.what();
        if (sync) sync->arrive_and_drop();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

std::string joined(const std::vector<std::string>& errors) {
  std::string s;
  for (size_t r = 0; r < errors.size(); ++r)
    if (!errors[r].empty()) s += fmt::format("rank {}: {}\n", r, errors[r]);
  return s;
}

// Elements actually given for global input g and asked of global output c:
// every third input is shorter than the row (down to nothing when the row
// is short), every other output is cut by one element.
size_t in_len(size_t count, uint32_t g, bool ragged) {
  if (!ragged) return count;
  const size_t cut = g % 3 == 2 ? count / 2 + 1 : 0;
  return count - std::min(cut, count);
}
size_t out_len(size_t count, uint32_t c, bool ragged) { return ragged && c % 2 == 1 ? count - 1 : count; }

constexpr unsigned char kPoison = 0xA5;

template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b) +
                          0u);
  else
    return a + b;
}

// One replay of `plan` with ⊕ = sum on T over rows of `count` elements:
// random inputs (small integers for floating point), outputs poisoned, every
// output compared with the sum of the inputs its postcondition column lists
// (zero-padded to the row), bytes past out_len still poisoned, outputs with
// an empty column (exclusive scan item 0) untouched.
template <class T>
void check_sum(const ir::Plan& plan, Net net, ElemType type, size_t count, bool ragged, uint64_t seed) {
  const Postcondition pc = postcondition(plan.spec);
  const uint32_t K = pc.K;
  std::mt19937_64 rng(seed);
  // inputs[g]: global input g, a full row (zeros past in_len).
  std::vector<std::vector<T>> inputs(pc.num_inputs(), std::vector<T>(count, T(0)));
  for (uint32_t g = 0; g < pc.num_inputs(); ++g)
    for (size_t e = 0; e < in_len(count, g, ragged); ++e)
      inputs[g][e] = std::is_floating_point_v<T> ? static_cast<T>(static_cast<int>(rng() % 2001) - 1000)
                                                 : static_cast<T>(rng());
  std::vector<std::vector<unsigned char>> want(pc.num_outputs(), std::vector<unsigned char>(count * sizeof(T), kPoison));
  std::vector<Postcondition::Entry> col;
  for (uint32_t c = 0; c < pc.num_outputs(); ++c) {
    pc.column(c, col);
    if (col.empty()) continue;  // no value: left untouched
    std::vector<T> sum(count, T(0));
    for (size_t e = 0; e < count; ++e) {
      sum[e] = inputs[col[0].input][e];
      for (size_t i = 1; i < col.size(); ++i) sum[e] = wrap_add(sum[e], inputs[col[i].input][e]);
    }
    std::memcpy(want[c].data(), sum.data(), out_len(count, c, ragged) * sizeof(T));
  }
  std::vector<std::vector<unsigned char>> got(pc.num_outputs(), std::vector<unsigned char>(count * sizeof(T), kPoison));

  const rt::UserOp op{rt::reduce_kernel(ReduceOp::sum, type), nullptr, sizeof(T)};
  const auto errors = on_world(plan, net, [&](ir::Rank r, rt::OpProgram& prog, rt::Transport& tr) {
    std::vector<InPiece> in;
    std::vector<OutPiece> out;
    for (uint32_t i = 0; i < pc.inputs_per_rank[r]; ++i) {
      const uint32_t g = pc.input_offset[r] + i;
      in.push_back({inputs[g].data(), in_len(count, g, ragged) * sizeof(T)});
    }
    for (uint32_t j = 0; j < pc.outputs_per_rank[r]; ++j) {
      const uint32_t c = pc.output_col(r, j);
      out.push_back({got[c].data(), out_len(count, c, ragged) * sizeof(T)});
    }
    prog.run(tr, op, count, in.data(), in.size(), out.data(), out.size());
  });
  REQUIRE(joined(errors).empty());
  for (uint32_t c = 0; c < pc.num_outputs(); ++c) {
    INFO("output " << c << " of " << pc.num_outputs());
    CHECK(got[c] == want[c]);
  }
  (void)K;
}

struct Case {
  OpKind op;
  const char* algorithm;
  uint32_t K, p, n, lambda;
};

// A plan of every plain operation by every generator that builds one,
// with p > 1 and λ > 1 where the generator takes them.
std::vector<Case> every_generator() {
  return {
      {OpKind::Reduce, "tree-reduce", 6, 2, 2, 1},
      {OpKind::Reduce, "pipelined-reduce", 5, 1, 3, 2},
      {OpKind::Reduce, "circulant-reduce", 6, 1, 3, 1},
      {OpKind::Allreduce, "dissemination-allreduce", 7, 2, 2, 1},
      {OpKind::Allreduce, "dissemination-allreduce", 5, 1, 1, 2},
      {OpKind::Allreduce, "reduce-scatter-allgather", 5, 1, 5, 1},
      {OpKind::Allreduce, "circulant-allreduce", 6, 1, 2, 1},
      {OpKind::ReduceScatter, "dissemination-reduce-scatter", 5, 2, 1, 1},
      {OpKind::ReduceScatter, "circulant-reduce-scatter", 6, 1, 2, 1},
      {OpKind::Prefix, "postal-prefix", 6, 1, 1, 1},
      {OpKind::Prefix, "postal-prefix", 7, 2, 1, 2},
      {OpKind::Prefix, "postal-prefix", 5, 1, 3, 1},
      {OpKind::Broadcast, "tree-broadcast", 6, 2, 2, 1},
      {OpKind::Broadcast, "pipelined-broadcast", 5, 1, 3, 2},
      {OpKind::Broadcast, "postal-broadcast", 7, 1, 2, 2},
      {OpKind::Broadcast, "circulant-broadcast", 6, 1, 3, 1},
      {OpKind::Allgather, "dissemination-allgather", 5, 2, 1, 1},
      {OpKind::Allgather, "circulant-allgather", 6, 1, 2, 1},
  };
}

ir::Plan plan_of(const Case& c) {
  return compiled(plain_spec(c.op, c.K, c.p, c.n, c.lambda, Field::prime(65537)), c.algorithm);
}

}  // namespace

TEST_CASE("op program: every plain operation's plans, sums of int32, uint8 and double, on threads",
          "[op_program]") {
  for (const Case& c : every_generator()) {
    const ir::Plan plan = plan_of(c);
    for (bool ragged : {false, true}) {
      INFO(c.algorithm << " K=" << c.K << " p=" << c.p << " n=" << c.n << " lambda=" << c.lambda
                       << (ragged ? " ragged pieces" : " full rows"));
      check_sum<int32_t>(plan, Net::threads, ElemType::i32, 13, ragged, c.K * 31 + c.n);
      check_sum<uint8_t>(plan, Net::threads, ElemType::u8, 33, ragged, c.K * 37 + c.n);
      check_sum<double>(plan, Net::threads, ElemType::f64, 5, ragged, c.K * 41 + c.n);
    }
  }
}

TEST_CASE("op program: every plain operation's plans over TCP on loopback", "[op_program][tcp]") {
  for (const Case& c : every_generator()) {
    const ir::Plan plan = plan_of(c);
    INFO(c.algorithm << " K=" << c.K << " p=" << c.p << " n=" << c.n << " lambda=" << c.lambda);
    check_sum<int32_t>(plan, Net::tcp, ElemType::i32, 1000, true, c.K * 43 + c.n);
    check_sum<double>(plan, Net::tcp, ElemType::f64, 7, false, c.K * 47 + c.n);
  }
}

TEST_CASE("op program: one-element messages go zero-copy, in place inputs (MPI_IN_PLACE) and reused storage",
          "[op_program]") {
  const ir::Plan plan = plan_of({OpKind::Allreduce, "dissemination-allreduce", 5, 1, 1, 1});
  for (Net net : {Net::threads, Net::tcp}) {
    INFO(net_name(net));
    const uint32_t K = 5;
    const rt::UserOp op{rt::reduce_kernel(ReduceOp::sum, ElemType::i32), nullptr, sizeof(int32_t)};
    // Each rank's buffer is both its input and its output, like
    // MPI_Allreduce(MPI_IN_PLACE, buf, ...); a second run at a smaller count
    // reuses the first run's storage.
    std::vector<std::vector<int32_t>> buf(K);
    std::vector<size_t> storage_after(K), storage_small(K);
    std::barrier<> sync(K);
    const auto errors = on_world(plan, net, [&](ir::Rank r, rt::OpProgram& prog, rt::Transport& tr) {
      CHECK(prog.stats().zero_copy_sends > 0);
      CHECK(prog.stats().direct_recvs > 0);
      buf[r].assign(100, static_cast<int32_t>(r + 1));
      InPiece in{buf[r].data(), 400};
      OutPiece out{buf[r].data(), 400};
      prog.run(tr, op, 100, &in, &out);
      storage_after[r] = prog.storage_bytes();
      for (size_t e = 0; e < 60; ++e) buf[r][e] = static_cast<int32_t>(10 * r);
      in.bytes = out.bytes = 240;
      sync.arrive_and_wait();
      prog.run(tr, op, 60, &in, &out);
      storage_small[r] = prog.storage_bytes();
    }, &sync);
    REQUIRE(joined(errors).empty());
    for (uint32_t r = 0; r < K; ++r) {
      CHECK(buf[r][0] == 10 * (0 + 1 + 2 + 3 + 4));
      CHECK(buf[r][59] == 100);
      CHECK(buf[r][60] == 15);  // past the second run's bytes: the first run's sum
      CHECK(storage_small[r] == storage_after[r]);
      CHECK(storage_after[r] > 0);
    }
  }
}

TEST_CASE("op program: a double allreduce of random doubles gives the same bits every run and transport",
          "[op_program]") {
  for (const Case& c : {Case{OpKind::Allreduce, "reduce-scatter-allgather", 6, 1, 6, 1},
                        Case{OpKind::Allreduce, "dissemination-allreduce", 7, 2, 1, 1}}) {
    INFO(c.algorithm);
    const ir::Plan plan = plan_of(c);
    const uint32_t K = c.K;
    const size_t count = 257;
    std::mt19937_64 rng(99);
    std::uniform_real_distribution<double> dist(-1e6, 1e6);
    std::vector<std::vector<std::vector<double>>> in(K);
    for (uint32_t r = 0; r < K; ++r) {
      in[r].resize(plan.ranks[r].inputs.size());
      for (auto& v : in[r]) {
        v.resize(count);
        for (double& x : v) x = dist(rng) * std::pow(10.0, static_cast<int>(rng() % 13) - 6);
      }
    }
    const rt::UserOp op{rt::reduce_kernel(ReduceOp::sum, ElemType::f64), nullptr, sizeof(double)};
    auto replay = [&](Net net) {
      std::vector<std::vector<std::vector<double>>> out(K);
      const auto errors = on_world(plan, net, [&](ir::Rank r, rt::OpProgram& prog, rt::Transport& tr) {
        std::vector<InPiece> ip;
        std::vector<OutPiece> op_;
        out[r].assign(prog.num_outputs(), std::vector<double>(count));
        for (auto& v : in[r]) ip.push_back({v.data(), count * sizeof(double)});
        for (auto& v : out[r]) op_.push_back({v.data(), count * sizeof(double)});
        prog.run(tr, op, count, ip.data(), op_.data());
      });
      REQUIRE(joined(errors).empty());
      return out;
    };
    const auto a = replay(Net::threads);
    const auto b = replay(Net::threads);
    const auto t = replay(Net::tcp);
    auto bits_equal = [](const auto& x, const auto& y) {
      for (size_t r = 0; r < x.size(); ++r)
        for (size_t j = 0; j < x[r].size(); ++j)
          if (std::memcmp(x[r][j].data(), y[r][j].data(), x[r][j].size() * sizeof(double)) != 0) return false;
      return true;
    };
    CHECK(bits_equal(a, b));
    CHECK(bits_equal(a, t));
    // Across ranks the bits agree only where the plan folds each block once
    // and spreads the result (reduce-scatter then allgather); the
    // dissemination allreduce folds in a different order at each rank, so
    // its ranks may hold sums that differ in the last bits.
    if (c.algorithm == std::string("reduce-scatter-allgather"))
      for (uint32_t r = 1; r < K; ++r)
        for (size_t j = 0; j < a[r].size(); ++j) CHECK(std::memcmp(a[r][j].data(), a[0][j].data(), count * 8) == 0);
  }
}

TEST_CASE("op program: start and progress (non-blocking) give run()'s bits; misuse is a UserError", "[op_program]") {
  const ir::Plan plan = plan_of({OpKind::Allreduce, "reduce-scatter-allgather", 6, 1, 6, 1});
  const uint32_t K = 6;
  const size_t count = 301;
  const rt::UserOp op{rt::reduce_kernel(ReduceOp::sum, ElemType::f64), nullptr, sizeof(double)};
  std::mt19937_64 rng(7);
  std::vector<std::vector<std::vector<double>>> in(K);
  for (uint32_t r = 0; r < K; ++r) {
    in[r].resize(plan.ranks[r].inputs.size());
    for (auto& v : in[r]) {
      v.resize(count);
      for (double& x : v) x = std::ldexp(static_cast<double>(rng() % 1000000), static_cast<int>(rng() % 40) - 20);
    }
  }
  for (Net net : {Net::threads, Net::tcp}) {
    INFO(net_name(net));
    std::vector<std::vector<std::vector<double>>> blocking(K), started(K);
    std::vector<int> misuse(K, 0);
    std::barrier<> sync(K);
    const auto errors = on_world(plan, net, [&](ir::Rank r, rt::OpProgram& prog, rt::Transport& tr) {
      auto pieces = [&](std::vector<std::vector<double>>& out, std::vector<InPiece>& ip, std::vector<OutPiece>& opc) {
        out.assign(prog.num_outputs(), std::vector<double>(count, -1));
        for (auto& v : in[r]) ip.push_back({v.data(), count * sizeof(double)});
        for (auto& v : out) opc.push_back({v.data(), count * sizeof(double)});
      };
      std::vector<InPiece> ip1, ip2;
      std::vector<OutPiece> op1, op2;
      pieces(blocking[r], ip1, op1);
      pieces(started[r], ip2, op2);
      try {
        prog.progress();
      } catch (const UserError& e) {
        if (std::string(e.what()).find("without a replay in progress") != std::string::npos) ++misuse[r];
      }
      prog.run(tr, op, count, ip1.data(), op1.data());
      sync.arrive_and_wait();
      prog.start(tr, op, count, ip2.data(), op2.data());
      try {
        prog.start(tr, op, count, ip2.data(), op2.data());
      } catch (const UserError& e) {
        if (std::string(e.what()).find("still in progress") != std::string::npos) ++misuse[r];
      }
      if (!prog.running()) return;
      while (!prog.progress()) {
      }
      if (prog.running()) throw UserError("still running after progress() returned true");
    }, &sync);
    REQUIRE(joined(errors).empty());
    for (uint32_t r = 0; r < K; ++r) {
      CHECK(misuse[r] == 2);
      REQUIRE(started[r].size() == blocking[r].size());
      for (size_t j = 0; j < started[r].size(); ++j)
        CHECK(std::memcmp(started[r][j].data(), blocking[r][j].data(), count * sizeof(double)) == 0);
    }
  }
}

TEST_CASE("op program: inputs are read in place when whole, aligned and never overwritten", "[op_program]") {
  // reduce-scatter-allgather reads its inputs only (partial sums go to other
  // slots); a tree broadcast's root input is also its output.
  const ir::Plan plan = plan_of({OpKind::Allreduce, "reduce-scatter-allgather", 4, 1, 4, 1});
  const uint32_t K = 4;
  const size_t count = 64;
  const rt::UserOp op{rt::reduce_kernel(ReduceOp::sum, ElemType::i64), nullptr, sizeof(int64_t)};
  for (int shape = 0; shape < 3; ++shape) {  // whole and aligned; one short piece; misaligned
    INFO("shape " << shape);
    std::vector<size_t> in_place(K), num_in(K);
    std::vector<std::vector<int64_t>> got(K);
    const auto errors = on_world(plan, Net::threads, [&](ir::Rank r, rt::OpProgram& prog, rt::Transport& tr) {
      const size_t n = prog.num_inputs();
      std::vector<int64_t> buf(n * count + 1);
      int64_t* base = buf.data() + (shape == 2 ? 1 : 0);  // 8 bytes off: not max_align_t-aligned
      for (size_t e = 0; e < n * count; ++e) base[e] = static_cast<int64_t>(r * 1000 + e);
      std::vector<InPiece> in(n);
      std::vector<OutPiece> out(prog.num_outputs());
      got[r].assign(prog.num_outputs() * count, -1);
      for (size_t i = 0; i < n; ++i) in[i] = {base + i * count, count * sizeof(int64_t)};
      if (shape == 1) in[0].bytes -= sizeof(int64_t);  // the last element zero-filled
      for (size_t j = 0; j < out.size(); ++j) out[j] = {got[r].data() + j * count, count * sizeof(int64_t)};
      prog.run(tr, op, count, in.data(), out.data());
      in_place[r] = prog.inputs_read_in_place();
      num_in[r] = n;
    });
    REQUIRE(joined(errors).empty());
    for (uint32_t r = 0; r < K; ++r) {
      const size_t want = shape == 0 ? num_in[r] : shape == 1 ? num_in[r] - 1 : 0;
      CHECK(in_place[r] == want);
      for (size_t j = 0; j < got[r].size(); ++j) {
        // Output block b, element e: the sum over ranks of input block b's element e.
        const size_t e = j % count, b = j / count;
        int64_t sum = 0;
        for (uint32_t q = 0; q < K; ++q)
          if (!(shape == 1 && b == 0 && e == count - 1)) sum += static_cast<int64_t>(q * 1000 + b * count + e);
        CHECK(got[r][j] == sum);
      }
    }
  }
}

TEST_CASE("op program: bad arguments and plans are UserErrors naming the value", "[op_program]") {
  const ir::Plan reduce = plan_of({OpKind::Allreduce, "dissemination-allreduce", 4, 1, 1, 1});
  const ir::Plan bcast = plan_of({OpKind::Broadcast, "tree-broadcast", 4, 1, 1, 1});
  const rt::UserOp sum{rt::reduce_kernel(ReduceOp::sum, ElemType::i32), nullptr, 4};
  // Each rank runs alone on a threads world nobody else enters: every
  // argument check comes before the transport is touched.
  rt::ThreadsWorld world(4);
  rt::Transport& tr = world.endpoint(0);
  rt::OpProgram prog(reduce.spec, reduce.num_steps, reduce.ranks[0]);
  REQUIRE(prog.num_inputs() == 1);
  REQUIRE(prog.num_outputs() == 1);
  int32_t x[8] = {}, y[8] = {};
  const InPiece in{x, 32};
  const OutPiece out{y, 32};
  auto msg = [&](auto&& fn) { return test::user_error_of(fn); };

  CHECK_THAT(msg([&] { prog.run(tr, sum, 8, &in, 2, &out, 1); }),
             Catch::Contains("2 input and 1 output pieces given, the program has 1 inputs and 1 outputs"));
  CHECK_THAT(msg([&] { prog.run(tr, sum, 8, &in, 1, &out, 0); }), Catch::Contains("1 input and 0 output pieces"));
  CHECK_THAT(msg([&] { prog.run(tr, sum, 8, nullptr, &out); }), Catch::Contains("the input list is null"));
  CHECK_THAT(msg([&] { prog.run(tr, sum, 8, &in, nullptr); }), Catch::Contains("the output list is null"));
  const InPiece null_in{nullptr, 32};
  CHECK_THAT(msg([&] { prog.run(tr, sum, 8, &null_in, &out); }),
             Catch::Contains("rank 0 input 0: data is a null pointer with 32 bytes"));
  const OutPiece null_out{nullptr, 4};
  CHECK_THAT(msg([&] { prog.run(tr, sum, 8, &in, &null_out); }),
             Catch::Contains("rank 0 output 0: data is a null pointer with 4 bytes"));
  CHECK_THAT(msg([&] { prog.run(tr, sum, 0, &in, &out); }), Catch::Contains("count is 0"));
  CHECK_THAT(msg([&] { prog.run(tr, sum, 4, &in, &out); }),
             Catch::Contains("rank 0 input 0: 32 bytes, more than the row of 4 elements × 4 bytes = 16 bytes"));
  const InPiece short_in{x, 16};
  CHECK_THAT(msg([&] { prog.run(tr, sum, 4, &short_in, &out); }),
             Catch::Contains("rank 0 output 0: 32 bytes, more than the row"));
  CHECK_THAT(msg([&] { prog.run(tr, rt::UserOp{sum.fn, nullptr, 0}, 8, &in, &out); }),
             Catch::Contains("elem_size is 0"));
  CHECK_THAT(msg([&] { prog.run(tr, sum, size_t{1} << 62, &in, &out); }), Catch::Contains("is too large"));
  // Rows a machine cannot hold are refused before anything is allocated: an
  // allgather of 300 ranks has over 300 rows, of up to 2^40 bytes each.
  const ir::Plan wide = plan_of({OpKind::Allgather, "dissemination-allgather", 300, 1, 1, 1});
  rt::OpProgram wide_prog(wide.spec, wide.num_steps, wide.ranks[0]);
  std::vector<OutPiece> skip(wide_prog.num_outputs());
  const InPiece one{x, 1};
  rt::ThreadsWorld wide_world(300);
  CHECK_THAT(msg([&] {
               wide_prog.run(wide_world.endpoint(0), rt::UserOp{nullptr, nullptr, 1}, size_t{1} << 40, &one,
                             skip.data());
             }),
             Catch::Contains("rank 0: rows of 1099511627776 bytes need more than 281474976710656 bytes of storage"));
  CHECK(wide_prog.storage_bytes() == 0);
  // A reduce plan needs the operator; a broadcast does not.
  CHECK(prog.combines());
  CHECK_THAT(msg([&] { prog.run(tr, rt::UserOp{nullptr, nullptr, 4}, 8, &in, &out); }),
             Catch::Contains("the operator's function is null, but step") && Catch::Contains("combines two or more terms"));
  for (const auto& p : bcast.ranks) CHECK_FALSE(rt::OpProgram(bcast.spec, bcast.num_steps, p).combines());

  // A coefficient other than 1 has no meaning for an operator.
  ir::Plan tripled = reduce;
  bool done = false;
  for (auto& st : tripled.ranks[2].steps)
    for (auto& o : st.ops)
      if (!done && o.terms.size() >= 2) {
        o.terms[1].coeff = 3;
        done = true;
      }
  REQUIRE(done);
  CHECK_THAT(msg([&] { rt::OpProgram(tripled.spec, tripled.num_steps, tripled.ranks[2]); }),
             Catch::Contains("rank 2 step") && Catch::Contains("coefficient 3 on slot"));
  // A program out of its plan's range is refused by the structure check.
  ir::Program stray = reduce.ranks[1];
  stray.rank = 9;
  CHECK_THROWS_WITH(rt::OpProgram(reduce.spec, reduce.num_steps, stray),
                    Catch::Contains("program of rank 9, but the plan has ranks 0..3"));
}

TEST_CASE("op program: a peer that never comes is a UserError naming rank, step, peer and port", "[op_program]") {
  const ir::Plan plan = plan_of({OpKind::Allreduce, "dissemination-allreduce", 3, 1, 1, 1});
  rt::ThreadsOptions opt;
  opt.timeout = std::chrono::milliseconds(200);
  rt::ThreadsWorld world(3, opt);
  for (ir::Rank r = 0; r < 3; ++r) world.reserve(r, rt::mailbox_capacity(plan, r));
  rt::OpProgram prog(plan.spec, plan.num_steps, plan.ranks[0]);
  const rt::UserOp op{rt::reduce_kernel(ReduceOp::sum, ElemType::i32), nullptr, 4};
  int32_t x = 1, y = -1;
  const InPiece in{&x, 4};
  const OutPiece out{&y, 4};
  // Ranks 1 and 2 never run: rank 0's first wait times out.
  const std::string e = test::user_error_of([&] { prog.run(world.endpoint(0), op, 1, &in, &out); });
  CHECK_THAT(e, Catch::Matches("rank 0 step 1: completing the message (to|from) rank [12] on port 0 \\(sent in step "
                               "1\\) failed: timeout.*"));
  CHECK(y == -1);  // outputs untouched
}

TEST_CASE("op program: a null operator replays broadcasts and allgathers", "[op_program]") {
  for (const Case& c : {Case{OpKind::Broadcast, "postal-broadcast", 6, 2, 2, 1},
                        Case{OpKind::Allgather, "circulant-allgather", 5, 1, 2, 1}}) {
    INFO(c.algorithm);
    const ir::Plan plan = plan_of(c);
    const Postcondition pc = postcondition(plan.spec);
    std::vector<std::vector<uint64_t>> got(pc.num_outputs(), std::vector<uint64_t>(3, 0));
    const rt::UserOp copy_only{nullptr, nullptr, 8};
    const auto errors = on_world(plan, Net::threads, [&](ir::Rank r, rt::OpProgram& prog, rt::Transport& tr) {
      std::vector<uint64_t> mine(3 * prog.num_inputs());
      std::vector<InPiece> in;
      std::vector<OutPiece> out;
      for (size_t i = 0; i < prog.num_inputs(); ++i) {
        for (size_t e = 0; e < 3; ++e) mine[3 * i + e] = (uint64_t{pc.input_offset[r]} + i) * 1000 + e;
        in.push_back({mine.data() + 3 * i, 24});
      }
      for (size_t j = 0; j < prog.num_outputs(); ++j) out.push_back({got[pc.output_col(r, j)].data(), 24});
      prog.run(tr, copy_only, 3, in.data(), out.data());
    });
    REQUIRE(joined(errors).empty());
    std::vector<Postcondition::Entry> col;
    for (uint32_t c2 = 0; c2 < pc.num_outputs(); ++c2) {
      pc.column(c2, col);
      REQUIRE(col.size() == 1);
      for (uint64_t e = 0; e < 3; ++e) CHECK(got[c2][e] == col[0].input * 1000 + e);
    }
  }
}

namespace {

// A transport that uses the freedom the contract gives it (transport.h):
// with late_sends it reads a send's bytes only when the send is waited for,
// with early_recvs it writes a receive's buffer as soon as it is posted.
// Either exposes a replay that lets a message's buffer change, or be read,
// while the message is in flight.
class Skewed final : public rt::Transport {
 public:
  Skewed(rt::Transport& inner, bool late_sends, bool early_recvs)
      : in_(inner), late_(late_sends), early_(early_recvs) {}
  ir::Rank rank() const override { return in_.rank(); }
  uint32_t size() const override { return in_.size(); }
  rt::Status begin(uint32_t max_requests) override {
    deferred_.assign(max_requests, std::nullopt);
    done_.assign(max_requests, false);
    return in_.begin(max_requests);
  }
  rt::Status post_send(rt::ReqId id, const rt::SendDesc& d) override {
    if (!late_) return in_.post_send(id, d);
    deferred_[id] = d;
    return rt::Status::ok;
  }
  rt::Status post_recv(rt::ReqId id, const rt::RecvDesc& d) override {
    rt::Status st = in_.post_recv(id, d);
    if (st != rt::Status::ok || !early_) return st;
    size_t failed = 0;
    done_[id] = true;
    return in_.wait(&id, 1, &failed);
  }
  rt::Status wait(const rt::ReqId* ids, size_t n, size_t* failed_index) override {
    std::vector<rt::ReqId> rest;
    for (size_t i = 0; i < n; ++i) {
      if (deferred_[ids[i]]) {
        const rt::Status st = in_.post_send(ids[i], *deferred_[ids[i]]);
        deferred_[ids[i]].reset();
        if (st != rt::Status::ok) return st;
      }
      if (!done_[ids[i]]) rest.push_back(ids[i]);
      done_[ids[i]] = false;
    }
    return in_.wait(rest.data(), rest.size(), failed_index);
  }
  rt::Status end() override { return in_.end(); }
  void abandon() override { in_.abandon(); }

 private:
  rt::Transport& in_;
  bool late_, early_;
  std::vector<std::optional<rt::SendDesc>> deferred_;
  std::vector<bool> done_;
};

ir::Term t1(ir::SlotId s) { return {s, 1}; }

// An allreduce of 2 ranks whose messages' slots are busy while the messages
// fly. lambda = 2: each rank sends its input in step 1 and, before the
// message arrives in step 2, keeps a copy and doubles the input in place;
// the message then lands in the input's slot. lambda = 1: step 1 copies the
// input aside, step 2 sends the input slot and receives into it at once.
ir::Plan busy_slots_plan(uint32_t lambda) {
  Spec s = plain_spec(OpKind::Allreduce, 2, 1, 1, lambda, Field::prime(65537));
  s.algorithm = "hand";
  ir::Plan plan = ir::make_plan(s, 2);
  for (ir::Rank k = 0; k < 2; ++k) {
    ir::Program& prog = plan.ranks[k];
    prog.num_slots = 3;
    prog.inputs = {0};
    prog.outputs = {2};
    const ir::Rank other = 1 - k;
    prog.at(1);
    prog.at(2);  // both created before either is referred to (at() may reallocate)
    ir::Step& st1 = prog.steps[0];
    ir::Step& st2 = prog.steps[1];
    if (lambda == 2) {
      st1.sends.push_back({0, other, {ir::Combo{{t1(0)}}}});
      st1.ops.push_back({1, {t1(0)}});
      st1.ops.push_back({0, {t1(0), t1(0)}});
      st2.recvs.push_back({0, other, 1, {0}});
    } else {
      st1.ops.push_back({1, {t1(0)}});
      st2.sends.push_back({0, other, {ir::Combo{{t1(0)}}}});
      st2.recvs.push_back({0, other, 2, {0}});
    }
    st2.ops.push_back({2, {t1(1), t1(0)}});
  }
  return plan;
}

}  // namespace

TEST_CASE("op program: a message's slot row is never shared while the slot is busy", "[op_program]") {
  for (uint32_t lambda : {1u, 2u}) {
    INFO("lambda " << lambda);
    const ir::Plan plan = busy_slots_plan(lambda);
    ir::verify_structure(plan);
    const rt::UserOp op{rt::reduce_kernel(ReduceOp::sum, ElemType::i64), nullptr, 8};
    int64_t got[2][4] = {};
    const auto errors = on_world(plan, Net::threads, [&](ir::Rank r, rt::OpProgram& prog, rt::Transport& tr) {
      // Rank 1 sends late and receives early; rank 0 is plain.
      Skewed skew(tr, r == 1, r == 1);
      int64_t x[4] = {10 + r, 20 + r, 30 + r, 40 + r};
      const InPiece in{x, sizeof x};
      const OutPiece out{got[r], sizeof x};
      prog.run(r == 1 ? static_cast<rt::Transport&>(skew) : tr, op, 4, &in, &out);
    });
    REQUIRE(joined(errors).empty());
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 4; ++e) CHECK(got[r][e] == 20 * (e + 1) + 1);
  }
}

// Figures, not a test (run by hand: collplan_tests "[bench]"): one
// OpProgram replay per rank of a double-sum allreduce on the threads
// transport, the programs built once and the rows sized by a first run;
// the time includes the barrier that separates runs on a threads world.
TEST_CASE("op program: allreduce replay time on threads", "[.bench]") {
  for (const Case& c : {Case{OpKind::Allreduce, "dissemination-allreduce", 4, 1, 1, 1},
                        Case{OpKind::Allreduce, "reduce-scatter-allgather", 4, 1, 4, 1}}) {
    const ir::Plan plan = plan_of(c);
    const rt::UserOp op{rt::reduce_kernel(ReduceOp::sum, ElemType::f64), nullptr, sizeof(double)};
    for (size_t total : {size_t{1} << 3, size_t{1} << 17, size_t{1} << 20}) {
      const size_t count = (total + c.n - 1) / c.n;
      const int runs = total < 4096 ? 2000 : 20;
      std::vector<double> seconds(c.K);
      std::barrier<> sync(c.K);
      const auto errors = on_world(plan, Net::threads, [&](ir::Rank r, rt::OpProgram& prog, rt::Transport& tr) {
        std::vector<double> buf(total, 1.0 + r);
        std::vector<InPiece> in;
        std::vector<OutPiece> out;
        for (size_t b = 0; b < c.n; ++b) {
          const size_t off = std::min(b * count, total), len = std::min(count, total - off);
          in.push_back({buf.data() + off, len * sizeof(double)});
          out.push_back({buf.data() + off, len * sizeof(double)});
        }
        prog.run(tr, op, count, in.data(), out.data());  // sizes the rows
        sync.arrive_and_wait();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < runs; ++i) {
          prog.run(tr, op, count, in.data(), out.data());
          sync.arrive_and_wait();
        }
        seconds[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / runs;
      }, &sync);
      INFO(joined(errors));
      REQUIRE(joined(errors).empty());
      const double worst = *std::max_element(seconds.begin(), seconds.end());
      std::printf("%-26s K=%u %8zu doubles: %10.1f us per allreduce, %6.2f GB/s of vector per rank\n", c.algorithm,
                  c.K, total, worst * 1e6, total * 8 / worst / 1e9);
    }
  }
}
