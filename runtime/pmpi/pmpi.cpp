// libcollplan_pmpi: MPI's collectives served from verified plans, for
// unmodified MPI programs (LD_PRELOAD, or linked before the MPI library).
//
// Every intercepted call (MPI_Bcast, MPI_Reduce, MPI_Allreduce,
// MPI_Allgather, MPI_Allgatherv, MPI_Reduce_scatter_block, MPI_Scan,
// MPI_Exscan) either replays a plan of the set named by COLLPLAN_PLANS or
// calls the PMPI_ function. Which one is decided from what every rank of the
// communicator has in common — operation, communicator size, message bytes,
// datatype and operator, the table — so all ranks decide alike and no rank
// waits in a plan while another is in MPI. The one rank-local input, loading
// a rank's program from its plan file, is agreed on collectively (an
// MPI_Allreduce on the library's private communicator) the first time a
// plan is used on a communicator: if any rank could not load it, every rank
// falls back for that plan from then on and the failing rank says why.
//
// How calls map onto plans (blocks, padding, roots, MPI_IN_PLACE), which
// operators and datatypes are served, the report and the environment:
// docs/pmpi.md.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/binary.h"
#include "runtime/engine.h"
#include "runtime/op_program.h"
#include "runtime/pmpi/control.h"
#include "runtime/pmpi/nbc.h"
#include "runtime/pmpi/plan_table.h"
#include "runtime/reduce_ops.h"
#include "runtime/transport/mpi.h"
#include "support/error.h"

namespace collplan::pmpi {
namespace {

// ─── Statistics for COLLPLAN_REPORT ──────────────────────────────────────────

// The report's rows: the table's operations, then allgatherv (served by
// allgather plans); then the same for the non-blocking calls (ibroadcast,
// iallreduce, ...: row + kNonBlocking).
constexpr int kAllgathervRow = kNumCallOps;
constexpr int kNonBlocking = kNumCallOps + 1;
constexpr int kReportRows = 2 * kNonBlocking;
std::string report_name(int row) {
  const int base = row % kNonBlocking;
  const std::string name = base == kAllgathervRow ? "allgatherv" : call_op_name(static_cast<CallOp>(base));
  return row >= kNonBlocking ? "i" + name : name;
}

// Set while the library itself is calling MPI (a replay, its progress):
// its own MPI_Waitall and kin then go straight to the MPI library.
// initial-exec: the library is preloaded or linked, never opened late, so
// its thread-locals sit in the static TLS block (no __tls_get_addr call on
// every MPI call).
#define COLLPLAN_TLS thread_local __attribute__((tls_model("initial-exec")))
COLLPLAN_TLS int t_inside = 0;
struct Inside {
  Inside() { ++t_inside; }
  ~Inside() { --t_inside; }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

// Counted without a lock: a call that falls back costs MPI's time plus
// as little as can be (a few loads and one atomic add). Reasons are static
// strings; slot i holds one reason (set once) and its count.
constexpr size_t kReasonSlots = 32;
struct RowStats {
  std::atomic<uint64_t> served{0};
  std::array<std::atomic<const char*>, kReasonSlots> reason{};
  std::array<std::atomic<uint64_t>, kReasonSlots> fell_back{};
  uint64_t fell_back_total() const {
    uint64_t n = 0;
    for (const auto& c : fell_back) n += c.load(std::memory_order_relaxed);
    return n;
  }
};

// ─── Per-communicator state ──────────────────────────────────────────────────

// A plan and a root: the plan's rank r is played by communicator rank
// (r + root) mod K, so one plan compiled for root 0 serves every root.
struct Use {
  int plan = 0;
  uint32_t root = 0;
  friend bool operator<(const Use& a, const Use& b) { return a.plan != b.plan ? a.plan < b.plan : a.root < b.root; }
};

// One plan rank's program, ready to replay: with any operator (OpProgram),
// and for the copy collectives also on the field engine, which moves
// messages straight between the caller's buffers (runtime/engine.h) when
// the blocks are whole.
// Idle programs of one plan rank for non-blocking replays: each pending
// replay needs its own (an OpProgram runs one replay at a time).
struct ProgramPool {
  Spec spec;
  uint32_t num_steps = 0;
  ir::Program prog;
  std::mutex mu;
  std::vector<std::unique_ptr<rt::OpProgram>> idle;
  std::unique_ptr<rt::OpProgram> take() {
    std::lock_guard lk(mu);
    if (idle.empty()) return std::make_unique<rt::OpProgram>(spec, num_steps, prog);
    std::unique_ptr<rt::OpProgram> p = std::move(idle.back());
    idle.pop_back();
    return p;
  }
  void give(std::unique_ptr<rt::OpProgram> p) {
    std::lock_guard lk(mu);
    idle.push_back(std::move(p));
  }
};

struct Loaded {
  std::unique_ptr<rt::OpProgram> op;
  std::unique_ptr<rt::Engine> engine;
  std::shared_ptr<ProgramPool> pool;
};

// Non-blocking replays of one communicator share a private duplicate of
// it; replay number i (counted alike on every rank: every rank serves the
// same calls) uses tag slot i mod kNbcSlots (rt::MpiTransport::Shared), so
// up to kNbcSlots replays can be pending on a communicator at once; the
// replay that holds a slot is completed before the slot is used again.
constexpr uint32_t kNbcSlots = 64;
struct Nbc;
struct NbcComm {
  MPI_Comm comm = MPI_COMM_NULL;
  std::array<Nbc*, kNbcSlots> busy{};
  NbcComm() = default;
  NbcComm(const NbcComm&) = delete;
  NbcComm& operator=(const NbcComm&) = delete;
  ~NbcComm() {
    int fin = 0;
    PMPI_Finalized(&fin);
    if (!fin && comm != MPI_COMM_NULL) PMPI_Comm_free(&comm);
  }
};

struct CommState {
  MPI_Comm comm = MPI_COMM_NULL;  // the application's communicator
  int rank = 0, size = 0;
  std::mutex mu;  // one collective at a time per communicator (MPI's rule); held across a replay
  std::unique_ptr<rt::MpiTransport> tr;  // on a duplicate of comm, made at the first served call
  std::map<Use, Loaded> progs;
  std::set<Use> failed;  // agreed: some rank could not load it
  std::shared_ptr<NbcComm> nbc;  // made at the first served non-blocking call
  uint64_t nbc_seq = 0;          // non-blocking replays started on comm
};

// Plan rank j is communicator rank (j + shift) mod K.
class RotatedTransport final : public rt::Transport {
 public:
  RotatedTransport(rt::Transport& inner, uint32_t shift) : in_(inner), shift_(shift), K_(inner.size()) {}
  ir::Rank rank() const override { return (in_.rank() + K_ - shift_) % K_; }
  uint32_t size() const override { return K_; }
  rt::Status begin(uint32_t max_requests) override { return in_.begin(max_requests); }
  rt::Status expect(const rt::RecvDesc* recvs, size_t n) override {
    if (shift_ == 0) return in_.expect(recvs, n);
    return rt::Status::ok;
  }
  rt::Status post_send(rt::ReqId id, const rt::SendDesc& d) override {
    rt::SendDesc m = d;
    m.to = (d.to + shift_) % K_;
    return in_.post_send(id, m);
  }
  rt::Status post_recv(rt::ReqId id, const rt::RecvDesc& d) override {
    rt::RecvDesc m = d;
    m.from = (d.from + shift_) % K_;
    return in_.post_recv(id, m);
  }
  rt::Status wait(const rt::ReqId* ids, size_t n, size_t* failed) override { return in_.wait(ids, n, failed); }
  rt::Status test(const rt::ReqId* ids, size_t n, bool* done, size_t* failed) override {
    return in_.test(ids, n, done, failed);
  }
  rt::Status end() override { return in_.end(); }
  void abandon() override { in_.abandon(); }
  std::string error_detail() const override { return in_.error_detail(); }
  uint32_t max_pieces() const override { return in_.max_pieces(); }

