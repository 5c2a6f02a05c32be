// Every operation (docs/plan-format.md, "What a plan computes") is
// expressible in the IR, for λ >= 1, and the checker judges it against the
// operation's postcondition. The plans here are deliberately naive (chains
// and rings built by hand); the generators of the good algorithms are tested
// in their own files. Each plan is also broken once to show the checker is
// not vacuous for that operation.
#include <catch2/catch.hpp>

#include "ir/plan.h"
#include "matrix/matrix.h"
#include "passes/cost.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using namespace collplan::ir;
using test::kExact;

namespace {

// Round r of a plan with latency λ: sent in step (r−1)λ+1, received (and
// combined) in step rλ.
struct Rounds {
  uint32_t lambda;
  StepNo send(uint32_t r) const { return (r - 1) * lambda + 1; }
  StepNo recv(uint32_t r) const { return r * lambda; }
};

Spec base(OpKind op, uint32_t K, uint32_t lambda, const Field& f, uint32_t blocks = 1) {
  Spec s;
  s.op = op;
  s.K = K;
  s.p = 1;
  s.lambda = lambda;
  s.field = f;
  s.blocks = blocks;
  s.algorithm = "hand";
  return s;
}

// The two halves of moving `from` slots of rank a to rank b in round r.
// Step records are appended in increasing t, so with λ > 1 all sends of a
// round are recorded before its receives.
void send_part(Plan& plan, const Rounds& R, uint32_t r, Rank a, const std::vector<SlotId>& from, Rank b) {
  Program& pa = plan.ranks[a];
  std::vector<Combo> payload;
  for (SlotId s : from) payload.push_back(unit(s));
  pa.at(R.send(r)).sends.push_back(make_send(plan, pa, 0, b, payload));
}
std::vector<SlotId> recv_part(Plan& plan, const Rounds& R, uint32_t r, Rank a, size_t n, Rank b) {
  Program& pb = plan.ranks[b];
  std::vector<SlotId> into;
  for (size_t i = 0; i < n; ++i) into.push_back(pb.new_slot());
  pb.at(R.recv(r)).recvs.push_back(make_recv(plan, pb, R.recv(r), 0, a, into));
  return into;
}
// Both halves, for rounds in which only one message moves.
std::vector<SlotId> transfer(Plan& plan, const Rounds& R, uint32_t r, Rank a, const std::vector<SlotId>& from, Rank b) {
  send_part(plan, R, r, a, from, b);
  return recv_part(plan, R, r, a, from.size(), b);
}

void require_ok(const Plan& plan) {
  INFO(op_name(plan.spec.op) << " K=" << plan.spec.K << " lambda=" << plan.spec.lambda);
  REQUIRE_NOTHROW(passes::verify(plan, kExact));
  REQUIRE(passes::cost(plan).C1 == plan.num_steps);
}

// Flips the coefficient of the first op term found (or the first payload
// term) and requires the checker to reject the plan.
void require_broken_is_rejected(Plan plan) {
  for (auto& prog : plan.ranks)
    for (auto& st : prog.steps)
      for (auto& op : st.ops)
        if (!op.terms.empty()) {
          op.terms.back().coeff = plan.spec.field.add(op.terms.back().coeff, 1);
          REQUIRE_THROWS_AS(passes::verify(plan, kExact), VerifyError);
          return;
        }
  for (auto& prog : plan.ranks)
    for (auto& st : prog.steps)
      for (auto& s : st.sends) {
        s.payload.back().terms.back().coeff = 2;
        REQUIRE_THROWS_AS(passes::verify(plan, kExact), VerifyError);
        return;
      }
  FAIL("nothing to break");
}

// Broadcast along the chain root, root+1, ...: every rank forwards all n
// blocks to the next in the following round.
Plan chain_broadcast(uint32_t K, uint32_t n, uint32_t root, uint32_t lambda, const Field& f) {
  Spec s = base(OpKind::Broadcast, K, lambda, f, n);
  s.root = root;
  Rounds R{lambda};
  Plan plan = make_plan(s, (K - 1) * lambda);
  Program& pr = plan.ranks[root];
  for (uint32_t b = 0; b < n; ++b) pr.inputs.push_back(pr.new_slot());
  pr.outputs = pr.inputs;
  std::vector<SlotId> cur(pr.inputs.begin(), pr.inputs.end());
  for (uint32_t r = 1; r < K; ++r) {
    const Rank a = (root + r - 1) % K, b = (root + r) % K;
    cur = transfer(plan, R, r, a, cur, b);
    plan.ranks[b].outputs = cur;
  }
  return plan;
}

}  // namespace

