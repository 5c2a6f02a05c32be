// The round diagram and the summary view as SVG (render_svg.h).
#include "backend/render_svg.h"

#include <algorithm>

#include <fmt/format.h>

#include "passes/cost.h"
#include "support/error.h"

namespace collplan::backend {

namespace {

// Tableau 10: distinct at a glance, and readable on white.
constexpr const char* kPalette[10] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr const char* kDashes[4] = {"", "6 3", "2 2", "8 3 2 3"};
// Light to dark for the heat map; level 0 (no traffic) is white.
constexpr const char* kHeat[9] = {"#ffffff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6",
                                  "#4292c6", "#2171b5", "#08519c", "#08306b"};
// Beyond this many steps in view, Auto prefers the summary too: a wider
// picture is not read, it is scrolled.
constexpr uint32_t kDiagramMaxSteps = 200;
constexpr uint32_t kMaxPortBoxes = 16;

const char* kStyle =
    "<style>\n"
    "text{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;font-size:11px;fill:#222}\n"
    ".title{font-size:14px;font-weight:bold}\n"
    ".cap{font-size:12px}\n"
    ".rank{cursor:pointer}\n"
    "text.rank:hover{fill:#d62728}\n"
    "rect.rank:hover{fill:rgba(214,39,40,0.2)}\n"
    ".step{text-anchor:middle;font-weight:bold}\n"
    ".lbl{font-size:9px;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}\n"
    ".num{text-anchor:end;font-variant-numeric:tabular-nums}\n"
    ".mono{font-family:DejaVu Sans Mono,Menlo,monospace}\n"
    "</style>\n";

std::string svg_open(int w, int h) {
  return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
                     "class=\"collplan-plan\">\n",
                     w, h, w, h);
}

std::string arrow_markers(uint32_t ports) {
  std::string s = "<defs>\n";
  for (uint32_t q = 0; q < std::min<uint32_t>(ports, 10); ++q)
    s += fmt::format("<marker id=\"ah{}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"8\" "
                     "markerHeight=\"8\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{}\"/></marker>\n",
                     q, kPalette[q]);
  return s + "</defs>\n";
}

std::string ellipsize(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "…"; }

std::string payload_text(const ir::Send& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.payload.size(); ++i) t += (i ? "; " : "") + combo_text(s.payload[i]);
  return t + "]";
}

// The share of send ports busy in a step, as a whole percentage ("<1%" for a
// few among many, so that a busy step never reads as idle).
std::string ports_busy(const PlanView& v, const StepSummary& x) {
  const uint64_t all = static_cast<uint64_t>(v.K()) * v.ports();
  if (x.busy_send_ports == 0) return "0%";
  const uint64_t pct = x.busy_send_ports * 100 / all;
  return pct == 0 ? std::string("<1%") : fmt::format("{}%", pct);
}

bool in_view(const Message& m, const Range& R, const Range& S) {
  return (R.contains(m.from) || R.contains(m.to)) && m.sent <= S.hi && m.lands >= S.lo;
}

}  // namespace

const char* port_colour(uint32_t p) { return kPalette[p % 10]; }
const char* port_dash(uint32_t p) { return kDashes[(p / 10) % 4]; }

std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string plan_caption(const PlanView& v) {
  const Spec& s = v.plan().spec;
  const auto c = passes::cost(v.plan());
  return fmt::format("{} K={} p={} λ={} {} — {} — C1 = {}, C2 = {}, {} messages, {} elements", op_name(s.op), v.K(),
                     s.p, s.lambda, s.field.name(), s.algorithm, c.C1, c.C2, c.messages, c.elements);
}

Range rank_range(const PlanView& v, const RenderOptions& o) { return o.ranks ? *o.ranks : Range{0, v.K() - 1}; }
Range step_range(const PlanView& v, const RenderOptions& o) {
  return o.steps ? *o.steps : Range{1, std::max<uint32_t>(v.steps(), 1)};
}

uint64_t messages_in_view(const PlanView& v, const RenderOptions& o) {
  const Range R = rank_range(v, o), S = step_range(v, o);
  uint64_t n = 0;
  for (const Message& m : v.messages()) n += in_view(m, R, S);
  return n;
}

bool summary_chosen(const PlanView& v, const RenderOptions& o) {
  if (o.mode != ViewMode::Auto) return o.mode == ViewMode::Summary;
  return rank_range(v, o).size() > kDiagramMaxRanks || step_range(v, o).size() > kDiagramMaxSteps ||
         messages_in_view(v, o) > kDiagramMaxMessages;
}

