// The user-operator replay (runtime/user_op.h) on the threads transport: the
// hand-built prefix plans of prefix_plans.h and the postal prefix plans,
// replayed with operators whose results show any misordering (2×2 matrix
// products over GF(65537) and string concatenation) and compared with a
// direct left fold; plans that do not keep operand order are refused. Then
// every reduce, allreduce and reduce-scatter generator's plans, replayed
// with a commutative operator (double addition) and, where they keep rank
// order, a non-commutative one (matrix products); plans that are not exact,
// or not ordered for a non-commutative operator, are refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#if __has_include("gen/postal.h")
#include "gen/postal.h"
#define COLLPLAN_HAVE_POSTAL 1
#endif
#include "gen/registry.h"
#include "ir/plan.h"
#include "matrix/matrix.h"
#include "passes/verify.h"
#include "passes/verify_order.h"
#include "passes/verify_reduction.h"
#include "pipeline/pipeline.h"
#include "prefix_plans.h"
#include "runtime/user_op.h"
#include "support/error.h"

using namespace collplan;
using namespace collplan::ir;
using test::chain_plan;
using test::doubling_plan;
using test::items_at;
using test::op_at;
using test::order_error;
using test::prefix_spec;

namespace {

// ─── Operators ───────────────────────────────────────────────────────────────

constexpr uint32_t kQ = 65537;

// A 2×2 matrix over GF(65537), row-major: 16 bytes.
struct Mat2 {
  uint32_t m[4];
  friend bool operator==(const Mat2&, const Mat2&) = default;
};
Mat2 mat_mul(const Mat2& a, const Mat2& b) {
  auto mm = [](uint64_t x, uint64_t y) { return x * y % kQ; };
  Mat2 r;
  r.m[0] = static_cast<uint32_t>((mm(a.m[0], b.m[0]) + mm(a.m[1], b.m[2])) % kQ);
  r.m[1] = static_cast<uint32_t>((mm(a.m[0], b.m[1]) + mm(a.m[1], b.m[3])) % kQ);
  r.m[2] = static_cast<uint32_t>((mm(a.m[2], b.m[0]) + mm(a.m[3], b.m[2])) % kQ);
  r.m[3] = static_cast<uint32_t>((mm(a.m[2], b.m[1]) + mm(a.m[3], b.m[3])) % kQ);
  return r;
}
// Entry-wise sum mod q: commutative, so blind to operand order.
Mat2 mat_add(const Mat2& a, const Mat2& b) {
  Mat2 r;
  for (int i = 0; i < 4; ++i) r.m[i] = (a.m[i] + b.m[i]) % kQ;
  return r;
}

// A fixed-capacity string: 32 bytes; ⊕ appends (truncating at 31 chars).
struct Str {
  uint8_t len = 0;
  char c[31] = {};
  friend bool operator==(const Str& a, const Str& b) { return a.len == b.len && std::memcmp(a.c, b.c, a.len) == 0; }
};
Str str_cat(const Str& a, const Str& b) {
  Str r = a;
  for (uint8_t i = 0; i < b.len && r.len < sizeof r.c; ++i) r.c[r.len++] = b.c[i];
  return r;
}
Str str_of(char ch) {
  Str s;
  s.len = 1;
  s.c[0] = ch;
  return s;
}

// What the trampoline observed about the replay's calls (through ctx).
struct Probe {
  std::atomic<size_t> misaligned{0};  // an operand not aligned as user_op.h promises
  std::atomic<size_t> bad_alias{0};   // out aliasing b, which the contract excludes
};

// The C-style trampoline for an operator on E. Reads both operands into
// locals first, so it is correct when out aliases a (the contract).
template <class E, E (*F)(const E&, const E&)>
void apply_op(const void* a, const void* b, void* out, size_t count, void* ctx) {
  if (auto* probe = static_cast<Probe*>(ctx)) {
    auto off = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % alignof(std::max_align_t); };
    if (off(a) || off(b) || off(out)) probe->misaligned.fetch_add(1, std::memory_order_relaxed);
    if (out == b) probe->bad_alias.fetch_add(1, std::memory_order_relaxed);
  }
  for (size_t i = 0; i < count; ++i) {
    E x, y;
    std::memcpy(&x, static_cast<const char*>(a) + i * sizeof(E), sizeof(E));
    std::memcpy(&y, static_cast<const char*>(b) + i * sizeof(E), sizeof(E));
    const E r = F(x, y);
    std::memcpy(static_cast<char*>(out) + i * sizeof(E), &r, sizeof(E));
  }
}

