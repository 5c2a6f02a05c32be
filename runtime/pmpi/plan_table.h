// A plan set's selection table (DIR/index.json, written by `collplan
// plan-set` and `collplan tune`, editable by hand): which plan serves an MPI
// collective call of a given operation, communicator size and message size,
// and what each plan can be replayed with. No MPI here: the interposition
// library (pmpi.cpp) and the tests read tables through this.
//
// ─── The file ────────────────────────────────────────────────────────────────
//
//   {
//     "format": "collplan-plan-set", "version": 1,
//     "plans": {                      // key: a name the table refers to
//       "allreduce-K8-n1-dissemination-allreduce": {
//         "file": "allreduce-K8-n1-dissemination-allreduce.cplan",   // relative to DIR
//         "digest": "<32 hex>",       // the plan's content hash: a swapped file is refused
//         "op": "allreduce",          // broadcast reduce allgather allreduce reduce-scatter scan exscan
//         "K": 8, "blocks": 1, "algorithm": "dissemination-allreduce",
//         "exact": true,              // reductions: correct for every commutative operator
//         "ordered": false,           // ... and for non-commutative ones (rank order kept)
//         "consistent": false         // every rank gets the same bits (floating point)
//       }, ...
//     },
//     "table": [                      // first matching row wins
//       {"op": "allreduce", "K": 8, "bytes": [0, 65536], "plan": "allreduce-K8-..."},
//       {"op": "allreduce", "K": 8, "bytes": [65537, 4194304], "plan": "mpi"}, ...
//     ],
//     "tuned": [                      // optional (false or absent: untuned)
//       {"op": "allreduce", "K": 8, "reps": 15, "margin": 0.05, "batch_us": 500, "max_bytes": 4194304}, ...
//     ]
//   }
//
// "tuned" lists the (operation, K) whose rows `collplan tune` wrote from
// measurements on this machine. Such a row may carry what was measured, one
// entry per message size of the ladder it covers:
//       "measured": [{"bytes": 8, "mpi_us": 3.1, "plan_us": 2.2,
//                     "best": "allreduce-K8-...", "type": "double"}, ...]
// mpi_us is the median time of the MPI library's own call, plan_us the
// median of the row's plan (a row that names a plan) or of the fastest
// candidate "best" of the row's property class (a row that says "mpi"; no
// plan_us when no candidate could be timed); type is the datatype timed.
// Other fields (plan-set's "cost", a plan's "C1"/"C2") are ignored, as
// any unknown field is: a newer writer's additions do not break a reader.
//
// A row matches a call of operation `op` on a communicator of K ranks whose
// message is `bytes` long (lo <= bytes <= hi; what "message" means per
// operation: docs/pmpi.md) and whose operator and datatype the plan's
// properties allow; "plan": "mpi" sends the call to the MPI library. A call
// no row matches goes to the MPI library too.
//
// Errors: parse_plan_table throws UserError naming the file, the row or plan
// and the bad value, for anything that is not a table of this format (it
// never crashes, whatever the input).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace collplan::pmpi {

// The collective calls a table serves (their "op" names).
enum class CallOp : uint8_t { broadcast, reduce, allgather, allreduce, reduce_scatter, scan, exscan };
inline constexpr int kNumCallOps = 7;
const char* call_op_name(CallOp op);
// UserError listing the names when `name` is none of them.
CallOp parse_call_op(const std::string& name);

struct PlanEntry {
  std::string name;    // the key in "plans"
  std::string file;    // path relative to the set's directory
  std::string digest;  // 32 lowercase hex digits
  CallOp op = CallOp::allreduce;
  uint32_t K = 0, blocks = 1;
  std::string algorithm;
  bool exact = false, ordered = false, consistent = false;
};

// One message size of a tuned row (see "measured" above).
struct Measured {
  uint64_t bytes = 0;
  double mpi_us = 0;
  double plan_us = -1;  // < 0: none
  std::string best, type;
};

// An (operation, K) whose rows were measured (`collplan tune`).
struct Tuned {
  CallOp op = CallOp::allreduce;
  uint32_t K = 0;
};

struct TableRow {
  CallOp op = CallOp::allreduce;
  uint32_t K = 0;
  uint64_t lo = 0, hi = 0;  // bytes, inclusive
  int plan = -1;            // index into PlanTable::plans; −1 = "mpi"
};

// What a call needs of a reduction plan beyond "a plan of this operation".
struct Needs {
  bool reduction = false;   // the plan combines values (not broadcast / allgather)
  bool ordered = false;     // non-commutative operator
  bool consistent = false;  // floating point: identical bits on every rank
};

// Whether plan `p` may serve a call that needs `needs`.
inline bool meets(const PlanEntry& p, const Needs& needs) {
  return !needs.reduction || (p.exact && (!needs.ordered || p.ordered) && (!needs.consistent || p.consistent));
}