 private:
  rt::Transport& in_;
  uint32_t shift_, K_;
};

// ─── Operators ───────────────────────────────────────────────────────────────

struct UserOpInfo {
  MPI_User_function* fn = nullptr;
  bool commute = false;
};

// An MPI user function as a collplan operator: MPI's fn(in, inout) computes
// inout = in ⊕ inout, collplan's out = a ⊕ b with out aliasing a, so b is
// first copied to the scratch row the result is computed in.
struct UserCall {
  MPI_User_function* fn;
  MPI_Datatype type;
  size_t esize;
  std::vector<std::byte>* tmp;  // at least count * esize bytes
};
void call_user_fn(const void* a, const void* b, void* out, size_t count, void* ctx) {
  auto* c = static_cast<UserCall*>(ctx);
  const size_t bytes = count * c->esize;
  std::memcpy(c->tmp->data(), b, bytes);
  int len = static_cast<int>(count);
  MPI_Datatype t = c->type;
  c->fn(const_cast<void*>(a), c->tmp->data(), &len, &t);
  std::memcpy(out, c->tmp->data(), bytes);
}

struct Shim {
  bool active = false;  // COLLPLAN_PLANS or COLLPLAN_REPORT set: count calls
  bool enabled = false;  // a table is loaded: serve calls
  std::string disabled_why;
  bool report = false;
  bool nonblocking = true;  // COLLPLAN_NONBLOCKING is not 0: serve non-blocking calls
  int world_rank = 0;
  PlanTable table;
  std::mutex mu;  // guards what follows
  std::array<RowStats, kReportRows> stats;
  std::map<MPI_Op, UserOpInfo> user_ops;
  std::vector<CommState*> states;
  int keyval = MPI_KEYVAL_INVALID;
  std::vector<std::pair<MPI_Datatype, rt::ElemType>> types;  // predefined datatypes served in reductions
  // collplan_pmpi_force: per operation, kUseTable, kUseMpi or a plan index.
  std::array<std::atomic<int>, kNumCallOps> force{};
};
constexpr int kUseTable = -2, kUseMpi = -1;

// One per process, made when the library is loaded (before MPI_Init can be
// called): no guard to test on every call.
Shim g_shim;
inline Shim& shim() { return g_shim; }

void count_served(int row) { shim().stats[static_cast<size_t>(row)].served.fetch_add(1, std::memory_order_relaxed); }
void count_fallback(int row, const char* why) {
  RowStats& r = shim().stats[static_cast<size_t>(row)];
  for (size_t i = 0; i < kReasonSlots; ++i) {
    const char* cur = r.reason[i].load(std::memory_order_acquire);
    if (!cur) {
      const char* none = nullptr;
      if (r.reason[i].compare_exchange_strong(none, why, std::memory_order_acq_rel)) cur = why;
      else cur = none;  // another thread took the slot: its reason
    }
    if (cur == why || std::strcmp(cur, why) == 0 || i + 1 == kReasonSlots) {
      r.fell_back[i].fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
}

// Calls the short way to MPI (short_way) sent there, per report row
// and reason (0: kWhyRowSaysMpi, 1: kWhyNoRow), counted per thread: a load
// and a store, no atomic read-modify-write on the way to MPI. Each thread's
// block is registered once and kept to the end (a few hundred bytes per
// thread that ever made a collective call), and summed for the report.
struct FastCounts {
  std::array<std::array<std::atomic<uint64_t>, 2>, kReportRows> n{};
};
COLLPLAN_TLS FastCounts* t_fast = nullptr;
std::mutex g_fast_mu;
std::vector<FastCounts*> g_fast_blocks;  // guarded by g_fast_mu

__attribute__((noinline)) FastCounts* new_fast_counts() {
  auto* b = new FastCounts;
  std::lock_guard lk(g_fast_mu);
  g_fast_blocks.push_back(b);
  return t_fast = b;
}
__attribute__((always_inline)) inline void count_fast(int row, const char* why) {
  FastCounts* b = t_fast ? t_fast : new_fast_counts();
  std::atomic<uint64_t>& c = b->n[static_cast<size_t>(row)][why == kWhyRowSaysMpi ? 0 : 1];
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // only this thread writes it
}
// Row `row`'s fast fall-backs for reason k, over every thread.
uint64_t fast_fell_back(int row, int k) {
  std::lock_guard lk(g_fast_mu);
  uint64_t n = 0;
  for (const FastCounts* b : g_fast_blocks) n += b->n[static_cast<size_t>(row)][static_cast<size_t>(k)].load();
  return n;
}

void say(const std::string& msg) { std::fprintf(stderr, "collplan: %s\n", msg.c_str()); }

int delete_state(MPI_Comm, int, void* attr, void*) {
  auto* st = static_cast<CommState*>(attr);
  Shim& s = shim();
  {
    std::lock_guard lk(s.mu);
    s.states.erase(std::remove(s.states.begin(), s.states.end(), st), s.states.end());
  }
  delete st;  // frees the duplicate communicator (MpiTransport's destructor)
  return MPI_SUCCESS;
}

CommState& state_of(MPI_Comm comm) {
  Shim& s = shim();
  std::lock_guard lk(s.mu);
  void* attr = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, s.keyval, &attr, &found);
  if (found) return *static_cast<CommState*>(attr);
  auto* st = new CommState;
  st->comm = comm;
  PMPI_Comm_rank(comm, &st->rank);
  PMPI_Comm_size(comm, &st->size);
  PMPI_Comm_set_attr(comm, s.keyval, st);
  s.states.push_back(st);
  return *st;
}

void init_types(Shim& s) {
  using rt::ElemType;
  auto add = [&](MPI_Datatype t, ElemType e) {
    if (t == MPI_DATATYPE_NULL) return;
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS || PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS) return;
    // Only where the C type collplan's kernel works on has MPI's layout.
    if (lb == 0 && static_cast<size_t>(extent) == rt::elem_size(e)) s.types.emplace_back(t, e);
  };
  auto add_int = [&](MPI_Datatype t, bool is_signed) {
    if (t == MPI_DATATYPE_NULL) return;
    int size = 0;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS) return;
    switch (size) {
      case 1: add(t, is_signed ? ElemType::i8 : ElemType::u8); break;
      case 2: add(t, is_signed ? ElemType::i16 : ElemType::u16); break;
      case 4: add(t, is_signed ? ElemType::i32 : ElemType::u32); break;
      case 8: add(t, is_signed ? ElemType::i64 : ElemType::u64); break;
      default: break;
    }
  };
  for (MPI_Datatype t : {MPI_SIGNED_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_INT8_T, MPI_INT16_T,
                         MPI_INT32_T, MPI_INT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_INTEGER})
    add_int(t, true);
  for (MPI_Datatype t : {MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
                         MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_BYTE})
    add_int(t, false);
  add(MPI_FLOAT, ElemType::f32);
  add(MPI_DOUBLE, ElemType::f64);
  add(MPI_LONG_DOUBLE, ElemType::f80);
  add(MPI_REAL, ElemType::f32);
  add(MPI_DOUBLE_PRECISION, ElemType::f64);
  add(MPI_C_FLOAT_COMPLEX, ElemType::c32);
  add(MPI_C_DOUBLE_COMPLEX, ElemType::c64);
  add(MPI_C_LONG_DOUBLE_COMPLEX, ElemType::c80);
  add(MPI_COMPLEX, ElemType::c32);
  add(MPI_DOUBLE_COMPLEX, ElemType::c64);
  add(MPI_C_BOOL, ElemType::boolean);
  add(MPI_FLOAT_INT, ElemType::float_int);
  add(MPI_DOUBLE_INT, ElemType::double_int);
  add(MPI_LONG_INT, ElemType::long_int);
  add(MPI_2INT, ElemType::int2);
  add(MPI_SHORT_INT, ElemType::short_int);
  add(MPI_LONG_DOUBLE_INT, ElemType::long_double_int);
}

std::optional<rt::ElemType> elem_type_of(MPI_Datatype t) {
  // Programs reduce on one or two datatypes: remember the last one found
  // (a predefined datatype's handle is never freed, nor reused).
  COLLPLAN_TLS MPI_Datatype last = MPI_DATATYPE_NULL;
  COLLPLAN_TLS rt::ElemType last_elem{};
  if (t == last && t != MPI_DATATYPE_NULL) return last_elem;
  for (const auto& [mt, e] : shim().types)
    if (mt == t) {
      last = t, last_elem = e;
      return e;
    }
  return std::nullopt;
}

bool is_floating(rt::ElemType e) {
  using rt::ElemType;
  switch (e) {
    case ElemType::f32: case ElemType::f64: case ElemType::f80: case ElemType::c32: case ElemType::c64:
    case ElemType::c80: case ElemType::float_int: case ElemType::double_int: case ElemType::long_double_int:
      return true;
    default: return false;
  }
}

std::optional<rt::ReduceOp> predefined_op(MPI_Op op) {
  using rt::ReduceOp;
  static const std::pair<MPI_Op, ReduceOp> ops[] = {
      {MPI_SUM, ReduceOp::sum},   {MPI_PROD, ReduceOp::prod}, {MPI_MIN, ReduceOp::min},
      {MPI_MAX, ReduceOp::max},   {MPI_LAND, ReduceOp::land}, {MPI_LOR, ReduceOp::lor},
      {MPI_LXOR, ReduceOp::lxor}, {MPI_BAND, ReduceOp::band}, {MPI_BOR, ReduceOp::bor},
      {MPI_BXOR, ReduceOp::bxor}, {MPI_MINLOC, ReduceOp::minloc}, {MPI_MAXLOC, ReduceOp::maxloc}};
  for (const auto& [m, r] : ops)
    if (m == op) return r;
  return std::nullopt;
}

// The element size of a datatype laid out contiguously (count elements are
// count * size bytes with no gaps), or 0.
size_t contiguous_size(MPI_Datatype t) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  if (PMPI_Type_size(t, &size) != MPI_SUCCESS || PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(t, &tlb, &textent) != MPI_SUCCESS)
    return 0;
  if (size <= 0 || lb != 0 || tlb != 0 || extent != size || textent != size) return 0;
  return static_cast<size_t>(size);
}

// What a reduction call needs, and the operator to replay it with; `why` is
// set (and nothing else meaningful) when the library cannot serve it.
struct Reduction {
  const char* why = nullptr;
  Needs needs;
  rt::UserOp op;
  UserCall user{};
  std::vector<std::byte> tmp;
  size_t esize = 0;
};

// A predefined operator on a datatype: what make_reduction concludes.
struct Predefined {
  MPI_Op op = MPI_OP_NULL;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  const char* why = nullptr;
  size_t esize = 0;
  rt::UserOpFn fn = nullptr;
  bool consistent = false;
};
// A program reduces with one pair, or a few, over and over: the last pair
// seen is remembered (predefined operators and datatypes are never freed,
// so their handles are never reused).
COLLPLAN_TLS Predefined t_last_predefined;

Predefined predefined(MPI_Datatype type, MPI_Op op, rt::ReduceOp ro) {
  Predefined p;
  p.op = op, p.type = type;
  const std::optional<rt::ElemType> e = elem_type_of(type);
  if (!e) {
    p.why = "datatype not served by MPI's predefined operators here (derived, or no collplan kernel for it)";
    return p;
  }
  p.esize = rt::elem_size(*e);
  const bool bitwise = ro == rt::ReduceOp::band || ro == rt::ReduceOp::bor || ro == rt::ReduceOp::bxor;
  if (type == MPI_BYTE && !bitwise) {
    p.why = "MPI_BYTE with an operator other than MPI_BAND/BOR/BXOR";
    return p;
  }
  p.fn = rt::reduce_kernel(ro, *e);
  if (!p.fn) p.why = "an operator MPI does not define on this datatype";
  p.consistent = is_floating(*e);
  return p;
}

void make_reduction(Reduction& r, MPI_Datatype type, MPI_Op op, size_t count) {
  r.needs.reduction = true;
  const Predefined* known = nullptr;
  if (op != MPI_OP_NULL && op == t_last_predefined.op && type == t_last_predefined.type) {
    known = &t_last_predefined;
  } else if (const std::optional<rt::ReduceOp> ro = predefined_op(op)) {
    t_last_predefined = predefined(type, op, *ro);
    known = &t_last_predefined;
  }
  if (known) {
    r.why = known->why;
    if (r.why) return;
    r.esize = known->esize;
    r.op.fn = known->fn;
    r.op.elem_size = r.esize;
    r.op.commutative = true;
    r.needs.consistent = known->consistent;
    return;
  }
  UserOpInfo info;
  {
    Shim& s = shim();
    std::lock_guard lk(s.mu);
    auto it = s.user_ops.find(op);
    if (it == s.user_ops.end()) {
      r.why = "operator not predefined and not created by MPI_Op_create in C";
      return;
    }
    info = it->second;
  }
  // A user operator sees whole elements of its datatype: any contiguous one.
  r.esize = contiguous_size(type);
  if (r.esize == 0) {
    r.why = "non-contiguous datatype";
    return;
  }
  r.tmp.resize(count * r.esize);
  r.user = {info.fn, type, r.esize, &r.tmp};
  r.op.fn = call_user_fn;
  r.op.ctx = &r.user;
  r.op.elem_size = r.esize;
  r.op.commutative = info.commute;
  r.needs.ordered = !info.commute;
  r.needs.consistent = true;  // nothing is known of a user operator's rounding
}

// ─── Loading and replaying ───────────────────────────────────────────────────

constexpr int kNoRank = INT_MAX;
// Collective over comm: the lowest rank whose `ok` is false, or kNoRank.
int first_failing(bool ok, int rank, MPI_Comm comm) {
  const int mine = ok ? kNoRank : rank;
  int first = kNoRank;
  PMPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  return first;
}

// Rank `prank`'s program of plan `e` (UserError on anything wrong with the
// file or the plan).
Loaded load_program(const PlanEntry& e, uint32_t prank) {
  const std::string path = shim().table.dir + "/" + e.file;
  ir::PlanHeader hdr;
  ir::Program prog = ir::read_rank(path, prank, &hdr);
  if (hdr.content_hash.hex() != e.digest)
    user_error("{}: the file's digest is {}, the index names {} (the file was replaced; rebuild the set)", path,
               hdr.content_hash.hex(), e.digest);
  if (hdr.spec.K != e.K || hdr.spec.blocks != e.blocks)
    user_error("{}: a plan for K = {} with {} blocks, the index says K = {} with {} blocks", path, hdr.spec.K,
               hdr.spec.blocks, e.K, e.blocks);
  if (hdr.spec.root != 0) user_error("{}: root {}, a plan set's rooted plans have root 0", path, hdr.spec.root);
  Loaded l;
  l.op = std::make_unique<rt::OpProgram>(hdr.spec, hdr.num_steps, prog);
  l.pool = std::make_shared<ProgramPool>();
  l.pool->spec = hdr.spec;
  l.pool->num_steps = hdr.num_steps;
  l.pool->prog = prog;
  if (e.op == CallOp::broadcast || e.op == CallOp::allgather)
    l.engine = std::make_unique<rt::Engine>(hdr.spec, hdr.num_steps, prog);
  return l;
}

// The program for `use` on this communicator, loaded and agreed on; nullptr
// when some rank could not load it (then never again). Collective; st.mu held.
Loaded* program_for(CommState& st, const Use& use) {
  if (st.failed.count(use)) return nullptr;
  auto it = st.progs.find(use);
  if (it != st.progs.end()) return &it->second;
  if (!st.tr) st.tr = std::make_unique<rt::MpiTransport>(st.comm);
  const PlanEntry& e = shim().table.plans[static_cast<size_t>(use.plan)];
  const uint32_t prank = (static_cast<uint32_t>(st.rank) + e.K - use.root) % e.K;
  Loaded prog;
  std::string why;
  try {
    prog = load_program(e, prank);
  } catch (const std::exception& err) {
    why = err.what();
  }
  // The lowest failing rank speaks for all: one message, not one per rank.
  const int first = first_failing(why.empty(), st.rank, st.tr->comm());
  if (first != kNoRank) {
    if (first == st.rank)
      say(fmt::format("rank {}: plan \"{}\" cannot be used: {}; its calls go to MPI", st.rank, e.name, why));
    st.failed.insert(use);
    return nullptr;
  }
  return &(st.progs[use] = std::move(prog));
}

// A piece list over one rank's buffer: n blocks of L elements of `esize`
// bytes, the last ones shorter or empty when count < n·L.
template <class Piece, class Ptr>
void split(Ptr base, size_t count, size_t esize, uint32_t n, size_t L, Piece* out) {
  for (uint32_t b = 0; b < n; ++b) {
    const size_t off = static_cast<size_t>(b) * L;
    const size_t len = off < count ? std::min(L, count - off) : 0;
    out[b].data = len ? static_cast<Ptr>(static_cast<Ptr>(base) + off * esize) : base;
    out[b].bytes = len * esize;
  }
}

// Every input a whole row of `row` bytes, every output whole or skipped:
// the field engine can replay it (a copy plan over bytes).
bool whole_rows(const std::vector<rt::InPiece>& in, const std::vector<rt::OutPiece>& out, size_t row) {
  for (const rt::InPiece& p : in)
    if (p.bytes != row) return false;
  for (const rt::OutPiece& p : out)
    if (p.bytes != row && p.bytes != 0) return false;
  return true;
}

// A copy plan on the field engine: the elements are bytes (GF(2^8)); a
// skipped output (a root's own data) lands in a scratch row.
void run_engine(rt::Engine& eng, rt::Transport& tr, const std::vector<rt::InPiece>& in,
                const std::vector<rt::OutPiece>& out, size_t row) {
  std::vector<const void*> ins(in.size());
  std::vector<void*> outs(out.size());
  size_t skipped = 0;
  for (const rt::OutPiece& p : out) skipped += p.bytes == 0;
  std::vector<std::byte> scratch(skipped * row);
  for (size_t i = 0; i < in.size(); ++i) ins[i] = in[i].data;
  for (size_t j = 0, k = 0; j < out.size(); ++j) outs[j] = out[j].bytes ? out[j].data : scratch.data() + row * k++;
  eng.run(tr, ins.data(), outs.data(), row);
}


// ─── Non-blocking replays (nbc.h) ────────────────────────────────────────────

// What a non-blocking call hands to Call::run: where the request goes, what
// must live until the replay ends (the operator, scratch rows), and what to
// do after the outputs are written (unpacking a non-contiguous datatype).
struct NbcStart {
  MPI_Request* request = nullptr;
  std::shared_ptr<void> keep;
  std::function<void()> finish;
};

// One pending replay.
struct Nbc {
  std::shared_ptr<NbcComm> comm;  // keeps the private communicator alive
  uint32_t slot = 0;
  std::shared_ptr<ProgramPool> pool;
  std::unique_ptr<rt::OpProgram> prog;
  std::unique_ptr<rt::MpiTransport> tr;
  std::unique_ptr<RotatedTransport> rot;  // over tr: declared after it, destroyed before it
  std::shared_ptr<void> keep;
  std::function<void()> finish;
  MPI_Request req = MPI_REQUEST_NULL;  // the application's generalized request
  bool free_when_done = false;         // MPI_Request_free came first
  int rank = 0;
  std::string plan;
};

// What the short way to MPI reads (see "The short way to MPI" below), laid
// out so that a call on MPI_COMM_WORLD with a predefined datatype touches
// few cache lines: with more ranks than cores, every rank's lines are
// evicted by the others between its calls, and each line read again costs
// more than the instructions of the way. Line 0 holds the switches, the
// pending-replay count and the world size; each operation's byte ranges for
// K = world size sit in a line of their own; a datatype's size is one slot
// of 16 bytes.
struct alignas(64) Hot {
  // Row i may take the short way: a set is loaded, its operation is not
  // forced, and (non-blocking rows) non-blocking calls are served.
  std::array<std::atomic<bool>, kReportRows> on{};
  std::atomic<int> pending{0};  // replays pending (Pending's count)
  int world_size = 0;           // MPI_COMM_WORLD's: it is never freed
  const PlanTable* table = nullptr;
  uint64_t type_mul = 0x9E3779B97F4A7C15ull;  // type_slot's multiplier, set at MPI_Init
  // Per operation, the table's ranges for K = world_size (the table does not
  // change once loaded): MPI_COMM_WORLD's calls skip the look-up of K. Up to
  // kInline ranges are copied here, as 32-bit bounds (a call has at least 1
  // byte, so a range below that is left out; hi = UINT32_MAX stands for no
  // upper end); calls of 2^32 − 1 bytes or more, and operations with more
  // ranges or larger bounds, read the table's.
  static constexpr uint32_t kInline = 6;
  struct alignas(64) World {
    uint32_t count = 0;       // the table's ranges for (op, world_size)
    bool rows = false;        // false: no row for (op, world_size)
    bool inlined = false;     // range[0, n) holds them all
    uint8_t n = 0;
    uint8_t no_row_bits = 0;  // bit i: range i's reason is kWhyNoRow, else kWhyRowSaysMpi
    std::array<std::array<uint32_t, 2>, kInline> range{};  // bytes, inclusive
    const PlanTable::ToMpi* more = nullptr;                // the table's ranges
  };
  std::array<World, kNumCallOps> world{};
  // The first test on MPI_COMM_WORLD, per operation, by size class: bit c
  // of `mpi` (of `none`) is set when every call of 2^c to 2^(c+1) − 1 bytes
  // lies in a range whose first row says "mpi" (that no row covers) for
  // K = world_size. One shift and test instead of a walk over the ranges;
  // a class that holds a range's end has neither bit and takes the walk.
  // Both 0 when world_size < 2.
  struct alignas(16) Classes {
    uint64_t mpi = 0, none = 0;
  };
  std::array<Classes, kNumCallOps> classes{};
  // The sizes of MPI's predefined datatypes, by handle (open addressing):
  // those handles are never freed, so never reused for another type; any
  // other datatype is asked of MPI. An empty slot has key nullptr.
  struct TypeSlot {
    MPI_Datatype key = nullptr;
    int size = 0;
  };
  static constexpr size_t kTypeSlots = 256;
  std::array<TypeSlot, kTypeSlots> types{};
};
static_assert(sizeof(Hot::World) == 64, "one operation's ranges fill one cache line");
static_assert(sizeof(Hot::Classes) == 16, "four operations' size classes share a cache line");
Hot g_hot;

struct Pending {
  std::mutex mu;  // guards list and every pending replay
  std::vector<std::unique_ptr<Nbc>> list;
};
Pending g_pending;
inline Pending& pending() { return g_pending; }

// The generalized request's callbacks: a collective's status says nothing
// (no source, no tag, no elements), and it cannot be cancelled (MPI makes
// cancelling a collective erroneous).
int nbc_query(void*, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
int nbc_free(void*) { return MPI_SUCCESS; }
int nbc_cancel(void*, int) { return MPI_SUCCESS; }

void finish_nbc(Nbc& n) {
  if (n.finish) n.finish();
  n.comm->busy[n.slot] = nullptr;
  n.pool->give(std::move(n.prog));
  PMPI_Grequest_complete(n.req);
  if (n.free_when_done) PMPI_Request_free(&n.req);
}

// One non-blocking pass over every pending replay. g.mu held, Inside set.
void progress_pass(Pending& g) {
  for (size_t i = 0; i < g.list.size();) {
    Nbc& n = *g.list[i];
    bool done = false;
    try {
      done = n.prog->progress();
    } catch (const std::exception& err) {
      // Peers may be inside the plan's messages: the job cannot go on.
      say(fmt::format("rank {}: replaying plan \"{}\" (non-blocking) failed: {}", n.rank, n.plan, err.what()));
      PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!done) {
      ++i;
      continue;
    }
    std::unique_ptr<Nbc> owned = std::move(g.list[i]);
    g.list.erase(g.list.begin() + static_cast<ptrdiff_t>(i));
    g_hot.pending.fetch_sub(1, std::memory_order_release);  // its count sits in the short way's line
    finish_nbc(*owned);
  }
}

// The outcome of trying to serve a call.
enum class Outcome { served, fallback };

// Everything a call shares: the decision, then the replay. `fill` sets the
// pieces for the program (given plan entry and plan rank) and `row` the
// elements per row; returns Outcome::fallback (with the reason counted) when
// the call goes to MPI.
struct Call {
  Call(int row_, CallOp op_, MPI_Comm comm_, uint64_t bytes_, Needs needs_)
      : row(row_), op(op_), comm(comm_), bytes(bytes_), needs(needs_) {}
  int row;               // report row
  CallOp op;
  MPI_Comm comm;
  uint64_t bytes;        // the table's message size
  Needs needs;
  uint32_t root = 0;
  const rt::UserOp* uop = nullptr;  // reductions
  const char* why = nullptr;  // set: cannot be served
  NbcStart* nb = nullptr;  // set: a non-blocking call (row is then its blocking row + kNonBlocking)

  // The decision alone, before a caller prepares anything for the replay:
  // the plan's index, or −1 with the fallback counted. Everything it reads
  // is the same on every rank of comm.
  int decide() {
    Shim& s = shim();
    if (!s.enabled) return fallback("no plan set"), -1;
    if (why) return fallback(why), -1;
    if (nb && !s.nonblocking) return fallback("non-blocking calls go to MPI (COLLPLAN_NONBLOCKING=0)"), -1;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return fallback("inter-communicator"), -1;
    int K = 0;
    PMPI_Comm_size(comm, &K);
    if (K < 2) return fallback("communicator of one rank"), -1;
    if (bytes == 0) return fallback("empty message"), -1;
    int skipped = 0;
    const TableRow* r = nullptr;
    if (const int f = s.force[static_cast<size_t>(op)].load(); f != kUseTable) {
      if (f == kUseMpi) return fallback("forced to mpi"), -1;
      const PlanEntry& p = s.table.plans[static_cast<size_t>(f)];
      if (p.K != static_cast<uint32_t>(K)) return fallback("forced plan is for another communicator size"), -1;
      if (!meets(p, needs)) return fallback("forced plan lacks a property the datatype and operator need"), -1;
      if (root != 0 && needs.ordered) return fallback("non-commutative operator with root != 0"), -1;
      return f;
    }
    r = s.table.select(op, static_cast<uint32_t>(K), bytes, needs, &skipped);
    if (!r)
      return fallback(skipped ? "no plan in the table with the properties the datatype and operator need"
                              : kWhyNoRow),
             -1;
    if (r->plan < 0) return fallback(kWhyRowSaysMpi), -1;
    if (root != 0 && needs.ordered) return fallback("non-commutative operator with root != 0"), -1;
    return r->plan;
  }
  int decided = kUndecided;
  static constexpr int kUndecided = -2;

  template <class Fill>
  Outcome run(Fill fill) {
    Shim& s = shim();
    const Inside inside;
    if (decided == kUndecided) decided = decide();
    if (decided < 0) return Outcome::fallback;  // counted by decide()
    if (why) return fallback(why);              // found after an early decision
    const TableRow row_of_plan{op, 0, 0, 0, decided};
    const TableRow* r = &row_of_plan;
    CommState& st = state_of(comm);
    std::lock_guard lk(st.mu);
    Loaded* loaded = program_for(st, Use{r->plan, root});
    if (!loaded) return fallback("plan could not be loaded (see the message at its first use)");
    const PlanEntry& e = s.table.plans[static_cast<size_t>(r->plan)];
    if (nb) {
      start_nbc(st, *loaded, e, fill);
      count_served(row);
      return Outcome::served;
    }
    rt::OpProgram* prog = loaded->op.get();
    std::vector<rt::InPiece> in(prog->num_inputs());
    std::vector<rt::OutPiece> out(prog->num_outputs());
    const size_t row_elems = fill(e, prog->rank(), in.data(), out.data());
    rt::UserOp copy_only;
    copy_only.elem_size = 1;
    RotatedTransport tr(*st.tr, root);
    try {
      if (!uop && loaded->engine && loaded->engine->elem_bytes() == 1 && whole_rows(in, out, row_elems))
        run_engine(*loaded->engine, tr, in, out, row_elems);
      else
        prog->run(tr, uop ? *uop : copy_only, row_elems, in.data(), out.data());
    } catch (const std::exception& err) {
      // Peers may be inside the plan's messages: the job cannot go on.
      say(fmt::format("rank {}: replaying plan \"{}\" failed: {}", st.rank, e.name, err.what()));
      PMPI_Abort(comm, 1);
    }
    count_served(row);
    return Outcome::served;
  }

  // Starts the replay of a non-blocking call; st.mu held.
  template <class Fill>
  void start_nbc(CommState& st, Loaded& l, const PlanEntry& e, Fill& fill) {
    Pending& g = pending();
    if (!st.nbc) {  // collective: every rank serves its first non-blocking call alike
      auto c = std::make_shared<NbcComm>();
      PMPI_Comm_dup(st.comm, &c->comm);
      PMPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
      st.nbc = std::move(c);
    }
    auto n = std::make_unique<Nbc>();
    n->comm = st.nbc;
    n->slot = static_cast<uint32_t>(st.nbc_seq++ % kNbcSlots);
    n->rank = st.rank;
    n->plan = e.name;
    std::unique_lock lk(g.mu);
    while (st.nbc->busy[n->slot]) progress_pass(g);  // the replay kNbcSlots before this one
    lk.unlock();
    n->pool = l.pool;
    n->prog = l.pool->take();
    n->tr = std::make_unique<rt::MpiTransport>(rt::MpiTransport::Shared{st.nbc->comm, n->slot, kNbcSlots});
    n->rot = std::make_unique<RotatedTransport>(*n->tr, root);
    std::vector<rt::InPiece> in(n->prog->num_inputs());
    std::vector<rt::OutPiece> out(n->prog->num_outputs());
    const size_t row_elems = fill(e, n->prog->rank(), in.data(), out.data());
    rt::UserOp copy_only;
    copy_only.elem_size = 1;
    try {
      // MPI keeps the send buffer unchanged until the call completes: the
      // replay may read its inputs there instead of copying them.
      n->prog->start(*n->rot, uop ? *uop : copy_only, row_elems, in.data(), out.data(), rt::OpProgram::Inputs::borrow);
    } catch (const std::exception& err) {
      say(fmt::format("rank {}: starting plan \"{}\" failed: {}", st.rank, e.name, err.what()));
      PMPI_Abort(comm, 1);
    }
    n->keep = std::move(nb->keep);
    n->finish = std::move(nb->finish);
    PMPI_Grequest_start(nbc_query, nbc_free, nbc_cancel, nullptr, &n->req);
    *nb->request = n->req;
    lk.lock();
    st.nbc->busy[n->slot] = n.get();
    g.list.push_back(std::move(n));
    g_hot.pending.fetch_add(1, std::memory_order_release);
  }

  Outcome fallback(const char* reason) {
    if (shim().active) count_fallback(row, reason);
    return Outcome::fallback;
  }
};

// A reduction call: the operator for (datatype, op) in `red` (which must
// outlive the call) and the table's message size, count × element size.
Call reduction_call(int row, CallOp op, Reduction& red, int count, MPI_Datatype type, MPI_Op mop, MPI_Comm comm) {
  if (count > 0 && shim().enabled) make_reduction(red, type, mop, static_cast<size_t>(count));
  Call c(row, op, comm, static_cast<uint64_t>(count > 0 ? count : 0) * red.esize, red.needs);
  c.why = red.why;
  c.uop = &red.op;
  return c;
}

// Elements per block: ⌈count / n⌉ (at least 1).
size_t block_len(size_t count, uint32_t n) { return std::max<size_t>(1, (count + n - 1) / n); }

// ─── The short way to MPI ───────────────────────────────────────────────────
//
// A call whose (operation, communicator size, message bytes) the table
// sends to MPI whatever its datatype and operator (PlanTable::mpi_only) goes
// there before anything else is looked at: a tuned table sends most calls
// to MPI, and with more ranks than cores each rank's extra instructions add
// up on the collective's critical path. The way costs the datatype's size
// (a perfect hash of MPI's predefined handles), the communicator's
// (remembered for MPI_COMM_WORLD), a test of the call's size class and a
// per-thread count: about 40 instructions from the entry point to PMPI_ on
// MPI_COMM_WORLD with a predefined datatype, against about 250 for the full
// decision.
// Everything it reads is the same on every rank of comm, and it only ever
// answers what Call::decide would answer too (MPI), so the ranks still
// decide alike; calls it leaves (a plan may serve them, a forced operation,
// non-blocking replays pending, what decide checks first) take the full
// decision. g_hot holds what it reads, apart from the rest of the Shim.

// One slot per predefined datatype, no probing: the handles are fixed for
// the process, so remember_type_sizes picks a multiplier under which no two
// of them share a slot (perfect hashing; about 30 tries for 42 handles in
// 256 slots). A datatype not found in its slot is asked of MPI.
inline size_t type_slot(MPI_Datatype t) {
  return static_cast<size_t>((reinterpret_cast<uintptr_t>(t) * g_hot.type_mul) >> 56);
}
static_assert(Hot::kTypeSlots == 256, "type_slot keeps the hash's top 8 bits");
void remember_type_sizes() {
  std::vector<Hot::TypeSlot> known;
  for (MPI_Datatype t :
       {MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT,
        MPI_UNSIGNED, MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_WCHAR,
        MPI_C_BOOL, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
        MPI_UINT64_T, MPI_AINT, MPI_COUNT, MPI_OFFSET, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
        MPI_C_LONG_DOUBLE_COMPLEX, MPI_BYTE, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT,
        MPI_LONG_DOUBLE_INT, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_LOGICAL, MPI_CHARACTER}) {
    int size = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &size) != MPI_SUCCESS || size <= 0) continue;
    if (std::none_of(known.begin(), known.end(), [&](const Hot::TypeSlot& k) { return k.key == t; }))
      known.push_back({t, size});  // an MPI may give two names one handle
  }
  // Multipliers tried in a fixed order (odd, from splitmix64), so every rank
  // and run picks the same; should none separate them all, the last is kept
  // and a datatype that lost its slot is asked of MPI.
  uint64_t x = 0;
  for (int attempt = 0; attempt < 100000; ++attempt) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    g_hot.type_mul = (z ^ (z >> 31)) | 1u;
    std::array<bool, Hot::kTypeSlots> used{};
    bool clash = false;
    for (const Hot::TypeSlot& k : known) clash = std::exchange(used[type_slot(k.key)], true) || clash;
    if (!clash) break;
  }
  g_hot.types = {};
  for (const Hot::TypeSlot& k : known)
    if (Hot::TypeSlot& slot = g_hot.types[type_slot(k.key)]; slot.size == 0) slot = k;
}
// The size of a predefined datatype t, or 0 (another datatype): one slot.
inline int predefined_size(MPI_Datatype t) {
  const Hot::TypeSlot& slot = g_hot.types[type_slot(t)];
  return slot.key == t ? slot.size : 0;  // an empty slot has size 0
}
// The size of datatype t, > 0, or 0 when it cannot be known here.
inline int type_size(MPI_Datatype t) {
  if (const int size = predefined_size(t)) return size;
  int size = 0;
  return t != MPI_DATATYPE_NULL && PMPI_Type_size(t, &size) == MPI_SUCCESS && size > 0 ? size : 0;
}
inline int comm_size(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return g_hot.world_size;
  int K = 0;
  return comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &K) == MPI_SUCCESS ? K : 0;
}