// Replays `plan` with ⊕ = F over vectors of `count` elements made by
// make(g, i) (item g, element i) and compares every output with the left
// fold of the items its prefix covers. An exclusive item 0 must be left
// untouched. Returns the number of differing output elements.
template <class E, E (*F)(const E&, const E&), class Make>
size_t replay_mismatches(const Plan& plan, size_t count, Make make, bool verify = true) {
  const Spec& s = plan.spec;
  const uint32_t K = s.K;
  std::vector<uint32_t> off(K + 1, 0);
  for (Rank k = 0; k < K; ++k) off[k + 1] = off[k] + items_at(s, k);
  const uint32_t n = off[K];
  std::vector<std::vector<E>> in(n, std::vector<E>(count)), out(n, std::vector<E>(count));
  E sentinel;
  std::memset(static_cast<void*>(&sentinel), 0xAB, sizeof sentinel);
  for (uint32_t g = 0; g < n; ++g)
    for (size_t i = 0; i < count; ++i) {
      in[g][i] = make(g, i);
      out[g][i] = sentinel;
    }
  std::vector<std::vector<const void*>> ins(K);
  std::vector<std::vector<void*>> outs(K);
  for (Rank k = 0; k < K; ++k)
    for (uint32_t g = off[k]; g < off[k + 1]; ++g) {
      ins[k].push_back(in[g].data());
      outs[k].push_back(out[g].data());
    }
  rt::UserOpOptions opt;
  opt.verify = verify;
  Probe probe;
  rt::run_user_op_threads(plan, rt::UserOp{&apply_op<E, F>, &probe, sizeof(E)}, count, ins, outs, opt);
  CHECK(probe.misaligned == 0);
  CHECK(probe.bad_alias == 0);
  size_t bad = 0;
  for (uint32_t g = 0; g < n; ++g) {
    const uint32_t last = s.exclusive ? g : g + 1;  // items 0..last−1
    for (size_t i = 0; i < count; ++i) {
      if (last == 0) {
        bad += std::memcmp(&out[g][i], &sentinel, sizeof(E)) != 0;
        continue;
      }
      E acc = in[0][i];
      for (uint32_t h = 1; h < last; ++h) acc = F(acc, in[h][i]);
      bad += !(out[g][i] == acc);
    }
  }
  return bad;
}

Mat2 random_mat(uint32_t g, size_t i) {
  SplitMix64 rng(0x5eed0000ull + g * 131 + i);
  Mat2 m;
  for (auto& x : m.m) x = static_cast<uint32_t>(rng.next() % kQ);
  return m;
}
// Item g, element i: one letter, a different one per element so the
// elements of a vector are independent.
Str letter(uint32_t g, size_t i) { return str_of(static_cast<char>(33 + (g + 7 * i) % 94)); }

// Replays a reduce, allreduce or reduce-scatter plan with ⊕ = F (declared
// commutative or not) over vectors of `count` elements, rank r's input i
// being make(r · inputs + i, element), and compares every output with the
// left fold x_0 ⊕ x_1 ⊕ … ⊕ x_{K−1} of its block over the ranks, in rank
// order as MPI defines it. Returns the number of differing output elements.
template <class E, E (*F)(const E&, const E&), class Make>
size_t reduction_mismatches(const Plan& plan, size_t count, Make make, bool commutative, bool verify = true) {
  const uint32_t K = plan.spec.K, n = plan.spec.blocks;
  std::vector<std::vector<std::vector<E>>> in(K), out(K);
  std::vector<std::vector<const void*>> ins(K);
  std::vector<std::vector<void*>> outs(K);
  for (Rank r = 0; r < K; ++r) {
    const uint32_t ni = static_cast<uint32_t>(plan.ranks[r].inputs.size());
    for (uint32_t i = 0; i < ni; ++i) {
      in[r].emplace_back(count);
      for (size_t e = 0; e < count; ++e) in[r][i][e] = make(r * ni + i, e);
    }
    out[r].assign(plan.ranks[r].outputs.size(), std::vector<E>(count));
    for (auto& v : in[r]) ins[r].push_back(v.data());
    for (auto& v : out[r]) outs[r].push_back(v.data());
  }
  rt::UserOpOptions opt;
  opt.verify = verify;
  Probe probe;
  rt::run_user_op_threads(plan, rt::UserOp{&apply_op<E, F>, &probe, sizeof(E), commutative}, count, ins, outs, opt);
  CHECK(probe.misaligned == 0);
  CHECK(probe.bad_alias == 0);
  size_t bad = 0, checked = 0;
  for (Rank k = 0; k < K; ++k)
    for (uint32_t j = 0; j < out[k].size(); ++j) {
      // rank k's output j is block j of the sum, or for reduce-scatter its
      // share, block k·n + j of every rank's input.
      const uint32_t block = plan.spec.op == OpKind::ReduceScatter ? k * n + j : j;
      for (size_t e = 0; e < count; ++e) {
        E acc = in[0][block][e];
        for (Rank r = 1; r < K; ++r) acc = F(acc, in[r][block][e]);
        bad += !(out[k][j][e] == acc);
        ++checked;
      }
    }
  CHECK(checked > 0);
  return bad;
}

