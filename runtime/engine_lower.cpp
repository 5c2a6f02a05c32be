// The program lowered to the engine's instruction form: code before step 1,
// per step (payload evaluation, posts, waits, staged receives and ops) and
// after the last step, with every message's rows and request id fixed.
#include "runtime/engine_internal.h"

namespace collplan::rt {

ReqId Engine::Impl::Lowering::take_id() {
  if (free_ids.empty()) return id_count++;
  const ReqId id = free_ids.back();
  free_ids.pop_back();
  return id;
}

void Engine::Impl::compile(const ir::Program& prog) {
  num_slots = prog.num_slots;
  inputs.assign(prog.inputs.begin(), prog.inputs.end());
  outputs.assign(prog.outputs.begin(), prog.outputs.end());

  Lowering lw = collect_messages(prog);
  sends.resize(lw.sends.size());
  recvs.resize(lw.recvs.size());
  choose_direct_messages(prog, lw);
  choose_homes(prog, lw);
  mark_fallbacks(lw);
  lay_out_arena(prog, lw);
  lw.late_sends.assign(num_steps + 1, {});

  emit_prologue(prog, lw);
  size_t si = 0;  // cursor into prog.steps
  for (ir::StepNo t = 1; t <= num_steps; ++t) {
    const ir::Step* st = si < prog.steps.size() && prog.steps[si].t == t ? &prog.steps[si++] : nullptr;
    emit_step(t, st, lw);
  }
  append_waits(lw.last_sends, last_b, last_e);
  emit_epilogue(lw);

  const uint32_t n_in = static_cast<uint32_t>(inputs.size());
  for (uint32_t sl = 0; sl < num_slots; ++sl)
    if (lw.home[sl] != kNone) ++(lw.home[sl] < n_in ? stats.inputs_in_place : stats.outputs_in_place);
  stats.max_requests = lw.id_count;
  stats.units = arena_rows;
  stats.instructions = instrs.size();
  for (const RecvPlan& r : recvs) recv_rows += r.count;
}

// The program's sends and receives in program order, and by the step they
// are posted in: a send in its own step, a receive in the step its message
// is sent.
Engine::Impl::Lowering Engine::Impl::collect_messages(const ir::Program& prog) const {
  Lowering lw;
  for (const ir::Step& st : prog.steps) {
    for (const ir::Send& s : st.sends) lw.sends.push_back({&s, st.t});
    for (const ir::Recv& r : st.recvs) lw.recvs.push_back({&r, st.t});
  }
  lw.send_posts.resize(num_steps + 1);
  lw.recv_posts.resize(num_steps + 1);
  for (size_t i = 0; i < lw.sends.size(); ++i) lw.send_posts[lw.sends[i].t].push_back(i);
  for (size_t i = 0; i < lw.recvs.size(); ++i) lw.recv_posts[lw.recvs[i].recv->sent_at].push_back(i);
  return lw;
}

namespace {

// First access of every slot in the plan's order (ir/plan.h: inputs, then
// per step payloads, receives, ops in order): 1 written, 2 read.
std::vector<uint8_t> first_access(const ir::Program& prog) {
  std::vector<uint8_t> first(prog.num_slots, 0);
  auto touch = [&](uint32_t sl, uint8_t how) {
    if (!first[sl]) first[sl] = how;
  };
  for (uint32_t sl : prog.inputs) touch(sl, 1);
  for (const ir::Step& st : prog.steps) {
    for (const ir::Send& snd : st.sends)
      for (const ir::Combo& c : snd.payload)
        for (const ir::Term& term : c.terms) touch(term.slot, 2);
    for (const ir::Recv& r : st.recvs)
      for (uint32_t sl : r.into) touch(sl, 1);
    for (const ir::Op& o : st.ops) {
      for (const ir::Term& term : o.terms) touch(term.slot, 2);
      touch(o.dst, 1);
    }
  }
  return first;
}

// [b, e) of `sends` or `recvs` for the indices `posts`, which are
// consecutive.
void range_of(const std::vector<size_t>& posts, uint32_t& b, uint32_t& e) {
  b = posts.empty() ? 0 : static_cast<uint32_t>(posts.front());
  e = posts.empty() ? 0 : static_cast<uint32_t>(posts.back() + 1);
}

}  // namespace

// Before step 1: inputs into their slots unless read in place, and a zero
// fill for an output slot read before it is first written (the arena's
// slots start zeroed; a caller's buffer does not).
void Engine::Impl::emit_prologue(const ir::Program& prog, const Lowering& lw) {
  const uint32_t n_in = static_cast<uint32_t>(inputs.size());
  pro_b = static_cast<uint32_t>(instrs.size());
  for (uint32_t i = 0; i < n_in; ++i)
    if (lw.home[inputs[i]] != i)
      // Into the caller's output buffer: the output is the input (an
      // allgather's own block), a copy any implementation makes.
      emit(lw.home[inputs[i]] == kNone ? Code::copy : Code::op_copy, units + i, inputs[i]);
  const std::vector<uint8_t> first = first_access(prog);
  for (uint32_t sl = 0; sl < num_slots; ++sl)
    if (lw.home[sl] != kNone && lw.home[sl] >= n_in && first[sl] != 1) emit(Code::zero, 0, sl);
  pro_e = static_cast<uint32_t>(instrs.size());
}

// Step t's code, unless step t has nothing to do (no program step, nothing
// posted, nothing due).
void Engine::Impl::emit_step(ir::StepNo t, const ir::Step* st, Lowering& lw) {
  const int64_t due_from = static_cast<int64_t>(t) - lambda + 1;  // messages sent then are due now
  const bool has_due = due_from >= 1 && (!lw.send_posts[due_from].empty() || !lw.recv_posts[due_from].empty());
  if (!st && lw.send_posts[t].empty() && lw.recv_posts[t].empty() && !has_due && lw.late_sends[t].empty()) return;
  StepCode sc;
  sc.t = t;
  lower_sends(t, lw, sc);               // (1) payloads into staging; (2) sends posted
  lower_late(t, lw, sc);                // (2') earlier sends from slots written now, completed
  lower_recvs(t, lw, sc);               // (2) receives posted
  lower_waits(due_from, lw, sc);        // (3) what is due
  emit_after(due_from, st, lw, sc);     // (4) staged receives into slots, then ops
  steps.push_back(sc);
}

// A direct message's rows are `slots` (appended to msg_units), with as many
// fallback staging rows from *bank when it may be split at run time.
void Engine::Impl::place_direct(MessageRows& msg, std::span<const uint32_t> slots, bool fallback, uint64_t& bank) {
  msg.direct = true;
  msg.count = static_cast<uint32_t>(slots.size());
  msg.unit = static_cast<uint32_t>(msg_units.size());
  msg_units.insert(msg_units.end(), slots.begin(), slots.end());
  if (fallback) {
    msg.fallback = static_cast<uint32_t>(bank);
    bank += slots.size();
  }
}

// A staged message's rows are `count` consecutive rows from *bank.
void Engine::Impl::place_staged(MessageRows& msg, size_t count, uint64_t& bank) {
  msg.count = static_cast<uint32_t>(count);
  msg.unit = static_cast<uint32_t>(bank);
  bank += count;
}

// Step t's sends: rows in send bank t mod λ, payload evaluation, ids. The
// sends of step t are one contiguous range of `sends`.
void Engine::Impl::lower_sends(ir::StepNo t, Lowering& lw, StepCode& sc) {
  sc.eval_b = static_cast<uint32_t>(instrs.size());
  uint64_t bank = lw.send_bank[t % lambda];
  std::vector<std::pair<const ir::Combo*, uint32_t>> staged;  // payload elements and their rows
  for (size_t i : lw.send_posts[t]) {
    const ir::Send& s = *lw.sends[i].send;
    SendPlan& sp = sends[i];
    sp.port = s.port;
    sp.to = s.to;
    sp.step = t;
    if (lw.send_direct[i]) {
      place_direct(sp, plain_slots(s), lw.send_fallback[i], bank);
      ++stats.zero_copy_sends;
      continue;
    }
    place_staged(sp, s.payload.size(), bank);
    ++stats.staged_sends;
    for (uint32_t e = 0; e < sp.count; ++e) staged.emplace_back(&s.payload[e], sp.unit + e);
  }
  emit_payloads(staged);
  sc.eval_e = static_cast<uint32_t>(instrs.size());

  for (size_t i : lw.send_posts[t]) sends[i].id = lw.take_id();
  range_of(lw.send_posts[t], sc.send_b, sc.send_e);
}

// The receives of the messages sent in step t: rows in receive bank t mod λ,
// ids. They are listed in program order of their due step, which is
// increasing, so they form one contiguous range of `recvs` too.
void Engine::Impl::lower_recvs(ir::StepNo t, Lowering& lw, StepCode& sc) {
  uint64_t bank = lw.recv_bank[t % lambda];
  for (size_t i : lw.recv_posts[t]) {
    const ir::Recv& r = *lw.recvs[i].recv;
    RecvPlan& rp = recvs[i];
    rp.port = r.port;
    rp.from = r.from;
    rp.sent_at = t;
    rp.due = lw.recvs[i].due;
    if (lw.recv_direct[i]) {
      place_direct(rp, r.into, lw.recv_fallback[i], bank);
      ++stats.direct_recvs;
    } else {
      place_staged(rp, r.into.size(), bank);
      ++stats.staged_recvs;
    }
    rp.id = lw.take_id();
  }
  range_of(lw.recv_posts[t], sc.rpost_b, sc.rpost_e);
}

// A send read straight from its slots need not be complete when it is due:
// MPI's own collectives leave a send outstanding while they go on, and a
// rank that waits for every send of a step waits for its receiver to be
// scheduled and take the data before it may receive or send anything else
// (on a machine with more ranks than cores, a scheduling round per step).
// Its rows only have to stay unchanged until it completes. So a direct
// send that is surely contiguous (no fallback rows, which are staging
// reused λ steps later) completes just before the first later step that
// writes one of its slots — before that step's receives are posted — or
// after the last step if none does (the writes are the zero-copy hazard
// analysis's, choose_direct_messages). Returns that step, 0 for after the
// last step, or −1 to complete it when due as before (a slot written by
// the due step's own code after the wait).
int64_t Engine::Impl::late_step(size_t i, const Lowering& lw) {
  if (!lw.send_direct[i] || lw.send_fallback[i]) return -1;
  const ir::StepNo next = lw.send_next_write[i];
  return next == Lowering::kSameStep ? -1 : static_cast<int64_t>(next);
}

// Waits on the sends `send_indices` (a late wait, or after the last step):
// their range [b, e) of wait_ids.
void Engine::Impl::append_waits(const std::vector<size_t>& send_indices, uint32_t& b, uint32_t& e) {
  b = static_cast<uint32_t>(wait_ids.size());
  for (size_t i : send_indices) {
    wait_ids.push_back(sends[i].id);
    wait_refs.push_back({true, static_cast<uint32_t>(i)});
  }
  e = static_cast<uint32_t>(wait_ids.size());
}

// Step t's late sends: completed after its own sends are posted (they may
// read the same slots) and before its receives are posted. Their ids are
// free again after this wait.
void Engine::Impl::lower_late(ir::StepNo t, Lowering& lw, StepCode& sc) {
  append_waits(lw.late_sends[t], sc.late_b, sc.late_e);
  for (uint32_t w = sc.late_b; w < sc.late_e; ++w) lw.free_ids.push_back(wait_ids[w]);
}

// The requests of the messages sent in step due_from: receives first (their
// data is needed), then this rank's sends (their staging is reused later)
// unless they complete late (late_step). Their ids are free again after
// this wait.
void Engine::Impl::lower_waits(int64_t due_from, Lowering& lw, StepCode& sc) {
  sc.wait_b = static_cast<uint32_t>(wait_ids.size());
  if (due_from >= 1) {
    for (size_t i : lw.recv_posts[due_from]) {
      wait_ids.push_back(recvs[i].id);
      wait_refs.push_back({false, static_cast<uint32_t>(i)});
    }
    for (size_t i : lw.send_posts[due_from]) {
      if (const int64_t late = opt.late_sends ? late_step(i, lw) : -1; late >= 0) {
        (late == 0 ? lw.last_sends : lw.late_sends[late]).push_back(i);
        ++stats.late_sends;
        continue;
      }
      wait_ids.push_back(sends[i].id);
      wait_refs.push_back({true, static_cast<uint32_t>(i)});
    }
  }
  sc.wait_e = static_cast<uint32_t>(wait_ids.size());
  for (uint32_t w = sc.wait_b; w < sc.wait_e; ++w) lw.free_ids.push_back(wait_ids[w]);
}

// After the wait: the staged receives due now into their slots (program
// order), then the step's ops.
void Engine::Impl::emit_after(int64_t due_from, const ir::Step* st, const Lowering& lw, StepCode& sc) {
  sc.after_b = static_cast<uint32_t>(instrs.size());
  if (due_from >= 1)
    for (size_t i : lw.recv_posts[due_from]) {
      if (recvs[i].direct) continue;
      const ir::Slots& into = lw.recvs[i].recv->into;
      for (uint32_t e = 0; e < into.size(); ++e) emit(Code::copy, recvs[i].unit + e, into[e]);
    }
  if (st) emit_ops(st->ops);
  sc.after_e = static_cast<uint32_t>(instrs.size());
}

// After the last step: outputs whose slot does not live in their buffer.
void Engine::Impl::emit_epilogue(const Lowering& lw) {
  const uint32_t n_in = static_cast<uint32_t>(inputs.size()), n_out = static_cast<uint32_t>(outputs.size());
  epi_b = static_cast<uint32_t>(instrs.size());
  for (uint32_t j = 0; j < n_out; ++j)
    if (lw.home[outputs[j]] != n_in + j)
      // Out of the arena: staging. Out of a caller's buffer (an input read in
      // place, or another output with the same value): the output's own copy.
      emit(lw.home[outputs[j]] == kNone ? Code::copy : Code::op_copy, outputs[j], units + n_in + j);
  epi_e = static_cast<uint32_t>(instrs.size());
}

}  // namespace collplan::rt