// Hot::Classes of a span of the table (nullptr: no row for the K). The
// span's ranges are in increasing order and adjacent ones with the same
// reason are already merged (PlanTable::index), so a class goes to MPI with
// a reason exactly when one range holds it whole.
Hot::Classes size_classes(const PlanTable::Span* sp, const PlanTable& table) {
  Hot::Classes c;
  if (!sp || !sp->rows) {
    c.none = ~0ull;
    return c;
  }
  const PlanTable::ToMpi* r = table.to_mpi.data() + sp->first;
  for (unsigned k = 0; k < 64; ++k) {
    const uint64_t lo = uint64_t{1} << k, hi = k == 63 ? UINT64_MAX : (uint64_t{1} << (k + 1)) - 1;
    for (const PlanTable::ToMpi* x = r; x != r + sp->count; ++x)
      if (x->lo <= lo && hi <= x->hi) (x->why == kWhyNoRow ? c.none : c.mpi) |= uint64_t{1} << k;
  }
  return c;
}

// Sets g_hot's row switches from the Shim (at start, stop and
// collplan_pmpi_force; atomic: other threads may be in a call) and, with
// `table`, what it keeps of the table (at start only, before any call).
void update_hot(bool table = false) {
  Shim& s = shim();
  for (int op = 0; op < kNumCallOps && table; ++op) {
    Hot::World w;
    const uint32_t K = static_cast<uint32_t>(std::max(g_hot.world_size, 0));
    const std::vector<PlanTable::Span>& near = s.table.spans[op];
    const PlanTable::Span* sp = K < PlanTable::kDirectK ? (K < near.size() ? &near[K] : nullptr)
                                                        : s.table.far_span(static_cast<CallOp>(op), K);
    if (sp && sp->rows) {
      w.rows = true;
      w.count = sp->count;
      w.more = s.table.to_mpi.data() + sp->first;
      w.inlined = true;
      for (uint32_t i = 0; i < sp->count && w.inlined; ++i) {
        const PlanTable::ToMpi& r = w.more[i];
        if (r.hi < 1) continue;  // no call has 0 bytes here
        const uint64_t hi = r.hi == UINT64_MAX ? UINT32_MAX : r.hi;
        w.inlined = w.n < Hot::kInline && r.lo < UINT32_MAX && hi <= UINT32_MAX;
        if (!w.inlined) break;
        w.range[w.n] = {static_cast<uint32_t>(r.lo), static_cast<uint32_t>(hi)};
        if (r.why == kWhyNoRow) w.no_row_bits |= static_cast<uint8_t>(1u << w.n);
        ++w.n;
      }
    }
    g_hot.world[static_cast<size_t>(op)] = w;
    g_hot.classes[static_cast<size_t>(op)] = K < 2 ? Hot::Classes{} : size_classes(sp, s.table);
    g_hot.table = &s.table;
  }
  for (int row = 0; row < kReportRows; ++row) {
    const int base = row % kNonBlocking;
    const CallOp op = base == kAllgathervRow ? CallOp::allgather : static_cast<CallOp>(base);
    const bool on = s.enabled && s.force[static_cast<size_t>(op)].load() == kUseTable &&
                    (row < kNonBlocking || s.nonblocking);
    g_hot.on[static_cast<size_t>(row)].store(on);
  }
}

