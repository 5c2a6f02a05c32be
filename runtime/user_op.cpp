#include "runtime/user_op.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ir/simulate.h"
#include "passes/verify.h"
#include "passes/verify_order.h"
#include "passes/verify_reduction.h"
#include "runtime/engine.h"
#include "support/error.h"

namespace collplan::rt {

namespace {

using namespace ir;

constexpr size_t kAlign = 64;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Refuses any combination with a coefficient other than 1 (UserError): it
// has no meaning for a user operator. Runs before the order check so that
// the caller learns the plan is of the wrong kind, not merely wrong.
void require_unit_coefficients(const Plan& plan) {
  for (const Program& prog : plan.ranks)
    for (const Step& st : prog.steps) {
      for (size_t si = 0; si < st.sends.size(); ++si)
        for (size_t e = 0; e < st.sends[si].payload.size(); ++e)
          for (const Term& t : st.sends[si].payload[e].terms)
            if (t.coeff != 1)
              user_error("rank {} step {} send {} element {}: coefficient {} on slot {}; a user operator needs an "
                         "order-preserving plan with coefficients 1 only",
                         prog.rank, st.t, si, e, t.coeff, t.slot);
      for (size_t oi = 0; oi < st.ops.size(); ++oi)
        for (const Term& t : st.ops[oi].terms)
          if (t.coeff != 1)
            user_error("rank {} step {} op {} (slot {} := ...): coefficient {} on slot {}; a user operator needs an "
                       "order-preserving plan with coefficients 1 only",
                       prog.rank, st.t, oi, st.ops[oi].dst, t.coeff, t.slot);
    }
}

// A reduction plan must be exact for any ⊕, and ordered for one that does
// not commute (runtime/user_op.h). A UserError, not a VerifyError: the plan
// may be a right field plan, just not one for this operator.
void require_fit_for(const Plan& plan, const UserOp& op) {
  const passes::ReductionProperties rp = passes::reduction_properties(plan);  // includes verify_structure
  if (!rp.exact)
    user_error("user-operator replay: this {} plan ({}) is right over its field only, not for an operator: {}",
               op_name(plan.spec.op), plan.spec.algorithm, rp.why_not_exact);
  if (!op.commutative && !rp.ordered)
    user_error("user-operator replay: this {} plan ({}) does not combine in rank order, which a non-commutative "
               "operator needs: {}; if the operator commutes, set UserOp::commutative",
               op_name(plan.spec.op), plan.spec.algorithm, rp.why_not_ordered);
}

// Which outputs end with "no value" (an empty combination moved there by
// copies and messages). Everything else holds a value; whether it is the
// right one is verify_order's business.
struct NoValueDomain {
  enum : uint8_t { unset = 0, none = 1, value = 2 };
  using Value = uint8_t;
  const Plan& plan;
  std::vector<std::vector<uint8_t>> out_none;  // [rank][output]
  Value undefined() { return unset; }
  Value input(Rank, uint32_t) { return value; }
  Value eval(Rank, const std::vector<Term>& terms, const std::vector<Value>& slots) {
    if (terms.empty()) return none;
    if (terms.size() == 1) return slots[terms[0].slot];
    return value;
  }
  void on_end(Rank k, const std::vector<Value>& slots) {
    const Program& prog = plan.ranks[k];
    out_none[k].resize(prog.outputs.size());
    for (size_t j = 0; j < prog.outputs.size(); ++j) out_none[k][j] = slots[prog.outputs[j]] == none;
  }
};

struct Instr {
  enum Kind : uint8_t { copy, zero, apply } kind = copy;
  const std::byte* a = nullptr;
  const std::byte* b = nullptr;
  std::byte* out = nullptr;
};

struct StepCode {
  StepNo t = 0;
  uint32_t eval_b = 0, eval_e = 0;    // payload evaluation (reads end-of-(t−1) slots)
  uint32_t send_b = 0, send_e = 0;    // indices into sends
  uint32_t rpost_b = 0, rpost_e = 0;  // indices into recv_posts
  uint32_t wait_b = 0, wait_e = 0;    // indices into wait_ids / wait_refs
  uint32_t after_b = 0, after_e = 0;  // landing received messages, then the ops
};

struct WaitRef {
  bool is_send;
  uint32_t index;  // into sends / recvs
};

// One rank's compiled program and its storage.
class RankProgram {
 public:
  RankProgram(const Plan& plan, Rank rank, const UserOp& op, size_t count, std::vector<uint8_t> out_none)
      : rank_(rank), op_(op), count_(count), row_(count * op.elem_size), out_none_(std::move(out_none)) {
    const Program& prog = plan.ranks[rank];
    const uint32_t lam = plan.spec.lambda;
    stride_ = round_up(row_);
    // Layout: slot rows, one scratch row, then one staging area per message.
    size_t bytes = (static_cast<size_t>(prog.num_slots) + 1) * stride_;
    std::vector<size_t> send_off, recv_off;
    for (const Step& st : prog.steps) {
      for (const Send& s : st.sends) {
        send_off.push_back(bytes);
        bytes += round_up(s.payload.size() * row_);
      }
      for (const Recv& r : st.recvs) {
        recv_off.push_back(bytes);
        bytes += round_up(r.into.size() * row_);
      }
    }
    storage_.assign(bytes + kAlign, std::byte{0});
    base_ = storage_.data();
    if (const auto mis = reinterpret_cast<uintptr_t>(base_) % kAlign) base_ += kAlign - mis;
    scratch_ = row(prog.num_slots);
    for (SlotId s : prog.inputs) inputs_.push_back(row(s));
    for (SlotId s : prog.outputs) outputs_.push_back(row(s));

    // Gather, per step, what is posted and what is waited for.
    struct Pending {
      const Step* st = nullptr;
      uint32_t first_send = 0, first_recv = 0;
      std::vector<uint32_t> recv_posts;
      std::vector<WaitRef> waits;
    };
    std::map<StepNo, Pending> pend;
    uint32_t nsend = 0, nrecv = 0;
    for (const Step& st : prog.steps) {
      Pending& p = pend[st.t];
      p.st = &st;
      p.first_send = nsend;
      p.first_recv = nrecv;
      for (const Send& s : st.sends) {
        SendDesc d;
        d.port = s.port;
        d.to = s.to;
        d.step = st.t;
        d.data = base_ + send_off[nsend];
        d.bytes = s.payload.size() * row_;
        sends_.push_back(d);
        pend[st.t + lam - 1].waits.push_back({true, nsend});
        ++nsend;
      }
      for (const Recv& r : st.recvs) {
        RecvDesc d;
        d.port = r.port;
        d.from = r.from;
        d.sent_at = r.sent_at;
        d.data = base_ + recv_off[nrecv];
        d.bytes = r.into.size() * row_;
        recvs_.push_back(d);
        pend[r.sent_at].recv_posts.push_back(nrecv);
        pend[st.t].waits.push_back({false, nrecv});
        ++nrecv;
      }
    }
    max_requests_ = nsend + nrecv;
    auto req_id = [&](const WaitRef& w) { return static_cast<ReqId>(w.is_send ? w.index : nsend + w.index); };

    for (auto& [t, p] : pend) {
      StepCode sc;
      sc.t = t;
      sc.eval_b = static_cast<uint32_t>(code_.size());
      if (p.st)
        for (size_t si = 0; si < p.st->sends.size(); ++si) {
          const Send& s = p.st->sends[si];
          std::byte* dst = base_ + send_off[p.first_send + si];
          for (size_t e = 0; e < s.payload.size(); ++e) emit_combo(s.payload[e].terms, dst + e * row_, nullptr);
        }
      sc.eval_e = static_cast<uint32_t>(code_.size());
      sc.send_b = p.first_send;
      sc.send_e = p.first_send + (p.st ? static_cast<uint32_t>(p.st->sends.size()) : 0);
      sc.rpost_b = static_cast<uint32_t>(recv_posts_.size());
      for (uint32_t j : p.recv_posts) recv_posts_.push_back(j);
      sc.rpost_e = static_cast<uint32_t>(recv_posts_.size());
      sc.wait_b = static_cast<uint32_t>(wait_ids_.size());
      for (const WaitRef& w : p.waits) {
        wait_ids_.push_back(req_id(w));
        wait_refs_.push_back(w);
      }
      sc.wait_e = static_cast<uint32_t>(wait_ids_.size());
      sc.after_b = static_cast<uint32_t>(code_.size());
      if (p.st) {
        for (size_t ri = 0; ri < p.st->recvs.size(); ++ri) {
          const Recv& r = p.st->recvs[ri];
          const std::byte* src = static_cast<const std::byte*>(recvs_[p.first_recv + ri].data);
          for (size_t e = 0; e < r.into.size(); ++e) code_.push_back({Instr::copy, src + e * row_, nullptr, row(r.into[e])});
        }
        for (const Op& o : p.st->ops) emit_combo(o.terms, row(o.dst), &o);
      }
      sc.after_e = static_cast<uint32_t>(code_.size());
      steps_.push_back(sc);
    }
    // Request ids: sends first, then receives.
    for (uint32_t i = 0; i < nsend; ++i) send_ids_.push_back(i);
    for (uint32_t j = 0; j < nrecv; ++j) recv_ids_.push_back(nsend + j);
  }

