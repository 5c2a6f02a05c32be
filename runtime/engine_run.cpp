// The round loop: per step, evaluate payloads, post sends, post receives,
// wait for what is due, run the staged receives and ops. Everything was
// decided at construction; the loop only follows the precomputed code.
#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "runtime/engine_internal.h"

namespace collplan::rt {

void Engine::run(Transport& tr, const void* const* inputs, void* const* outputs, size_t len) {
  Impl& m = *impl_;
  prepare(len);
  m.check_run(tr, inputs, outputs);
  m.bind_if_changed(inputs, outputs, std::max<uint32_t>(tr.max_pieces(), 1));
  m.staged = m.op_copied = 0;
  m.copy_private_inputs(inputs);

  Status st = tr.begin(m.stats.max_requests);
  if (st == Status::ok) st = tr.expect(m.recv_desc.data(), m.recv_desc.size());
  if (st != Status::ok) m.fail(tr, st, 0, nullptr, "starting the transport:");
  m.exec(m.pro_b, m.pro_e);  // inputs into their slots

  for (const Impl::StepCode& sc : m.steps) {
    m.exec(sc.eval_b, sc.eval_e);    // payloads into staging
    m.post_sends(tr, sc);
    m.wait_sends(tr, sc.late_b, sc.late_e, sc.t);  // earlier sends from slots written now
    m.post_recvs(tr, sc);
    m.wait_due(tr, sc);
    m.exec(sc.after_b, sc.after_e);  // staged receives into slots, then ops
  }

  m.wait_sends(tr, m.last_b, m.last_e, m.num_steps);  // sends left outstanding to the end
  st = tr.end();
  if (st != Status::ok) m.fail(tr, st, m.num_steps, nullptr, "finishing the transport:");
  m.exec(m.epi_b, m.epi_e);  // outputs out of their slots
  m.copy_private_outputs(outputs);
  m.stats.staged_bytes = m.staged;
  m.stats.op_copy_bytes = m.op_copied;
  m.stats.delivered_bytes = m.recv_rows * m.row;  // counted once at construction, not per run
}

void Engine::Impl::check_run(const Transport& tr, const void* const* in, void* const* out) const {
  if (tr.rank() != rank || tr.size() != K)
    user_error("rank {}'s program was given the transport endpoint of rank {} in a world of {} (plan: {} ranks)", rank,
               tr.rank(), tr.size(), K);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!in[i]) user_error("rank {}: input {} is a null pointer", rank, i);
  for (size_t j = 0; j < outputs.size(); ++j)
    if (!out[j]) user_error("rank {}: output {} is a null pointer", rank, j);
}

// Inputs that overlap an output are read before step 1 (bind() chose this).
void Engine::Impl::copy_private_inputs(const void* const* in) const {
  if (!priv_inputs) return;
  for (size_t i = 0; i < inputs.size(); ++i) std::memcpy(at(units + static_cast<uint32_t>(i)), in[i], row);
  staged += inputs.size() * row;
}

// Outputs that overlap each other are written after the last step, in order.
void Engine::Impl::copy_private_outputs(void* const* out) const {
  if (!priv_outputs) return;
  for (size_t j = 0; j < outputs.size(); ++j)
    std::memcpy(out[j], at(units + static_cast<uint32_t>(inputs.size() + j)), row);
  staged += outputs.size() * row;
}

void Engine::Impl::exec(uint32_t b, uint32_t e) const {
  const Instr* in = instrs.data() + b;
  const Instr* end = instrs.data() + e;
  for (; in != end; ++in) {
    switch (in->code) {
      case Code::zero:
        std::memset(at(in->dst), 0, row);
        break;
      case Code::copy:
        if (at(in->src) != at(in->dst)) {
          std::memcpy(at(in->dst), at(in->src), row);
          staged += row;
        }
        break;
      case Code::op_copy:
        if (at(in->src) != at(in->dst)) {
          std::memcpy(at(in->dst), at(in->src), row);
          op_copied += row;
        }
        break;
      case Code::mul:
        gf::mul_prepared(field, mads[in->tab], at(in->src), at(in->dst), len);
        break;
      case Code::add:
        gf::add(field, at(in->src), at(in->dst), len);
        break;
      case Code::mad:
        gf::mad_prepared(field, mads[in->tab], at(in->src), at(in->dst), len);
        break;
      case Code::dot: {
        const DotCall& dc = dots[in->tab];
        void* const* p = ptrs.data() + in->src;
        gf::dot_prepared(field, dc.tables, p, p + dc.src_units.size(), len);
        break;
      }
    }
  }
}

