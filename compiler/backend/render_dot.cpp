// The round diagram as DOT (render_dot.h).
#include "backend/render_dot.h"

#include <algorithm>

#include <fmt/format.h>

namespace collplan::backend {

namespace {

std::string dot_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace

std::string render_dot(const PlanView& v, const RenderOptions& o) {
  const Range R = rank_range(v, o), S = step_range(v, o);
  std::string s = "digraph collplan {\n";
  s += fmt::format("  label=\"{}\";\n  labelloc=t;\n", dot_escape((o.title.empty() ? "" : o.title + ": ") + plan_caption(v)));
  s += "  rankdir=LR;\n  nodesep=0.25;\n  ranksep=1.2;\n  splines=line;\n";
  s += "  node [shape=point, width=0.08, color=\"#555555\"];\n  edge [fontsize=9, arrowsize=0.6];\n";
  const uint32_t b0 = S.lo - 1;
  for (uint32_t b = b0; b <= S.hi; ++b) {
    s += fmt::format("  subgraph col{} {{\n    rank=same;\n", b);
    if (b == b0) {
      for (uint32_t r = R.lo; r <= R.hi; ++r)
        s += fmt::format("    r{}_{} [shape=plaintext, width=0, label=\"rank {}\"];\n", r, b, r);
    } else {
      s += fmt::format("    step{} [shape=plaintext, width=0, label=\"after step {}\"];\n", b, b);
      for (uint32_t r = R.lo; r <= R.hi; ++r) s += fmt::format("    r{}_{};\n", r, b);
    }
    s += "  }\n";
  }
  // Rows: rank r's timeline; the step labels stay above the first row.
  for (uint32_t r = R.lo; r <= R.hi; ++r)
    for (uint32_t b = b0 + 1; b <= S.hi; ++b)
      s += fmt::format("  r{}_{} -> r{}_{} [color=\"#dddddd\", arrowhead=none, weight=20];\n", r, b - 1, r, b);
  for (uint32_t b = b0 + 1; b <= S.hi; ++b)
    s += fmt::format("  step{} -> r{}_{} [style=invis];\n", b, R.lo, b);
  for (const Message& m : v.messages()) {
    if (!R.contains(m.from) || !R.contains(m.to) || m.sent > S.hi || m.lands < S.lo) continue;
    const uint32_t from_b = std::max(m.sent - 1, b0), to_b = std::min(m.lands, S.hi);
    std::string label = fmt::format("{}", m.elems);
    if (o.coefficients) {
      label += " [";
      for (size_t i = 0; i < m.send->payload.size(); ++i) label += (i ? "; " : "") + combo_text(m.send->payload[i]);
      label += "]";
    }
    const char* dash = port_dash(m.port);
    s += fmt::format(
        "  r{}_{} -> r{}_{} [id=\"msg_{}_{}_{}_{}\", class=\"msg\", label=\"{}\", color=\"{}\", fontcolor=\"{}\", "
        "penwidth={}{}, constraint=false, tooltip=\"rank {} -> {}, port {}, step {} -> {}{}\"];\n",
        m.from, from_b, m.to, to_b, m.from, m.to, m.port, m.sent, dot_escape(label), port_colour(m.port),
        port_colour(m.port), m.critical ? "3" : "1", *dash ? ", style=dashed" : "", m.from, m.to, m.port, m.sent,
        m.lands, m.critical ? ", critical path" : "");
  }
  s += "}\n";
  return s;
}

}  // namespace collplan::backend