// The fall-back reasons of a table's decision (the library's report counts
// calls by these; pointers compared first, so use these constants).
inline constexpr char kWhyRowSaysMpi[] = "table row says mpi";  // one object: one address everywhere
inline constexpr char kWhyNoRow[] = "no table row for this communicator size and message size";

struct PlanTable {
  // Where the table sends every call to MPI, whatever its datatype and
  // operator: per (op, K), the byte ranges whose first matching row says
  // "mpi" or that no row matches. The library asks this before anything
  // else, so a call the table sends to MPI costs a size query and a
  // look-up in two short arrays (it reads a few cache lines, which matters
  // when other ranks share the core and evict them between calls). Built
  // by index().
  struct ToMpi {
    uint64_t lo, hi;  // bytes, inclusive
    const char* why;  // kWhyRowSaysMpi or kWhyNoRow
  };
  struct Span {
    uint32_t K = 0;
    uint32_t first = 0, count = 0;  // into to_mpi
    bool rows = false;              // false: no row for (op, K)
  };

  // rows, indexed, to_mpi and spans first: mpi_only, on every call's way,
  // then reads two or three cache lines of the table.
  std::vector<TableRow> rows;
  size_t indexed = 0;  // rows.size() when groups was built
  std::vector<ToMpi> to_mpi;
  std::vector<Span> spans[kNumCallOps];  // indexed by K, for K < kDirectK
  std::string dir;  // the set's directory
  std::vector<PlanEntry> plans;
  // Parallel to rows: a row's "measured" entries (empty when it has none).
  // Kept apart from rows so the table scan a call does stays compact.
  std::vector<std::vector<Measured>> measured;
  std::vector<Tuned> tuned;

  bool is_tuned(CallOp op, uint32_t K) const;

  // The rows of each (op, K), in table order, so a call's selection looks
  // at its own rows only (every intercepted call that goes to MPI pays for
  // the selection; a table for many sizes has hundreds of rows). Built by
  // parse_plan_table; select and find scan every row when rows has changed
  // since (the index no longer covers rows.size() rows).
  struct Group {
    CallOp op;
    uint32_t K;
    std::vector<uint32_t> rows;
  };
  std::vector<Group> groups;
  void index();

  static constexpr uint32_t kDirectK = 4096;  // spans below it are indexed by K
  std::vector<Span> far_spans[kNumCallOps];  // K >= kDirectK, sorted by K
  // kWhyRowSaysMpi or kWhyNoRow when a call of (op, K, bytes) goes to MPI
  // whatever it needs of a plan; nullptr when a plan may serve it (then
  // select decides). Exactly: mpi_only(...) != nullptr implies select(...)
  // is nullptr or a row with plan −1, for every Needs, and the reason is
  // the one select's result gives.
  // Inline: it is on the way of every call the table sends to MPI.
  const char* mpi_only(CallOp op, uint32_t K, uint64_t bytes) const {
    if (indexed != rows.size()) return nullptr;  // rows changed since index(): select decides
    const std::vector<Span>& near = spans[static_cast<int>(op)];
    const Span* sp = K < kDirectK ? (K < near.size() ? &near[K] : nullptr) : far_span(op, K);
    return !sp || !sp->rows ? kWhyNoRow : in_ranges(to_mpi.data() + sp->first, sp->count, bytes);
  }
  // The reason of the range among first[0..count) holding bytes, or nullptr.
  __attribute__((always_inline)) static const char* in_ranges(const ToMpi* first, uint32_t count, uint64_t bytes) {
    for (const ToMpi *r = first, *end = first + count; r != end; ++r)
      if (r->lo <= bytes && bytes <= r->hi) return r->why;
    return nullptr;
  }
  const Span* far_span(CallOp op, uint32_t K) const;  // in far_spans, or nullptr

  // The first row for (op, K, bytes); nullptr when none.
  const TableRow* find(CallOp op, uint32_t K, uint64_t bytes) const;
  // The first row for (op, K, bytes) whose plan meets `needs` (or that says
  // "mpi"); nullptr when none. *skipped (when given) counts the rows that
  // matched but whose plan lacked a property.
  const TableRow* select(CallOp op, uint32_t K, uint64_t bytes, const Needs& needs, int* skipped = nullptr) const;
};

inline constexpr const char* kPlanSetFormat = "collplan-plan-set";
inline constexpr int kPlanSetVersion = 1;
inline constexpr uint64_t kMaxIndexBytes = uint64_t{64} << 20;

// Parses the text of an index.json (`path` is for messages, `dir` becomes
// PlanTable::dir).
PlanTable parse_plan_table(const std::string& text, const std::string& path, const std::string& dir);
// Reads DIR/index.json (a regular file of at most kMaxIndexBytes).
PlanTable read_plan_table(const std::string& dir);

}  // namespace collplan::pmpi
