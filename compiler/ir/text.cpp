// The human-readable plan dump (layout: text.h, docs/plan-format.md).
#include "ir/text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/error.h"

namespace collplan::ir {

namespace {

// Builds lines no wider than kTextWidth from atoms, each preceded by a
// separator. When an atom does not fit, the line ends with the separator
// (trailing blanks dropped: "…," or "… +") and the atom starts a new line at
// the continuation indent.
class Wrapper {
 public:
  Wrapper(std::string& out, std::string first, size_t cont_indent)
      : out_(out), line_(std::move(first)), cont_(cont_indent, ' ') {}
  // Room is kept for a separator of up to two characters ("," or " +")
  // after every atom, so the line still fits if it breaks there.
  void atom(const std::string& sep, const std::string& text) {
    if (line_.size() > cont_.size() && line_.size() + sep.size() + text.size() + 2 > kTextWidth) {
      std::string s = sep;
      while (!s.empty() && s.back() == ' ') s.pop_back();
      out_ += line_ + s + "\n";
      line_ = cont_ + text;
    } else {
      line_ += sep + text;
    }
  }
  void finish() { out_ += line_ + "\n"; }

 private:
  std::string& out_;
  std::string line_;
  std::string cont_;
};

std::string term_text(const Term& t) {
  return t.coeff == 1 ? fmt::format("s{}", t.slot) : fmt::format("{}*s{}", t.coeff, t.slot);
}

// Appends a combination's atoms: terms joined by " + ", "0" when empty.
// `lead` goes before the first atom, `trail` is glued to the last one.
void combo_atoms(Wrapper& w, std::span<const Term> terms, const std::string& lead, const std::string& trail) {
  if (terms.empty()) {
    w.atom(lead, "0" + trail);
    return;
  }
  for (size_t i = 0; i < terms.size(); ++i)
    w.atom(i == 0 ? lead : " + ", term_text(terms[i]) + (i + 1 == terms.size() ? trail : ""));
}

void slot_list(Wrapper& w, std::span<const SlotId> slots, const char* open, const char* sep, const char* close) {
  if (slots.empty()) {
    w.atom("", std::string(open) + close);
    return;
  }
  for (size_t i = 0; i < slots.size(); ++i)
    w.atom(i == 0 ? "" : sep, fmt::format("{}s{}{}", i == 0 ? open : "", slots[i], i + 1 == slots.size() ? close : ""));
}

template <typename T>
void number_list(Wrapper& w, const std::vector<T>& xs) {
  if (xs.empty()) {
    w.atom("", "[]");
    return;
  }
  for (size_t i = 0; i < xs.size(); ++i)
    w.atom(i == 0 ? "" : ", ", fmt::format("{}{}{}", i == 0 ? "[" : "", xs[i], i + 1 == xs.size() ? "]" : ""));
}

std::string field_text(const Field& f) {
  if (f.kind() == FieldKind::GF2m) return fmt::format("{} = GF(2^{}) mod {:#x}", f.name(), f.m(), f.poly());
  return fmt::format("{} = GF({})", f.name(), f.size());
}

// The structured families' parameter lists (ir/spec.h), each K long, with
// the names the header prints them under.
std::vector<const char*> structured_lists(const MatrixSpec& m) {
  if (m.family == "lagrange") return {"omega", "alpha"};
  if (m.family == "cauchy") return {"x", "y", "c", "d"};
  if (m.family == "rs-systematic") return {"x", "y", "v", "v'"};
  return {};
}

// What a structured family gives rank k, e.g. "point 17: gets f(17)";
// empty for the other families.
std::string rank_point(const MatrixSpec& m, Rank k) {
  const size_t K = m.cols;
  if (k >= K || m.points.size() < K) return {};
  if (m.family == "dft" || m.family == "draw-loose")
    return fmt::format("point {}: holds coefficient f_{}, gets f({})", m.points[k], k, m.points[k]);
  if (m.family == "inverse-dft" || m.family == "inverse-draw-loose")
    return fmt::format("point {}: holds f({}), gets coefficient f_{}", m.points[k], m.points[k], k);
  if (m.family == "lagrange" && m.points.size() == 2 * K)
    return fmt::format("holds f(omega_{} = {}), gets f(alpha_{} = {})", k, m.points[k], k, m.points[K + k]);
  if ((m.family == "cauchy" || m.family == "rs-systematic") && m.points.size() == 4 * K)
    return fmt::format("x_{} = {}, y_{} = {}", k, m.points[k], k, m.points[K + k]);
  return {};
}

bool has_matrix(const MatrixSpec& m) {
  const MatrixSpec d;
  return !(m.family == d.family && m.rows == 0 && m.cols == 0 && m.seed == 0 && m.points.empty() && m.perm.empty() &&
           m.entries.empty() && m.source.empty() && m.digest == d.digest);
}

// Explicit matrices up to this many entries are printed in the header.
constexpr size_t kMaxShownEntries = 256;

// `terms`: the header's last line (the whole plan's count, or one rank's).
void header_text(std::string& out, const Spec& s, uint32_t num_steps, const std::string& terms) {
  const auto line = [&](const char* key, const std::string& value) { out += fmt::format("  {:<10} {}\n", key, value); };
  out += "collplan plan\n";
  line("op", op_name(s.op));
  line("K", std::to_string(s.K));
  line("p", std::to_string(s.p));
  line("lambda", std::to_string(s.lambda));
  line("field", field_text(s.field));
  if (has_matrix(s.matrix)) {
    const MatrixSpec& m = s.matrix;
    std::string desc = fmt::format("{} {}x{}", m.family, m.rows, m.cols);
    if (m.family == "random" || m.seed != 0) desc += fmt::format(", seed {}", m.seed);
    if (!m.source.empty()) desc += fmt::format(", from {}", m.source);
    line("matrix", desc);
    const std::vector<const char*> lists = structured_lists(m);
    if (!lists.empty() && m.points.size() == lists.size() * m.cols) {
      for (size_t i = 0; i < lists.size(); ++i) {
        Wrapper w(out, fmt::format("  {:<10} ", lists[i]), 13);
        number_list(w, std::vector<Elem>(m.points.begin() + static_cast<ptrdiff_t>(i * m.cols),
                                         m.points.begin() + static_cast<ptrdiff_t>((i + 1) * m.cols)));
        w.finish();
      }
    } else if (!m.points.empty()) {
      Wrapper w(out, fmt::format("  {:<10} ", "points"), 13);
      number_list(w, m.points);
      w.finish();
      if (!rank_point(m, 0).empty())
        line("", "rank k's evaluation point is points[k]; f(z) = sum_r x_r z^r");
    }
    if (!m.perm.empty()) {
      Wrapper w(out, fmt::format("  {:<10} ", "perm"), 13);
      number_list(w, m.perm);
      w.finish();
    }
    if (!m.entries.empty()) {
      if (m.entries.size() <= kMaxShownEntries && m.cols > 0 && m.entries.size() % m.cols == 0) {
        for (size_t i = 0; i < m.entries.size() / m.cols; ++i) {
          Wrapper w(out, fmt::format("  {:<10} ", i == 0 ? "entries" : ""), 13);
          number_list(w, std::vector<Elem>(m.entries.begin() + i * m.cols, m.entries.begin() + (i + 1) * m.cols));
          w.finish();
        }
      } else {
        line("entries", fmt::format("({} entries, not shown)", m.entries.size()));
      }
    }
    line("digest", m.digest.hex());
  } else {
    line("matrix", "none");
  }
  line("algorithm", s.algorithm.empty() ? "(unnamed)" : s.algorithm);
  line("blocks", std::to_string(s.blocks));
  if (s.exclusive) line("scan", "exclusive");
  if (s.op == OpKind::Broadcast || s.op == OpKind::Reduce || s.root != 0) line("root", std::to_string(s.root));
  if (is_code_op(s.op) || s.N != 0) line("N", std::to_string(s.N));
  if (s.op == OpKind::Repair || s.op == OpKind::Decode) {
    line("code", s.matrix.cols == s.N ? "non-systematic G" : "systematic, G = [I | A]");
    line("lost", s.lost.empty() ? std::string("none") : fmt::format("{}", fmt::join(s.lost, ",")));
    line("helpers", fmt::format("{}", fmt::join(s.helpers, ",")));
    if (s.op == OpKind::Repair)
      line("outputs", "each lost rank receives its own symbol, sum_h c_h F[h][l] with G_H F = G_L");
    else
      line("to", fmt::format("{} (rank to[j] receives x_j)", fmt::join(s.to, ",")));
  }
  if (s.op == OpKind::DecentralizedEncode && s.N > s.K) {
    line("sources", fmt::format("ranks 0..{} hold x_0..x_{}{}", s.K - 1, s.K - 1,
                                s.blocks > 1 ? fmt::format(", each in {} blocks; output block b sums blocks b", s.blocks)
                                             : std::string()));
    if (s.matrix.cols == s.N)
      line("outputs", fmt::format("non-systematic: every rank j in 0..{} receives sum_k x_k G[k][j]", s.N - 1));
    else
      line("sinks", fmt::format("ranks {}..{}; sink {}+j receives sum_k x_k A[k][j] (systematic, G = [I | A])", s.K,
                                s.N - 1, s.K));
  }
  if (s.op == OpKind::Allgatherv || !s.counts.empty()) {
    Wrapper w(out, fmt::format("  {:<10} ", "counts"), 13);
    number_list(w, s.counts);
    w.finish();
  }
  line("steps", std::to_string(num_steps));
  line("terms", terms);
}

// With one rank shown, its own count: the plan may hold only that rank's
// program (read_rank), and the two must print the same.
std::string rank_terms(const Program& prog) { return fmt::format("{} in rank {}", count_terms(prog), prog.rank); }

void rank_text(std::string& out, const Program& prog, const MatrixSpec& matrix) {
  {
    Wrapper w(out, fmt::format("rank {}: {} slots, inputs ", prog.rank, prog.num_slots), 4);
    slot_list(w, prog.inputs, "[", ", ", "]");
    w.atom("", ", outputs ");
    slot_list(w, prog.outputs, "[", ", ", "]");
    if (const std::string pt = rank_point(matrix, prog.rank); !pt.empty()) w.atom("", "; " + pt);
    w.finish();
  }
  for (const Step& st : prog.steps) {
    out += fmt::format("  step {}\n", st.t);
    for (const Send& s : st.sends) {
      Wrapper w(out, fmt::format("    send port {} -> {} ", s.port, s.to), 8);
      if (s.payload.empty()) w.atom("", "[]");
      for (size_t i = 0; i < s.payload.size(); ++i)
        combo_atoms(w, s.payload[i].terms, i == 0 ? "[" : ", ", i + 1 == s.payload.size() ? "]" : "");
      w.finish();
    }
    for (const Recv& r : st.recvs) {
      Wrapper w(out, fmt::format("    recv port {} <- {} (sent {}) ->", r.port, r.from, r.sent_at), 8);
      if (r.into.empty()) w.atom(" ", "(nothing)");
      for (SlotId s : r.into) w.atom(" ", fmt::format("s{}", s));
      w.finish();
    }
    for (const Op& o : st.ops) {
      Wrapper w(out, fmt::format("    s{} :=", o.dst), 8);
      combo_atoms(w, o.terms, " ", "");
      if (o.matrix_col != kNoCol) w.atom("  ", fmt::format("(matrix col {})", o.matrix_col));
      w.finish();
    }
  }
}

}  // namespace

std::string to_text(const Plan& plan, std::optional<Rank> only_rank) {
  if (only_rank && *only_rank >= plan.ranks.size())
    user_error("rank {} is not in this plan (K = {}, valid 0..{})", *only_rank, plan.ranks.size(),
               plan.ranks.size() - 1);
  std::string out;
  header_text(out, plan.spec, plan.num_steps,
              only_rank ? rank_terms(plan.ranks[*only_rank]) : std::to_string(count_terms(plan)));
  for (const Program& prog : plan.ranks) {
    if (only_rank && prog.rank != *only_rank) continue;
    out += "\n";
    rank_text(out, prog, plan.spec.matrix);
  }
  return out;
}

std::string to_text(const Spec& spec, uint32_t num_steps, const Program& prog) {
  std::string out;
  header_text(out, spec, num_steps, rank_terms(prog));
  out += "\n";
  rank_text(out, prog, spec.matrix);
  return out;
}

}  // namespace collplan::ir
