#include "runtime/pmpi/plan_table.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/error.h"

namespace collplan::pmpi {

namespace {

constexpr const char* kOpNames[kNumCallOps] = {"broadcast", "reduce",         "allgather", "allreduce",
                                               "reduce-scatter", "scan", "exscan"};

using nlohmann::json;

// The value of `key` in object `o` of the given type, or UserError naming
// where it is missing or what it should be.
const json& field(const json& o, const char* key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end()) user_error("{}: \"{}\" is missing", where, key);
  return *it;
}

std::string get_string(const json& o, const char* key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_string()) user_error("{}: \"{}\" must be a string, it is {}", where, key, v.dump());
  return v.get<std::string>();
}

uint64_t get_uint(const json& o, const char* key, const std::string& where, uint64_t lo, uint64_t hi) {
  const json& v = field(o, key, where);
  if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi)
    user_error("{}: \"{}\" must be an integer in {}..{}, it is {}", where, key, lo, hi, v.dump());
  return v.get<uint64_t>();
}

bool get_bool(const json& o, const char* key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_boolean()) user_error("{}: \"{}\" must be true or false, it is {}", where, key, v.dump());
  return v.get<bool>();
}

bool is_reduction(CallOp op) { return op != CallOp::broadcast && op != CallOp::allgather; }

double get_time(const json& o, const char* key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>()))
    user_error("{}: \"{}\" must be a time in microseconds (a number >= 0), it is {}", where, key, v.dump());
  return v.get<double>();
}

// A row's "measured" list: one entry per ladder size inside the row.
std::vector<Measured> parse_measured(const json& m, const TableRow& row, const std::string& where) {
  if (!m.is_array()) user_error("{}: \"measured\" must be an array of sizes, it is {}", where, m.type_name());
  std::vector<Measured> out;
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string w = fmt::format("{}: measured[{}]", where, i);
    const json& e = m[i];
    if (!e.is_object()) user_error("{} must be an object, it is {}", w, e.type_name());
    Measured x;
    x.bytes = get_uint(e, "bytes", w, row.lo, row.hi);
    x.mpi_us = get_time(e, "mpi_us", w);
    if (e.contains("plan_us")) x.plan_us = get_time(e, "plan_us", w);
    if (e.contains("best")) x.best = get_string(e, "best", w);
    if (e.contains("type")) x.type = get_string(e, "type", w);
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

const char* call_op_name(CallOp op) { return kOpNames[static_cast<int>(op)]; }

CallOp parse_call_op(const std::string& name) {
  for (int i = 0; i < kNumCallOps; ++i)
    if (name == kOpNames[i]) return static_cast<CallOp>(i);
  user_error("unknown operation \"{}\" (valid: broadcast, reduce, allgather, allreduce, reduce-scatter, scan, exscan)",
             name);
}

void PlanTable::index() {
  groups.clear();
  for (size_t i = 0; i < rows.size(); ++i) {
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const Group& x) { return x.op == rows[i].op && x.K == rows[i].K; });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{rows[i].op, rows[i].K, {}});
    g->rows.push_back(static_cast<uint32_t>(i));
  }
  indexed = rows.size();

  // The ranges sent to MPI whatever the call needs: cut (op, K)'s byte axis
  // at every row's ends; on each piece the first row containing it decides
  // (first match wins): none → kWhyNoRow, "mpi" → kWhyRowSaysMpi, a plan →
  // select decides (it may skip the plan for a property and go on).
  to_mpi.clear();
  for (auto& s : spans) s.clear();
  for (auto& s : far_spans) s.clear();
  for (const Group& g : groups) {
    std::vector<uint64_t> cuts{0};
    for (uint32_t i : g.rows) {
      cuts.push_back(rows[i].lo);
      if (rows[i].hi != UINT64_MAX) cuts.push_back(rows[i].hi + 1);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    Span sp{g.K, static_cast<uint32_t>(to_mpi.size()), 0, true};
    for (size_t c = 0; c < cuts.size(); ++c) {
      const uint64_t lo = cuts[c], hi = c + 1 < cuts.size() ? cuts[c + 1] - 1 : UINT64_MAX;
      const char* why = kWhyNoRow;
      for (uint32_t i : g.rows)
        if (rows[i].lo <= lo && lo <= rows[i].hi) {
          why = rows[i].plan < 0 ? kWhyRowSaysMpi : nullptr;
          break;
        }
      if (!why) continue;
      if (sp.count && to_mpi.back().why == why && to_mpi.back().hi + 1 == lo)
        to_mpi.back().hi = hi;
      else
        to_mpi.push_back(ToMpi{lo, hi, why}), ++sp.count;
    }
    if (g.K < kDirectK) {
      std::vector<Span>& by_k = spans[static_cast<int>(g.op)];
      if (by_k.size() <= g.K) by_k.resize(static_cast<size_t>(g.K) + 1);
      by_k[g.K] = sp;
    } else {
      far_spans[static_cast<int>(g.op)].push_back(sp);
    }
  }
  for (auto& f : far_spans)
    std::sort(f.begin(), f.end(), [](const Span& a, const Span& b) { return a.K < b.K; });
}