// The reason a call of op on MPI_COMM_WORLD with `bytes` goes to MPI
// whatever its datatype and operator (PlanTable::mpi_only for K = world
// size), or nullptr; reads one cache line when Hot::World holds (op, K)'s
// ranges.
__attribute__((always_inline)) inline const char* world_why(CallOp op, uint64_t bytes) {
  const Hot::World& w = g_hot.world[static_cast<size_t>(op)];
  if (!w.rows) return kWhyNoRow;
  if (!w.inlined || bytes >= UINT32_MAX) return PlanTable::in_ranges(w.more, w.count, bytes);
  const auto b = static_cast<uint32_t>(bytes);
  for (uint32_t i = 0; i < w.n; ++i)
    if (w.range[i][0] <= b && b <= w.range[i][1]) return (w.no_row_bits >> i) & 1u ? kWhyNoRow : kWhyRowSaysMpi;
  return nullptr;
}

// True (and counted) when the call of row `row` goes to MPI by the short way.
__attribute__((always_inline)) inline bool short_way(int row, CallOp op, MPI_Comm comm, int count, MPI_Datatype type) {
  if (!g_hot.on[static_cast<size_t>(row)].load(std::memory_order_relaxed) ||
      g_hot.pending.load(std::memory_order_acquire) != 0)
    return false;
  if (count <= 0) return false;
  const int tsize = type_size(type);
  if (!tsize) return false;
  const uint64_t bytes = static_cast<uint64_t>(count) * static_cast<uint64_t>(tsize);
  const char* why = nullptr;
  if (comm == MPI_COMM_WORLD) {
    if (g_hot.world_size < 2) return false;
    why = world_why(op, bytes);
  } else {
    const int K = comm_size(comm);
    if (K < 2) return false;
    why = g_hot.table->mpi_only(op, static_cast<uint32_t>(K), bytes);
  }
  if (!why) return false;
  count_fast(row, why);
  return true;
}
// The short way's first step, on MPI_COMM_WORLD with a predefined datatype
// and this thread's counts in place: no call at all, so the entry point
// that inlines it saves no registers and jumps straight to PMPI_ (about 25
// instructions). Any other call is left to short_way.
__attribute__((always_inline)) inline bool world_short_way(int row, CallOp op, MPI_Comm comm, int count,
                                                          MPI_Datatype type) {
  FastCounts* b = t_fast;
  if (comm != MPI_COMM_WORLD || !b || count <= 0 || !g_hot.on[static_cast<size_t>(row)].load(std::memory_order_relaxed) ||
      g_hot.pending.load(std::memory_order_acquire) != 0)
    return false;
  const int tsize = predefined_size(type);
  if (!tsize) return false;
  // bytes >= 1: count and tsize are both positive.
  const uint64_t bytes = static_cast<uint64_t>(count) * static_cast<uint64_t>(tsize);
  const unsigned k = 63u - static_cast<unsigned>(__builtin_clzll(bytes));
  const Hot::Classes& cl = g_hot.classes[static_cast<size_t>(op)];
  size_t reason = 0;  // kWhyRowSaysMpi
  if (!((cl.mpi >> k) & 1u)) {
    if (!((cl.none >> k) & 1u)) return false;  // a class a range's end cuts: short_way walks the ranges
    reason = 1;                                // kWhyNoRow
  }
  std::atomic<uint64_t>& c = b->n[static_cast<size_t>(row)][reason];
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}
__attribute__((always_inline)) inline bool world_short_way(CallOp op, bool nonblocking, MPI_Comm comm, int count,
                                                          MPI_Datatype type) {
  return world_short_way(static_cast<int>(op) + (nonblocking ? kNonBlocking : 0), op, comm, count, type);
}
__attribute__((always_inline)) inline bool world_gatherv_short_way(bool nonblocking, MPI_Comm comm,
                                                                  const int* recvcounts, MPI_Datatype type) {
  if (comm != MPI_COMM_WORLD || !recvcounts) return false;
  int most = 0;
  for (int r = 0; r < g_hot.world_size; ++r) most = std::max(most, recvcounts[r]);
  return world_short_way(kAllgathervRow + (nonblocking ? kNonBlocking : 0), CallOp::allgather, comm, most, type);
}
__attribute__((always_inline)) inline bool short_way(CallOp op, bool nonblocking, MPI_Comm comm, int count,
                                                    MPI_Datatype type) {
  return short_way(static_cast<int>(op) + (nonblocking ? kNonBlocking : 0), op, comm, count, type);
}
// An allgatherv is asked of the table as an allgather of its largest block
// (recvcounts has an entry per rank: not so on an inter-communicator).
inline bool gatherv_short_way(bool nonblocking, MPI_Comm comm, const int* recvcounts, MPI_Datatype type) {
  const int row = kAllgathervRow + (nonblocking ? kNonBlocking : 0);
  int inter = 0, most = 0;
  if (!g_hot.on[static_cast<size_t>(row)].load(std::memory_order_relaxed) || !recvcounts || comm == MPI_COMM_NULL ||
      (comm != MPI_COMM_WORLD && (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)))
    return false;
  const int K = comm_size(comm);
  for (int r = 0; r < K; ++r) most = std::max(most, recvcounts[r]);
  return short_way(row, CallOp::allgather, comm, most, type);
}

