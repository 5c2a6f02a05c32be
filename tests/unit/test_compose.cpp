// Plan composition: sequence, parallel on disjoint rank subsets, and local
// scaling. Every composed plan is verified exactly against a matrix the test
// builds itself (never the one the pass wrote into the spec), and wrong
// matrices are shown to be rejected.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "gen/prepare_shoot.h"
#include "matrix/matrix.h"
#include "passes/alloc_slots.h"
#include "passes/compose.h"
#include "passes/cost.h"
#include "passes/drop_zeros.h"
#include "passes/recode.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::kExact;
using test::user_error_of;

namespace {

ir::Plan ps_plan(uint32_t K, uint32_t p, uint32_t lambda, const Field& f, uint64_t seed) {
  return gen::prepare_shoot(make_encode_spec(K, p, lambda, f, matrix_random(K, seed, f)));
}

// A1·A2 computed row by row as e_i·A1·A2 with mul_batch, i.e. from the
// "output = x·A" semantics rather than from an index formula.
Matrix product(const Field& f, const Matrix& a1, const Matrix& a2) {
  Matrix out = Matrix::zeros(a1.rows, a2.cols);
  for (uint32_t i = 0; i < a1.rows; ++i) {
    std::vector<Elem> row(a1.a.begin() + static_cast<long>(i) * a1.cols,
                          a1.a.begin() + static_cast<long>(i + 1) * a1.cols);
    const std::vector<Elem> y = mul_batch(f, a2, row, 1);
    for (uint32_t j = 0; j < a2.cols; ++j) out.at(i, j) = y[j];
  }
  return out;
}

// The plan checked exactly against matrix m (the plan's own spec matrix is
// replaced, so a wrong matrix written by the pass cannot hide a wrong plan).
void verify_against(ir::Plan plan, const Matrix& m) {
  plan.spec.matrix = matrix_explicit(m, plan.spec.field);
  passes::verify(plan, kExact);
}

std::vector<Elem> nonzero_factors(uint32_t K, const Field& f, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<Elem> c(K);
  for (Elem& e : c) e = rng.nonzero(f);
  return c;
}

}  // namespace

TEST_CASE("compose_sequence of two prepare-and-shoot plans computes A1·A2", "[compose]") {
  uint32_t orientation_checks = 0;
  for (const Field& f : {Field::gf256(), Field::prime(65537)})
    for (uint32_t lambda = 1; lambda <= 2; ++lambda)
      for (uint32_t p = 1; p <= 3; ++p)
        for (uint32_t K = 2; K <= 20; ++K) {
          INFO(f.name() << " K=" << K << " p=" << p << " lambda=" << lambda);
          const ir::Plan a = ps_plan(K, p, lambda, f, 7 * K + p);
          const ir::Plan b = ps_plan(K, p, lambda, f, 9000 + 7 * K + p);
          const ir::Plan s = passes::compose_sequence(a, b);
          const Matrix a1 = materialize(a.spec.matrix, f), a2 = materialize(b.spec.matrix, f);
          const Matrix want = product(f, a1, a2);
          REQUIRE(materialize(s.spec.matrix, f) == want);
          REQUIRE_NOTHROW(verify_against(s, want));
          REQUIRE_NOTHROW(passes::verify(s, kExact));
          REQUIRE(s.spec.algorithm == a.spec.algorithm + "+" + b.spec.algorithm);
          REQUIRE_FALSE(passes::is_recodable(s));
          const auto ca = passes::cost(a), cb = passes::cost(b), cs = passes::cost(s);
          REQUIRE(cs.C1 == ca.C1 + cb.C1);
          REQUIRE(cs.C2 == ca.C2 + cb.C2);
          // The other orientation is a different matrix for random factors;
          // the checker must reject it (this pins x·A1·A2, not x·A2·A1).
          const Matrix other = product(f, a2, a1);
          if (other != want) {
            REQUIRE_THROWS_AS(verify_against(s, other), VerifyError);
            ++orientation_checks;
          }

          ir::Plan packed = s;
          passes::drop_zeros(packed);
          passes::alloc_slots(packed);
          REQUIRE_NOTHROW(passes::verify(packed, kExact));
        }
  CHECK(orientation_checks > 100);
}