const PlanTable::Span* PlanTable::far_span(CallOp op, uint32_t K) const {
  const std::vector<Span>& f = far_spans[static_cast<int>(op)];
  auto it = std::lower_bound(f.begin(), f.end(), K, [](const Span& s, uint32_t k) { return s.K < k; });
  return it != f.end() && it->K == K ? &*it : nullptr;
}

namespace {

// Calls f(row) for the rows of (op, K) in table order until it returns
// true; the row it stopped at, or nullptr.
template <class F>
const TableRow* scan_rows(const PlanTable& t, CallOp op, uint32_t K, F f) {
  if (t.indexed == t.rows.size()) {
    for (const PlanTable::Group& g : t.groups)
      if (g.op == op && g.K == K) {
        for (uint32_t i : g.rows)
          if (f(t.rows[i])) return &t.rows[i];
        return nullptr;
      }
    return nullptr;
  }
  for (const TableRow& r : t.rows)
    if (r.op == op && r.K == K && f(r)) return &r;
  return nullptr;
}

}  // namespace

const TableRow* PlanTable::find(CallOp op, uint32_t K, uint64_t bytes) const {
  return scan_rows(*this, op, K, [&](const TableRow& r) { return r.lo <= bytes && bytes <= r.hi; });
}

bool PlanTable::is_tuned(CallOp op, uint32_t K) const {
  for (const Tuned& t : tuned)
    if (t.op == op && t.K == K) return true;
  return false;
}

const TableRow* PlanTable::select(CallOp op, uint32_t K, uint64_t bytes, const Needs& needs, int* skipped) const {
  if (skipped) *skipped = 0;
  return scan_rows(*this, op, K, [&](const TableRow& r) {
    if (bytes < r.lo || bytes > r.hi) return false;
    if (r.plan < 0 || meets(plans[static_cast<size_t>(r.plan)], needs)) return true;
    if (skipped) ++*skipped;
    return false;
  });
}

