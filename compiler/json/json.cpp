// JSON export/import of plans. Schema: json.h and docs/plan-format.md.
#include "json/json.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <memory>

#include <fmt/format.h>

#include "matrix/matrix.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/safe_file.h"

namespace collplan::ir {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "collplan-plan";
constexpr uint64_t kVersion = 1;
constexpr uint64_t kMaxMatrixEntries = uint64_t{1} << 28;

// ─── Export ─────────────────────────────────────────────────────────────────
//
// The builders are templates over the JSON type: to_json returns a plain
// nlohmann::json (members sorted by name), write_json_file streams
// nlohmann::ordered_json so a file reads in the documented order (rank, then
// its steps; t, sends, recvs, ops). Both are the same document.

template <typename J>
J field_json(const Field& f) {
  if (f.kind() == FieldKind::GF2m) return J{{"kind", "gf2m"}, {"m", f.m()}, {"poly", f.poly()}};
  return J{{"kind", "prime"}, {"q", f.size()}};
}

bool is_default(const MatrixSpec& m) {
  const MatrixSpec d;
  return m.family == d.family && m.rows == 0 && m.cols == 0 && m.seed == 0 && m.points.empty() && m.perm.empty() &&
         m.entries.empty() && m.source.empty() && m.digest == d.digest;
}

template <typename J>
J matrix_json(const MatrixSpec& m, const Field& f, bool with_matrix) {
  J j = J::object();
  j["family"] = m.family;
  j["rows"] = m.rows;
  j["cols"] = m.cols;
  if (m.family == "random" || m.seed != 0) j["seed"] = m.seed;
  if (m.family == "vandermonde" || !m.points.empty()) j["points"] = m.points;
  if (m.family == "permutation" || !m.perm.empty()) j["perm"] = m.perm;
  if (!m.source.empty()) j["source"] = m.source;
  j["digest"] = m.digest.hex();
  if (with_matrix || m.family == "explicit") {
    // Explicit entries are the matrix; any other family is rebuilt from its
    // parameters.
    std::vector<Elem> flat;
    if (m.family == "explicit") {
      COLLPLAN_ASSERT(m.entries.size() == static_cast<size_t>(m.rows) * m.cols,
                      fmt::format("explicit matrix holds {} entries for {}x{}", m.entries.size(), m.rows, m.cols));
      flat = m.entries;
    } else {
      Matrix mat = materialize(m, f);
      flat = std::move(mat.a);
    }
    J rows = J::array();
    for (uint32_t i = 0; i < m.rows; ++i)
      rows.push_back(std::vector<Elem>(flat.begin() + static_cast<ptrdiff_t>(i) * m.cols,
                                       flat.begin() + static_cast<ptrdiff_t>(i + 1) * m.cols));
    j["entries"] = std::move(rows);
  }
  return j;
}

template <typename J>
J spec_json(const Spec& s, bool with_matrix) {
  J j = J::object();
  j["op"] = op_name(s.op);
  j["K"] = s.K;
  j["p"] = s.p;
  j["lambda"] = s.lambda;
  j["field"] = field_json<J>(s.field);
  if (!is_default(s.matrix)) j["matrix"] = matrix_json<J>(s.matrix, s.field, with_matrix);
  j["algorithm"] = s.algorithm;
  j["blocks"] = s.blocks;
  if (s.op == OpKind::Broadcast || s.op == OpKind::Reduce || s.root != 0) j["root"] = s.root;
  if (is_code_op(s.op) || s.N != 0) j["N"] = s.N;
  if (s.op == OpKind::Allgatherv || !s.counts.empty()) j["counts"] = s.counts;
  if (s.exclusive) j["exclusive"] = true;
  if (s.op == OpKind::Repair || s.op == OpKind::Decode || !s.lost.empty()) j["lost"] = s.lost;
  if (s.op == OpKind::Repair || s.op == OpKind::Decode || !s.helpers.empty()) j["helpers"] = s.helpers;
  if (s.op == OpKind::Decode || !s.to.empty()) j["to"] = s.to;
  return j;
}

template <typename J>
J terms_json(std::span<const Term> terms) {
  J a = J::array();
  for (const Term& t : terms) a.push_back(J::array({t.slot, t.coeff}));
  return a;
}

template <typename J>
J rank_json(const Program& prog) {
  J steps = J::array();
  for (const Step& st : prog.steps) {
    J sends = J::array(), recvs = J::array(), ops = J::array();
    for (const Send& s : st.sends) {
      J payload = J::array();
      for (const Combo& c : s.payload) payload.push_back(terms_json<J>(c.terms));
      sends.push_back(J{{"port", s.port}, {"to", s.to}, {"payload", std::move(payload)}});
    }
    for (const Recv& r : st.recvs)
      recvs.push_back(J{{"port", r.port}, {"from", r.from}, {"sent_at", r.sent_at}, {"into", r.into}});
    for (const Op& o : st.ops) {
      J op{{"dst", o.dst}, {"terms", terms_json<J>(o.terms)}};
      if (o.matrix_col != kNoCol) op["matrix_col"] = o.matrix_col;
      ops.push_back(std::move(op));
    }
    steps.push_back(J{{"t", st.t}, {"sends", std::move(sends)}, {"recvs", std::move(recvs)}, {"ops", std::move(ops)}});
  }
  return J{{"rank", prog.rank},
              {"slots", prog.num_slots},
              {"inputs", prog.inputs},
              {"outputs", prog.outputs},
              {"steps", std::move(steps)}};
}

json cost_or_empty(const json& cost) { return cost.is_null() ? json::object() : cost; }

// ─── Import ─────────────────────────────────────────────────────────────────

std::string member(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }
std::string element(const std::string& path, size_t i) { return fmt::format("{}[{}]", path, i); }

template <typename... Args>
[[noreturn]] void bad(const std::string& path, fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format("plan JSON: {}: {}", path.empty() ? "(document)" : path,
                              fmt::format(f, std::forward<Args>(args)...)));
}