TEST_CASE("compose_sequence chains three plans", "[compose]") {
  const Field f = Field::gf256();
  const uint32_t K = 9, p = 2;
  const ir::Plan a = ps_plan(K, p, 1, f, 1), b = ps_plan(K, p, 1, f, 2), c = ps_plan(K, p, 1, f, 3);
  const ir::Plan abc = passes::compose_sequence(passes::compose_sequence(a, b), c);
  const Matrix want = product(f, product(f, materialize(a.spec.matrix, f), materialize(b.spec.matrix, f)),
                              materialize(c.spec.matrix, f));
  REQUIRE_NOTHROW(verify_against(abc, want));
  REQUIRE(passes::cost(abc).C1 == 3 * passes::cost(a).C1);
}

namespace {

// The K×K block matrix in which part i's matrix sits on rows and columns
// maps[i]; ranks in no part keep their own input (identity).
Matrix block_matrix(uint32_t K, const std::vector<Matrix>& blocks, const std::vector<std::vector<ir::Rank>>& maps) {
  Matrix w = Matrix::zeros(K, K);
  std::vector<bool> used(K, false);
  for (size_t i = 0; i < blocks.size(); ++i)
    for (uint32_t r = 0; r < maps[i].size(); ++r) {
      used[maps[i][r]] = true;
      for (uint32_t c = 0; c < maps[i].size(); ++c) w.at(maps[i][r], maps[i][c]) = blocks[i].at(r, c);
    }
  for (uint32_t k = 0; k < K; ++k)
    if (!used[k]) w.at(k, k) = 1;
  return w;
}

}  // namespace

TEST_CASE("compose_parallel: grid columns each run their own prepare-and-shoot", "[compose]") {
  for (const Field& f : {Field::gf256(), Field::prime(65537)})
    for (uint32_t lambda = 1; lambda <= 2; ++lambda)
      for (uint32_t p = 1; p <= 2; ++p)
        for (uint32_t R = 2; R <= 5; ++R)
          for (uint32_t C = 1; C <= 4; ++C) {
            INFO(f.name() << " R=" << R << " C=" << C << " p=" << p << " lambda=" << lambda);
            const uint32_t K = R * C;
            std::vector<ir::Plan> parts;
            std::vector<Matrix> blocks;
            std::vector<std::vector<ir::Rank>> maps(C);
            for (uint32_t j = 0; j < C; ++j) {
              parts.push_back(ps_plan(R, p, lambda, f, 100 * R + 10 * C + j));
              blocks.push_back(materialize(parts.back().spec.matrix, f));
              for (uint32_t i = 0; i < R; ++i) maps[j].push_back(j + C * i);
            }
            const Matrix w = block_matrix(K, blocks, maps);
            const Spec whole = make_encode_spec(K, p, lambda, f, matrix_explicit(w, f));
            const ir::Plan plan = passes::compose_parallel(whole, parts, maps);
            REQUIRE_NOTHROW(passes::verify(plan, kExact));
            REQUIRE(plan.num_steps == parts[0].num_steps);
            REQUIRE(plan.spec.algorithm.rfind("parallel(", 0) == 0);

            // Column marks are mapped into the whole matrix: re-coding with
            // another block matrix of the same shape still verifies.
            REQUIRE(passes::is_recodable(plan));
            std::vector<Matrix> blocks2;
            for (uint32_t j = 0; j < C; ++j) blocks2.push_back(materialize(matrix_random(R, 555 + j, f), f));
            ir::Plan recoded = plan;
            passes::recode(recoded, matrix_explicit(block_matrix(K, blocks2, maps), f));
            REQUIRE_NOTHROW(passes::verify(recoded, kExact));

            // A whole matrix with one block entry changed is rejected.
            Matrix bad = w;
            bad.at(maps[0][0], maps[0][1]) = f.add(bad.at(maps[0][0], maps[0][1]), 1);
            REQUIRE_THROWS_AS(verify_against(plan, bad), VerifyError);
          }
}