double add_double(const double& a, const double& b) { return a + b; }
// Small integers: every order of additions gives the same double exactly,
// so any exact plan must match the direct sum bit for bit.
double small_int(uint32_t item, size_t e) { return static_cast<double>((item * 7 + e * 3) % 101); }

size_t sum_mismatches(const Plan& plan, size_t count, bool verify = true) {
  return reduction_mismatches<double, add_double>(plan, count, small_int, true, verify);
}
size_t product_mismatches(const Plan& plan, size_t count, bool verify = true) {
  return reduction_mismatches<Mat2, mat_mul>(plan, count, random_mat, false, verify);
}

Plan compiled(const Spec& s, const std::string& algorithm) {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  return pipeline::compile(s, opt).plan;
}

size_t mat_mismatches(const Plan& plan, size_t count, bool verify = true) {
  return replay_mismatches<Mat2, mat_mul>(plan, count, random_mat, verify);
}
size_t str_mismatches(const Plan& plan, size_t count, bool verify = true) {
  return replay_mismatches<Str, str_cat>(plan, count, letter, verify);
}

}  // namespace

TEST_CASE("user-operator replay matches a left fold", "[order]") {
  for (uint32_t lambda : {1u, 2u})
    for (bool excl : {false, true})
      for (uint32_t K : {2u, 5u, 8u}) {
        INFO("K " << K << " lambda " << lambda << (excl ? " exclusive" : " inclusive"));
        const Plan d = doubling_plan(prefix_spec(K, lambda, excl));
        CHECK(mat_mismatches(d, 3) == 0);
        CHECK(str_mismatches(d, 2) == 0);
        const Plan c = chain_plan(prefix_spec(K, lambda, excl));
        CHECK(mat_mismatches(c, 1) == 0);
        CHECK(str_mismatches(c, 3) == 0);
      }
  const Plan blocks = chain_plan(prefix_spec(4, 2, true, {2, 1, 3, 2}));
  CHECK(mat_mismatches(blocks, 2) == 0);
  CHECK(str_mismatches(blocks, 1) == 0);
  // Folds in a message payload, and ops whose dst is also a later operand.
  for (bool excl : {false, true}) {
    const Plan folded = chain_plan(prefix_spec(5, 2, excl, {1, 3, 1, 2, 2}), true);
    REQUIRE(order_error(folded).empty());
    CHECK(mat_mismatches(folded, 2) == 0);
    CHECK(str_mismatches(folded, 2) == 0);
    const Plan overwrite = doubling_plan(prefix_spec(7, 1, excl), true);
    REQUIRE(order_error(overwrite).empty());
    CHECK(mat_mismatches(overwrite, 2) == 0);
    CHECK(str_mismatches(overwrite, 2) == 0);
  }
}