TEST_CASE("broadcast, reduce, allreduce are expressible and checked", "[ir][ops]") {
  for (uint32_t lambda : {1u, 3u})
    for (const Field& f : {Field::gf256(), Field::prime(65537)}) {
      const uint32_t K = 5, n = 3;
      Plan bc = chain_broadcast(K, n, 2, lambda, f);
      require_ok(bc);
      require_broken_is_rejected(bc);

      // Reduce into root along the chain root+1 → root+2 → … → root:
      // each rank adds what it received to its own blocks and passes on.
      Spec rs = base(OpKind::Reduce, K, lambda, f, n);
      rs.root = 1;
      Rounds R{lambda};
      Plan red = make_plan(rs, (K - 1) * lambda);
      for (auto& prog : red.ranks)
        for (uint32_t b = 0; b < n; ++b) prog.inputs.push_back(prog.new_slot());
      const ir::Slots& first = red.ranks[(rs.root + 1) % K].inputs;
      std::vector<SlotId> acc(first.begin(), first.end());
      for (uint32_t r = 1; r < K; ++r) {
        const Rank a = (rs.root + r) % K, b = (rs.root + r + 1) % K;
        auto got = transfer(red, R, r, a, acc, b);
        Program& pb = red.ranks[b];
        acc.clear();
        for (uint32_t i = 0; i < n; ++i) {
          const SlotId d = pb.new_slot();
          pb.at(R.recv(r)).ops.push_back(make_op(pb, d, {Term{got[i], 1}, Term{pb.inputs[i], 1}}));
          acc.push_back(d);
        }
      }
      red.ranks[rs.root].outputs = acc;
      require_ok(red);
      require_broken_is_rejected(red);

      // Allreduce = that reduce, then the chain broadcast of the result.
      Spec as = base(OpKind::Allreduce, K, lambda, f, n);
      Plan all = make_plan(as, 2 * (K - 1) * lambda);
      for (uint32_t k = 0; k < K; ++k) {
        all.ranks[k] = red.ranks[k];
        all.ranks[k].outputs.clear();
      }
      std::vector<SlotId> cur = acc;
      all.ranks[rs.root].outputs = acc;
      for (uint32_t r = K; r < 2 * K - 1; ++r) {
        const Rank a = (rs.root + r - K) % K, b = (rs.root + r - K + 1) % K;
        cur = transfer(all, R, r, a, cur, b);
        all.ranks[b].outputs = cur;
      }
      require_ok(all);
      require_broken_is_rejected(all);
    }
}

TEST_CASE("allgather and allgatherv are expressible and checked (ring)", "[ir][ops]") {
  for (uint32_t lambda : {1u, 2u}) {
    const Field f = Field::gf65536();
    const uint32_t K = 4;
    for (bool irregular : {false, true}) {
      Spec s = base(irregular ? OpKind::Allgatherv : OpKind::Allgather, K, lambda, f, 2);
      std::vector<uint32_t> counts(K, 2);
      if (irregular) counts = {1, 3, 0, 2};
      s.counts = irregular ? counts : std::vector<uint32_t>{};
      Rounds R{lambda};
      Plan plan = make_plan(s, (K - 1) * lambda);
      // held[k][j]: slots of rank j's blocks at rank k.
      std::vector<std::vector<std::vector<SlotId>>> held(K, std::vector<std::vector<SlotId>>(K));
      for (uint32_t k = 0; k < K; ++k) {
        for (uint32_t b = 0; b < counts[k]; ++b) plan.ranks[k].inputs.push_back(plan.ranks[k].new_slot());
        held[k][k].assign(plan.ranks[k].inputs.begin(), plan.ranks[k].inputs.end());
      }
      // Round r: rank k passes rank (k−r+1)'s blocks to k+1 (skipped when
      // empty).
      for (uint32_t r = 1; r < K; ++r) {
        for (uint32_t k = 0; k < K; ++k) {
          const uint32_t owner = (k + K - (r - 1)) % K;
          if (!held[k][owner].empty()) send_part(plan, R, r, k, held[k][owner], (k + 1) % K);
        }
        for (uint32_t k = 0; k < K; ++k) {
          const uint32_t owner = (k + K - (r - 1)) % K;
          if (!held[k][owner].empty())
            held[(k + 1) % K][owner] = recv_part(plan, R, r, k, held[k][owner].size(), (k + 1) % K);
        }
      }
      for (uint32_t k = 0; k < K; ++k)
        for (uint32_t j = 0; j < K; ++j)
          for (SlotId sl : held[k][j]) plan.ranks[k].outputs.push_back(sl);
      require_ok(plan);
      require_broken_is_rejected(plan);
    }
  }
}