PlanTable parse_plan_table(const std::string& text, const std::string& path, const std::string& dir) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    user_error("{}: not JSON ({})", path, e.what());
  }
  if (!j.is_object()) user_error("{}: a plan set index is a JSON object, this is {}", path, j.type_name());
  const std::string format = get_string(j, "format", path);
  if (format != kPlanSetFormat)
    user_error("{}: \"format\" is \"{}\", a plan set index has \"{}\"", path, format, kPlanSetFormat);
  const uint64_t version = get_uint(j, "version", path, 0, UINT32_MAX);
  if (version != kPlanSetVersion)
    user_error("{}: version {} is not supported (this collplan reads version {})", path, version, kPlanSetVersion);

  PlanTable t;
  t.dir = dir;
  std::map<std::string, int> by_name;
  const json& plans = field(j, "plans", path);
  if (!plans.is_object()) user_error("{}: \"plans\" must be an object (name -> plan), it is {}", path, plans.type_name());
  for (const auto& [name, p] : plans.items()) {
    const std::string where = fmt::format("{}: plan \"{}\"", path, name);
    if (!p.is_object()) user_error("{} must be an object, it is {}", where, p.type_name());
    PlanEntry e;
    e.name = name;
    e.file = get_string(p, "file", where);
    if (e.file.empty() || e.file.front() == '/' || e.file.find("..") != std::string::npos)
      user_error("{}: \"file\" \"{}\" must be a relative path inside the set's directory (no \"..\")", where, e.file);
    e.digest = get_string(p, "digest", where);
    if (e.digest.size() != 32 || e.digest.find_first_not_of("0123456789abcdef") != std::string::npos)
      user_error("{}: \"digest\" must be 32 lowercase hex digits (the plan's content hash), it is \"{}\"", where,
                 e.digest);
    try {
      e.op = parse_call_op(get_string(p, "op", where));
    } catch (const UserError& err) {
      user_error("{}: {}", where, err.what());
    }
    e.K = static_cast<uint32_t>(get_uint(p, "K", where, 2, 1u << 20));
    e.blocks = static_cast<uint32_t>(get_uint(p, "blocks", where, 1, 1u << 24));
    e.algorithm = p.contains("algorithm") ? get_string(p, "algorithm", where) : std::string();
    if (is_reduction(e.op)) {
      e.exact = get_bool(p, "exact", where);
      e.ordered = get_bool(p, "ordered", where);
      e.consistent = get_bool(p, "consistent", where);
    }
    by_name[name] = static_cast<int>(t.plans.size());
    t.plans.push_back(std::move(e));
  }
  const json& table = field(j, "table", path);
  if (!table.is_array()) user_error("{}: \"table\" must be an array of rows, it is {}", path, table.type_name());
  for (size_t i = 0; i < table.size(); ++i) {
    const json& r = table[i];
    const std::string where = fmt::format("{}: table row {}", path, i);
    if (!r.is_object()) user_error("{} must be an object, it is {}", where, r.type_name());
    TableRow row;
    try {
      row.op = parse_call_op(get_string(r, "op", where));
    } catch (const UserError& err) {
      user_error("{}: {}", where, err.what());
    }
    row.K = static_cast<uint32_t>(get_uint(r, "K", where, 2, 1u << 20));
    const json& b = field(r, "bytes", where);
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
        b[0].get<uint64_t>() > b[1].get<uint64_t>())
      user_error("{}: \"bytes\" must be [lo, hi] with integers 0 <= lo <= hi, it is {}", where, b.dump());
    row.lo = b[0].get<uint64_t>();
    row.hi = b[1].get<uint64_t>();
    const std::string plan = get_string(r, "plan", where);
    if (plan != "mpi") {
      auto it = by_name.find(plan);
      if (it == by_name.end())
        user_error("{}: plan \"{}\" is not in \"plans\" (name one of them, or \"mpi\")", where, plan);
      const PlanEntry& e = t.plans[static_cast<size_t>(it->second)];
      if (e.op != row.op || e.K != row.K)
        user_error("{}: plan \"{}\" is a {} plan for K = {}, the row is for {} at K = {}", where, plan,
                   call_op_name(e.op), e.K, call_op_name(row.op), row.K);
      row.plan = it->second;
    }
    t.measured.push_back(r.contains("measured") ? parse_measured(r["measured"], row, where) : std::vector<Measured>{});
    t.rows.push_back(row);
  }
  // "tuned": false (plan-set's) or the list of what was measured.
  if (j.contains("tuned") && !(j["tuned"].is_boolean() && !j["tuned"].get<bool>())) {
    const json& tu = j["tuned"];
    if (!tu.is_array())
      user_error("{}: \"tuned\" must be false or a list of {{\"op\", \"K\"}}, it is {}", path, tu.dump());
    for (size_t i = 0; i < tu.size(); ++i) {
      const std::string where = fmt::format("{}: tuned[{}]", path, i);
      if (!tu[i].is_object()) user_error("{} must be an object, it is {}", where, tu[i].type_name());
      Tuned x;
      try {
        x.op = parse_call_op(get_string(tu[i], "op", where));
      } catch (const UserError& err) {
        user_error("{}: {}", where, err.what());
      }
      x.K = static_cast<uint32_t>(get_uint(tu[i], "K", where, 2, 1u << 20));
      t.tuned.push_back(x);
    }
  }
  t.index();
  return t;
}

PlanTable read_plan_table(const std::string& dir) {
  const std::string path = dir + "/index.json";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) user_error("{}: cannot read the plan set index (no such file)", path);
  if (!S_ISREG(st.st_mode)) user_error("{}: not a regular file", path);
  if (static_cast<uint64_t>(st.st_size) > kMaxIndexBytes)
    user_error("{}: {} bytes, larger than a plan set index may be ({} bytes)", path, st.st_size, kMaxIndexBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("{}: cannot open the plan set index", path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_plan_table(text, path, dir);
}

}  // namespace collplan::pmpi
