// The engine's private parts, shared by runtime/engine*.cpp and installed
// nowhere: Engine::Impl, the compiled form of one rank's program that
// construction builds and run() replays. docs/runtime.md, "Engine
// internals", describes the layout and the decisions behind it.
//
//   engine.cpp           the public Engine: construction, accessors
//   engine_validate.cpp  rejects a program that cannot be replayed
//   engine_place.cpp     where every value lives: direct messages, slots in
//                        the caller's buffers, the arena's rows
//   engine_combine.cpp   combinations lowered to kernel calls
//   engine_lower.cpp     the program lowered to per-step code and request ids
//   engine_bind.cpp      rows turned into addresses: the arena, the caller's
//                        buffers, the transport's message descriptors
//   engine_run.cpp       the round loop
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "runtime/engine.h"
#include "runtime/gf/gf_kernels.h"

namespace collplan::rt {

struct Engine::Impl {
  // ── The compiled form ──

  // op_copy: a copy the plan itself needs (an op dst = src, the first term
  // of a sum, an input into the output buffer that holds it); copy: one the
  // engine adds (staging; Stats::staged_bytes counts only these).
  enum class Code : uint8_t { zero, copy, op_copy, mul, add, mad, dot };

  // One kernel call. Rows ("units") are indices into the arena; the byte
  // address is unit · ℓ · elem_bytes, resolved in the loop (a multiply) or,
  // for dot's pointer arrays, by bind().
  struct Instr {
    Code code;
    uint32_t tab = 0;  // mul/mad: index into mads; dot: index into dots
    uint32_t src = 0;  // source row; dot: offset of its source pointers in ptrs
    uint32_t dst = 0;  // destination row; dot: offset of its destination pointers
  };

  struct DotCall {
    gf::DotTables tables;
    std::vector<uint32_t> src_units, dst_units;
    uint32_t ptr_off = 0;  // sources at ptrs[ptr_off..+k), destinations after
  };

  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  static constexpr size_t kDotMaxSources = 32;  // k per dot call (k + m <= 64: no allocation in the kernel)
  static constexpr size_t kDotMaxRows = 32;     // m per dot call

  // A message is either staged (its `count` elements are consecutive rows
  // from `unit` on, in a staging bank) or direct: its elements are the rows
  // msg_units[unit .. unit+count), wherever those live. A direct message that
  // may turn out split at run time (its rows are not all consecutive arena
  // rows) also has `fallback`, `count` staging rows it is gathered into
  // (sends) or scattered from (receives) when the transport takes fewer
  // pieces than it has.
  struct MessageRows {
    uint32_t unit = 0, count = 0;
    uint32_t fallback = kNone;
    ReqId id = 0;
    bool direct = false;
  };
  struct SendPlan : MessageRows {
    ir::Port port = 0;
    ir::Rank to = 0;
    ir::StepNo step = 0;
  };
  struct RecvPlan : MessageRows {
    ir::Port port = 0;
    ir::Rank from = 0;
    ir::StepNo sent_at = 0, due = 0;
  };

  // Everything step t does, as ranges into the flat arrays.
  struct StepCode {
    ir::StepNo t = 0;
    uint32_t eval_b = 0, eval_e = 0;    // instrs: payload evaluation
    uint32_t send_b = 0, send_e = 0;    // sends posted in t
    uint32_t rpost_b = 0, rpost_e = 0;  // receives posted in t (messages sent in t)
    uint32_t late_b = 0, late_e = 0;    // earlier sends completed before t's receives are posted
    uint32_t wait_b = 0, wait_e = 0;    // requests due in t
    uint32_t after_b = 0, after_e = 0;  // instrs: staged receives, then ops
  };

  // What a waited-for request was, for the error message.
  struct WaitRef {
    bool is_send = false;
    uint32_t index = 0;  // into sends / recvs
  };

  // ── What compile() decides before it emits code; dropped when it returns ──