  void run(Transport& tr, const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
    for (size_t i = 0; i < inputs_.size(); ++i) std::memcpy(inputs_[i], inputs[i], row_);
    Status st = tr.begin(max_requests_);
    if (st != Status::ok) fail(tr, st, 0, nullptr, "starting the transport");
    for (const StepCode& sc : steps_) {
      exec(sc.eval_b, sc.eval_e);
      for (uint32_t i = sc.send_b; i < sc.send_e; ++i) {
        st = tr.post_send(send_ids_[i], sends_[i]);
        if (st != Status::ok) {
          const WaitRef ref{true, i};
          fail(tr, st, sc.t, &ref, "posting");
        }
      }
      for (uint32_t k = sc.rpost_b; k < sc.rpost_e; ++k) {
        const uint32_t j = recv_posts_[k];
        st = tr.post_recv(recv_ids_[j], recvs_[j]);
        if (st != Status::ok) {
          const WaitRef ref{false, j};
          fail(tr, st, sc.t, &ref, "posting");
        }
      }
      if (sc.wait_e > sc.wait_b) {
        size_t failed = 0;
        st = tr.wait(wait_ids_.data() + sc.wait_b, sc.wait_e - sc.wait_b, &failed);
        if (st != Status::ok) fail(tr, st, sc.t, &wait_refs_[sc.wait_b + failed], "completing");
      }
      exec(sc.after_b, sc.after_e);
    }
    st = tr.end();
    if (st != Status::ok) fail(tr, st, 0, nullptr, "finishing the transport");
    for (size_t j = 0; j < outputs_.size(); ++j)
      if (!out_none_[j]) std::memcpy(outputs[j], outputs_[j], row_);
  }