void print_report() {
  Shim& s = shim();
  uint64_t served = 0, total = 0;
  for (int i = 0; i < kReportRows; ++i) {
    const RowStats& r = s.stats[static_cast<size_t>(i)];
    served += r.served;
    total += r.served + r.fell_back_total() + fast_fell_back(i, 0) + fast_fell_back(i, 1);
  }
  // Rank 0's own calls: on a sub-communicator other ranks' counts differ.
  std::string out = fmt::format("collplan: served {} of {} collective calls\n", served, total);
  if (!s.enabled) out += fmt::format("collplan:   no plans: {}\n", s.disabled_why);
  for (int i = 0; i < kReportRows; ++i) {
    const RowStats& r = s.stats[static_cast<size_t>(i)];
    const uint64_t fast_mpi = fast_fell_back(i, 0), fast_none = fast_fell_back(i, 1);
    const uint64_t fb = r.fell_back_total() + fast_mpi + fast_none, sv = r.served;
    if (sv + fb == 0) continue;
    out += fmt::format("collplan:   {}: served {}, fell back {}", report_name(i), sv, fb);
    std::map<std::string, uint64_t> why;  // alphabetical, as before
    for (size_t k = 0; k < kReasonSlots; ++k)
      if (const char* w = r.reason[k].load(); w && r.fell_back[k].load()) why[w] += r.fell_back[k].load();
    if (fast_mpi) why[kWhyRowSaysMpi] += fast_mpi;
    if (fast_none) why[kWhyNoRow] += fast_none;
    for (const auto& [w, n] : why) out += fmt::format("; {} x {}", n, w);
    out += "\n";
  }
  std::fputs(out.c_str(), stderr);
}