TEST_CASE("user-operator replay refuses non-order-preserving plans", "[order]") {
  const Plan good = doubling_plan(prefix_spec(8, 1, false));

  SECTION("a non-unit coefficient is a UserError, before any checking") {
    Plan m = good;
    op_at(m, 6, 1, 0).terms[0].coeff = 2;
    CHECK_THROWS_AS(mat_mismatches(m, 1), UserError);
    CHECK_THROWS_AS(mat_mismatches(m, 1, false), UserError);
  }
  SECTION("a misordered plan fails the check; bypassed, only a non-commutative operator notices") {
    Plan m = good;
    auto& terms = op_at(m, 5, 2, 0).terms;
    std::swap(terms[0], terms[1]);
    CHECK_THROWS_AS(mat_mismatches(m, 1), VerifyError);
    // Without the order check the replay runs. A commutative operator gives
    // the right answer, so a test with one could never catch this plan...
    CHECK(replay_mismatches<Mat2, mat_add>(m, 2, random_mat, false) == 0);
    // ...while matrix products and concatenation do.
    CHECK(mat_mismatches(m, 2, false) > 0);
    CHECK(str_mismatches(m, 1, false) > 0);
  }
  SECTION("arguments that do not fit the plan") {
    std::vector<std::vector<const void*>> ins(8);
    std::vector<std::vector<void*>> outs(8);
    const rt::UserOp op{&apply_op<Mat2, mat_mul>, nullptr, sizeof(Mat2)};
    CHECK_THROWS_AS(rt::run_user_op_threads(good, op, 1, ins, outs), UserError);  // no input pointers
    rt::UserOp null_fn = op;
    null_fn.fn = nullptr;
    CHECK_THROWS_AS(rt::run_user_op_threads(good, null_fn, 1, ins, outs), UserError);
  }
}

#ifdef COLLPLAN_HAVE_POSTAL
TEST_CASE("postal prefix plans keep operand order", "[order]") {
  for (uint32_t p = 1; p <= 3; ++p)
    for (uint32_t lambda = 1; lambda <= 3; ++lambda)
      for (bool excl : {false, true})
        for (uint32_t K = 2; K <= 40; ++K) {
          Spec s = prefix_spec(K, lambda, excl);
          s.p = p;
          s.algorithm = "postal";
          INFO("K " << K << " p " << p << " lambda " << lambda << (excl ? " exclusive" : " inclusive"));
          const Plan plan = gen::postal_prefix(s);
          REQUIRE(order_error(plan).empty());
          // Replays spawn K threads each: a sample of sizes is enough.
          if (K <= 9 || K == 17 || K == 40) {
            CHECK(mat_mismatches(plan, 2) == 0);
            CHECK(str_mismatches(plan, 1) == 0);
          }
        }
  // Every op of a real plan is checked, not just those feeding outputs:
  // swapping two neighbouring terms of any multi-term op is rejected.
  for (uint32_t p = 1; p <= 3; ++p)
    for (uint32_t lambda = 1; lambda <= 3; ++lambda)
      for (bool excl : {false, true})
        for (uint32_t K : {5u, 12u}) {
          Spec s = prefix_spec(K, lambda, excl);
          s.p = p;
          s.algorithm = "postal";
          const Plan plan = gen::postal_prefix(s);
          size_t mutants = 0;
          for (Rank k = 0; k < K; ++k)
            for (size_t si = 0; si < plan.ranks[k].steps.size(); ++si)
              for (size_t oi = 0; oi < plan.ranks[k].steps[si].ops.size(); ++oi)
                for (size_t ti = 0; ti + 1 < plan.ranks[k].steps[si].ops[oi].terms.size(); ++ti) {
                  Plan m = plan;
                  auto& terms = m.ranks[k].steps[si].ops[oi].terms;
                  std::swap(terms[ti], terms[ti + 1]);
                  INFO("K " << K << " p " << p << " lambda " << lambda << " rank " << k << " step "
                            << plan.ranks[k].steps[si].t << " op " << oi << " terms " << ti << "," << ti + 1);
                  // The first swapped term is out of order; when it is not the
                  // first term, the fold already fails on the gap before it.
                  CHECK_THAT(order_error(m),
                             Catch::Contains(fmt::format("rank {} step {} op {} ", k, plan.ranks[k].steps[si].t, oi)) &&
                                 (Catch::Contains("out of order") || Catch::Contains("not adjacent")));
                  ++mutants;
                }
          CHECK(mutants > 0);
        }
  // Algorithm B: blocks of items, some ranks empty, total <= 40.
  for (uint32_t p = 1; p <= 3; ++p)
    for (uint32_t lambda = 1; lambda <= 3; ++lambda)
      for (bool excl : {false, true})
        for (const std::vector<uint32_t>& counts :
             {gen::postal_block_counts(40, 7), gen::postal_block_counts(9, 4), std::vector<uint32_t>{3, 0, 2, 0, 1},
              std::vector<uint32_t>{0, 0, 5}}) {
          Spec s = prefix_spec(static_cast<uint32_t>(counts.size()), lambda, excl, counts);
          s.p = p;
          s.algorithm = "postal";
          INFO("counts " << counts.size() << " ranks, p " << p << " lambda " << lambda << (excl ? " exclusive" : ""));
          const Plan plan = gen::postal_prefix(s);
          REQUIRE(order_error(plan).empty());
          CHECK(mat_mismatches(plan, 1) == 0);
          CHECK(str_mismatches(plan, 2) == 0);
        }
}
#endif