TEST_CASE("prefix is expressible with ordered operands, decentralized-encode too", "[ir][ops]") {
  for (uint32_t lambda : {1u, 4u}) {
    const Field f = Field::prime(257);
    const uint32_t K = 6;
    // Prefix along the chain: c_k := c_{k−1} ⊕ v_k, operands in rank order.
    Spec s = base(OpKind::Prefix, K, lambda, f);
    Rounds R{lambda};
    Plan plan = make_plan(s, (K - 1) * lambda);
    for (auto& prog : plan.ranks) prog.inputs = {prog.new_slot()};
    plan.ranks[0].outputs = plan.ranks[0].inputs;
    SlotId carry = plan.ranks[0].inputs[0];
    for (uint32_t r = 1; r < K; ++r) {
      const SlotId got = transfer(plan, R, r, r - 1, {carry}, r)[0];
      Program& pb = plan.ranks[r];
      const SlotId c = pb.new_slot();
      pb.at(R.recv(r)).ops.push_back(make_op(pb, c, {Term{got, 1}, Term{pb.inputs[0], 1}}));
      pb.outputs = {c};
      carry = c;
    }
    require_ok(plan);
    require_broken_is_rejected(plan);
    // A plan in which rank 2 drops its own value is wrong.
    Plan wrong = plan;
    for (auto& st : wrong.ranks[2].steps)
      if (!st.ops.empty()) {
        st.ops.back().terms.pop_back();
        break;
      }
    REQUIRE_THROWS_AS(passes::verify(wrong, kExact), VerifyError);

    // Decentralized encode of a systematic [N = 5, K = 3] code: in round
    // k+1 source k sends x_k to every sink (one port per sink), and each sink
    // accumulates A[k][s]·x_k.
    Spec d = base(OpKind::DecentralizedEncode, 3, lambda, f);
    d.N = 5;
    d.p = 2;
    Matrix A = Matrix::zeros(3, 2);
    for (uint32_t i = 0; i < 3; ++i)
      for (uint32_t j = 0; j < 2; ++j) A.at(i, j) = 3 + 5 * i + 7 * j;
    d.matrix = matrix_explicit(A, f);
    Plan de = make_plan(d, 3 * lambda);
    for (uint32_t k = 0; k < 3; ++k) de.ranks[k].inputs = {de.ranks[k].new_slot()};
    std::vector<SlotId> acc(2);
    for (uint32_t j = 0; j < 2; ++j) {
      Program& sink = de.ranks[3 + j];
      acc[j] = sink.new_slot();
      sink.outputs = {acc[j]};
    }
    for (uint32_t k = 0; k < 3; ++k) {
      Program& src = de.ranks[k];
      for (uint32_t j = 0; j < 2; ++j) {
        Program& sink = de.ranks[3 + j];
        src.at(R.send(k + 1)).sends.push_back(make_send(de, src, j, 3 + j, {unit(src.inputs[0])}));
        const SlotId got = sink.new_slot();
        sink.at(R.recv(k + 1)).recvs.push_back(make_recv(de, sink, R.recv(k + 1), j, k, {got}));
        std::vector<Term> terms;
        if (k > 0) terms.push_back(Term{acc[j], 1});
        terms.push_back(Term{got, A.at(k, j)});
        sink.at(R.recv(k + 1)).ops.push_back(make_op(sink, acc[j], terms));
      }
    }
    require_ok(de);
    require_broken_is_rejected(de);
  }
}