void start(int provided) {
  Shim& s = shim();
  for (auto& f : s.force) f.store(kUseTable);
  const char* dir = std::getenv("COLLPLAN_PLANS");
  const char* rep = std::getenv("COLLPLAN_REPORT");
  s.report = rep && *rep && std::strcmp(rep, "0") != 0;
  const char* nbc = std::getenv("COLLPLAN_NONBLOCKING");
  s.nonblocking = !(nbc && std::strcmp(nbc, "0") == 0);
  s.active = (dir && *dir) || s.report;
  PMPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
  if (!s.active) return;
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &s.keyval, nullptr);
  init_types(s);
  (void)provided;  // every level is served: state is per communicator, one collective at a time on each
  int ok = 1;
  std::string why;
  if (!dir || !*dir) {
    ok = 0;
    why = "COLLPLAN_PLANS is not set";
  } else {
    try {
      s.table = read_plan_table(dir);
    } catch (const std::exception& e) {
      ok = 0;
      why = e.what();
    }
  }
  // Every rank must agree, or some would serve calls the others send to
  // MPI; the lowest failing rank says why.
  const int first = first_failing(ok != 0, s.world_rank, MPI_COMM_WORLD);
  if (first == s.world_rank && dir && *dir)
    say(fmt::format("rank {}: {}; every collective goes to MPI", s.world_rank, why));
  if (first == kNoRank) {
    s.enabled = true;
    PMPI_Comm_size(MPI_COMM_WORLD, &g_hot.world_size);
    remember_type_sizes();
    update_hot(true);
  } else {
    s.disabled_why = ok ? "another rank could not read the plan set" : why;
    s.table = PlanTable{};
  }
}

void stop() {
  Shim& s = shim();
  if (!s.active) return;
  if (s.report && s.world_rank == 0) print_report();
  std::vector<CommState*> states;
  {
    std::lock_guard lk(s.mu);
    states = s.states;
  }
  for (CommState* st : states) PMPI_Comm_delete_attr(st->comm, s.keyval);  // runs delete_state
  PMPI_Comm_free_keyval(&s.keyval);
  s.active = s.enabled = false;
  update_hot();
}

bool in_place(const void* p) { return p == MPI_IN_PLACE; }

}  // namespace
}  // namespace collplan::pmpi

using namespace collplan::pmpi;
namespace rt = collplan::rt;

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) {
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    start(provided);
  }
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) start(*provided);
  return rc;
}

int MPI_Finalize(void) {
  nbc_drain();  // MPI_Finalize is collective: every rank's replays end first
  stop();
  return PMPI_Finalize();
}

int collplan_pmpi_force(const char* op, const char* plan) {
  Shim& s = shim();
  if (!s.enabled) return -1;
  CallOp o;
  try {
    o = parse_call_op(op ? op : "");
  } catch (const std::exception&) {
    return -2;
  }
  int f = kUseTable;
  if (plan && std::strcmp(plan, "mpi") == 0) {
    f = kUseMpi;
  } else if (plan) {
    f = -3;
    for (size_t i = 0; i < s.table.plans.size(); ++i)
      if (s.table.plans[i].name == plan && s.table.plans[i].op == o) f = static_cast<int>(i);
    if (f == -3) return -3;
  }
  s.force[static_cast<size_t>(o)].store(f);
  update_hot();
  return 0;
}

void collplan_pmpi_counts(unsigned long long* served, unsigned long long* total) {
  Shim& s = shim();
  unsigned long long sv = 0, all = 0;
  for (int i = 0; i < kReportRows; ++i) {
    const RowStats& r = s.stats[static_cast<size_t>(i)];
    sv += r.served;
    if (total) all += r.served + r.fell_back_total() + fast_fell_back(i, 0) + fast_fell_back(i, 1);
  }
  if (served) *served = sv;
  if (total) *total = all;
}

int MPI_Op_create(MPI_User_function* fn, int commute, MPI_Op* op) {
  const int rc = PMPI_Op_create(fn, commute, op);
  if (rc == MPI_SUCCESS) {
    Shim& s = shim();
    std::lock_guard lk(s.mu);
    s.user_ops[*op] = UserOpInfo{fn, commute != 0};
  }
  return rc;
}

int MPI_Op_free(MPI_Op* op) {
  {
    Shim& s = shim();
    std::lock_guard lk(s.mu);
    s.user_ops.erase(*op);
  }
  return PMPI_Op_free(op);
}

}  // extern "C"

// ─── Progress (nbc.h) ────────────────────────────────────────────────────────

namespace collplan::pmpi {

bool nbc_idle() { return t_inside > 0 || g_hot.pending.load(std::memory_order_acquire) == 0; }

void nbc_progress() {
  if (nbc_idle()) return;
  Pending& g = pending();
  std::unique_lock lk(g.mu, std::try_to_lock);
  if (!lk) return;  // another thread is at it
  const Inside inside;
  progress_pass(g);
}

void nbc_drain() {
  if (nbc_idle()) return;
  Pending& g = pending();
  const Inside inside;
  std::lock_guard lk(g.mu);
  while (!g.list.empty()) progress_pass(g);
}

bool nbc_free_request(MPI_Request* req) {
  if (nbc_idle() || !req || *req == MPI_REQUEST_NULL) return false;
  Pending& g = pending();
  std::lock_guard lk(g.mu);
  for (const auto& n : g.list)
    if (n->req == *req) {
      n->free_when_done = true;
      *req = MPI_REQUEST_NULL;
      return true;
    }
  return false;
}

}  // namespace collplan::pmpi

// ─── The collectives ─────────────────────────────────────────────────────────
//
// serve_X serves one call from a plan and says whether it did; with `nb`
// set it starts a non-blocking replay instead (what the replay needs later
// goes into nb->keep, what follows it into nb->finish). The blocking entry
// points first complete every pending non-blocking replay (nbc_drain), the
// non-blocking ones make progress on them (nbc.h).

// A reduction's operator state lives as long as its replay: on the stack
// for a blocking call, with the request for a non-blocking one.
struct ReductionState {
  std::shared_ptr<Reduction> keep;
  Reduction local;
  explicit ReductionState(const NbcStart* nb) : keep(nb ? std::make_shared<Reduction>() : nullptr) {}
  Reduction& get() { return keep ? *keep : local; }
};

static int row_of(CallOp op, const NbcStart* nb) { return static_cast<int>(op) + (nb ? kNonBlocking : 0); }

static bool serve_allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm, NbcStart* nb) {
  ReductionState state(nb);
  Reduction& red = state.get();
  Call c = reduction_call(row_of(CallOp::allreduce, nb), CallOp::allreduce, red, count, datatype, op, comm);
  c.nb = nb;
  if (count <= 0) {
    c.fallback("empty message");
    return false;
  }
  const void* src = in_place(sendbuf) ? recvbuf : sendbuf;
  const size_t n = static_cast<size_t>(count);
  const size_t esize = red.esize;
  auto fill = [&](const PlanEntry& e, uint32_t, rt::InPiece* in, rt::OutPiece* out) {
    const size_t L = block_len(n, e.blocks);
    split(static_cast<const std::byte*>(src), n, esize, e.blocks, L, in);
    split(static_cast<std::byte*>(recvbuf), n, esize, e.blocks, L, out);
    return L;
  };
  if (nb) nb->keep = state.keep;
  return c.run(fill) == Outcome::served;
}

static bool serve_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                         MPI_Comm comm, NbcStart* nb) {
  ReductionState state(nb);
  Reduction& red = state.get();
  Call c = reduction_call(row_of(CallOp::reduce, nb), CallOp::reduce, red, count, datatype, op, comm);
  c.nb = nb;
  c.root = root >= 0 ? static_cast<uint32_t>(root) : 0;
  if (count <= 0) {
    c.fallback("empty message");
    return false;
  }
  if (root < 0) return false;  // MPI reports the bad root
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  const void* src = (in_place(sendbuf) && me == root) ? recvbuf : sendbuf;
  const size_t n = static_cast<size_t>(count);
  const size_t esize = red.esize;
  auto fill = [&](const PlanEntry& e, uint32_t, rt::InPiece* in, rt::OutPiece* out) {
    const size_t L = block_len(n, e.blocks);
    split(static_cast<const std::byte*>(src), n, esize, e.blocks, L, in);
    if (me == root) split(static_cast<std::byte*>(recvbuf), n, esize, e.blocks, L, out);
    return L;
  };
  if (nb) nb->keep = state.keep;
  return c.run(fill) == Outcome::served;
}