TEST_CASE("compose_parallel: parts of different sizes on a permuted map, idle ranks kept", "[compose]") {
  for (uint32_t lambda = 1; lambda <= 2; ++lambda) {
    INFO("lambda=" << lambda);
    const Field f = Field::prime(65537);
    const uint32_t K = 12, p = 2;
    // Parts on 3 and 7 ranks, scattered; ranks 4 and 9 belong to no part.
    const std::vector<std::vector<ir::Rank>> maps = {{11, 0, 6}, {2, 8, 1, 10, 3, 5, 7}};
    std::vector<ir::Plan> parts = {ps_plan(3, p, lambda, f, 31), ps_plan(7, p, lambda, f, 32)};
    const std::vector<Matrix> blocks = {materialize(parts[0].spec.matrix, f), materialize(parts[1].spec.matrix, f)};
    const Matrix w = block_matrix(K, blocks, maps);
    const Spec whole = make_encode_spec(K, p, lambda, f, matrix_explicit(w, f));
    const ir::Plan plan = passes::compose_parallel(whole, parts, maps);
    REQUIRE_NOTHROW(passes::verify(plan, kExact));
    REQUIRE(plan.num_steps == std::max(parts[0].num_steps, parts[1].num_steps));
    REQUIRE(parts[0].num_steps != parts[1].num_steps);

    // The same parts under a map the whole matrix was not built for.
    std::vector<std::vector<ir::Rank>> swapped = maps;
    std::swap(swapped[1][0], swapped[1][1]);
    const ir::Plan wrong = passes::compose_parallel(whole, parts, swapped);
    REQUIRE_THROWS_AS(passes::verify(wrong, kExact), VerifyError);

    // An idle rank whose column is not its own unit input cannot be served.
    Matrix needs_idle = w;
    needs_idle.at(0, 4) = 5;
    REQUIRE_THROWS_AS(verify_against(plan, needs_idle), VerifyError);
  }
}

TEST_CASE("scale_outputs and scale_inputs compute A·diag(c) and diag(c)·A", "[compose]") {
  for (const Field& f : {Field::gf256(), Field::prime(65537)})
    for (uint32_t lambda = 1; lambda <= 2; ++lambda)
      for (uint32_t p = 1; p <= 3; ++p)
        for (uint32_t K : {2u, 3u, 5u, 8u, 13u, 20u}) {
          INFO(f.name() << " K=" << K << " p=" << p << " lambda=" << lambda);
          const ir::Plan base = ps_plan(K, p, lambda, f, 40 * K + p);
          const Matrix a = materialize(base.spec.matrix, f);
          const std::vector<Elem> c = nonzero_factors(K, f, K + 100 * p + lambda);
          Matrix a_out = a, a_in = a;
          for (uint32_t i = 0; i < K; ++i)
            for (uint32_t j = 0; j < K; ++j) {
              a_out.at(i, j) = f.mul(a.at(i, j), c[j]);
              a_in.at(i, j) = f.mul(c[i], a.at(i, j));
            }

          ir::Plan so = base;
          passes::scale_outputs(so, c);
          REQUIRE(materialize(so.spec.matrix, f) == a_out);
          REQUIRE_NOTHROW(verify_against(so, a_out));
          REQUIRE(so.num_steps == base.num_steps);
          REQUIRE_FALSE(passes::is_recodable(so));

          ir::Plan si = base;
          passes::scale_inputs(si, c);
          REQUIRE(materialize(si.spec.matrix, f) == a_in);
          REQUIRE_NOTHROW(verify_against(si, a_in));
          REQUIRE(si.num_steps == base.num_steps);
          if (a_in != a_out) REQUIRE_THROWS_AS(verify_against(si, a_out), VerifyError);

          // After alloc_slots the input slot is reused for later values;
          // those reads must not be scaled.
          ir::Plan packed = base;
          passes::drop_zeros(packed);
          passes::alloc_slots(packed);
          passes::scale_inputs(packed, c);
          REQUIRE_NOTHROW(verify_against(packed, a_in));

          // Cauchy-style chain: scale → encode → scale, then packed.
          ir::Plan chain = passes::compose_sequence(si, ps_plan(K, p, lambda, f, 77 + K));
          passes::scale_outputs(chain, c);
          passes::drop_zeros(chain);
          passes::alloc_slots(chain);
          REQUIRE_NOTHROW(passes::verify(chain, kExact));
        }
}

TEST_CASE("scale_inputs on ranks whose output is the untouched input", "[compose]") {
  // A parallel plan with idle ranks: there the input slot is the output slot
  // and nothing reads it, so folding alone would leave x_k unscaled.
  const Field f = Field::gf256();
  const uint32_t K = 6, p = 1;
  const std::vector<std::vector<ir::Rank>> maps = {{1, 3, 4}};
  std::vector<ir::Plan> parts = {ps_plan(3, p, 2, f, 5)};
  const Matrix w = block_matrix(K, {materialize(parts[0].spec.matrix, f)}, maps);
  ir::Plan plan = passes::compose_parallel(make_encode_spec(K, p, 2, f, matrix_explicit(w, f)), parts, maps);
  const std::vector<Elem> c = {2, 3, 4, 5, 6, 7};
  Matrix want = w;
  for (uint32_t i = 0; i < K; ++i)
    for (uint32_t j = 0; j < K; ++j) want.at(i, j) = f.mul(c[i], w.at(i, j));
  ir::Plan si = plan;
  passes::scale_inputs(si, c);
  REQUIRE_NOTHROW(verify_against(si, want));

  // A plan with no steps at all gets one step for the scaling op.
  ir::Plan empty = passes::compose_parallel(make_encode_spec(K, p, 1, f, matrix_identity(K, f)), {}, {});
  REQUIRE(empty.num_steps == 0);
  REQUIRE_NOTHROW(passes::verify(empty, kExact));
  passes::scale_outputs(empty, c);
  REQUIRE(empty.num_steps == 1);
  Matrix diag = Matrix::zeros(K, K);
  for (uint32_t k = 0; k < K; ++k) diag.at(k, k) = c[k];
  REQUIRE_NOTHROW(verify_against(empty, diag));
}

