// Prefix plans built by hand, for the operand-order checker
// (passes/verify_order.h) and the user-operator replay (runtime/user_op.h):
// a chain over blocks of items (every rank adds its block's local prefix to
// the carry from its left neighbour) and the doubling plan of Hillis and
// Steele (round r: rank k sends to k + 2^(r−1) and puts what it receives in
// FRONT of its own value), over GF(65537) with p = 1.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/plan.h"
#include "passes/verify_order.h"
#include "support/error.h"
#include "test_util.h"

namespace collplan::test {

inline Spec prefix_spec(uint32_t K, uint32_t lambda, bool exclusive, std::vector<uint32_t> counts = {}) {
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

inline uint32_t items_at(const Spec& s, ir::Rank k) { return s.counts.empty() ? 1u : s.counts[k]; }

// Chain over blocks. Step 1: every rank forms the local prefixes of its
// block. Round r = 1..K−1 (sent in step (r−1)λ+2, received in rλ+1): rank
// r−1 passes the running total [0, end of its block] to rank r, which puts
// it in front of its local prefixes. Exclusive: item j gets the carry ⊕ the
// local prefix of items 0..j−1; the global item 0 gets the empty combination.
// Every rank must hold at least one item. With `fold_payload` the running
// total is not kept in a slot: the message itself is the combination
// received ⊕ local total.
inline ir::Plan chain_plan(const Spec& s, bool fold_payload = false) {
  using namespace ir;
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

// Hillis–Steele doubling, p = 1, one item per rank. Round r (sent in step
// (r−1)λ+1, received in rλ), d = 2^(r−1): rank k sends its value to k+d;
// rank k >= d sets c := received ⊕ c. After round r rank k holds
// [max(0, k−2^r+1), k]. Exclusive: one more round in which rank k passes
// its inclusive result to k+1; rank 0's output is the empty combination.
// With `overwrite`, rank k keeps one value slot and updates it as
// c := received ⊕ c, so the fold must not clobber c before reading it.
inline ir::Plan doubling_plan(const Spec& s, bool overwrite = false) {
  using namespace ir;
  const uint32_t K = s.K, lam = s.lambda, R = log_ceil(K, 1);
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
inline std::string order_error(const ir::Plan& plan) {
  try {
    passes::verify_order(plan);
  } catch (const VerifyError& e) {
    return e.what();
  }
  return {};
}

// The op of rank k in step t with index i.
inline ir::Op& op_at(ir::Plan& plan, ir::Rank k, ir::StepNo t, size_t i) {
  for (ir::Step& st : plan.ranks[k].steps)
    if (st.t == t) return st.ops.at(i);
  FAIL("no step " << t << " at rank " << k);
  throw std::logic_error("unreachable");
}

}  // namespace collplan::test