  struct Lowering {
    struct SendAt {
      const ir::Send* send;
      ir::StepNo t;
    };
    struct RecvAt {
      const ir::Recv* recv;
      ir::StepNo due;
    };
    std::vector<SendAt> sends;  // program order, as Impl::sends
    std::vector<RecvAt> recvs;  // program order, as Impl::recvs
    std::vector<std::vector<size_t>> send_posts, recv_posts;  // per step: the sends / receives posted then
    std::vector<char> send_direct, recv_direct;      // sent from / received into the slots themselves
    std::vector<char> send_fallback, recv_fallback;  // direct, and may be split at run time
    std::vector<uint32_t> home;  // per slot: kNone (arena), else input i or n_in + output j
    // Per direct send: the step of the first write of one of its slots after
    // its due step's wait (choose_direct_messages), 0 if none, kSameStep if
    // that write is in the due step itself (an op or a staged receive's copy
    // after the wait). When a send may complete late (late_step).
    static constexpr ir::StepNo kSameStep = UINT32_MAX;
    std::vector<ir::StepNo> send_next_write;
    std::vector<std::vector<size_t>> late_sends;  // per step: sends completed before its receives are posted
    std::vector<size_t> last_sends;               // sends completed after the last step
    std::vector<uint64_t> send_bank, recv_bank;  // first unit of each staging bank
    // Request ids: taken when a request is posted, returned after the wait
    // that completes it.
    std::vector<ReqId> free_ids;
    uint32_t id_count = 0;
    ReqId take_id();
  };

  // ── The program, compiled ──

  Field field = Field::gf256();
  size_t eb = 1;
  ir::Rank rank = 0;
  uint32_t K = 0, p = 1, lambda = 1, num_steps = 0, num_slots = 0;
  EngineOptions opt;

  std::vector<uint32_t> inputs, outputs;  // slot rows
  // Units: [0, units) are the slots, staging banks and scratch rows of the
  // layout; unit units + i is the caller's input i, units + n_in + j its
  // output j. A slot that lives in a caller's buffer aliases that unit
  // (alias[u] != kNone); every other unit u < units is arena row arena_row[u].
  std::vector<uint32_t> alias, arena_row;
  uint32_t arena_rows = 0, zeroed_rows = 0;  // rows; the first zeroed_rows are zeroed by prepare()
  std::vector<uint32_t> msg_units;           // rows of the direct messages
  uint32_t pro_b = 0, pro_e = 0, epi_b = 0, epi_e = 0;  // instrs before step 1 and after the last step
  uint32_t last_b = 0, last_e = 0;  // wait_ids: sends completed after the last step
  std::vector<Instr> instrs;
  std::vector<gf::MadTable> mads;
  std::map<Elem, uint32_t> mad_index;
  std::vector<DotCall> dots;
  std::vector<SendPlan> sends;
  std::vector<RecvPlan> recvs;
  std::vector<ReqId> wait_ids;
  std::vector<WaitRef> wait_refs;
  std::vector<StepCode> steps;
  uint32_t scratch_unit = 0;       // op whose dst is read after being written
  uint32_t dot_scratch_unit = 0;   // partial sums of dot calls split by source
  uint32_t dot_scratch_rows = 0;
  uint32_t units = 0;
  Stats stats;
  mutable uint64_t staged = 0;  // bytes copied by the engine in the current run (Stats::staged_bytes)
  mutable uint64_t op_copied = 0;  // and the copies the plan needs (Stats::op_copy_bytes)
  uint64_t recv_rows = 0;          // rows received per run (Stats::delivered_bytes = recv_rows · row)

  // ── Resolved by prepare() (the arena) and bind() (the caller's buffers) ──

  size_t len = 0, row = 0;
  std::byte* arena = nullptr;
  size_t arena_size = 0;
  std::vector<std::byte*> rp;  // unit -> address
  std::vector<void*> ptrs;
  std::vector<SendDesc> send_desc;
  std::vector<RecvDesc> recv_desc;
  std::vector<SendPiece> send_pieces;
  std::vector<RecvPiece> recv_pieces;
  std::vector<char> gather, scatter;  // per send / receive: through `fallback` this run
  // What bind() was last called with: run() rebinds only when it changes.
  bool bound = false;
  uint32_t bound_pieces = 0;
  std::vector<const void*> bound_in;
  std::vector<void*> bound_out;
  // Private copies when the caller's buffers overlap.
  bool priv_inputs = false, priv_outputs = false;
  std::byte* priv = nullptr;
  size_t priv_size = 0;