std::string render_svg(const PlanView& v, const RenderOptions& o) {
  return summary_chosen(v, o) ? render_summary_svg(v, o) : render_diagram_svg(v, o);
}

std::string render_diagram_svg(const PlanView& v, const RenderOptions& o) {
  const Range R = rank_range(v, o), S = step_range(v, o);
  const uint32_t p = v.ports(), lam = v.lambda();
  const int W = o.coefficients ? 260 : 150, H = 30, L = 84, T = 78;
  const int ncols = static_cast<int>(S.size()), nrows = static_cast<int>(R.size());
  const int grid_w = ncols * W, grid_h = nrows * H;
  const int legend_y = T + grid_h + 34;
  const int width = std::max(L + grid_w + 40, 640), height = legend_y + 70;
  auto x0 = [&](uint32_t t) { return L + static_cast<int>(t - S.lo) * W; };
  auto row_top = [&](uint32_t r) { return T + static_cast<int>(r - R.lo) * H; };
  auto yc = [&](uint32_t r) { return row_top(r) + H / 2; };

  std::string s = svg_open(width, height);
  s += kStyle;
  s += arrow_markers(p);
  s += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#fff\"/>\n", width, height);
  s += fmt::format("<text class=\"title\" x=\"10\" y=\"20\">{}</text>\n",
                   xml_escape(o.title.empty() ? "collplan plan" : o.title));
  s += fmt::format("<text class=\"cap\" x=\"10\" y=\"38\">{}</text>\n", xml_escape(plan_caption(v)));
  s += fmt::format("<text class=\"cap\" x=\"10\" y=\"54\">ranks {}..{} of 0..{}, steps {}..{} of 1..{}</text>\n", R.lo,
                   R.hi, v.K() - 1, S.lo, S.hi, v.steps());

  // Rows, step headers and column rules.
  s += "<g class=\"grid\">\n";
  for (uint32_t r = R.lo; r <= R.hi; ++r)
    if ((r - R.lo) % 2 == 0)
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>\n", L, row_top(r), grid_w,
                       H);
  for (uint32_t t = S.lo; t <= S.hi; ++t) {
    s += fmt::format("<text class=\"step\" x=\"{}\" y=\"{}\">step {}</text>\n", x0(t) + W / 2, T - 8, t);
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ccc\"/>\n", x0(t), T - 4, x0(t),
                     T + grid_h);
  }
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ccc\"/>\n", L + grid_w, T - 4, L + grid_w,
                   T + grid_h);
  for (uint32_t r = R.lo; r <= R.hi; ++r)
    s += fmt::format("<text class=\"rank\" data-rank=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"end\">rank {}</text>\n", r,
                     L - 8, yc(r) + 4, r);
  s += "</g>\n";

  // Ports (busy filled, idle hollow) and op markers.
  s += "<g class=\"ports\">\n";
  for (uint32_t r = R.lo; r <= R.hi; ++r)
    for (uint32_t t = S.lo; t <= S.hi; ++t) {
      if (p <= kMaxPortBoxes)
        for (uint32_t q = 0; q < p; ++q) {
          const bool sb = v.send_busy(r, t, q), rb = v.recv_busy(r, t, q);
          const int bx = x0(t) + 3 + static_cast<int>(q) * 6;
          s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"5\" height=\"5\" fill=\"{}\" stroke=\"{}\" "
                           "stroke-width=\"0.6\"><title>rank {} step {}: send port {} {}</title></rect>\n",
                           bx, row_top(r) + 2, sb ? port_colour(q) : "#fff", sb ? port_colour(q) : "#999", r, t, q,
                           sb ? "busy" : "idle");
          s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"5\" height=\"5\" fill=\"{}\" stroke=\"{}\" "
                           "stroke-width=\"0.6\"><title>rank {} step {}: receive port {} {}</title></rect>\n",
                           bx, row_top(r) + H - 7, rb ? port_colour(q) : "#fff", rb ? port_colour(q) : "#999", r, t,
                           q, rb ? "busy" : "idle");
        }
      if (const uint32_t n = v.ops(r, t))
        s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"#888\"><title>rank {} step {}: {} op{}</title>"
                         "</circle>\n",
                         x0(t) + W - 6, row_top(r) + H - 5, r, t, n, n == 1 ? "" : "s");
    }
  s += "</g>\n";

  // Messages: critical bands first would hide under later arrows' labels, so
  // each arrow draws its own band just beneath itself.
  s += "<g class=\"messages\">\n";
  const int top_edge = T - 2, bottom_edge = T + grid_h + 2, right_edge = L + grid_w;
  for (const Message& m : v.messages()) {
    if (!in_view(m, R, S)) continue;
    const int q4 = static_cast<int>(m.port % 4);
    const int sx = m.sent < S.lo ? L : x0(m.sent) + W * (14 + 5 * q4) / 100;
    const int ex = m.lands > S.hi ? right_edge : x0(m.lands) + W * (86 - 5 * q4) / 100;
    const int sy = R.contains(m.from) ? yc(m.from) : (m.from < R.lo ? top_edge : bottom_edge);
    const int ey = R.contains(m.to) ? yc(m.to) : (m.to < R.lo ? top_edge : bottom_edge);
    std::string label = fmt::format("{}", m.elems);
    if (!R.contains(m.from)) label = fmt::format("r{}→ {}", m.from, label);
    if (!R.contains(m.to)) label += fmt::format(" →r{}", m.to);
    if (o.coefficients) label += " " + ellipsize(payload_text(*m.send), 44);
    std::string tip = fmt::format("rank {} → rank {}, port {}, sent in step {}, lands in step {}, {} element{}", m.from,
                                  m.to, m.port, m.sent, m.lands, m.elems, m.elems == 1 ? "" : "s");
    if (m.critical) tip += fmt::format(", critical path (slack {})", m.slack);
    if (o.coefficients) tip += ": " + payload_text(*m.send);
    s += fmt::format("<g class=\"msg{}\" data-msg=\"{},{},{},{}\"><title>{}</title>\n", m.critical ? " critical" : "",
                     m.from, m.to, m.port, m.sent, xml_escape(tip));
    if (m.critical)
      s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ffd400\" stroke-width=\"8\" "
                       "stroke-opacity=\"0.75\" stroke-linecap=\"round\"/>\n",
                       sx, sy, ex, ey);
    const char* dash = port_dash(m.port);
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{} "
                     "marker-end=\"url(#ah{})\"/>\n",
                     sx, sy, ex, ey, port_colour(m.port), m.critical ? "2" : "1.3",
                     *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : std::string(), m.port % 10);
    // The label sits near the sender, where arrows of one column still part.
    const int lx = sx + (ex - sx) * 3 / 10 + 3, ly = sy + (ey - sy) * 3 / 10 - 2;
    s += fmt::format("<text class=\"lbl{}\" x=\"{}\" y=\"{}\">{}</text>\n", o.coefficients ? " mono" : "", lx, ly,
                     xml_escape(label));
    s += "</g>\n";
  }
  s += "</g>\n";

  // Legend.
  s += "<g class=\"legend\">\n";
  int lx = 10;
  for (uint32_t q = 0; q < std::min<uint32_t>(p, 10); ++q) {
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\" "
                     "marker-end=\"url(#ah{})\"/><text x=\"{}\" y=\"{}\">port {}</text>\n",
                     lx, legend_y, lx + 26, legend_y, port_colour(q), q, lx + 32, legend_y + 4, q);
    lx += 82;
  }
  if (p > 10) {
    s += fmt::format("<text x=\"{}\" y=\"{}\">ports ≥ 10: colour of port mod 10, dashed by port / 10</text>\n", lx,
                     legend_y + 4);
  }
  const int ly2 = legend_y + 22;
  s += fmt::format("<line x1=\"10\" y1=\"{}\" x2=\"36\" y2=\"{}\" stroke=\"#ffd400\" stroke-width=\"8\" "
                   "stroke-opacity=\"0.75\"/><text x=\"42\" y=\"{}\">critical path: {} message{}, the last output "
                   "is complete in step {}</text>\n",
                   ly2, ly2, ly2 + 4, v.critical_path().size(), v.critical_path().size() == 1 ? "" : "s",
                   v.critical_end());
  const int ly3 = legend_y + 42;
  s += fmt::format("<rect x=\"10\" y=\"{}\" width=\"5\" height=\"5\" fill=\"{}\" stroke=\"{}\"/>"
                   "<rect x=\"18\" y=\"{}\" width=\"5\" height=\"5\" fill=\"#fff\" stroke=\"#999\"/>"
                   "<text x=\"30\" y=\"{}\">port busy / idle (send ports at a cell's top, receive ports at its "
                   "bottom)</text><circle cx=\"470\" cy=\"{}\" r=\"2.5\" fill=\"#888\"/><text x=\"478\" y=\"{}\">"
                   "ops</text>\n",
                   ly3 - 5, port_colour(0), port_colour(0), ly3 - 5, ly3 + 1, ly3 - 2, ly3 + 1);
  s += fmt::format("<text x=\"10\" y=\"{}\">{}</text>\n", ly3 + 20,
                   lam == 1 ? std::string("λ = 1: a message sent in step t lands in step t (labels: elements)")
                            : fmt::format("λ = {}: a message sent in step t lands in step t+{}, its arrow spans {} "
                                          "steps (labels: elements)",
                                          lam, lam - 1, lam));
  s += "</g>\n</svg>\n";
  return s;
}