// The document is a plan, but the plan breaks a rule of ir/plan.h (a port,
// rank, slot, matrix column or step out of range): the plan is wrong
// (VerifyError, PlanFault::Structure; exit status 1), not the file.
template <typename... Args>
[[noreturn]] void wrong(const std::string& path, fmt::format_string<Args...> f, Args&&... args) {
  throw VerifyError(fmt::format("plan JSON: {}: {}", path.empty() ? "(document)" : path,
                                fmt::format(f, std::forward<Args>(args)...)),
                    PlanFault::Structure);
}

const char* type_name(const json& v) {
  if (v.is_number_integer()) return "integer";
  return v.type_name();
}

const json& need_object(const json& v, const std::string& path) {
  if (!v.is_object()) bad(path, "expected an object, got {}", type_name(v));
  return v;
}

const json& need_array(const json& v, const std::string& path) {
  if (!v.is_array()) bad(path, "expected an array, got {}", type_name(v));
  return v;
}

// Refuses members other than `allowed`, so a misspelt key is an error rather
// than silently missing data.
void only_keys(const json& obj, const std::string& path, std::initializer_list<const char*> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      std::string valid;
      for (const char* a : allowed) valid += fmt::format("{}{}", valid.empty() ? "" : ", ", a);
      bad(member(path, it.key().c_str()), "unknown member (valid here: {})", valid);
    }
  }
}

const json& need(const json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(member(path, key), "missing");
  return *it;
}