 private:
  std::byte* row(SlotId s) { return base_ + static_cast<size_t>(s) * stride_; }

  // acc = t_1; acc = acc ⊕ t_2; …  written to `dst`. `op` is set when dst is
  // the slot row of that op's dst (then it may accumulate in place).
  void emit_combo(const std::vector<Term>& terms, std::byte* dst, const Op* op) {
    if (terms.empty()) {
      code_.push_back({Instr::zero, nullptr, nullptr, dst});
      return;
    }
    const std::byte* first = row(terms[0].slot);
    if (terms.size() == 1) {
      if (first != dst) code_.push_back({Instr::copy, first, nullptr, dst});
      return;
    }
    bool in_place = op != nullptr;  // staging rows are not aligned to the operator's needs: fold in scratch
    if (op)
      for (size_t i = 1; i < terms.size(); ++i)
        if (terms[i].slot == op->dst) in_place = false;  // dst is still to be read: never clobber it
    std::byte* acc = in_place ? dst : scratch_;
    if (first != acc) code_.push_back({Instr::copy, first, nullptr, acc});
    for (size_t i = 1; i < terms.size(); ++i) code_.push_back({Instr::apply, acc, row(terms[i].slot), acc});
    if (acc != dst) code_.push_back({Instr::copy, acc, nullptr, dst});
  }

  void exec(uint32_t b, uint32_t e) {
    for (uint32_t i = b; i < e; ++i) {
      const Instr& in = code_[i];
      switch (in.kind) {
        case Instr::copy: std::memcpy(in.out, in.a, row_); break;
        case Instr::zero: std::memset(in.out, 0, row_); break;
        case Instr::apply: op_.fn(in.a, in.b, in.out, count_, op_.ctx); break;
      }
    }
  }

  [[noreturn]] void fail(Transport& tr, Status st, StepNo t, const WaitRef* ref, const char* what) {
    tr.abandon();
    std::string msg;
    if (ref && ref->is_send) {
      const SendDesc& d = sends_[ref->index];
      msg = fmt::format("rank {} step {}: {} the message to rank {} on port {} (sent in step {}) failed: {}", rank_, t,
                        what, d.to, d.port, d.step, status_name(st));
    } else if (ref) {
      const RecvDesc& d = recvs_[ref->index];
      msg = fmt::format("rank {} step {}: {} the message from rank {} on port {} (sent in step {}) failed: {}", rank_,
                        t, what, d.from, d.port, d.sent_at, status_name(st));
    } else {
      msg = fmt::format("rank {}: {} failed: {}", rank_, what, status_name(st));
    }
    const std::string detail = tr.error_detail();
    if (!detail.empty()) msg += " (" + detail + ")";
    if (st == Status::aborted) throw RunAborted(msg);
    throw UserError(msg);
  }