TEST_CASE("composition rejects bad inputs with a UserError naming the value", "[compose]") {
  const Field g = Field::gf256();
  const ir::Plan a = ps_plan(6, 2, 1, g, 1);
  using Catch::Matchers::Contains;

  SECTION("sequence: mismatched K, p, lambda, field") {
    CHECK_THAT(user_error_of([&] { passes::compose_sequence(a, ps_plan(7, 2, 1, g, 2)); }), Contains("K = 7"));
    CHECK_THAT(user_error_of([&] { passes::compose_sequence(a, ps_plan(6, 3, 1, g, 2)); }), Contains("p = 3"));
    CHECK_THAT(user_error_of([&] { passes::compose_sequence(a, ps_plan(6, 2, 2, g, 2)); }), Contains("lambda = 2"));
    CHECK_THAT(user_error_of([&] { passes::compose_sequence(a, ps_plan(6, 2, 1, Field::prime(65537), 2)); }),
               Contains("prime:65537"));
  }
  SECTION("non-encode op") {
    ir::Plan bc = a;
    bc.spec.op = OpKind::Broadcast;
    CHECK_THAT(user_error_of([&] { passes::compose_sequence(a, bc); }), Contains("broadcast"));
    CHECK_THAT(user_error_of([&] { passes::scale_outputs(bc, std::vector<Elem>(6, 1)); }), Contains("broadcast"));
    CHECK_THAT(user_error_of([&] { passes::scale_inputs(bc, std::vector<Elem>(6, 1)); }), Contains("broadcast"));
    Spec whole = a.spec;
    whole.op = OpKind::Allreduce;
    CHECK_THAT(user_error_of([&] { passes::compose_parallel(whole, {}, {}); }), Contains("allreduce"));
  }
  SECTION("parallel: overlapping maps, rank out of range, wrong map size, model mismatch") {
    const Spec whole = make_encode_spec(8, 2, 1, g, matrix_identity(8, g));
    const std::vector<ir::Plan> two = {ps_plan(3, 2, 1, g, 3), ps_plan(3, 2, 1, g, 4)};
    CHECK_THAT(user_error_of([&] { passes::compose_parallel(whole, two, {{0, 1, 2}, {5, 2, 6}}); }),
               Contains("rank 2"));
    CHECK_THAT(user_error_of([&] { passes::compose_parallel(whole, two, {{0, 1, 2}, {5, 9, 6}}); }),
               Contains("rank 9"));
    CHECK_THAT(user_error_of([&] { passes::compose_parallel(whole, two, {{0, 1, 2}, {5, 6}}); }),
               Contains("2 entries"));
    CHECK_THAT(user_error_of([&] { passes::compose_parallel(whole, two, {{0, 1, 2}}); }), Contains("1 rank maps"));
    const std::vector<ir::Plan> lam = {ps_plan(3, 2, 2, g, 3)};
    CHECK_THAT(user_error_of([&] { passes::compose_parallel(whole, lam, {{0, 1, 2}}); }), Contains("lambda = 2"));
    const std::vector<ir::Plan> ports = {ps_plan(3, 1, 1, g, 3)};
    CHECK_THAT(user_error_of([&] { passes::compose_parallel(whole, ports, {{0, 1, 2}}); }), Contains("p = 1"));
  }
  SECTION("scale: zero, out-of-field, wrong count") {
    ir::Plan b = a;
    CHECK_THAT(user_error_of([&] { passes::scale_outputs(b, {1, 2, 0, 4, 5, 6}); }), Contains("factor 2 = 0"));
    CHECK_THAT(user_error_of([&] { passes::scale_inputs(b, {1, 2, 3, 256, 5, 6}); }), Contains("256"));
    CHECK_THAT(user_error_of([&] { passes::scale_inputs(b, {1, 2, 3}); }), Contains("3 factors"));
    CHECK(b == a);  // a rejected call leaves the plan untouched
  }
}
