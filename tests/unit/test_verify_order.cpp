// The operand-order checker (passes/verify_order.h) and the user-operator
// replay (runtime/user_op.h).
//
// Plans are built by hand: a chain over blocks of items (every rank adds its
// block's local prefix to the carry from its left neighbour) and the
// doubling plan of Hillis and Steele (round r: rank k sends to k + 2^(r−1)
// and puts what it receives in FRONT of its own value). Each is then broken
// in the ways that matter for a non-commutative operator; the linear checker
// accepts some of these breaks, the order checker must not. The replays use
// operators whose results show any misordering: 2×2 matrix products over
// GF(65537) and string concatenation, compared with a direct left fold.
#include <catch2/catch.hpp>

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
#include "ir/plan.h"
#include "matrix/matrix.h"
#include "passes/verify.h"
#include "passes/verify_order.h"
#include "runtime/user_op.h"
#include "support/error.h"

using namespace collplan;
using namespace collplan::ir;

namespace {

Spec prefix_spec(uint32_t K, uint32_t lambda, bool exclusive, std::vector<uint32_t> counts = {}) {
  Spec s;
  s.op = OpKind::Prefix;
  s.K = K;
  s.p = 1;
  s.lambda = lambda;
  s.field = Field::prime(65537);
  s.algorithm = "hand";
  s.counts = std::move(counts);
  s.exclusive = exclusive;
  return s;
}

uint32_t items_at(const Spec& s, Rank k) { return s.counts.empty() ? 1u : s.counts[k]; }

// Chain over blocks. Step 1: every rank forms the local prefixes of its
// block. Round r = 1..K−1 (sent in step (r−1)λ+2, received in rλ+1): rank
// r−1 passes the running total [0, end of its block] to rank r, which puts
// it in front of its local prefixes. Exclusive: item j gets the carry ⊕ the
// local prefix of items 0..j−1; the global item 0 gets the empty combination.
// Every rank must hold at least one item. With `fold_payload` the running
// total is not kept in a slot: the message itself is the combination
// received ⊕ local total.
Plan chain_plan(const Spec& s, bool fold_payload = false) {
  const uint32_t K = s.K, lam = s.lambda;
  auto send_step = [&](uint32_t r) { return (r - 1) * lam + 2; };
  auto recv_step = [&](uint32_t r) { return r * lam + 1; };
  Plan plan = make_plan(s, (K - 1) * lam + 1);
  std::vector<std::vector<SlotId>> local(K);  // local[k][j] = items 0..j of rank k's block
  for (Rank k = 0; k < K; ++k) {
    Program& pr = plan.ranks[k];
    for (uint32_t j = 0; j < items_at(s, k); ++j) pr.inputs.push_back(pr.new_slot());
    local[k].push_back(pr.inputs[0]);
    for (uint32_t j = 1; j < pr.inputs.size(); ++j) {
      const SlotId d = pr.new_slot();
      pr.at(1).ops.push_back(make_op(pr, d, {Term{local[k].back(), 1}, Term{pr.inputs[j], 1}}));
      local[k].push_back(d);
    }
  }
  // Rank 0's outputs and carry.
  Program& p0 = plan.ranks[0];
  if (s.exclusive) {
    const SlotId none = p0.new_slot();
    p0.at(1).ops.push_back(make_op(p0, none, {}));
    p0.outputs.push_back(none);
    for (size_t j = 0; j + 1 < local[0].size(); ++j) p0.outputs.push_back(local[0][j]);
  } else {
    p0.outputs = local[0];
  }
  Combo carry = unit(local[0].back());
  for (uint32_t r = 1; r < K; ++r) {
    Program& pa = plan.ranks[r - 1];
    Program& pb = plan.ranks[r];
    pa.at(send_step(r)).sends.push_back(make_send(plan, pa, 0, r, {carry}));
    const SlotId got = pb.new_slot();
    Step& st = pb.at(recv_step(r));
    st.recvs.push_back(make_recv(plan, pb, recv_step(r), 0, r - 1, {got}));
    std::vector<SlotId> full;  // [0, item j] for each local item j
    for (SlotId l : local[r]) {
      const SlotId d = pb.new_slot();
      st.ops.push_back(make_op(pb, d, {Term{got, 1}, Term{l, 1}}));
      full.push_back(d);
    }
    if (s.exclusive) {
      pb.outputs.push_back(got);
      for (size_t j = 0; j + 1 < full.size(); ++j) pb.outputs.push_back(full[j]);
    } else {
      pb.outputs = full;
    }
    carry = fold_payload ? Combo{{Term{got, 1}, Term{local[r].back(), 1}}} : unit(full.back());
  }
  return plan;
}

uint32_t ceil_log2(uint32_t K) {
  uint32_t r = 0;
  while ((1u << r) < K) ++r;
  return r;
}

// Hillis–Steele doubling, p = 1, one item per rank. Round r (sent in step
// (r−1)λ+1, received in rλ), d = 2^(r−1): rank k sends its value to k+d;
// rank k >= d sets c := received ⊕ c. After round r rank k holds
// [max(0, k−2^r+1), k]. Exclusive: one more round in which rank k passes
// its inclusive result to k+1; rank 0's output is the empty combination.
// With `overwrite`, rank k keeps one value slot and updates it as
// c := received ⊕ c, so the fold must not clobber c before reading it.
Plan doubling_plan(const Spec& s, bool overwrite = false) {
  const uint32_t K = s.K, lam = s.lambda, R = ceil_log2(K);
  const uint32_t rounds = R + (s.exclusive ? 1 : 0);
  Plan plan = make_plan(s, rounds * lam);
  std::vector<SlotId> cur(K);
  for (Rank k = 0; k < K; ++k) {
    Program& pr = plan.ranks[k];
    pr.inputs = {pr.new_slot()};
    cur[k] = pr.inputs[0];
  }
  for (uint32_t r = 1; r <= R; ++r) {
    const uint32_t d = 1u << (r - 1);
    const StepNo ts = (r - 1) * lam + 1, tr = r * lam;
    for (Rank k = 0; k + d < K; ++k)
      plan.ranks[k].at(ts).sends.push_back(make_send(plan, plan.ranks[k], 0, k + d, {unit(cur[k])}));
    for (Rank k = d; k < K; ++k) {
      Program& pr = plan.ranks[k];
      const SlotId got = pr.new_slot(), c = overwrite ? cur[k] : pr.new_slot();
      Step& st = pr.at(tr);
      st.recvs.push_back(make_recv(plan, pr, tr, 0, k - d, {got}));
      st.ops.push_back(make_op(pr, c, {Term{got, 1}, Term{cur[k], 1}}));
      cur[k] = c;
    }
  }
  if (!s.exclusive) {
    for (Rank k = 0; k < K; ++k) plan.ranks[k].outputs = {cur[k]};
    return plan;
  }
  const StepNo ts = R * lam + 1, tr = (R + 1) * lam;
  for (Rank k = 0; k + 1 < K; ++k)
    plan.ranks[k].at(ts).sends.push_back(make_send(plan, plan.ranks[k], 0, k + 1, {unit(cur[k])}));
  Program& p0 = plan.ranks[0];
  const SlotId none = p0.new_slot();
  p0.at(ts).ops.push_back(make_op(p0, none, {}));
  p0.outputs = {none};
  for (Rank k = 1; k < K; ++k) {
    Program& pr = plan.ranks[k];
    const SlotId got = pr.new_slot();
    pr.at(tr).recvs.push_back(make_recv(plan, pr, tr, 0, k - 1, {got}));
    pr.outputs = {got};
  }
  return plan;
}

// The order checker's message for `plan`, or "" when it passes.
std::string order_error(const Plan& plan) {
  try {
    passes::verify_order(plan);
  } catch (const VerifyError& e) {
    return e.what();
  }
  return {};
}

// The op of rank k in step t with index i.
Op& op_at(Plan& plan, Rank k, StepNo t, size_t i) {
  for (Step& st : plan.ranks[k].steps)
    if (st.t == t) return st.ops.at(i);
  FAIL("no step " << t << " at rank " << k);
  throw std::logic_error("unreachable");
}

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

size_t mat_mismatches(const Plan& plan, size_t count, bool verify = true) {
  return replay_mismatches<Mat2, mat_mul>(plan, count, random_mat, verify);
}
size_t str_mismatches(const Plan& plan, size_t count, bool verify = true) {
  return replay_mismatches<Str, str_cat>(plan, count, letter, verify);
}

}  // namespace