  ~Impl() {
    std::free(arena);
    std::free(priv);
  }

  // ── Construction ──

  // engine_validate.cpp
  void validate(const ir::Program& prog) const;

  // engine_place.cpp
  void choose_direct_messages(const ir::Program& prog, Lowering& lw) const;
  void choose_homes(const ir::Program& prog, Lowering& lw) const;
  void mark_fallbacks(Lowering& lw) const;
  void lay_out_arena(const ir::Program& prog, Lowering& lw);
  static std::vector<uint32_t> plain_slots(const ir::Send& s);

  // engine_combine.cpp
  enum class DstUse { none, first, elsewhere };
  static std::vector<ir::Term> nonzero(std::span<const ir::Term> terms);
  static DstUse dst_use(std::span<const ir::Term> nz, uint32_t dst);
  uint32_t mad_table(Elem c);
  void emit(Code c, uint32_t src, uint32_t dst, uint32_t tab = 0) { instrs.push_back(Instr{c, tab, src, dst}); }
  void emit_dot(const std::vector<uint32_t>& src_units, const std::vector<std::pair<uint32_t, std::vector<Elem>>>& rows);
  // copy_code: Code::op_copy when target := src is the plan's own op.
  void emit_direct(std::span<const ir::Term> nz, uint32_t target, Code copy_code = Code::copy);
  void emit_accumulate(std::span<const ir::Term> nz, size_t from, uint32_t target);
  void emit_payloads(const std::vector<std::pair<const ir::Combo*, uint32_t>>& elems);
  void emit_ops(std::span<const ir::Op> ops);
  void emit_op(const ir::Op& op, std::vector<const ir::Op*>& group);
  void flush_op_group(std::vector<const ir::Op*>& group);

  // engine_lower.cpp
  void compile(const ir::Program& prog);
  Lowering collect_messages(const ir::Program& prog) const;
  void emit_prologue(const ir::Program& prog, const Lowering& lw);
  void emit_step(ir::StepNo t, const ir::Step* st, Lowering& lw);
  void lower_sends(ir::StepNo t, Lowering& lw, StepCode& sc);
  void lower_recvs(ir::StepNo t, Lowering& lw, StepCode& sc);
  void lower_late(ir::StepNo t, Lowering& lw, StepCode& sc);
  void lower_waits(int64_t due_from, Lowering& lw, StepCode& sc);
  static int64_t late_step(size_t send, const Lowering& lw);
  void append_waits(const std::vector<size_t>& send_indices, uint32_t& b, uint32_t& e);
  void emit_after(int64_t due_from, const ir::Step* st, const Lowering& lw, StepCode& sc);
  void emit_epilogue(const Lowering& lw);
  void place_direct(MessageRows& msg, std::span<const uint32_t> slots, bool fallback, uint64_t& bank);
  static void place_staged(MessageRows& msg, size_t count, uint64_t& bank);

  // ── Binding and running ──

  std::byte* at(uint32_t unit) const { return rp[unit]; }

  // engine_bind.cpp
  void bind_if_changed(const void* const* in, void* const* out, uint32_t max_pieces);
  void bind(const void* const* in, void* const* out, uint32_t max_pieces);
  void choose_private_copies();
  void resolve_addresses();
  template <class Piece>
  uint32_t pieces_of(uint32_t off, uint32_t count, std::vector<Piece>& out) const;
  template <class Desc, class Piece>
  bool locate(const MessageRows& msg, uint32_t max_pieces, Desc& d, std::vector<Piece>& pieces);

  // engine_run.cpp
  void check_run(const Transport& tr, const void* const* in, void* const* out) const;
  void copy_private_inputs(const void* const* in) const;
  void copy_private_outputs(void* const* out) const;
  void exec(uint32_t b, uint32_t e) const;
  void post_sends(Transport& tr, const StepCode& sc) const;
  void post_recvs(Transport& tr, const StepCode& sc) const;
  void wait_due(Transport& tr, const StepCode& sc) const;
  void wait_sends(Transport& tr, uint32_t b, uint32_t e, ir::StepNo t) const;
  [[noreturn]] void fail(Transport& tr, Status st, ir::StepNo t, const WaitRef* ref, const char* what) const;
};

}  // namespace collplan::rt