const json* maybe(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

uint64_t as_uint(const json& v, const std::string& path, uint64_t max) {
  uint64_t x = 0;
  if (v.is_number_unsigned()) {
    x = v.get<uint64_t>();
  } else if (v.is_number_integer()) {
    int64_t s = v.get<int64_t>();
    if (s < 0) bad(path, "{} is negative (expected an integer in 0..{})", s, max);
    x = static_cast<uint64_t>(s);
  } else {
    bad(path, "expected a non-negative integer, got {}", type_name(v));
  }
  if (x > max) bad(path, "{} is too large (valid: 0..{})", x, max);
  return x;
}

uint32_t as_u32(const json& v, const std::string& path) { return static_cast<uint32_t>(as_uint(v, path, UINT32_MAX)); }

// An index into [0, limit): a slot, port, rank or matrix column. `noun`
// names it; `limit_desc` says where the limit comes from, with {} standing
// for the limit ("p = {}"). Formatted only on error: this runs per term.
uint32_t as_index(const json& v, const std::string& path, uint32_t limit, const char* noun, const char* limit_desc) {
  uint64_t x = as_uint(v, path, UINT32_MAX);
  if (x >= limit) {
    const std::string desc = fmt::format(fmt::runtime(limit_desc), limit);
    if (limit == 0) wrong(path, "{} is not a {} (there are none: {})", x, noun, desc);
    wrong(path, "{} is not a {} (valid: 0..{}, {})", x, noun, limit - 1, desc);
  }
  return static_cast<uint32_t>(x);
}

constexpr const char* kSlotsDesc = "the rank has {} slots";

std::string as_string(const json& v, const std::string& path) {
  if (!v.is_string()) bad(path, "expected a string, got {}", type_name(v));
  return v.get<std::string>();
}

Elem as_elem(const json& v, const std::string& path, const Field& f) {
  uint64_t x = as_uint(v, path, UINT64_MAX);
  if (!f.valid(x)) bad(path, "{} is not an element of {} (valid: 0..{})", x, f.name(), f.size() - 1);
  return static_cast<Elem>(x);
}

Field parse_field(const json& v, const std::string& path) {
  need_object(v, path);
  std::string kind = as_string(need(v, "kind", path), member(path, "kind"));
  try {
    if (kind == "gf2m") {
      only_keys(v, path, {"kind", "m", "poly"});
      return Field::gf2m(as_u32(need(v, "m", path), member(path, "m")),
                         as_u32(need(v, "poly", path), member(path, "poly")));
    }
    if (kind == "prime") {
      only_keys(v, path, {"kind", "q"});
      return Field::prime(as_uint(need(v, "q", path), member(path, "q"), UINT64_MAX));
    }
  } catch (const UserError& e) {
    if (std::string_view(e.what()).starts_with("plan JSON:")) throw;
    bad(path, "{}", e.what());
  }
  bad(member(path, "kind"), "unknown field kind '{}' (valid: gf2m, prime)", kind);
}

Digest parse_digest(const json& v, const std::string& path) {
  std::string s = as_string(v, path);
  Digest d;
  auto nib = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  bool ok = s.size() == 32;
  for (size_t i = 0; ok && i < 16; ++i) {
    int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
    ok = hi >= 0 && lo >= 0;
    if (ok) d.bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  if (!ok) bad(path, "'{}' is not a digest (expected 32 hexadecimal digits)", s);
  return d;
}

MatrixSpec parse_matrix(const json& v, const std::string& path, const Field& f, uint32_t ranks) {
  need_object(v, path);
  only_keys(v, path, {"family", "rows", "cols", "seed", "points", "perm", "source", "digest", "entries"});
  MatrixSpec m;
  m.family = as_string(need(v, "family", path), member(path, "family"));
  m.rows = as_u32(need(v, "rows", path), member(path, "rows"));
  m.cols = as_u32(need(v, "cols", path), member(path, "cols"));
  // A document cannot ask for more than kMaxMatrixEntries (K = 16384) to be
  // built, nor reserved for its entries.
  if (static_cast<uint64_t>(m.rows) * m.cols > kMaxMatrixEntries)
    bad(path, "a {} x {} matrix is too large to rebuild (at most {} entries)", m.rows, m.cols, kMaxMatrixEntries);
  // No operation uses more than (its ranks)^2 entries (encode: K x K,
  // decentralized-encode: at most K x N); the checker judges the exact shape.
  if (static_cast<uint64_t>(m.rows) * m.cols > uint64_t{ranks} * ranks)
    bad(path, "a {} x {} matrix is larger than any operation on {} ranks uses (at most {}^2 entries)", m.rows, m.cols,
        ranks, ranks);
  if (const json* s = maybe(v, "seed")) m.seed = as_uint(*s, member(path, "seed"), UINT64_MAX);
  if (const json* pts = maybe(v, "points")) {
    const std::string pp = member(path, "points");
    need_array(*pts, pp);
    for (size_t i = 0; i < pts->size(); ++i) m.points.push_back(as_elem((*pts)[i], element(pp, i), f));
  }
  if (const json* perm = maybe(v, "perm")) {
    const std::string pp = member(path, "perm");
    need_array(*perm, pp);
    for (size_t i = 0; i < perm->size(); ++i) m.perm.push_back(as_u32((*perm)[i], element(pp, i)));
  }
  if (const json* src = maybe(v, "source")) m.source = as_string(*src, member(path, "source"));

  // Entries as given (row-major), checked for shape and field membership.
  std::vector<Elem> given;
  const json* entries = maybe(v, "entries");
  const std::string ep = member(path, "entries");
  if (entries) {
    need_array(*entries, ep);
    if (entries->size() != m.rows) bad(ep, "{} rows given, the matrix has rows = {}", entries->size(), m.rows);
    given.reserve(static_cast<size_t>(m.rows) * m.cols);
    for (size_t i = 0; i < entries->size(); ++i) {
      const std::string rp = element(ep, i);
      const json& row = need_array((*entries)[i], rp);
      if (row.size() != m.cols) bad(rp, "{} entries given, the matrix has cols = {}", row.size(), m.cols);
      for (size_t jx = 0; jx < row.size(); ++jx) given.push_back(as_elem(row[jx], element(rp, jx), f));
    }
  }
  if (m.family == "explicit") {
    if (!entries) bad(ep, "missing (family \"explicit\" is defined by its entries)");
    m.entries = given;
  }

  // Rebuild the matrix from its family: this checks the parameters and
  // yields the digest that binds the plan to the matrix.
  Matrix mat;
  try {
    mat = materialize(m, f);
  } catch (const UserError& e) {
    bad(path, "{}", e.what());
  }
  if (mat.rows != m.rows || mat.cols != m.cols)
    bad(path, "rows x cols = {} x {}, but the {} matrix it describes is {} x {}", m.rows, m.cols, m.family, mat.rows,
        mat.cols);
  const Digest computed = matrix_digest(mat, f);
  if (const json* d = maybe(v, "digest")) {
    const Digest stored = parse_digest(*d, member(path, "digest"));
    if (!(stored == computed))
      bad(member(path, "digest"), "{} does not match the matrix it describes (its entries give {})", stored.hex(),
          computed.hex());
  }
  m.digest = computed;
  if (entries && m.family != "explicit") {
    for (size_t i = 0; i < given.size(); ++i)
      if (given[i] != mat.a[i])
        bad(element(element(ep, i / m.cols), i % m.cols), "{} differs from the {} matrix's entry {}", given[i],
            m.family, mat.a[i]);
  }
  return m;
}

// `doc` (when given): the whole plan document, whose "ranks" must list the
// spec's rank count of programs (checked before the matrix is rebuilt, so a
// small document cannot claim a large K and have a K x K matrix built).
Spec parse_spec(const json& v, const std::string& path, const json* doc = nullptr) {
  need_object(v, path);
  only_keys(v, path, {"op", "K", "p", "lambda", "field", "matrix", "algorithm", "blocks", "root", "N", "counts", "exclusive",
                      "lost", "helpers", "to"});
  Spec s;
  const std::string op = as_string(need(v, "op", path), member(path, "op"));
  try {
    s.op = parse_op(op);
  } catch (const UserError& e) {
    bad(member(path, "op"), "{}", e.what());
  }
  s.K = as_u32(need(v, "K", path), member(path, "K"));
  s.p = as_u32(need(v, "p", path), member(path, "p"));
  s.lambda = as_u32(need(v, "lambda", path), member(path, "lambda"));
  s.field = parse_field(need(v, "field", path), member(path, "field"));
  s.algorithm = as_string(need(v, "algorithm", path), member(path, "algorithm"));
  if (const json* b = maybe(v, "blocks")) s.blocks = as_u32(*b, member(path, "blocks"));
  if (const json* r = maybe(v, "root")) s.root = as_u32(*r, member(path, "root"));
  if (const json* n = maybe(v, "N")) s.N = as_u32(*n, member(path, "N"));
  if (const json* e = maybe(v, "exclusive")) {
    if (!e->is_boolean()) bad(member(path, "exclusive"), "expected true or false, got {}", type_name(*e));
    s.exclusive = e->get<bool>();
  }
  if (const json* c = maybe(v, "counts")) {
    const std::string cp = member(path, "counts");
    need_array(*c, cp);
    for (size_t i = 0; i < c->size(); ++i) s.counts.push_back(as_u32((*c)[i], element(cp, i)));
  }
  for (auto [key, list] : {std::pair{"lost", &s.lost}, std::pair{"helpers", &s.helpers}, std::pair{"to", &s.to}})
    if (const json* c = maybe(v, key)) {
      const std::string cp = member(path, key);
      need_array(*c, cp);
      for (size_t i = 0; i < c->size(); ++i) list->push_back(as_u32((*c)[i], element(cp, i)));
    }
  try {
    validate_spec_basics(s);
  } catch (const UserError& e) {
    bad(path, "{}", e.what());
  }
  if (doc) {
    const size_t listed = need_array(need(*doc, "ranks", ""), "ranks").size();
    if (listed != num_ranks(s)) bad("ranks", "{} programs listed, the spec has {} ranks", listed, num_ranks(s));
  }
  // The matrix is parsed after the basics so that its checks run on a sane
  // K and field.
  if (const json* m = maybe(v, "matrix")) s.matrix = parse_matrix(*m, member(path, "matrix"), s.field, num_ranks(s));
  return s;
}

std::vector<Term> parse_terms(const json& v, const std::string& path, uint32_t num_slots, const Field& f) {
  need_array(v, path);
  std::vector<Term> terms;
  terms.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string tp = element(path, i);
    const json& t = need_array(v[i], tp);
    if (t.size() != 2) bad(tp, "a term is [slot, coeff], got {} values", t.size());
    Term term;
    term.slot = as_index(t[0], element(tp, 0), num_slots, "slot", kSlotsDesc);
    term.coeff = as_elem(t[1], element(tp, 1), f);
    terms.push_back(term);
  }
  return terms;
}

std::vector<SlotId> parse_slots(const json& v, const std::string& path, uint32_t num_slots) {
  need_array(v, path);
  std::vector<SlotId> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(as_index(v[i], element(path, i), num_slots, "slot", kSlotsDesc));
  return out;
}

Program parse_rank(const json& v, const std::string& path, Rank k, const Spec& spec, uint32_t num_steps) {
  need_object(v, path);
  only_keys(v, path, {"rank", "slots", "inputs", "outputs", "steps"});
  Program prog;
  prog.rank = as_u32(need(v, "rank", path), member(path, "rank"));
  if (prog.rank != k) wrong(member(path, "rank"), "{} found at position {} (ranks are listed in order 0..K-1)",
                          prog.rank, k);
  prog.num_slots = as_u32(need(v, "slots", path), member(path, "slots"));
  prog.inputs = parse_slots(need(v, "inputs", path), member(path, "inputs"), prog.num_slots);
  prog.outputs = parse_slots(need(v, "outputs", path), member(path, "outputs"), prog.num_slots);
  const std::string sp = member(path, "steps");
  const json& steps = need_array(need(v, "steps", path), sp);
  const Field& f = spec.field;
  StepNo prev = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string tp = element(sp, i);
    const json& sj = need_object(steps[i], tp);
    only_keys(sj, tp, {"t", "sends", "recvs", "ops"});
    Step& st = prog.steps.emplace_back();
    st.t = as_u32(need(sj, "t", tp), member(tp, "t"));
    if (st.t <= prev || st.t > num_steps)
      wrong(member(tp, "t"), "step {} after step {} (steps increase strictly within 1..{})", st.t, prev, num_steps);
    prev = st.t;

    const std::string sendp = member(tp, "sends");
    const json& sends = need_array(need(sj, "sends", tp), sendp);
    for (size_t x = 0; x < sends.size(); ++x) {
      const std::string xp = element(sendp, x);
      const json& sx = need_object(sends[x], xp);
      only_keys(sx, xp, {"port", "to", "payload"});
      Send& s = st.sends.emplace_back();
      s.port = as_index(need(sx, "port", xp), member(xp, "port"), spec.p, "port", "p = {}");
      s.to = as_index(need(sx, "to", xp), member(xp, "to"), num_ranks(spec), "rank",
                          is_code_op(spec.op) ? "N = {}" : "K = {}");
      const std::string pp = member(xp, "payload");
      const json& payload = need_array(need(sx, "payload", xp), pp);
      for (size_t e = 0; e < payload.size(); ++e)
        s.payload.push_back(Combo{parse_terms(payload[e], element(pp, e), prog.num_slots, f)});
    }

    const std::string recvp = member(tp, "recvs");
    const json& recvs = need_array(need(sj, "recvs", tp), recvp);
    for (size_t x = 0; x < recvs.size(); ++x) {
      const std::string xp = element(recvp, x);
      const json& rx = need_object(recvs[x], xp);
      only_keys(rx, xp, {"port", "from", "sent_at", "into"});
      Recv& r = st.recvs.emplace_back();
      r.port = as_index(need(rx, "port", xp), member(xp, "port"), spec.p, "port", "p = {}");
      r.from = as_index(need(rx, "from", xp), member(xp, "from"), num_ranks(spec), "rank",
                          is_code_op(spec.op) ? "N = {}" : "K = {}");
      r.sent_at = as_u32(need(rx, "sent_at", xp), member(xp, "sent_at"));
      if (r.sent_at < 1 || r.sent_at > st.t)
        wrong(member(xp, "sent_at"), "{}: a message received in step {} was sent in step 1..{}", r.sent_at, st.t,
            st.t);
      r.into = parse_slots(need(rx, "into", xp), member(xp, "into"), prog.num_slots);
    }

    const std::string opp = member(tp, "ops");
    const json& ops = need_array(need(sj, "ops", tp), opp);
    for (size_t x = 0; x < ops.size(); ++x) {
      const std::string xp = element(opp, x);
      const json& ox = need_object(ops[x], xp);
      only_keys(ox, xp, {"dst", "terms", "matrix_col"});
      Op& o = st.ops.emplace_back();
      o.dst = as_index(need(ox, "dst", xp), member(xp, "dst"), prog.num_slots, "slot", kSlotsDesc);
      o.terms = parse_terms(need(ox, "terms", xp), member(xp, "terms"), prog.num_slots, f);
      if (const json* c = maybe(ox, "matrix_col"))
        o.matrix_col = as_index(*c, member(xp, "matrix_col"), spec.matrix.cols, "matrix column",
                                  "the matrix has {} columns");
    }
  }
  if (prog.num_slots > slot_limit(prog))
    bad(member(path, "slots"), "{} slots, but the program writes at most {} (valid: slots <= {}, 4 per write + 64)",
        prog.num_slots, (slot_limit(prog) - 64) / 4, slot_limit(prog));
  return prog;
}

}  // namespace

