// `collplan tune`'s choice: from the medians measured on this machine to a
// plan set's rows (plan_table.h). No MPI here (the measuring is
// runtime/pmpi/tune.cpp's), so the unit tests check the choice itself.
//
// The choice, per (operation, K) and message size of the ladder: a call's
// property class (what its datatype and operator need of a plan: any exact
// plan; one with identical bits on every rank, for floating point; one that
// also keeps operand order, for non-commutative operators; copy operations
// have one class) gets the candidate of that class whose median time is the
// smallest fraction of the MPI library's median (each plan is compared with
// MPI timed on the same datatype), and only when that fraction is at most
// 1 − margin, and, where the rounds' paired ratios are known, the upper end
// of their median's 95% interval (plan / MPI within one round) is below 1:
// a win the rounds do not agree on is noise. Otherwise the MPI library. The classes' rows come in the
// passes `collplan plan-set` writes (exact, then consistent, then ordered):
// a class gets its own row only where the rows before do not already give
// it its choice. Since the classes' candidate sets are nested, a class
// never finds its choice shadowed by an earlier class's row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/pmpi/plan_table.h"

namespace collplan::pmpi {

// Whether a candidate is timed on 64-bit integers rather than doubles: a
// reduction plan without identical bits on every rank serves only integer
// calls (scan and exscan, whose result is one value per rank, take doubles
// with any exact plan).
bool timed_on_integers(const PlanEntry& p);

// The property classes of an operation's calls, in pass order.
std::vector<Needs> call_classes(CallOp op);

struct TuneSize {
  uint64_t bytes = 0;
  double mpi_double_us = -1, mpi_int_us = -1;  // medians of MPI's call; < 0: not timed
  std::vector<double> plan_us;                 // per candidate; < 0: not timed or not served by the plan
  // Per candidate, the upper end of the 95% interval of the median of
  // plan / MPI taken within each round (empty or < 0: not known).
  std::vector<double> ratio_hi;
};

// The upper end of a 95% interval of the median of `v`, distribution-free
// (the order statistic n/2 + 1.96 sqrt(n)/2); −1 for an empty v.
double median_upper_95(std::vector<double> v);

struct TuneResult {
  CallOp op = CallOp::allreduce;
  uint32_t K = 0;
  std::vector<int> cands;  // indices into the table's plans
  std::vector<TuneSize> sizes;  // ascending
  int reps = 0;
  double margin = 0;
  double batch_us = 0;  // a sample: back-to-back calls about this long (0: one call)
};

// The plan (index into table.plans) or −1 (MPI) class `cls` gets at size
// `i`, by the rule above; *ratio (when given) is the best candidate's
// plan / MPI ratio, or −1 when none was timed.
int tuned_choice(const PlanTable& table, const TuneResult& r, size_t i, const Needs& cls, int* best = nullptr,
                 double* ratio = nullptr);

// The index text `text` (of the set `table` was parsed from) with the rows
// of every (op, K) in `results` replaced by measured ones, and "tuned"
// updated; rows of other (op, K) are kept. Throws UserError when `text` is
// not a plan set index.
std::string retune_index(const std::string& text, const std::string& path, const PlanTable& table,
                         const std::vector<TuneResult>& results);

}  // namespace collplan::pmpi
