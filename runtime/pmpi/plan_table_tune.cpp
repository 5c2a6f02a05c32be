#include "runtime/pmpi/plan_table_tune.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/error.h"

namespace collplan::pmpi {

namespace {

using nlohmann::json;

// Times are kept to the nanosecond: the medians' noise is far larger.
double ns(double us) { return std::round(us * 1000) / 1000; }

bool is_prefix(CallOp op) { return op == CallOp::scan || op == CallOp::exscan; }
bool is_copy(CallOp op) { return op == CallOp::broadcast || op == CallOp::allgather; }

// MPI's median for the datatype candidate `c` is timed on.
double mpi_for(const PlanTable& t, const TuneSize& s, int c) {
  return timed_on_integers(t.plans[static_cast<size_t>(c)]) ? s.mpi_int_us : s.mpi_double_us;
}

const char* type_of(const PlanTable& t, int c) {
  return c >= 0 && timed_on_integers(t.plans[static_cast<size_t>(c)]) ? "int64" : "double";
}

}  // namespace

double median_upper_95(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  const double k = std::ceil(n / 2 + 1.96 * std::sqrt(n) / 2);
  return v[static_cast<size_t>(std::min(k, n - 1))];
}

bool timed_on_integers(const PlanEntry& p) { return !is_copy(p.op) && !is_prefix(p.op) && !p.consistent; }

std::vector<Needs> call_classes(CallOp op) {
  if (is_copy(op)) return {Needs{}};
  if (is_prefix(op)) return {Needs{true, false, false}, Needs{true, true, false}};
  return {Needs{true, false, false}, Needs{true, false, true}, Needs{true, true, true}};
}

int tuned_choice(const PlanTable& table, const TuneResult& r, size_t i, const Needs& cls, int* best, double* ratio) {
  const TuneSize& s = r.sizes[i];
  int b = -1;
  double br = 0;
  for (size_t k = 0; k < r.cands.size(); ++k) {
    const int c = r.cands[k];
    const double p = k < s.plan_us.size() ? s.plan_us[k] : -1, m = mpi_for(table, s, c);
    if (p < 0 || m <= 0 || !meets(table.plans[static_cast<size_t>(c)], cls)) continue;
    if (k < s.ratio_hi.size() && s.ratio_hi[k] >= 1) continue;  // the rounds do not agree it wins
    if (b < 0 || p / m < br) b = c, br = p / m;
  }
  if (best) *best = b;
  if (ratio) *ratio = b < 0 ? -1 : br;
  return b >= 0 && br <= 1 - r.margin ? b : -1;
}

std::string retune_index(const std::string& text, const std::string& path, const PlanTable& table,
                         const std::vector<TuneResult>& results) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    user_error("{}: not JSON ({})", path, e.what());
  }
  (void)parse_plan_table(text, path, table.dir);  // the same checks as the library's
  auto tuned_here = [&](const std::string& op, uint64_t K) {
    for (const TuneResult& r : results)
      if (op == call_op_name(r.op) && K == r.K) return true;
    return false;
  };
  json rows = json::array();
  for (const json& row : j["table"])
    if (!tuned_here(row["op"].get<std::string>(), row["K"].get<uint64_t>())) rows.push_back(row);
  json tuned = json::array();
  if (j.contains("tuned") && j["tuned"].is_array())
    for (const json& t : j["tuned"])
      if (!tuned_here(t["op"].get<std::string>(), t["K"].get<uint64_t>())) tuned.push_back(t);

  constexpr int kNone = -2;
  for (const TuneResult& r : results) {
    const std::vector<Needs> classes = call_classes(r.op);
    const size_t n = r.sizes.size();
    // pass[k][i]: the row class k adds at size i (a plan, −1 = MPI, or none).
    std::vector<std::vector<int>> pass(classes.size(), std::vector<int>(n, kNone));
    for (size_t i = 0; i < n; ++i) {
      std::vector<int> rows_here;
      for (size_t k = 0; k < classes.size(); ++k) {
        const int want = tuned_choice(table, r, i, classes[k]);
        int got = kNone;  // what the rows so far give this class
        for (int p : rows_here)
          if (p < 0 || meets(table.plans[static_cast<size_t>(p)], classes[k])) {
            got = p;
            break;
          }
        if (got == want) continue;
        if (got != kNone)
          internal_error(__FILE__, __LINE__,
                         fmt::format("tune: {} K={} class {} wants {} but an earlier row gives {}",
                                     call_op_name(r.op), r.K, k, want, got));
        pass[k][i] = want;
        rows_here.push_back(want);
      }
    }
    for (size_t k = 0; k < classes.size(); ++k)
      for (size_t i = 0; i < n;) {
        const int w = pass[k][i];
        size_t e = i;
        while (e + 1 < n && pass[k][e + 1] == w) ++e;
        if (w != kNone) {
          json measured = json::array();
          for (size_t x = i; x <= e; ++x) {
            int best = -1;
            double ratio = 0;
            tuned_choice(table, r, x, classes[k], &best, &ratio);
            const int shown = w >= 0 ? w : best;
            const TuneSize& s = r.sizes[x];
            json m = {{"bytes", s.bytes}, {"type", type_of(table, shown)}};
            m["mpi_us"] = ns(shown >= 0 ? mpi_for(table, s, shown) : std::max(0.0, s.mpi_double_us));
            if (shown >= 0) {
              const size_t at = static_cast<size_t>(
                  std::find(r.cands.begin(), r.cands.end(), shown) - r.cands.begin());
              m["plan_us"] = ns(r.sizes[x].plan_us[at]);
              if (w < 0) m["best"] = table.plans[static_cast<size_t>(shown)].name;
            }
            measured.push_back(m);
          }
          rows.push_back({{"op", call_op_name(r.op)},
                          {"K", r.K},
                          {"bytes", {i == 0 ? uint64_t{1} : r.sizes[i - 1].bytes + 1, r.sizes[e].bytes}},
                          {"plan", w >= 0 ? table.plans[static_cast<size_t>(w)].name : std::string("mpi")},
                          {"measured", measured}});
        }
        i = e + 1;
      }
    tuned.push_back({{"op", call_op_name(r.op)},
                     {"K", r.K},
                     {"reps", r.reps},
                     {"margin", r.margin},
                     {"batch_us", r.batch_us},
                     {"max_bytes", n ? r.sizes.back().bytes : 0}});
  }
  j["table"] = rows;
  j["tuned"] = tuned;
  const std::string out = j.dump(1) + "\n";
  try {
    (void)parse_plan_table(out, path, table.dir);
  } catch (const UserError& e) {
    internal_error(__FILE__, __LINE__, fmt::format("tune wrote an index it cannot read back: {}", e.what()));
  }
  return out;
}

}  // namespace collplan::pmpi