// ─── Public API ─────────────────────────────────────────────────────────────

Field field_from_json(const json& v, const std::string& path) { return parse_field(v, path); }

MatrixSpec matrix_from_json(const json& v, const std::string& path, const Field& f) {
  // A spec file's matrix: no rank count to bound it by yet (build_spec checks
  // its shape against the spec); kMaxMatrixEntries still holds.
  return parse_matrix(v, path, f, UINT32_MAX);
}

json to_json(const Plan& plan, bool with_matrix, const json& cost) {
  json ranks = json::array();
  for (const Program& prog : plan.ranks) ranks.push_back(rank_json<json>(prog));
  return json{{"format", kFormat},
              {"version", kVersion},
              {"num_steps", plan.num_steps},
              {"spec", spec_json<json>(plan.spec, with_matrix)},
              {"cost", cost_or_empty(cost)},
              {"ranks", std::move(ranks)}};
}

Plan from_json(const json& j) {
  need_object(j, "");
  only_keys(j, "", {"format", "version", "num_steps", "spec", "cost", "ranks"});
  const std::string format = as_string(need(j, "format", ""), "format");
  if (format != kFormat) bad("format", "'{}' is not a collplan plan (expected \"{}\")", format, kFormat);
  const uint64_t version = as_uint(need(j, "version", ""), "version", UINT64_MAX);
  if (version != kVersion) bad("version", "unsupported version {} (this collplan reads version {})", version, kVersion);

  Plan plan;
  plan.spec = parse_spec(need(j, "spec", ""), "spec", &j);
  const json* cost = maybe(j, "cost");
  if (cost) need_object(*cost, "cost");

  const json& ranks = need_array(need(j, "ranks", ""), "ranks");
  // num_steps is optional for documents written by other tools: it then
  // comes from cost.C1, or else from the last step any rank uses.
  if (const json* n = maybe(j, "num_steps")) {
    plan.num_steps = as_u32(*n, "num_steps");
  } else if (cost && cost->contains("C1")) {
    plan.num_steps = as_u32((*cost)["C1"], "cost.C1");
  } else {
    for (size_t k = 0; k < ranks.size(); ++k) {
      const json& r = ranks[k];
      if (!r.is_object() || !r.contains("steps") || !r["steps"].is_array()) continue;  // reported below
      for (const json& st : r["steps"])
        if (st.is_object() && st.contains("t") && st["t"].is_number_unsigned())
          plan.num_steps = std::max<uint64_t>(plan.num_steps, std::min<uint64_t>(st["t"].get<uint64_t>(), UINT32_MAX));
    }
  }

  plan.ranks.reserve(ranks.size());
  for (size_t k = 0; k < ranks.size(); ++k)
    plan.ranks.push_back(parse_rank(ranks[k], element("ranks", k), static_cast<Rank>(k), plan.spec, plan.num_steps));
  return plan;
}