TEST_CASE("order checker accepts hand-built prefix plans", "[order]") {
  for (uint32_t lambda : {1u, 2u, 3u})
    for (bool excl : {false, true}) {
      INFO("lambda " << lambda << (excl ? " exclusive" : " inclusive"));
      for (uint32_t K : {2u, 3u, 5u, 8u, 11u}) {
        INFO("K " << K);
        const Plan d = doubling_plan(prefix_spec(K, lambda, excl));
        CHECK(order_error(d).empty());
        CHECK_NOTHROW(passes::verify(d, {passes::VerifyMode::Exact, 0, 1}));
        const Plan c = chain_plan(prefix_spec(K, lambda, excl));
        CHECK(order_error(c).empty());
        CHECK_NOTHROW(passes::verify(c, {passes::VerifyMode::Exact, 0, 1}));
      }
      const Plan blocks = chain_plan(prefix_spec(4, lambda, excl, {2, 1, 3, 2}));
      CHECK(order_error(blocks).empty());
      CHECK_NOTHROW(passes::verify(blocks, {passes::VerifyMode::Exact, 0, 1}));
    }
}

TEST_CASE("order checker rejects each mutation with a precise message", "[order]") {
  const Plan good = doubling_plan(prefix_spec(8, 1, false));
  REQUIRE(order_error(good).empty());
  // In round 2 (step 2) rank 5 forms [2,3] ⊕ [4,5] with op 0.
  Plan probe = good;
  REQUIRE(op_at(probe, 5, 2, 0).terms.size() == 2);

  SECTION("swapped operands: linear checker accepts, order checker rejects") {
    Plan m = good;
    auto& terms = op_at(m, 5, 2, 0).terms;
    std::swap(terms[0], terms[1]);
    CHECK_NOTHROW(passes::verify(m, {passes::VerifyMode::Exact, 0, 1}));
    const std::string e = order_error(m);
    CHECK_THAT(e, Catch::Contains("rank 5 step 2 op 0") && Catch::Contains("combines [4,5] then [2,3]") &&
                      Catch::Contains("out of order"));
  }
  SECTION("coefficient other than 1") {
    Plan m = good;
    op_at(m, 3, 1, 0).terms[1].coeff = 2;
    const std::string e = order_error(m);
    CHECK_THAT(e, Catch::Contains("rank 3 step 1 op 0") && Catch::Contains("coefficient 2"));
  }
  SECTION("coefficient other than 1 in a payload") {
    Plan m = good;
    m.ranks[2].steps[0].sends[0].payload[0].terms[0].coeff = 3;
    CHECK_THAT(order_error(m), Catch::Contains("rank 2 step 1 send 0") && Catch::Contains("coefficient 3"));
  }
  SECTION("non-adjacent intervals") {
    Plan m = good;
    // Rank 5's own value [4,5] replaced by its input [5,5]: item 4 is skipped.
    op_at(m, 5, 2, 0).terms[1].slot = m.ranks[5].inputs[0];
    CHECK_THAT(order_error(m), Catch::Contains("rank 5 step 2 op 0") &&
                                   Catch::Contains("combines [2,3] then [5,5]") &&
                                   Catch::Contains("not adjacent (items 4..4 missing)"));
  }
  SECTION("overlapping intervals") {
    Plan m = good;
    // Rank 5 combines its round-1 result [4,5] with its input [5,5].
    Op& o = op_at(m, 5, 2, 0);
    o.terms = {o.terms[1], Term{m.ranks[5].inputs[0], 1}};
    CHECK_THAT(order_error(m), Catch::Contains("combines [4,5] then [5,5]") && Catch::Contains("overlapping"));
  }
  SECTION("wrong output interval") {
    Plan m = good;
    m.ranks[4].outputs = m.ranks[4].inputs;
    CHECK_THAT(order_error(m), Catch::Contains("rank 4 output 0") && Catch::Contains("is [4,4]") &&
                                   Catch::Contains("needs [0,4]"));
  }
  SECTION("empty result where a value is needed, and combined") {
    Plan m = doubling_plan(prefix_spec(4, 1, true));
    REQUIRE(order_error(m).empty());
    Plan a = m;
    a.ranks[0].outputs = a.ranks[0].inputs;  // exclusive item 0 must be "no value"
    CHECK_THAT(order_error(a), Catch::Contains("rank 0 output 0") && Catch::Contains("needs no value"));
    Plan b = m;
    // Rank 1's round-1 op gets an empty operand in front.
    Program& p1 = b.ranks[1];
    const SlotId none = p1.new_slot();
    Op& o = op_at(b, 1, 1, 0);
    o.terms.insert(o.terms.begin(), Term{none, 1});
    p1.steps[0].ops.insert(p1.steps[0].ops.begin(), make_op(p1, none, {}));
    CHECK_THAT(order_error(b), Catch::Contains("rank 1 step 1 op 1") && Catch::Contains("combines no value"));
  }
  SECTION("a receive moved one step early is a structural error") {
    Plan m = doubling_plan(prefix_spec(8, 2, false));
    REQUIRE(order_error(m).empty());
    // Rank 1 receives in step 2 what rank 0 sent in step 1; move the receive
    // into step 1 so its value would be combined one step too early.
    Program& p1 = m.ranks[1];
    REQUIRE(p1.steps[0].t == 1);
    REQUIRE(p1.steps[1].t == 2);
    REQUIRE(p1.steps[1].recvs.size() == 1);
    p1.steps[0].recvs.push_back(p1.steps[1].recvs[0]);
    p1.steps[1].recvs.clear();
    CHECK_THAT(order_error(m), Catch::Contains("rank 1 step 1 port 0") && Catch::Contains("latency violated"));
  }
  SECTION("only prefix plans") {
    Plan m = good;
    m.spec.op = OpKind::Allreduce;
    CHECK_THROWS_AS(passes::verify_order(m), UserError);
  }
}

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
