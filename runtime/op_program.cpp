#include "runtime/op_program.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/validate.h"
#include "runtime/engine.h"
#include "support/error.h"

namespace collplan::rt {

using namespace ir;

namespace {

// Every row and staging area starts on a 64-byte boundary: the operator may
// view a row as an array of any type (user_op.h promises max_align_t), and
// vector kernels like cache-line starts.
constexpr size_t kAlign = 64;
constexpr size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
// The largest row run() takes: keeps every offset computation far from
// overflow (a program has at most 2^32 rows).
constexpr size_t kMaxRowBytes = size_t{1} << 40;
// The most row storage one program may ask for: more than any machine has,
// and far from overflow (2^32 rows of 2^40 bytes would not be).
constexpr size_t kMaxStorageBytes = size_t{1} << 48;

}  // namespace

void require_unit_coefficients(const Program& prog) {
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

// ─── The compiled program ────────────────────────────────────────────────────
//
// Storage is a list of areas: one row per slot, one scratch row, then one
// staging area per message that does not live in a slot row. Instructions
// name places as (area, element) and are resolved to pointers whenever the
// row size changes, so the round loop does pointer work only.

struct OpProgram::Impl {
  struct Loc {
    uint32_t area = 0, elem = 0;
  };
  struct Instr {
    enum Kind : uint8_t { copy, zero, apply } kind = copy;
    Loc a, b, out;
    const std::byte* pa = nullptr;
    const std::byte* pb = nullptr;
    std::byte* pout = nullptr;
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
  // Where a message's bytes live and how many rows it has.
  struct MsgPlace {
    Loc loc;
    uint32_t rows = 0;
  };

  Rank rank = 0;
  uint32_t num_slots = 0;
  uint32_t scratch_area = 0;
  std::vector<uint32_t> area_rows;  // rows per area
  std::vector<size_t> area_off;     // byte offset per area (for the current row)
  std::vector<uint32_t> inputs, outputs;  // slot ids
  // Inputs read in place (start()'s borrow): an input slot that nothing
  // writes can be read straight from the caller's buffer when that is a
  // whole, aligned row; these are the pointers that then change.
  struct PtrRef {
    uint32_t index;  // into code (pa or pb) or sends (data)
    uint8_t what;    // 0: code[index].pa, 1: code[index].pb, 2: sends[index].data
  };
  std::vector<uint8_t> input_read_only;
  std::vector<std::vector<PtrRef>> input_refs;  // per input
  std::vector<int32_t> input_of_slot;           // slot -> input index, or −1
  std::vector<const std::byte*> input_at;       // per input: where it is read this run
  size_t read_in_place = 0;                     // inputs read in place by the last start()
  std::vector<uint8_t> out_none;
  std::vector<Instr> code;
  std::vector<StepCode> steps;
  std::vector<SendDesc> sends;
  std::vector<RecvDesc> recvs;
  std::vector<MsgPlace> send_place, recv_place;
  std::vector<uint32_t> recv_posts;
  std::vector<ReqId> wait_ids;
  std::vector<WaitRef> wait_refs;
  uint32_t nsend = 0;
  uint32_t max_requests = 0;
  // The first combination of two or more terms (for the null-operator error).
  bool combines = false;
  std::string first_combination;
  Stats stats;

  // Row storage.
  std::unique_ptr<std::byte[]> storage;
  size_t capacity = 0;  // usable bytes from base
  std::byte* base = nullptr;
  size_t row = 0;  // bytes per row the pointers are resolved for (0: none yet)

  uint32_t new_area(uint32_t rows) {
    area_rows.push_back(rows);
    return static_cast<uint32_t>(area_rows.size() - 1);
  }
  static Loc slot_loc(SlotId s) { return {s, 0}; }

  // Which outputs end with "no value", decided from this program alone:
  // inputs and received data are values, an empty combination is none, a
  // one-term combination passes on its term's state, more terms make a value.
  void find_no_value(const Program& prog) {
    enum : uint8_t { unset, none, value };
    std::vector<uint8_t> state(prog.num_slots, unset);
    for (SlotId s : prog.inputs) state[s] = value;
    for (const Step& st : prog.steps) {
      for (const Recv& r : st.recvs)
        for (SlotId s : r.into) state[s] = value;
      for (const Op& o : st.ops)
        state[o.dst] = o.terms.empty() ? uint8_t{none} : o.terms.size() == 1 ? state[o.terms[0].slot] : uint8_t{value};
    }
    out_none.resize(prog.outputs.size());
    for (size_t j = 0; j < prog.outputs.size(); ++j) out_none[j] = state[prog.outputs[j]] == none;
  }

  // acc = t_1; acc = acc ⊕ t_2; … written to `dst`. `fold_in_dst`: dst is a
  // row the operator may work in (aligned, and not read by a later term).
  void emit_combo(std::span<const Term> terms, Loc dst, bool fold_in_dst, const std::string& where) {
    if (terms.empty()) {
      code.push_back({Instr::zero, {}, {}, dst});
      return;
    }
    const Loc first = slot_loc(terms[0].slot);
    auto same = [](Loc x, Loc y) { return x.area == y.area && x.elem == y.elem; };
    if (terms.size() == 1) {
      if (!same(first, dst)) code.push_back({Instr::copy, first, {}, dst});
      return;
    }
    if (!combines) {
      combines = true;
      first_combination = where;
    }
    const Loc acc = fold_in_dst ? dst : Loc{scratch_area, 0};
    if (!same(first, acc)) code.push_back({Instr::copy, first, {}, acc});
    for (size_t i = 1; i < terms.size(); ++i) {
      code.push_back({Instr::apply, acc, slot_loc(terms[i].slot), acc});
      ++stats.applies;
    }
    if (!same(acc, dst)) code.push_back({Instr::copy, acc, {}, dst});
  }

  void compile(const Spec& spec, const Program& prog) {
    const uint32_t lam = spec.lambda;
    rank = prog.rank;
    num_slots = prog.num_slots;
    area_rows.assign(num_slots, 1);
    scratch_area = new_area(1);
    inputs.assign(prog.inputs.begin(), prog.inputs.end());
    outputs.assign(prog.outputs.begin(), prog.outputs.end());
    find_no_value(prog);

    // Steps whose end-of-step code (landings, ops) writes each slot, for the
    // zero-copy decisions below.
    std::vector<std::vector<StepNo>> writes(num_slots);
    for (const Step& st : prog.steps) {
      for (const Recv& r : st.recvs)
        for (SlotId s : r.into) writes[s].push_back(st.t);
      for (const Op& o : st.ops) writes[o.dst].push_back(st.t);
    }
    auto written_in = [&](SlotId s, StepNo lo, StepNo hi) {  // some write in steps [lo, hi]
      for (StepNo w : writes[s])
        if (w >= lo && w <= hi) return true;
      return false;
    };

    // A one-element receive lands straight in its slot row when nothing else
    // can touch that row while the transport may write it: with λ = 1 it is
    // posted and completed within its own step, after the payloads were
    // evaluated and before the landings and ops; the slot must be the target
    // of no other landing in that step (landing order decides then) and the
    // source of no zero-copy send of that step (checked below). With λ > 1
    // the receive is posted steps before it completes: always staged.
    std::vector<std::vector<uint8_t>> direct(prog.steps.size());
    for (size_t k = 0; k < prog.steps.size(); ++k) {
      const Step& st = prog.steps[k];
      direct[k].assign(st.recvs.size(), 0);
      if (lam != 1) continue;
      for (size_t ri = 0; ri < st.recvs.size(); ++ri) {
        if (st.recvs[ri].into.size() != 1) continue;
        const SlotId s = st.recvs[ri].into[0];
        size_t landings = 0;
        for (const Recv& r : st.recvs)
          for (SlotId x : r.into) landings += x == s;
        direct[k][ri] = landings == 1;
      }
    }
    auto direct_into = [&](size_t k, SlotId s) {
      for (size_t ri = 0; ri < prog.steps[k].recvs.size(); ++ri)
        if (direct[k][ri] && prog.steps[k].recvs[ri].into[0] == s) return true;
      return false;
    };

    // A one-element, one-term send is read straight from its slot row when
    // the row does not change while the message is in flight: posted in step
    // t, completed in step t+λ−1 before that step's landings and ops, so no
    // write in steps t..t+λ−2 and no direct receive into it in step t (λ = 1).
    for (size_t k = 0; k < prog.steps.size(); ++k) {
      const Step& st = prog.steps[k];
      for (const Send& s : st.sends) {
        MsgPlace mp;
        mp.rows = static_cast<uint32_t>(s.payload.size());
        bool zc = s.payload.size() == 1 && s.payload[0].terms.size() == 1;
        if (zc) {
          const SlotId x = s.payload[0].terms[0].slot;
          zc = !(lam >= 2 && written_in(x, st.t, st.t + lam - 2)) && !(lam == 1 && direct_into(k, x));
        }
        if (zc) {
          mp.loc = slot_loc(s.payload[0].terms[0].slot);
          ++stats.zero_copy_sends;
        } else {
          mp.loc = {new_area(mp.rows), 0};
          ++stats.staged_sends;
        }
        send_place.push_back(mp);
      }
      for (size_t ri = 0; ri < st.recvs.size(); ++ri) {
        const Recv& r = st.recvs[ri];
        MsgPlace mp;
        mp.rows = static_cast<uint32_t>(r.into.size());
        if (direct[k][ri]) {
          mp.loc = slot_loc(r.into[0]);
          ++stats.direct_recvs;
        } else {
          mp.loc = {new_area(mp.rows), 0};
          ++stats.staged_recvs;
        }
        recv_place.push_back(mp);
      }
    }

    // Gather, per step, what is posted and what is waited for.
    struct Pending {
      const Step* st = nullptr;
      uint32_t first_send = 0, first_recv = 0;
      std::vector<uint32_t> recv_posts;
      std::vector<WaitRef> waits;
    };
    std::map<StepNo, Pending> pend;
    uint32_t nrecv = 0;
    for (size_t k = 0; k < prog.steps.size(); ++k) {
      const Step& st = prog.steps[k];
      Pending& p = pend[st.t];
      p.st = &st;
      p.first_send = nsend;
      p.first_recv = nrecv;
      for (const Send& s : st.sends) {
        SendDesc d;
        d.port = s.port;
        d.to = s.to;
        d.step = st.t;
        sends.push_back(d);
        pend[st.t + lam - 1].waits.push_back({true, nsend});
        ++nsend;
      }
      for (const Recv& r : st.recvs) {
        RecvDesc d;
        d.port = r.port;
        d.from = r.from;
        d.sent_at = r.sent_at;
        recvs.push_back(d);
        pend[r.sent_at].recv_posts.push_back(nrecv);
        pend[st.t].waits.push_back({false, nrecv});
        ++nrecv;
      }
    }
    max_requests = nsend + nrecv;
    auto req_id = [&](const WaitRef& w) { return static_cast<ReqId>(w.is_send ? w.index : nsend + w.index); };

    for (auto& [t, p] : pend) {
      StepCode sc;
      sc.t = t;
      sc.eval_b = static_cast<uint32_t>(code.size());
      if (p.st)
        for (size_t si = 0; si < p.st->sends.size(); ++si) {
          const Send& s = p.st->sends[si];
          const MsgPlace& mp = send_place[p.first_send + si];
          if (mp.loc.area < num_slots) continue;  // zero copy: the slot row is the message
          for (size_t e = 0; e < s.payload.size(); ++e)
            // Element 0 of a staging area is aligned: fold there; the others
            // sit at multiples of the row size, so they fold in scratch.
            emit_combo(s.payload[e].terms, {mp.loc.area, static_cast<uint32_t>(e)}, e == 0,
                       fmt::format("step {} send {} element {}", t, si, e));
        }
      sc.eval_e = static_cast<uint32_t>(code.size());
      sc.send_b = p.first_send;
      sc.send_e = p.first_send + (p.st ? static_cast<uint32_t>(p.st->sends.size()) : 0);
      sc.rpost_b = static_cast<uint32_t>(recv_posts.size());
      for (uint32_t j : p.recv_posts) recv_posts.push_back(j);
      sc.rpost_e = static_cast<uint32_t>(recv_posts.size());
      sc.wait_b = static_cast<uint32_t>(wait_ids.size());
      for (const WaitRef& w : p.waits) {
        wait_ids.push_back(req_id(w));
        wait_refs.push_back(w);
      }
      sc.wait_e = static_cast<uint32_t>(wait_ids.size());
      sc.after_b = static_cast<uint32_t>(code.size());
      if (p.st) {
        for (size_t ri = 0; ri < p.st->recvs.size(); ++ri) {
          const Recv& r = p.st->recvs[ri];
          const MsgPlace& mp = recv_place[p.first_recv + ri];
          if (mp.loc.area < num_slots) continue;  // landed in its slot row
          for (size_t e = 0; e < r.into.size(); ++e)
            code.push_back({Instr::copy, {mp.loc.area, static_cast<uint32_t>(e)}, {}, slot_loc(r.into[e])});
        }
        for (size_t oi = 0; oi < p.st->ops.size(); ++oi) {
          const Op& o = p.st->ops[oi];
          bool in_place = true;
          for (size_t i = 1; i < o.terms.size(); ++i)
            if (o.terms[i].slot == o.dst) in_place = false;  // dst is still to be read: never clobber it
          emit_combo(o.terms, slot_loc(o.dst), in_place, fmt::format("step {} op {}", t, oi));
        }
      }
      sc.after_e = static_cast<uint32_t>(code.size());
      steps.push_back(sc);
    }
    area_off.assign(area_rows.size(), 0);

    input_of_slot.assign(num_slots, -1);
    input_read_only.assign(inputs.size(), 0);
    input_refs.assign(inputs.size(), {});
    input_at.assign(inputs.size(), nullptr);
    for (size_t i = 0; i < inputs.size(); ++i) {
      input_of_slot[inputs[i]] = static_cast<int32_t>(i);
      input_read_only[i] = writes[inputs[i]].empty();
    }
    auto ref = [&](Loc l, uint32_t index, uint8_t what) {
      if (l.area < num_slots && input_of_slot[l.area] >= 0)
        input_refs[static_cast<size_t>(input_of_slot[l.area])].push_back({index, what});
    };
    for (uint32_t i = 0; i < code.size(); ++i) {
      if (code[i].kind != Instr::zero) ref(code[i].a, i, 0);
      if (code[i].kind == Instr::apply) ref(code[i].b, i, 1);
    }
    for (uint32_t i = 0; i < send_place.size(); ++i) ref(send_place[i].loc, i, 2);
  }

  // Sizes the storage for rows of `bytes` and points every instruction and
  // message at it. Allocates only when the storage grows.
  void layout(size_t bytes) {
    if (bytes == row) return;
    // The total first, before anything changes: past kMaxStorageBytes it
    // is refused (a row of up to 2^40 bytes times up to 2^32 rows could
    // even wrap around).
    size_t total = 0;
    for (uint32_t rows : area_rows) {
      if (rows > kMaxStorageBytes / bytes) total = kMaxStorageBytes + 1;  // rows · bytes alone is too much
      else total += round_up(rows * bytes);
      if (total > kMaxStorageBytes)
        user_error("rank {}: rows of {} bytes need more than {} bytes of storage ({} rows: slots, a scratch row and "
                   "staged messages)",
                   rank, bytes, kMaxStorageBytes, row_count());
    }
    total = 0;
    for (size_t a = 0; a < area_rows.size(); ++a) {
      area_off[a] = total;
      total += round_up(area_rows[a] * bytes);
    }
    if (total > capacity) {
      storage.reset();  // free the old block first: the peak is the new size
      storage.reset(new std::byte[total + kAlign]);
      base = storage.get();
      if (const auto mis = reinterpret_cast<uintptr_t>(base) % kAlign) base += kAlign - mis;
      capacity = total;
    }
    row = bytes;
    auto at = [&](Loc l) { return base + area_off[l.area] + static_cast<size_t>(l.elem) * bytes; };
    for (Instr& in : code) {
      in.pout = at(in.out);
      if (in.kind != Instr::zero) in.pa = at(in.a);
      if (in.kind == Instr::apply) in.pb = at(in.b);
    }
    for (size_t i = 0; i < sends.size(); ++i) {
      sends[i].data = at(send_place[i].loc);
      sends[i].bytes = send_place[i].rows * bytes;
    }
    for (size_t j = 0; j < recvs.size(); ++j) {
      recvs[j].data = at(recv_place[j].loc);
      recvs[j].bytes = recv_place[j].rows * bytes;
    }
  }

  std::byte* slot_row(SlotId s) { return base + area_off[s]; }
  uint64_t row_count() const {
    uint64_t n = 0;
    for (uint32_t rows : area_rows) n += rows;
    return n;
  }

  void exec(uint32_t b, uint32_t e, const UserOp& op, size_t count) {
    for (uint32_t i = b; i < e; ++i) {
      const Instr& in = code[i];
      switch (in.kind) {
        case Instr::copy: std::memcpy(in.pout, in.pa, row); break;
        case Instr::zero: std::memset(in.pout, 0, row); break;
        case Instr::apply: op.fn(in.pa, in.pb, in.pout, count, op.ctx); break;
      }
    }
  }

  [[noreturn]] void fail(Transport& tr, Status st, StepNo t, const WaitRef* ref, const char* what) {
    tr.abandon();
    std::string msg;
    if (ref && ref->is_send) {
      const SendDesc& d = sends[ref->index];
      msg = fmt::format("rank {} step {}: {} the message to rank {} on port {} (sent in step {}) failed: {}", rank, t,
                        what, d.to, d.port, d.step, status_name(st));
    } else if (ref) {
      const RecvDesc& d = recvs[ref->index];
      msg = fmt::format("rank {} step {}: {} the message from rank {} on port {} (sent in step {}) failed: {}", rank, t,
                        what, d.from, d.port, d.sent_at, status_name(st));
    } else {
      msg = fmt::format("rank {}: {} failed: {}", rank, what, status_name(st));
    }
    const std::string detail = tr.error_detail();
    if (!detail.empty()) msg += " (" + detail + ")";
    if (st == Status::aborted) throw RunAborted(msg);
    throw UserError(msg);
  }

  void check_args(const UserOp& op, size_t count, const InPiece* in, const OutPiece* out) const {
    if (op.elem_size == 0) user_error("rank {}: operator elem_size is 0 (needs at least 1 byte)", rank);
    if (count == 0) user_error("rank {}: count is 0 (needs at least 1 element)", rank);
    if (count > kMaxRowBytes / op.elem_size)
      user_error("rank {}: count {} × elem_size {} bytes is too large (a row holds at most {} bytes)", rank, count,
                 op.elem_size, kMaxRowBytes);
    if (combines && !op.fn)
      user_error("rank {}: the operator's function is null, but {} combines two or more terms (a null function "
                 "serves only plans that copy, such as broadcasts and allgathers)",
                 rank, first_combination);
    if (!inputs.empty() && !in) user_error("rank {}: the input list is null, the program has {} inputs", rank, inputs.size());
    if (!outputs.empty() && !out)
      user_error("rank {}: the output list is null, the program has {} outputs", rank, outputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) check_piece("input", i, in[i].data, in[i].bytes, count, op.elem_size);
    for (size_t j = 0; j < outputs.size(); ++j) check_piece("output", j, out[j].data, out[j].bytes, count, op.elem_size);
  }

  void check_piece(const char* what, size_t i, const void* data, size_t bytes, size_t count, size_t elem_size) const {
    if (bytes > count * elem_size)
      user_error("rank {} {} {}: {} bytes, more than the row of {} elements × {} bytes = {} bytes", rank, what, i, bytes,
                 count, elem_size, count * elem_size);
    if (!data && bytes)
      user_error("rank {} {} {}: data is a null pointer with {} bytes (null is allowed only with 0 bytes)", rank, what,
                 i, bytes);
  }

  // A replay in progress (start() .. the advance() that returns true).
  struct Live {
    Transport* tr = nullptr;
    UserOp op;
    size_t count = 0;
    std::vector<OutPiece> out;
    size_t step = 0;      // index into steps
    bool posted = false;  // steps[step]'s evaluations done and messages posted
    bool on = false;
  } live;

  void start(Transport& tr, const UserOp& op, size_t count, const InPiece* in, const OutPiece* out, bool borrow) {
    if (live.on) user_error("rank {}: a replay of this program is still in progress (one at a time)", rank);
    check_args(op, count, in, out);
    layout(count * op.elem_size);
    // Every input in before any output is written (outputs are written
    // after the last step), so inputs may alias outputs (MPI_IN_PLACE).
    read_in_place = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto* src = static_cast<const std::byte*>(in[i].data);
      const bool in_place = borrow && input_read_only[i] && in[i].bytes == row &&
                            reinterpret_cast<uintptr_t>(src) % alignof(std::max_align_t) == 0;
      std::byte* dst = slot_row(inputs[i]);
      input_at[i] = in_place ? src : dst;
      for (const PtrRef& r : input_refs[i]) {
        if (r.what == 0) code[r.index].pa = input_at[i];
        else if (r.what == 1) code[r.index].pb = input_at[i];
        else sends[r.index].data = input_at[i];
      }
      if (in_place) {
        ++read_in_place;
        continue;
      }
      if (in[i].bytes) std::memcpy(dst, in[i].data, in[i].bytes);
      std::memset(dst + in[i].bytes, 0, row - in[i].bytes);
    }
    Status st = tr.begin(max_requests);
    if (st == Status::ok) st = tr.expect(recvs.data(), recvs.size());
    if (st != Status::ok) fail(tr, st, 0, nullptr, "starting the transport");
    live.tr = &tr;
    live.op = op;
    live.count = count;
    live.out.assign(out, out + outputs.size());
    live.step = 0;
    live.posted = false;
    live.on = true;
    // The first step's messages go out now; nothing is tested (a test is
    // where MPI moves data, and start() is for returning at once).
    if (!steps.empty()) {
      try {
        exec(steps[0].eval_b, steps[0].eval_e, live.op, live.count);
        post(tr, steps[0]);
      } catch (...) {
        live.on = false;
        throw;
      }
      live.posted = true;
    }
  }

  // Runs steps until one must wait for messages that have not all arrived
  // (returns false; only when !block) or the replay is over (outputs
  // written; returns true). A failure ends the replay and throws.
  bool advance(bool block) {
    Transport& tr = *live.tr;
    try {
      for (; live.step < steps.size(); ++live.step, live.posted = false) {
        const StepCode& sc = steps[live.step];
        if (!live.posted) {
          exec(sc.eval_b, sc.eval_e, live.op, live.count);
          post(tr, sc);
          live.posted = true;
        }
        if (sc.wait_e > sc.wait_b) {
          size_t failed = 0;
          bool done = true;
          const Status st = block ? tr.wait(wait_ids.data() + sc.wait_b, sc.wait_e - sc.wait_b, &failed)
                                  : tr.test(wait_ids.data() + sc.wait_b, sc.wait_e - sc.wait_b, &done, &failed);
          if (st != Status::ok) fail(tr, st, sc.t, &wait_refs[sc.wait_b + failed], "completing");
          if (!done) return false;
        }
        exec(sc.after_b, sc.after_e, live.op, live.count);
      }
      const Status st = tr.end();
      if (st != Status::ok) fail(tr, st, 0, nullptr, "finishing the transport");
    } catch (...) {
      live.on = false;
      throw;
    }
    live.on = false;
    for (size_t j = 0; j < outputs.size(); ++j) {
      if (out_none[j] || !live.out[j].bytes) continue;
      const int32_t i = input_of_slot[outputs[j]];
      const std::byte* from = i >= 0 ? input_at[static_cast<size_t>(i)] : slot_row(outputs[j]);
      std::memmove(live.out[j].data, from, live.out[j].bytes);  // may be the same buffer (in place)
    }
    return true;
  }

  void post(Transport& tr, const StepCode& sc) {
    for (uint32_t i = sc.send_b; i < sc.send_e; ++i) {
      const Status st = tr.post_send(i, sends[i]);
      if (st != Status::ok) {
        const WaitRef ref{true, i};
        fail(tr, st, sc.t, &ref, "posting");
      }
    }
    for (uint32_t k = sc.rpost_b; k < sc.rpost_e; ++k) {
      const uint32_t j = recv_posts[k];
      const Status st = tr.post_recv(nsend + j, recvs[j]);
      if (st != Status::ok) {
        const WaitRef ref{false, j};
        fail(tr, st, sc.t, &ref, "posting");
      }
    }
  }

  void run(Transport& tr, const UserOp& op, size_t count, const InPiece* in, const OutPiece* out) {
    start(tr, op, count, in, out, true);  // the inputs outlive the call
    advance(true);
  }
};

OpProgram::OpProgram(const Spec& spec, uint32_t num_steps, const Program& prog) : impl_(std::make_unique<Impl>()) {
  // A program alone may come from a rank-local plan (up to 2^31 ranks): the
  // replay keeps state per slot and message of this program only.
  ir::verify_rank_structure(spec, num_steps, prog, kMaxRankLocalRanks);
  require_unit_coefficients(prog);
  impl_->compile(spec, prog);
}

OpProgram::~OpProgram() = default;
OpProgram::OpProgram(OpProgram&&) noexcept = default;
OpProgram& OpProgram::operator=(OpProgram&&) noexcept = default;

void OpProgram::run(Transport& tr, const UserOp& op, size_t count, const InPiece* inputs, const OutPiece* outputs) {
  impl_->run(tr, op, count, inputs, outputs);
}

void OpProgram::run(Transport& tr, const UserOp& op, size_t count, const InPiece* inputs, size_t num_in,
                    const OutPiece* outputs, size_t num_out) {
  if (num_in != impl_->inputs.size() || num_out != impl_->outputs.size())
    user_error("rank {}: {} input and {} output pieces given, the program has {} inputs and {} outputs", impl_->rank,
               num_in, num_out, impl_->inputs.size(), impl_->outputs.size());
  impl_->run(tr, op, count, inputs, outputs);
}

void OpProgram::start(Transport& tr, const UserOp& op, size_t count, const InPiece* inputs, const OutPiece* outputs,
                      Inputs mode) {
  impl_->start(tr, op, count, inputs, outputs, mode == Inputs::borrow);
}

bool OpProgram::progress() {
  if (!impl_->live.on) user_error("rank {}: progress() without a replay in progress (call start() first)", impl_->rank);
  return impl_->advance(false);
}

bool OpProgram::running() const { return impl_->live.on; }
size_t OpProgram::inputs_read_in_place() const { return impl_->read_in_place; }

size_t OpProgram::num_inputs() const { return impl_->inputs.size(); }
size_t OpProgram::num_outputs() const { return impl_->outputs.size(); }
Rank OpProgram::rank() const { return impl_->rank; }
uint32_t OpProgram::max_requests() const { return impl_->max_requests; }
bool OpProgram::combines() const { return impl_->combines; }
const OpProgram::Stats& OpProgram::stats() const { return impl_->stats; }
size_t OpProgram::storage_bytes() const { return impl_->capacity; }

}  // namespace collplan::rt