TEST_CASE("user-operator replay of every reduce, allreduce and reduce-scatter generator", "[order][reduction]") {
  const std::vector<OpKind> ops = {OpKind::Reduce, OpKind::Allreduce, OpKind::ReduceScatter};
  for (const gen::GeneratorInfo& gi : gen::generators()) {
    const auto which = std::find_if(ops.begin(), ops.end(), [&](OpKind o) { return gi.computes(o); });
    if (which == ops.end()) continue;
    const OpKind op = *which;
    const std::string& g = gi.name;
    size_t replayed = 0, ordered = 0;
    for (uint32_t K = 2; K <= 7; ++K)
      for (uint32_t p = 1; p <= 2; ++p)
        for (uint32_t lambda = 1; lambda <= 2; ++lambda)
          for (uint32_t n = 1; n <= 2; ++n)
            for (uint32_t root : {0u, K - 1}) {
              if (op != OpKind::Reduce && root != 0) continue;
              Spec s = test::plain_spec(op, K, p, n, lambda, Field::gf256());
              s.root = root;
              Plan plan;
              try {
                plan = compiled(s, g);
              } catch (const UserError&) {
                continue;  // not this generator's (p, λ)
              }
              INFO(g << " K=" << K << " p=" << p << " lambda=" << lambda << " n=" << n << " root=" << root);
              const auto rp = passes::reduction_properties(plan);
              REQUIRE(rp.exact);  // every generator's plans are (tests/unit/test_verify_reduction.cpp)
              CHECK(sum_mismatches(plan, 3) == 0);
              ++replayed;
              if (rp.ordered) {
                CHECK(product_mismatches(plan, 2) == 0);
                ++ordered;
              } else {
                // Refused for a non-commutative operator, with the reason...
                CHECK_THROWS_WITH(product_mismatches(plan, 1),
                                  Catch::Contains("does not combine in rank order") &&
                                      Catch::Contains(rp.why_not_ordered) && Catch::Contains("UserOp::commutative"));
                // ...and rightly: replayed anyway, matrix products come out wrong.
                CHECK(product_mismatches(plan, 2, false) > 0);
              }
            }
    INFO(g);
    CHECK(replayed >= 12);  // the circulant ones take p = λ = 1 only: 6 K × 2 n
    if (op == OpKind::Reduce && g != "circulant-reduce") CHECK(ordered > 0);
  }
}

TEST_CASE("user-operator replay refuses reduction plans that are right over the field only", "[order][reduction]") {
  Spec s = test::plain_spec(OpKind::Allreduce, 5, 1, 2, 1, Field::gf256());
  const Plan good = compiled(s, "dissemination-allreduce");
  REQUIRE(sum_mismatches(good, 2) == 0);
  // Rank 2's last fold takes its last term twice more: x ⊕ y ⊕ y ⊕ y is
  // x + y over GF(2^8) (y + y = 0), and x + 3y for doubles.
  Plan m = good;
  Step& last = m.ranks[2].steps.back();
  REQUIRE(!last.ops.empty());
  auto& terms = last.ops[0].terms;
  REQUIRE(terms.size() >= 2);
  terms.push_back(terms.back());
  terms.push_back(terms.back());
  CHECK_NOTHROW(passes::verify(m, test::kExact));
  CHECK_THROWS_WITH(sum_mismatches(m, 1), Catch::Contains("right over its field only, not for an operator") &&
                                              Catch::Contains(fmt::format("rank 2 step {} op 0", last.t)) &&
                                              Catch::Contains("twice"));
  CHECK_THROWS_AS(sum_mismatches(m, 1), UserError);
  CHECK(sum_mismatches(m, 2, false) > 0);  // and rightly so
  // Other operations are refused up front.
  Plan other = good;
  other.spec.op = OpKind::Allgather;
  CHECK_THROWS_WITH(sum_mismatches(other, 1), Catch::Contains("allgather") && Catch::Contains("reduce-scatter"));
}