// A send split into more pieces than the transport takes is gathered into
// its fallback rows first (bind() chose which).
void Engine::Impl::post_sends(Transport& tr, const StepCode& sc) const {
  for (uint32_t i = sc.send_b; i < sc.send_e; ++i) {
    const SendPlan& s = sends[i];
    if (gather[i]) {
      for (uint32_t e = 0; e < s.count; ++e) std::memcpy(at(s.fallback + e), at(msg_units[s.unit + e]), row);
      staged += uint64_t{s.count} * row;
    }
    const Status st = tr.post_send(s.id, send_desc[i]);
    if (st != Status::ok) {
      const WaitRef ref{true, i};
      fail(tr, st, sc.t, &ref, "posting");
    }
  }
}

void Engine::Impl::post_recvs(Transport& tr, const StepCode& sc) const {
  for (uint32_t i = sc.rpost_b; i < sc.rpost_e; ++i) {
    const Status st = tr.post_recv(recvs[i].id, recv_desc[i]);
    if (st != Status::ok) {
      const WaitRef ref{false, i};
      fail(tr, st, sc.t, &ref, "posting");
    }
  }
}

// A receive that landed in its fallback rows is scattered into its slots.
void Engine::Impl::wait_due(Transport& tr, const StepCode& sc) const {
  if (sc.wait_e == sc.wait_b) return;
  size_t failed = 0;
  const Status st = tr.wait(wait_ids.data() + sc.wait_b, sc.wait_e - sc.wait_b, &failed);
  if (st != Status::ok) fail(tr, st, sc.t, &wait_refs[sc.wait_b + failed], "completing");
  for (uint32_t w = sc.wait_b; w < sc.wait_e; ++w) {
    const WaitRef& ref = wait_refs[w];
    if (ref.is_send || !scatter[ref.index]) continue;
    const RecvPlan& r = recvs[ref.index];
    for (uint32_t e = 0; e < r.count; ++e) std::memcpy(at(msg_units[r.unit + e]), at(r.fallback + e), row);
    staged += uint64_t{r.count} * row;
  }
}

// Sends completed late (lower_late): nothing to scatter.
void Engine::Impl::wait_sends(Transport& tr, uint32_t b, uint32_t e, ir::StepNo t) const {
  if (e == b) return;
  size_t failed = 0;
  const Status st = tr.wait(wait_ids.data() + b, e - b, &failed);
  if (st != Status::ok) fail(tr, st, t, &wait_refs[b + failed], "completing");
}

void Engine::Impl::fail(Transport& tr, Status st, ir::StepNo t, const WaitRef* ref, const char* what) const {
  const std::string detail = tr.error_detail();
  tr.abandon();
  std::string msg;
  if (ref && ref->is_send) {
    const SendPlan& s = sends[ref->index];
    msg = fmt::format("rank {}, step {}: {} the send to rank {} on port {} (sent in step {}, {} bytes) failed: {}", rank,
                      t, what, s.to, s.port, s.step, static_cast<size_t>(s.count) * row, status_name(st));
  } else if (ref) {
    const RecvPlan& r = recvs[ref->index];
    msg = fmt::format(
        "rank {}, step {}: {} the receive from rank {} on port {} (message sent in step {}, due in step {}, {} bytes) "
        "failed: {}",
        rank, t, what, r.from, r.port, r.sent_at, r.due, static_cast<size_t>(r.count) * row, status_name(st));
  } else {
    msg = fmt::format("rank {}, step {}: {} failed: {}", rank, t, what, status_name(st));
  }
  if (!detail.empty()) msg += fmt::format(" ({})", detail);
  if (st == Status::aborted) throw RunAborted(msg);
  throw UserError(msg);
}

}  // namespace collplan::rt