// Broadcast and allgather(v) move bytes, and MPI lets ranks describe the
// same bytes with different datatypes (the same type signature): the
// decision must not depend on the datatype's layout, only on the bytes
// (count × type size, equal everywhere). A datatype that is not contiguous
// is packed into (and unpacked out of) a scratch buffer with MPI_Pack.
struct Bytes {
  size_t size = 0;          // MPI_Type_size
  bool contiguous = false;  // count elements are count · size bytes at buf
  MPI_Aint extent = 0;
  bool ok = false;          // the datatype could be queried
};
static Bytes bytes_of(MPI_Datatype t) {
  Bytes b;
  int size = 0;
  MPI_Aint lb = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(t, &lb, &b.extent) != MPI_SUCCESS || size < 0)
    return b;
  b.size = static_cast<size_t>(size);
  b.contiguous = contiguous_size(t) != 0;
  b.ok = true;
  return b;
}

// (buf, count, type) as packed bytes in `scratch` (or buf itself when
// contiguous). Aborts if MPI's packed form is not the type signature's
// size (it is, on a homogeneous system: the decision already assumed it).
static const std::byte* pack(const void* buf, size_t count, MPI_Datatype t, const Bytes& b,
                             std::vector<std::byte>& scratch, MPI_Comm comm) {
  if (b.contiguous) return static_cast<const std::byte*>(buf);
  scratch.resize(count * b.size);
  int pos = 0;
  PMPI_Pack(buf, static_cast<int>(count), t, scratch.data(), static_cast<int>(scratch.size()), &pos, comm);
  if (static_cast<size_t>(pos) != scratch.size()) {
    say(fmt::format("packing {} elements gave {} bytes, not the {} their type signature has", count, pos,
                    scratch.size()));
    PMPI_Abort(comm, 1);
  }
  return scratch.data();
}
static void unpack(const std::byte* from, void* buf, size_t count, MPI_Datatype t, const Bytes& b, MPI_Comm comm) {
  int pos = 0;
  PMPI_Unpack(from, static_cast<int>(count * b.size), &pos, buf, static_cast<int>(count), t, comm);
}

// No set loaded: counted (when reporting) and sent to MPI before any work.
static bool no_set(int row) {
  Shim& s = shim();
  if (s.enabled) return false;
  if (s.active) count_fallback(row, "no plan set");
  return true;
}


static bool serve_bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, NbcStart* nb) {
  if (no_set(row_of(CallOp::broadcast, nb))) return false;
  int tsize = 0;
  const bool sized = datatype != MPI_DATATYPE_NULL && PMPI_Type_size(datatype, &tsize) == MPI_SUCCESS && tsize >= 0;
  const size_t nbytes = count > 0 && sized ? static_cast<size_t>(count) * static_cast<size_t>(tsize) : 0;
  Call c{row_of(CallOp::broadcast, nb), CallOp::broadcast, comm, nbytes, Needs{}};
  c.nb = nb;
  if (!sized) c.why = "datatype cannot be queried";
  c.root = root >= 0 ? static_cast<uint32_t>(root) : 0;
  if (count <= 0) {
    c.fallback("empty message");
    return false;
  }
  if (root < 0) return false;
  if (c.decide() < 0) return false;  // before the datatype's layout is asked for
  const Bytes tb = bytes_of(datatype);
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  // Scratch for a non-contiguous datatype, kept until a non-blocking
  // replay ends; none is allocated for a contiguous blocking call.
  auto scratch = nb || !tb.contiguous ? std::make_shared<std::vector<std::byte>>() : nullptr;
  std::vector<std::byte> unused;
  std::vector<std::byte>& sc = scratch ? *scratch : unused;
  auto fill = [&](const PlanEntry& e, uint32_t, rt::InPiece* in, rt::OutPiece* out) {
    const size_t L = block_len(nbytes, e.blocks);
    if (me == root) {
      split(pack(buffer, static_cast<size_t>(count), datatype, tb, sc, comm), nbytes, 1, e.blocks, L, in);
    } else {  // a root's outputs are its inputs: skipped
      std::byte* to = static_cast<std::byte*>(buffer);
      if (!tb.contiguous) sc.resize(nbytes), to = sc.data();
      split(to, nbytes, 1, e.blocks, L, out);
    }
    return L;
  };
  auto after = [scratch, buffer, count, datatype, tb, me, root, comm] {
    if (me != root && !tb.contiguous) unpack(scratch->data(), buffer, static_cast<size_t>(count), datatype, tb, comm);
  };
  if (nb) nb->keep = scratch, nb->finish = after;
  if (c.run(fill) != Outcome::served) return false;
  if (!nb) after();
  return true;
}

// Allgather and allgatherv share this: rank r's block of counts[r]
// elements of `recvtype` lands at recvbuf + displs[r] · extent; the plan's
// rows are as long as the largest block, shorter blocks padded.
struct GatherScratch {
  std::vector<std::byte> in, out;
  std::vector<size_t> at;  // where each rank's bytes land in `out`
};
static bool serve_gather(Call& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         const std::vector<size_t>& counts, const std::vector<ptrdiff_t>& displs,
                         MPI_Datatype recvtype) {
  if (no_set(c.row)) return false;
  const Bytes rb = bytes_of(recvtype);
  const bool inplace = in_place(sendbuf);
  const Bytes sb = inplace ? rb : bytes_of(sendtype);
  size_t most = 0;
  for (size_t n : counts) most = std::max(most, n);
  c.bytes = most * rb.size;
  if (!rb.ok || !sb.ok) c.why = "datatype cannot be queried";
  int me = 0;
  PMPI_Comm_rank(c.comm, &me);
  const size_t mine = static_cast<size_t>(me);
  auto keep = c.nb || !rb.contiguous || !sb.contiguous ? std::make_shared<GatherScratch>() : nullptr;
  GatherScratch unused;
  GatherScratch* sc = keep ? keep.get() : &unused;
  auto fill = [&](const PlanEntry& e, uint32_t, rt::InPiece* in, rt::OutPiece* out) {
    const size_t L = block_len(c.bytes, e.blocks);
    const std::byte* own =
        inplace ? pack(static_cast<const std::byte*>(recvbuf) + displs[mine] * rb.extent,
                       counts[mine], recvtype, rb, sc->in, c.comm)
                : pack(sendbuf, static_cast<size_t>(sendcount), sendtype, sb, sc->in, c.comm);
    // MPI requires sendcount · send size = recvcount · receive size.
    const size_t own_bytes = inplace ? counts[mine] * rb.size
                                     : std::min(counts[mine] * rb.size, static_cast<size_t>(std::max(sendcount, 0)) * sb.size);
    split(own, own_bytes, 1, e.blocks, L, in);
    if (!rb.contiguous) {
      size_t total = 0;
      for (size_t n : counts) sc->at.push_back(total), total += n * rb.size;
      sc->out.resize(total);
    }
    for (size_t r = 0; r < counts.size(); ++r) {
      rt::OutPiece* o = out + r * e.blocks;
      if (inplace && r == mine) {
        for (uint32_t b = 0; b < e.blocks; ++b) o[b] = {nullptr, 0};  // already there
        continue;
      }
      std::byte* to = rb.contiguous ? static_cast<std::byte*>(recvbuf) + displs[r] * rb.extent
                                    : sc->out.data() + sc->at[r];
      split(to, counts[r] * rb.size, 1, e.blocks, L, o);
    }
    return L;
  };
  if (c.bytes == 0) {
    c.fallback("empty message");
    return false;
  }
  // A non-contiguous receive type: the rows land in scratch, unpacked
  // when the replay is over.
  auto unpack_all = [](const GatherScratch& g, const std::vector<size_t>& cnt, const std::vector<ptrdiff_t>& at,
                       void* rbuf, MPI_Datatype rtype, const Bytes& b, bool inpl, size_t me_, MPI_Comm comm) {
    for (size_t r = 0; r < cnt.size(); ++r)
      if (!(inpl && r == me_))
        unpack(g.out.data() + g.at[r], static_cast<std::byte*>(rbuf) + at[r] * b.extent, cnt[r], rtype, b, comm);
  };
  if (c.nb && !rb.contiguous)
    c.nb->finish = [=] { unpack_all(*keep, counts, displs, recvbuf, recvtype, rb, inplace, mine, c.comm); };
  if (c.nb) c.nb->keep = keep;
  if (c.run(fill) != Outcome::served) return false;
  if (!c.nb && !rb.contiguous) unpack_all(*keep, counts, displs, recvbuf, recvtype, rb, inplace, mine, c.comm);
  return true;
}

static bool serve_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, NbcStart* nb) {
  if (no_set(row_of(CallOp::allgather, nb))) return false;
  Call c{row_of(CallOp::allgather, nb), CallOp::allgather, comm, 0, Needs{}};
  c.nb = nb;
  // Decided before the per-rank lists are built (serve_gather computes the
  // same size again).
  if (int tsize = 0; recvcount > 0 && PMPI_Type_size(recvtype, &tsize) == MPI_SUCCESS && tsize > 0) {
    c.bytes = static_cast<uint64_t>(recvcount) * static_cast<uint64_t>(tsize);
    if (c.decide() < 0) return false;
  }
  int K = 0;
  PMPI_Comm_size(comm, &K);
  const size_t rc = static_cast<size_t>(std::max(recvcount, 0));
  std::vector<size_t> counts(static_cast<size_t>(K), rc);
  std::vector<ptrdiff_t> displs(counts.size());
  for (size_t r = 0; r < displs.size(); ++r) displs[r] = static_cast<ptrdiff_t>(r * rc);
  return serve_gather(c, sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype);
}

static bool serve_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                             NbcStart* nb) {
  if (no_set(kAllgathervRow + (nb ? kNonBlocking : 0))) return false;
  int K = 0, inter = 0;
  PMPI_Comm_size(comm, &K);
  // The table is asked for an allgather of the largest block.
  Call c{kAllgathervRow + (nb ? kNonBlocking : 0), CallOp::allgather, comm, 0, Needs{}};
  c.nb = nb;
  // recvcounts has an entry per rank of the remote group there, not K.
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
    c.fallback("inter-communicator");
    return false;
  }
  int most = 0, tsize = 0;
  for (int r = 0; r < K; ++r) most = std::max(most, recvcounts[r]);
  if (most > 0 && PMPI_Type_size(recvtype, &tsize) == MPI_SUCCESS && tsize > 0) {
    bool negative = false;
    for (int r = 0; r < K; ++r) negative |= recvcounts[r] < 0;
    if (negative) c.why = "negative count";
    c.bytes = static_cast<uint64_t>(most) * static_cast<uint64_t>(tsize);
    if (c.decide() < 0) return false;  // before the per-rank lists are built
  }
  std::vector<size_t> counts(static_cast<size_t>(K));
  std::vector<ptrdiff_t> disp(counts.size());
  bool bad = false;  // recvcounts are the same on every rank, displs need not be
  for (int r = 0; r < K; ++r) {
    if (recvcounts[r] < 0) bad = true;
    counts[static_cast<size_t>(r)] = static_cast<size_t>(std::max(recvcounts[r], 0));
    disp[static_cast<size_t>(r)] = displs[r];
  }
  if (bad) c.why = "negative count";
  return serve_gather(c, sendbuf, sendcount, sendtype, recvbuf, counts, disp, recvtype);
}