nlohmann::json parse_json_strict(const char* data, size_t size, const std::string& name) {
  // The keys seen in each open object, innermost last; keys[d] belongs to
  // the object that opened at depth d.
  std::vector<std::vector<std::string>> keys;
  std::vector<std::string> where;  // the key under which each open object sits
  std::string last_key;
  auto check_keys = [&](int depth, json::parse_event_t event, json& parsed) {
    (void)depth;
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        where.push_back(last_key);
        last_key.clear();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        if (!where.empty()) where.pop_back();
        last_key.clear();
        break;
      case json::parse_event_t::array_start: last_key.clear(); break;
      case json::parse_event_t::key: {
        std::string k = parsed.get<std::string>();
        auto& seen = keys.back();
        if (std::find(seen.begin(), seen.end(), k) != seen.end())
          user_error("{}: invalid JSON: key \"{}\" appears twice in the {}", name, k,
                     where.back().empty() ? std::string("same object") : fmt::format("object \"{}\"", where.back()));
        seen.push_back(k);
        last_key = std::move(k);
        break;
      }
      default: break;
    }
    return true;
  };
  try {
    return json::parse(data, data + size, check_keys);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1E621
    user_error("{}: invalid JSON: {}", name, e.what());
  }
}

Plan read_json(const char* data, size_t size, const std::string& name) {
  const json j = parse_json_strict(data, size, name);
  try {
    return from_json(j);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", name, e.what()));
  } catch (const VerifyError& e) {
    throw VerifyError(fmt::format("{}: {}", name, e.what()), e.kind());
  }
}

Plan read_json_file(const std::string& path) {
  const std::string text = files::read_regular_file(path, "JSON plan file", kMaxPlanFileBytes);
  return read_json(text.data(), text.size(), path);
}

void write_json_file(const Plan& plan, const std::string& path, bool with_matrix, const json& cost) {
  files::OutputFile out(path, "JSON plan file");
  // Same members as to_json, in reading order, one rank per line.
  out.write(fmt::format("{{\"format\":{},\"version\":{},\"num_steps\":{},\n\"spec\":{},\n\"cost\":{},\n\"ranks\":[",
                        json(kFormat).dump(), kVersion, plan.num_steps,
                        spec_json<nlohmann::ordered_json>(plan.spec, with_matrix).dump(), cost_or_empty(cost).dump()));
  for (size_t k = 0; k < plan.ranks.size(); ++k) {
    out.write(k ? ",\n" : "\n");
    out.write(rank_json<nlohmann::ordered_json>(plan.ranks[k]).dump());
  }
  out.write("\n]}\n");
  out.commit();
}

}  // namespace collplan::ir