std::string summary_text(const PlanView& v, const RenderOptions& o) {
  const Range S = step_range(v, o);
  std::string s = plan_caption(v) + "\n";
  s += fmt::format("critical path: {} messages, the last output is complete in step {}\n", v.critical_path().size(),
                   v.critical_end());
  s += "  " + critical_path_text(v) + "\n";
  s += fmt::format("{:>6} {:>10} {:>12} {:>8} {:>14} {:>11} {:>8} {:>9}\n", "step", "messages", "elements", "largest",
                   "busiest port", "ports busy", "active", "critical");
  const auto sum = v.summary();
  for (uint32_t t = S.lo; t <= S.hi && t <= sum.size(); ++t) {
    const StepSummary& x = sum[t - 1];
    s += fmt::format("{:>6} {:>10} {:>12} {:>8} {:>14} {:>11} {:>8} {:>9}\n", x.t, x.messages, x.elements, x.largest,
                     x.messages ? fmt::format("{} ({})", x.busiest_port, x.busiest_port_elements) : std::string("-"),
                     ports_busy(v, x), x.active_ranks, x.critical);
  }
  return s;
}

std::string render_summary_svg(const PlanView& v, const RenderOptions& o) {
  const Range R = rank_range(v, o), S = step_range(v, o);
  const auto sum = v.summary();
  const auto traffic = v.traffic();
  const uint32_t ncols = S.size();
  const uint32_t bin = (R.size() + kHeatRows - 1) / kHeatRows;
  const uint32_t nrows = (R.size() + bin - 1) / bin;
  const int cw = std::clamp(static_cast<int>(900 / std::max<uint32_t>(ncols, 1)), 4, 48);
  const int ch = nrows <= 64 ? 10 : nrows <= 128 ? 5 : nrows <= 256 ? 3 : 2;
  const int L = 90, T = 70, row = 16;
  const int table_h = (static_cast<int>(ncols) + 1) * row;
  const int heat_top = T + table_h + 60;
  const int heat_w = static_cast<int>(ncols) * cw, heat_h = static_cast<int>(nrows) * ch;
  const int width = std::max(L + heat_w + 200, 760), height = heat_top + heat_h + 60;

  std::string s = svg_open(width, height);
  s += kStyle;
  s += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#fff\"/>\n", width, height);
  s += fmt::format("<text class=\"title\" x=\"10\" y=\"20\">{} (summary)</text>\n",
                   xml_escape(o.title.empty() ? "collplan plan" : o.title));
  s += fmt::format("<text class=\"cap\" x=\"10\" y=\"38\">{}</text>\n", xml_escape(plan_caption(v)));
  s += fmt::format("<text class=\"cap\" x=\"10\" y=\"54\">ranks {}..{} of 0..{}, steps {}..{} of 1..{}; critical "
                   "path: {} messages, the last output is complete in step {}</text>\n",
                   R.lo, R.hi, v.K() - 1, S.lo, S.hi, v.steps(), v.critical_path().size(), v.critical_end());

  // The per-step table (over all ranks: a step's cost is global).
  const int cols[8] = {50, 140, 240, 320, 450, 540, 620, 700};
  const char* heads[8] = {"step", "messages", "elements", "largest", "busiest port", "ports busy", "active", "critical"};
  s += "<g class=\"table\">\n";
  for (int c = 0; c < 8; ++c)
    s += fmt::format("<text class=\"num\" x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n", cols[c], T + 12,
                     heads[c]);
  for (uint32_t t = S.lo; t <= S.hi; ++t) {
    const StepSummary& x = sum[t - 1];
    const int y = T + 12 + static_cast<int>(t - S.lo + 1) * row;
    const std::string busiest =
        x.messages ? fmt::format("{} ({})", x.busiest_port, x.busiest_port_elements) : std::string("-");
    const std::string vals[8] = {fmt::format("{}", x.t),        fmt::format("{}", x.messages),
                                 fmt::format("{}", x.elements), fmt::format("{}", x.largest),
                                 busiest,                       ports_busy(v, x),
                                 fmt::format("{}", x.active_ranks), fmt::format("{}", x.critical)};
    s += fmt::format("<g class=\"steprow\" data-step=\"{}\">", t);
    for (int c = 0; c < 8; ++c) s += fmt::format("<text class=\"num\" x=\"{}\" y=\"{}\">{}</text>", cols[c], y, vals[c]);
    s += "</g>\n";
  }
  s += "</g>\n";

  // The heat map.
  uint64_t peak = 0;
  std::vector<uint64_t> cell(static_cast<size_t>(nrows) * ncols, 0);
  for (uint32_t r = R.lo; r <= R.hi; ++r)
    for (uint32_t t = S.lo; t <= S.hi; ++t) {
      uint64_t& c = cell[static_cast<size_t>((r - R.lo) / bin) * ncols + (t - S.lo)];
      c += traffic[static_cast<size_t>(r) * v.steps() + (t - 1)];
      peak = std::max(peak, c);
    }
  auto level = [&](uint64_t x) {
    if (x == 0 || peak == 0) return 0;
    return static_cast<int>(1 + (x * 8 - 1) / peak);  // 1..8
  };
  s += fmt::format("<text class=\"cap\" x=\"10\" y=\"{}\">elements sent per rank and step{}</text>\n", heat_top - 24,
                   bin > 1 ? fmt::format(" (each row sums {} ranks)", bin) : std::string());
  s += "<g class=\"heat\">\n";
  for (uint32_t t = S.lo; t <= S.hi; ++t)
    if (ncols <= 40 || (t - S.lo) % ((ncols + 39) / 40) == 0)
      s += fmt::format("<text class=\"step\" x=\"{}\" y=\"{}\">{}</text>\n",
                       L + static_cast<int>(t - S.lo) * cw + cw / 2, heat_top - 6, t);
  const uint32_t label_every = static_cast<uint32_t>(std::max(1, (16 + ch - 1) / ch)) * (nrows > 64 ? 4 : 1);
  for (uint32_t i = 0; i < nrows; ++i) {
    const int y = heat_top + static_cast<int>(i) * ch;
    const uint32_t first = R.lo + i * bin;
    // Runs of equal colour are one rectangle: a K = 4096 map stays small.
    for (uint32_t c = 0; c < ncols;) {
      const int lv = level(cell[static_cast<size_t>(i) * ncols + c]);
      uint32_t e = c + 1;
      while (e < ncols && level(cell[static_cast<size_t>(i) * ncols + e]) == lv) ++e;
      if (lv > 0)
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>", L + static_cast<int>(c) * cw,
                         y, static_cast<int>(e - c) * cw, ch, kHeat[lv]);
      c = e;
    }
    s += fmt::format("<rect class=\"rank\" data-rank=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                     "fill=\"transparent\"><title>rank{} {}{}</title></rect>\n",
                     first, L, y, heat_w, ch, bin > 1 ? "s" : "", first,
                     bin > 1 ? fmt::format("..{}", std::min(R.hi, first + bin - 1)) : std::string());
    if (i % label_every == 0)
      s += fmt::format("<text class=\"num\" x=\"{}\" y=\"{}\">rank {}</text>\n", L - 6, y + std::max(ch, 8), first);
  }
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", L, heat_top,
                   heat_w, heat_h);
  // Colour key.
  const int kx = L + heat_w + 20;
  for (int lv = 1; lv <= 8; ++lv)
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"10\" fill=\"{}\"/>\n", kx,
                     heat_top + (8 - lv) * 10, kHeat[lv]);
  s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text><text x=\"{}\" y=\"{}\">1</text>\n", kx + 18, heat_top + 9, peak,
                   kx + 18, heat_top + 80);
  s += "</g>\n</svg>\n";
  return s;
}

}  // namespace collplan::backend
