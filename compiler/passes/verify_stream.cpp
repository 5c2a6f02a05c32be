#include "passes/verify_stream.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/validate.h"
#include "matrix/postcondition.h"
#include "passes/verify_random.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/progress.h"

namespace collplan::passes {

namespace {

using namespace ir;

static_assert(sizeof(MessageEnd) == 32, "a message end is 32 bytes (verify_stream.h, docs/scale.md)");

// Pass 1: every rank's program alone through the per-program rules, its
// messages kept for matching, the cost figures gathered.
std::vector<uint32_t> check_structure(const MappedPlan& mp, const Postcondition& pc, CostReport& fig) {
  const PlanHeader& h = mp.header();
  const Spec& spec = h.spec;
  const uint32_t R = num_ranks(spec);
  if (h.num_steps > kMaxSteps) verify_error("plan has {} steps (at most {} supported)", h.num_steps, kMaxSteps);
  fig.C1 = h.num_steps;
  fig.step_sizes.assign(h.num_steps, 0);
  std::vector<uint32_t> num_slots(R);
  std::vector<MessageEnd> sends, recvs;
  const progress::Stage stage("check structure, rank by rank");
  for (Rank k = 0; k < R; ++k) {
    progress::report(k, R);
    const Program prog = mp.rank(k);
    check_rank_messages(spec, h.num_steps, prog, pc.inputs_per_rank[k], pc.outputs_per_rank[k], sends, recvs);
    num_slots[k] = prog.num_slots;
    // The plan's figures are the ranks' parts merged (a step's size is its
    // largest message at any rank).
    const RankCostReport part = rank_cost(h.num_steps, prog);
    for (size_t t = 0; t < part.step_sizes.size(); ++t)
      fig.step_sizes[t] = std::max(fig.step_sizes[t], part.step_sizes[t]);
    fig.messages += part.messages_sent;
    fig.elements += part.elements_sent;
  }
  match_messages(spec, sends, recvs);
  return num_slots;
}

// Pass 2 for lanes [lane0, lane0 + W) of the drawn vectors.
template <class Arith>
void check_lanes(const MappedPlan& mp, const Postcondition& pc, const Arith& ar, const RandomizedInputs& in,
                 uint32_t lane0, uint32_t W) {
  using T = typename Arith::T;
  using Value = Lanes<T>;
  const PlanHeader& h = mp.header();
  const uint32_t R = num_ranks(h.spec);
  const uint64_t P = h.spec.p;
  const uint32_t lam = h.spec.lambda;
  const Evaluator& ex = *in.expected;

  std::vector<StepCursor> cur(R);
  std::vector<std::vector<Value>> slots(R);
  std::vector<SlotId> io;
  for (Rank k = 0; k < R; ++k) {
    cur[k] = mp.open(k, &io, nullptr);
    slots[k].assign(cur[k].num_slots, Value{});
    for (uint32_t i = 0; i < io.size(); ++i) slots[k][io[i]] = input_lanes<T>(pc, ex, k, i, lane0, W);
  }
  // Messages in flight, keyed by (sender, port, step sent).
  auto key = [&](Rank from, Port port, StepNo t) { return (static_cast<uint64_t>(t) * R + from) * P + port; };
  std::unordered_map<uint64_t, std::vector<Value>> mail;
  Step st;
  // Pass 1 matched every message, but the file is read again: a receive
  // without its message is reported, never trusted.
  auto receive = [&](Rank k) {
    for (const Recv& r : st.recvs) {
      auto it = mail.find(key(r.from, r.port, r.sent_at));
      if (it == mail.end() || it->second.size() != r.into.size())
        verify_error("rank {} step {} port {}: no message of {} elements from rank {} sent in step {} (the file "
                     "changed while it was checked?)",
                     k, st.t, r.port, r.into.size(), r.from, r.sent_at);
      for (size_t i = 0; i < r.into.size(); ++i) slots[k][r.into[i]] = it->second[i];
      mail.erase(it);
    }
  };
  auto send = [&](Rank k) {
    for (const Send& s : st.sends) {
      std::vector<Value> payload;
      payload.reserve(s.payload.size());
      for (const Combo& c : s.payload) payload.push_back(eval_lanes<Arith>(ar, c.terms, slots[k], W));
      mail[key(k, s.port, st.t)] = std::move(payload);
    }
  };
  auto run_ops = [&](Rank k) {
    for (const Op& op : st.ops) slots[k][op.dst] = eval_lanes<Arith>(ar, op.terms, slots[k], W);
  };
  // Steps in which no rank acts change nothing: go from one step some rank
  // acts in to the next.
  auto earliest = [&] {
    StepNo t = 0;
    for (const StepCursor& c : cur)
      if (c.next_t && (t == 0 || c.next_t < t)) t = c.next_t;
    return t;
  };
  for (StepNo t = earliest(); t != 0; t = earliest()) {
    progress::report(t - 1, h.num_steps);
    if (lam == 1) {
      // A message sent in step t is received in step t: every rank's sends
      // first, from the values at the end of step t − 1.
      for (Rank k = 0; k < R; ++k)
        if (cur[k].next_t == t) {
          mp.read_step(cur[k], st, false);
          send(k);
        }
      for (Rank k = 0; k < R; ++k)
        if (cur[k].next_t == t) {
          mp.read_step(cur[k], st, true);
          receive(k);
          run_ops(k);
        }
    } else {
      // What a rank receives in step t was sent in step t − λ + 1 < t, and
      // its own step t touches only its own slots: one rank at a time.
      for (Rank k = 0; k < R; ++k)
        if (cur[k].next_t == t) {
          mp.read_step(cur[k], st, true);
          send(k);
          receive(k);
          run_ops(k);
        }
    }
  }
  if (!mail.empty()) verify_error("{} messages are never received (the file changed while it was checked?)", mail.size());
  std::vector<Elem> scratch;
  for (Rank k = 0; k < R; ++k) {
    mp.open(k, nullptr, &io);
    check_output_lanes<T>(pc, ex, k, io, slots[k], lane0, W, scratch);
    std::vector<Value>().swap(slots[k]);
  }
}

}  // namespace

StreamReport verify_streaming(const MappedPlan& mp, const VerifyOptions& opt) {
  if (opt.mode == VerifyMode::Exact)
    user_error("--streaming checks with the randomized algebra only (an exact proof holds every slot's coefficient "
               "vector); drop --mode exact, or check without --streaming");
  const PlanHeader& h = mp.header();
  const Spec& spec = h.spec;
  // Every program's input and output counts against the spec first, in time
  // proportional to the file: a small file claiming a large operation must
  // not make the check build its postcondition (for an encode, K x K).
  {
    const std::vector<RankIO> io = rank_ios(spec);
    std::vector<SlotId> ins, outs;
    for (Rank k = 0; k < io.size(); ++k) {
      mp.open(k, &ins, &outs);
      if (ins.size() != io[k].inputs)
        verify_error("rank {}: has {} input slots, {} needs {}", k, ins.size(), op_name(spec.op), io[k].inputs);
      if (outs.size() != io[k].outputs)
        verify_error("rank {}: has {} output slots, {} needs {}", k, outs.size(), op_name(spec.op), io[k].outputs);
    }
  }
  // The postcondition (for the coded operations, the matrix checked against
  // the header's digest).
  const Postcondition pc = postcondition(spec);
  StreamReport rep;
  const std::vector<uint32_t> num_slots = check_structure(mp, pc, rep.figures);
  for (uint32_t s : num_slots) rep.slots += s;

  const Field& f = spec.field;
  // The drawn vectors are trials x inputs values (8 lanes per slot are held
  // whatever the trials): the same 2^28 bound as a whole-plan check's.
  if (opt.trials > 0 && mul_sat(opt.trials, pc.num_inputs()) > kMaxCheckValues)
    user_error("--trials {}: the streaming check would draw trials x inputs = {} x {} values, over the 2^28 = {} "
               "collplan holds (1 GiB); use fewer trials (each multiplies the false-accept bound by 1/q)",
               opt.trials, opt.trials, pc.num_inputs(), kMaxCheckValues);
  const RandomizedInputs in = randomized_inputs(f, pc, opt);
  rep.verify.mode = VerifyMode::Randomized;
  rep.verify.trials = in.trials;
  rep.verify.seed = in.seed;
  rep.verify.error_log2 = -std::log2(static_cast<double>(f.size())) * in.trials;
  const progress::Stage stage("check algebra, step by step");
  for (uint32_t lane0 = 0; lane0 < in.trials; lane0 += kLanes) {
    const uint32_t W = std::min(kLanes, in.trials - lane0);
    if (f.kind() == FieldKind::GF2m && f.m() == 8)
      check_lanes(mp, pc, Gf256Arith(f), in, lane0, W);
    else
      check_lanes(mp, pc, FieldArith{f}, in, lane0, W);
    ++rep.passes;
  }
  return rep;
}

}  // namespace collplan::passes