static bool serve_reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                                       MPI_Op op, MPI_Comm comm, NbcStart* nb) {
  ReductionState state(nb);
  Reduction& red = state.get();
  Call c = reduction_call(row_of(CallOp::reduce_scatter, nb), CallOp::reduce_scatter, red, recvcount, datatype, op,
                          comm);
  c.nb = nb;
  if (recvcount <= 0) {
    c.fallback("empty message");
    return false;
  }
  const void* src = in_place(sendbuf) ? recvbuf : sendbuf;
  const size_t rc = static_cast<size_t>(recvcount);
  const size_t esize = red.esize;
  auto fill = [&](const PlanEntry& e, uint32_t, rt::InPiece* in, rt::OutPiece* out) {
    const size_t L = block_len(rc, e.blocks);
    for (uint32_t j = 0; j < e.K; ++j)
      split(static_cast<const std::byte*>(src) + j * rc * esize, rc, esize, e.blocks, L,
            in + static_cast<size_t>(j) * e.blocks);
    split(static_cast<std::byte*>(recvbuf), rc, esize, e.blocks, L, out);
    return L;
  };
  if (nb) nb->keep = state.keep;
  return c.run(fill) == Outcome::served;
}

static bool serve_scan(CallOp op, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op mop,
                       MPI_Comm comm, NbcStart* nb) {
  ReductionState state(nb);
  Reduction& red = state.get();
  Call c = reduction_call(row_of(op, nb), op, red, count, datatype, mop, comm);
  c.nb = nb;
  // A prefix plan's result at a rank is one value: consistency is moot.
  c.needs.consistent = false;
  if (count <= 0) {
    c.fallback("empty message");
    return false;
  }
  const void* src = in_place(sendbuf) ? recvbuf : sendbuf;
  const size_t n = static_cast<size_t>(count);
  const size_t esize = red.esize;
  auto fill = [&](const PlanEntry&, uint32_t, rt::InPiece* in, rt::OutPiece* out) {
    in[0] = {src, n * esize};
    out[0] = {recvbuf, n * esize};
    return n;
  };
  if (nb) nb->keep = state.keep;
  return c.run(fill) == Outcome::served;
}

extern "C" {

// Each entry point MPI_X takes the short way on MPI_COMM_WORLD inline
// (world_short_way: no call, so no register is saved on it) and leaves
// everything else to x_rest, which is kept out of line for that reason.
static __attribute__((noinline)) int allreduce_rest(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (!short_way(CallOp::allreduce, false, comm, count, datatype)) {
    nbc_drain();
    if (serve_allreduce(sendbuf, recvbuf, count, datatype, op, comm, nullptr)) return MPI_SUCCESS;
  }
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (world_short_way(CallOp::allreduce, false, comm, count, datatype)) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  return allreduce_rest(sendbuf, recvbuf, count, datatype, op, comm);
}

static __attribute__((noinline)) int iallreduce_rest(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  if (!short_way(CallOp::allreduce, true, comm, count, datatype)) {
    nbc_progress();
    NbcStart nb{request, {}, {}};
    if (serve_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &nb)) return MPI_SUCCESS;
  }
  return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}
int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  if (world_short_way(CallOp::allreduce, true, comm, count, datatype)) return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  return iallreduce_rest(sendbuf, recvbuf, count, datatype, op, comm, request);
}

static __attribute__((noinline)) int reduce_rest(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  if (!short_way(CallOp::reduce, false, comm, count, datatype)) {
    nbc_drain();
    if (serve_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr)) return MPI_SUCCESS;
  }
  return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}
int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  if (world_short_way(CallOp::reduce, false, comm, count, datatype)) return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  return reduce_rest(sendbuf, recvbuf, count, datatype, op, root, comm);
}

static __attribute__((noinline)) int ireduce_rest(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* request) {
  if (!short_way(CallOp::reduce, true, comm, count, datatype)) {
    nbc_progress();
    NbcStart nb{request, {}, {}};
    if (serve_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, &nb)) return MPI_SUCCESS;
  }
  return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
}
int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* request) {
  if (world_short_way(CallOp::reduce, true, comm, count, datatype)) return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
  return ireduce_rest(sendbuf, recvbuf, count, datatype, op, root, comm, request);
}

static __attribute__((noinline)) int bcast_rest(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (!short_way(CallOp::broadcast, false, comm, count, datatype)) {
    nbc_drain();
    if (serve_bcast(buffer, count, datatype, root, comm, nullptr)) return MPI_SUCCESS;
  }
  return PMPI_Bcast(buffer, count, datatype, root, comm);
}
int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (world_short_way(CallOp::broadcast, false, comm, count, datatype)) return PMPI_Bcast(buffer, count, datatype, root, comm);
  return bcast_rest(buffer, count, datatype, root, comm);
}

static __attribute__((noinline)) int ibcast_rest(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request* request) {
  if (!short_way(CallOp::broadcast, true, comm, count, datatype)) {
    nbc_progress();
    NbcStart nb{request, {}, {}};
    if (serve_bcast(buffer, count, datatype, root, comm, &nb)) return MPI_SUCCESS;
  }
  return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
}
int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request* request) {
  if (world_short_way(CallOp::broadcast, true, comm, count, datatype)) return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
  return ibcast_rest(buffer, count, datatype, root, comm, request);
}

static __attribute__((noinline)) int allgather_rest(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  if (!short_way(CallOp::allgather, false, comm, recvcount, recvtype)) {
    nbc_drain();
    if (serve_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, nullptr)) return MPI_SUCCESS;
  }
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  if (world_short_way(CallOp::allgather, false, comm, recvcount, recvtype)) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return allgather_rest(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

static __attribute__((noinline)) int iallgather_rest(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (!short_way(CallOp::allgather, true, comm, recvcount, recvtype)) {
    nbc_progress();
    NbcStart nb{request, {}, {}};
    if (serve_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &nb)) return MPI_SUCCESS;
  }
  return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}
int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (world_short_way(CallOp::allgather, true, comm, recvcount, recvtype)) return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
  return iallgather_rest(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

static __attribute__((noinline)) int allgatherv_rest(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  if (!gatherv_short_way(false, comm, recvcounts, recvtype)) {
    nbc_drain();
    if (serve_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, nullptr)) return MPI_SUCCESS;
  }
  return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}
int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  if (world_gatherv_short_way(false, comm, recvcounts, recvtype)) return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  return allgatherv_rest(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

static __attribute__((noinline)) int iallgatherv_rest(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (!gatherv_short_way(true, comm, recvcounts, recvtype)) {
    nbc_progress();
    NbcStart nb{request, {}, {}};
    if (serve_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, &nb)) return MPI_SUCCESS;
  }
  return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request);
}
int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (world_gatherv_short_way(true, comm, recvcounts, recvtype)) return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request);
  return iallgatherv_rest(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request);
}

static __attribute__((noinline)) int reduce_scatter_block_rest(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  if (!short_way(CallOp::reduce_scatter, false, comm, recvcount, datatype)) {
    nbc_drain();
    if (serve_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, nullptr)) return MPI_SUCCESS;
  }
  return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}
int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  if (world_short_way(CallOp::reduce_scatter, false, comm, recvcount, datatype)) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  return reduce_scatter_block_rest(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

static __attribute__((noinline)) int ireduce_scatter_block_rest(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Request* request) {
  if (!short_way(CallOp::reduce_scatter, true, comm, recvcount, datatype)) {
    nbc_progress();
    NbcStart nb{request, {}, {}};
    if (serve_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, &nb)) return MPI_SUCCESS;
  }
  return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
}
int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Request* request) {
  if (world_short_way(CallOp::reduce_scatter, true, comm, recvcount, datatype)) return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
  return ireduce_scatter_block_rest(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
}

static __attribute__((noinline)) int scan_rest(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (!short_way(CallOp::scan, false, comm, count, datatype)) {
    nbc_drain();
    if (serve_scan(CallOp::scan, sendbuf, recvbuf, count, datatype, op, comm, nullptr)) return MPI_SUCCESS;
  }
  return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm);
}
int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (world_short_way(CallOp::scan, false, comm, count, datatype)) return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm);
  return scan_rest(sendbuf, recvbuf, count, datatype, op, comm);
}

static __attribute__((noinline)) int iscan_rest(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request* request) {
  if (!short_way(CallOp::scan, true, comm, count, datatype)) {
    nbc_progress();
    NbcStart nb{request, {}, {}};
    if (serve_scan(CallOp::scan, sendbuf, recvbuf, count, datatype, op, comm, &nb)) return MPI_SUCCESS;
  }
  return PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request);
}
int MPI_Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request* request) {
  if (world_short_way(CallOp::scan, true, comm, count, datatype)) return PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request);
  return iscan_rest(sendbuf, recvbuf, count, datatype, op, comm, request);
}

static __attribute__((noinline)) int exscan_rest(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (!short_way(CallOp::exscan, false, comm, count, datatype)) {
    nbc_drain();
    if (serve_scan(CallOp::exscan, sendbuf, recvbuf, count, datatype, op, comm, nullptr)) return MPI_SUCCESS;
  }
  return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm);
}
int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (world_short_way(CallOp::exscan, false, comm, count, datatype)) return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm);
  return exscan_rest(sendbuf, recvbuf, count, datatype, op, comm);
}

static __attribute__((noinline)) int iexscan_rest(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  if (!short_way(CallOp::exscan, true, comm, count, datatype)) {
    nbc_progress();
    NbcStart nb{request, {}, {}};
    if (serve_scan(CallOp::exscan, sendbuf, recvbuf, count, datatype, op, comm, &nb)) return MPI_SUCCESS;
  }
  return PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request);
}
int MPI_Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  if (world_short_way(CallOp::exscan, true, comm, count, datatype)) return PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request);
  return iexscan_rest(sendbuf, recvbuf, count, datatype, op, comm, request);
}

}  // extern "C"