  Rank rank_;
  UserOp op_;
  size_t count_, row_, stride_ = 0;
  std::vector<uint8_t> out_none_;
  std::vector<std::byte> storage_;
  std::byte* base_ = nullptr;
  std::byte* scratch_ = nullptr;
  std::vector<std::byte*> inputs_, outputs_;
  std::vector<Instr> code_;
  std::vector<StepCode> steps_;
  std::vector<SendDesc> sends_;
  std::vector<RecvDesc> recvs_;
  std::vector<ReqId> send_ids_, recv_ids_;
  std::vector<uint32_t> recv_posts_;
  std::vector<ReqId> wait_ids_;
  std::vector<WaitRef> wait_refs_;
  uint32_t max_requests_ = 0;
};

}  // namespace

void run_user_op_threads(const Plan& plan, const UserOp& op, size_t count,
                         const std::vector<std::vector<const void*>>& inputs,
                         const std::vector<std::vector<void*>>& outputs, const UserOpOptions& opt) {
  if (!passes::is_reduction_op(plan.spec.op))
    user_error("user-operator replay takes reduce, allreduce, reduce-scatter and prefix plans, this plan is {}",
               op_name(plan.spec.op));
  if (!op.fn) user_error("user operator: the function pointer is null");
  if (op.elem_size == 0) user_error("user operator: elem_size is 0 (needs at least 1 byte)");
  if (count == 0) user_error("user operator: count is 0 (needs at least 1 element)");
  if (count > SIZE_MAX / 4 / op.elem_size)
    user_error("user operator: count {} × elem_size {} bytes is too large", count, op.elem_size);
  require_unit_coefficients(plan);
  if (!opt.verify)
    ir::verify_structure(plan);
  else if (plan.spec.op == OpKind::Prefix)
    passes::verify_order(plan);  // includes verify_structure
  else
    require_fit_for(plan, op);

  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  if (inputs.size() != K || outputs.size() != K)
    user_error("user operator replay: {} input lists and {} output lists given, the plan has {} ranks", inputs.size(),
               outputs.size(), K);
  for (Rank r = 0; r < K; ++r) {
    if (inputs[r].size() != plan.ranks[r].inputs.size())
      user_error("user operator replay: rank {} has {} inputs in the plan, {} given", r, plan.ranks[r].inputs.size(),
                 inputs[r].size());
    if (outputs[r].size() != plan.ranks[r].outputs.size())
      user_error("user operator replay: rank {} has {} outputs in the plan, {} given", r, plan.ranks[r].outputs.size(),
                 outputs[r].size());
    for (size_t i = 0; i < inputs[r].size(); ++i)
      if (!inputs[r][i]) user_error("user operator replay: rank {} input {} is a null pointer", r, i);
    for (size_t j = 0; j < outputs[r].size(); ++j)
      if (!outputs[r][j]) user_error("user operator replay: rank {} output {} is a null pointer", r, j);
  }

  NoValueDomain nv{plan, std::vector<std::vector<uint8_t>>(K)};
  ir::simulate(plan, nv);

  // Everything that allocates happens here, before any rank starts.
  std::vector<std::unique_ptr<RankProgram>> progs;
  progs.reserve(K);
  ThreadsWorld world(K, opt.threads);
  for (Rank r = 0; r < K; ++r) {
    progs.push_back(std::make_unique<RankProgram>(plan, r, op, count, nv.out_none[r]));
    world.reserve(r, mailbox_capacity(plan, r));
  }

  std::mutex mu;
  std::exception_ptr first;
  bool first_is_abort = false;
  auto worker = [&](Rank r) {
    std::exception_ptr err;
    bool is_abort = false;
    try {
      progs[r]->run(world.endpoint(r), inputs[r], outputs[r]);
    } catch (const RunAborted&) {
      err = std::current_exception();
      is_abort = true;
    } catch (...) {
      err = std::current_exception();
    }
    if (err && !is_abort) world.abort();
    if (err) {
      std::lock_guard lk(mu);
      // Keep the root cause: a real failure outranks the aborts it caused.
      if (!first || (first_is_abort && !is_abort)) {
        first = err;
        first_is_abort = is_abort;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(K);
  try {
    for (Rank r = 0; r < K; ++r) threads.emplace_back(worker, r);
  } catch (...) {
    world.abort();
    for (auto& t : threads) t.join();
    throw;
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace collplan::rt
