// Harness: a plan set's index.json (runtime/pmpi/plan_table.h), which every
// rank of an MPI program reads at MPI_Init: parse_plan_table on the input's
// text. A table it accepts must be one the library can use without further
// checks: every row's plan exists and is of the row's operation and size,
// every row's range is ordered, and selecting at the rows' edges and for
// every kind of call returns a row that matches, and a row's measurements
// are inside its range with finite, non-negative times.
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_util.h"
#include "runtime/pmpi/plan_table.h"

using namespace collplan;
using namespace collplan::pmpi;
using collplan::fuzz::clean;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<PlanTable> t;
  if (!clean([&] { t = parse_plan_table(text, "fuzz/index.json", "fuzz"); })) return 0;
  COLLPLAN_FUZZ_REQUIRE(t->measured.size() == t->rows.size());
  for (size_t i = 0; i < t->rows.size(); ++i) {
    const TableRow& r = t->rows[i];
    COLLPLAN_FUZZ_REQUIRE(r.lo <= r.hi);
    for (const Measured& m : t->measured[i])
      COLLPLAN_FUZZ_REQUIRE(r.lo <= m.bytes && m.bytes <= r.hi && m.mpi_us >= 0 && m.mpi_us < 1e308 &&
                            m.plan_us < 1e308);
    COLLPLAN_FUZZ_REQUIRE(r.plan >= -1 && r.plan < static_cast<int>(t->plans.size()));
    if (r.plan >= 0) {
      const PlanEntry& p = t->plans[static_cast<size_t>(r.plan)];
      COLLPLAN_FUZZ_REQUIRE(p.op == r.op && p.K == r.K);
      COLLPLAN_FUZZ_REQUIRE(p.digest.size() == 32 && !p.file.empty() && p.file.front() != '/');
    }
    for (uint64_t b : {r.lo, r.hi})
      for (int n = 0; n < 8; ++n) {
        const Needs needs{n & 1 ? true : false, n & 2 ? true : false, n & 4 ? true : false};
        const TableRow* s = t->select(r.op, r.K, b, needs);
        if (!s) continue;
        COLLPLAN_FUZZ_REQUIRE(s->op == r.op && s->K == r.K && s->lo <= b && b <= s->hi);
      }
  }
  return 0;
}
