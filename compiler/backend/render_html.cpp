// The plan explorer page (render_html.h).
#include "backend/render_html.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "ir/binary.h"
#include "ir/text.h"
#include "passes/cost.h"
#include "support/error.h"

namespace collplan::backend {

namespace {

const char* kCss = R"CSS(
body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:18px 0 6px}
.cap{color:#444;margin:2px 0}
pre{background:#f6f6f6;border:1px solid #ddd;padding:8px;overflow:auto;font-size:12px}
.scroll{overflow:auto;border:1px solid #ddd;max-height:80vh}
#program{max-height:60vh}
.rank.selected{fill:#d62728;font-weight:bold}
rect.rank.selected{fill:rgba(214,39,40,0.25)}
svg.dim .msg{opacity:0.15}
svg.dim .msg.focus{opacity:1}
form{margin:4px 0}
)CSS";

// Hand-written, no library: selects a rank on a click, from the form, or
// from #rank=R (by clicking its label, the path a user's click takes).
const char* kScript = R"JS(
(function () {
  'use strict';
  var body = document.body;
  window.addEventListener('error', function () {
    body.setAttribute('data-js-errors', String(Number(body.getAttribute('data-js-errors')) + 1));
  });
  var programs = JSON.parse(document.getElementById('programs').textContent);
  var K = Number(body.getAttribute('data-ranks'));
  function show(r) {
    var pre = document.getElementById('program');
    var text = programs[String(r)];
    pre.textContent = text !== undefined ? text
      : 'rank ' + r + ': its program is not embedded in this page (collplan show PLAN --rank ' + r + ' prints it)';
    document.getElementById('program-rank').textContent = 'rank ' + r;
    var sel = document.querySelectorAll('.selected');
    for (var i = 0; i < sel.length; ++i) sel[i].classList.remove('selected');
    var labels = document.querySelectorAll('[data-rank="' + r + '"]');
    for (var j = 0; j < labels.length; ++j) labels[j].classList.add('selected');
    var svg = document.querySelector('#diagram svg');
    var msgs = document.querySelectorAll('#diagram .msg');
    for (var k = 0; k < msgs.length; ++k) {
      var f = msgs[k].getAttribute('data-msg').split(',');
      msgs[k].classList.toggle('focus', Number(f[0]) === r || Number(f[1]) === r);
    }
    if (svg && msgs.length) svg.classList.add('dim');
    body.setAttribute('data-selected-rank', String(r));
  }
  var clickable = document.querySelectorAll('[data-rank]');
  for (var i = 0; i < clickable.length; ++i) {
    clickable[i].addEventListener('click', function (ev) {
      var r = Number(ev.currentTarget.getAttribute('data-rank'));
      show(r);
      if (history.replaceState) history.replaceState(null, '', '#rank=' + r);
    });
  }
  document.getElementById('rank-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var v = document.getElementById('rank-input').value;
    var r = Number(v);
    if (v === '' || !Number.isInteger(r) || r < 0 || r >= K) {
      document.getElementById('program').textContent = 'rank ' + v + ' does not exist (valid: 0..' + (K - 1) + ')';
      return;
    }
    show(r);
  });
  function fromHash() {
    var m = /rank=(\d+)/.exec(location.hash);
    if (!m) return;
    var el = document.querySelector('[data-rank="' + m[1] + '"]');
    if (el) el.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    else if (Number(m[1]) < K) show(Number(m[1]));
  }
  window.addEventListener('hashchange', fromHash);
  fromHash();
  body.setAttribute('data-ready', '1');
})();
)JS";

// JSON text safe inside <script>: no "</" can end the element early.
std::string script_json(const nlohmann::json& j) {
  std::string s = j.dump();
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      o += "<\\/";
      ++i;
    } else {
      o += s[i];
    }
  }
  return o;
}

// The text of one rank's program without the plan header.
std::string rank_program_text(const ir::Plan& plan, ir::Rank r) {
  const std::string t = ir::to_text(plan, r);
  const auto at = t.find("\nrank ");
  return at == std::string::npos ? t : t.substr(at + 1);
}

[[noreturn]] void not_a_trace(const std::string& why) {
  user_error("--trace: not a collplan trace ({}); write one with `collplan run PLAN --trace FILE`", why);
}

struct Span {
  std::string name;
  double ts = 0, dur = 0;
  uint32_t run = 0, step = 0;
  std::string tip;
};

}  // namespace

std::string render_trace_svg(const PlanView& v, const RenderOptions& o, const nlohmann::json& trace) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    not_a_trace("no traceEvents array");
  const Range R = rank_range(v, o);
  std::map<uint32_t, std::vector<Span>> rows;
  uint32_t last_run = 0;
  // A field of the wrong type is the file's fault, not collplan's.
  try {
  for (const auto& e : trace["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    if (!e.contains("pid") || !e["pid"].is_number_unsigned() || !e.contains("ts") || !e["ts"].is_number() ||
        !e.contains("dur") || !e["dur"].is_number())
      not_a_trace("a complete event without numeric pid, ts and dur");
    const uint32_t pid = e["pid"].get<uint32_t>();
    if (pid >= v.K()) not_a_trace(fmt::format("an event of rank {}, the plan has ranks 0..{}", pid, v.K() - 1));
    Span s;
    s.name = e.value("name", "");
    s.ts = e["ts"].get<double>();
    s.dur = e["dur"].get<double>();
    const auto& a = e.contains("args") ? e["args"] : nlohmann::json::object();
    for (const char* k : {"run", "step"})
      if (a.contains(k) && !a[k].is_number_unsigned())
        not_a_trace(fmt::format("args.{} of an event is {}, not a count", k, a[k].dump()));
    s.run = a.value("run", 0u);
    s.step = a.value("step", 0u);
    s.tip = fmt::format("rank {}: {} {:.3f} µs at {:.3f} µs {}", pid, s.name, s.dur, s.ts, a.dump());
    last_run = std::max(last_run, s.run);
    if (R.contains(pid)) rows[pid].push_back(std::move(s));
  }
  } catch (const nlohmann::json::exception& e) {
    not_a_trace(e.what());
  }
  double t0 = std::numeric_limits<double>::max(), t1 = 0;
  for (auto& [r, spans] : rows) {
    std::erase_if(spans, [&](const Span& s) { return s.run != last_run; });
    for (const Span& s : spans) {
      t0 = std::min(t0, s.ts);
      t1 = std::max(t1, s.ts + s.dur);
    }
  }
  if (t0 > t1) not_a_trace("no complete events of the ranks in view");
  const int L = 84, T = 40, H = 22, W = 1000;
  const int nrows = static_cast<int>(R.size());
  const int height = T + nrows * H + 60;
  const double span = std::max(t1 - t0, 1e-3);
  auto X = [&](double t) { return L + (t - t0) / span * W; };
  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} "
                              "{}\" class=\"collplan-trace\">\n",
                              L + W + 20, height, L + W + 20, height);
  s += "<style>text{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;font-size:11px;fill:#222}</style>\n";
  s += fmt::format("<text x=\"10\" y=\"16\">run {} of the trace, {:.1f} µs; rows: ranks, bands: steps</text>\n",
                   last_run, span);
  // Axis: about ten ticks at round values.
  const double raw = span / 10;
  double tick = 1e-3;
  while (tick * 10 <= raw) tick *= 10;
  if (tick * 5 <= raw) tick *= 5;
  else if (tick * 2 <= raw) tick *= 2;
  for (double t = 0; t <= span + 1e-9; t += tick) {
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>", X(t0 + t), T - 4,
                     X(t0 + t), T + nrows * H);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", X(t0 + t), T - 8, t);
  }
  const std::map<std::string, const char*> colour = {
      {"post_send", "#1f77b4"}, {"post_recv", "#2ca02c"}, {"wait", "#d62728"}, {"combine", "#ff7f0e"}};
  for (uint32_t r = R.lo; r <= R.hi; ++r) {
    const int y = T + static_cast<int>(r - R.lo) * H;
    s += fmt::format("<text class=\"rank\" data-rank=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"end\">rank {}</text>\n", r,
                     L - 8, y + 15, r);
    const auto it = rows.find(r);
    if (it == rows.end()) continue;
    for (const Span& sp : it->second)
      if (sp.name.rfind("step ", 0) == 0) {
        s += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{}</title>"
                         "</rect>",
                         X(sp.ts), y + 1, std::max(sp.dur / span * W, 0.5), H - 2,
                         sp.step % 2 ? "#e8eef8" : "#f7f3e3", xml_escape(sp.tip));
        if (sp.dur / span * W > 14)
          s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"9\">{}</text>", X(sp.ts) + 2, y + 9, sp.step);
        s += "\n";
      }
    for (const Span& sp : it->second) {
      const auto c = colour.find(sp.name);
      if (c == colour.end()) continue;
      s += fmt::format("<rect class=\"{}\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"8\" fill=\"{}\"><title>{}"
                       "</title></rect>\n",
                       sp.name, X(sp.ts), y + 10, std::max(sp.dur / span * W, 0.5), c->second, xml_escape(sp.tip));
    }
  }
  int lx = 10;
  const int ly = T + nrows * H + 24;
  for (const char* k : {"post_send", "post_recv", "wait", "combine"}) {
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"8\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                     lx, ly - 8, colour.at(k), lx + 18, ly, k);
    lx += 110;
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\">time in µs from the run's first event</text>\n", lx, ly);
  s += "</svg>\n";
  return s;
}

std::string render_html(const PlanView& v, const RenderOptions& o, const nlohmann::json* trace) {
  const ir::Plan& plan = v.plan();
  const std::string digest = ir::plan_digest(plan).hex();
  if (trace && trace->is_object() && trace->contains("otherData") && (*trace)["otherData"].is_object()) {
    const auto& other = (*trace)["otherData"];
    const std::string td = other.contains("digest") && other["digest"].is_string() ? other["digest"].get<std::string>()
                                                                                   : std::string();
    if (!td.empty() && td != digest)
      user_error("--trace: the trace was recorded from the plan with digest {}, this plan's digest is {}", td, digest);
  }
  const std::string trace_svg = trace ? render_trace_svg(v, o, *trace) : std::string();
  const Range R = rank_range(v, o);
  nlohmann::json programs = nlohmann::json::object();
  const bool embed = R.size() <= kHtmlMaxPrograms;
  if (embed)
    for (uint32_t r = R.lo; r <= R.hi; ++r) programs[std::to_string(r)] = rank_program_text(plan, r);
  const auto c = passes::cost(plan);
  std::string cost = passes::cost_text(c, 0, 0, 0);
  cost += fmt::format("critical path: {} messages, the last output is complete in step {}\n", v.critical_path().size(),
                      v.critical_end());
  cost += "  " + critical_path_text(v) + "\n";
  const std::string title = o.title.empty() ? "collplan plan" : o.title;

  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += fmt::format("<title>{} — collplan explorer</title>\n<style>{}</style>\n</head>\n", xml_escape(title), kCss);
  h += fmt::format("<body data-ready=\"0\" data-js-errors=\"0\" data-ranks=\"{}\">\n", v.K());
  h += fmt::format("<h1>{}</h1>\n<p class=\"cap\">{}</p>\n<p class=\"cap\">digest {}</p>\n", xml_escape(title),
                   xml_escape(plan_caption(v)), digest);
  h += fmt::format("<section id=\"cost\"><h2>Cost</h2>\n<pre>{}</pre></section>\n", xml_escape(cost));
  h += fmt::format("<section id=\"diagram\"><h2>{}</h2>\n<p class=\"cap\">Click a rank to see its program and its "
                   "messages; hover an arrow for its details.</p>\n<div class=\"scroll\">\n{}</div></section>\n",
                   summary_chosen(v, o) ? "Summary" : "Round diagram", render_svg(v, o));
  if (trace)
    h += fmt::format("<section id=\"timeline\"><h2>Measured timeline</h2>\n<div class=\"scroll\">\n{}</div>"
                     "</section>\n",
                     trace_svg);
  h += "<section id=\"program-panel\"><h2>Program of <span id=\"program-rank\">no rank selected</span></h2>\n";
  h += fmt::format("<form id=\"rank-form\"><label>rank <input id=\"rank-input\" type=\"number\" min=\"0\" "
                   "max=\"{}\"></label> <button type=\"submit\">show</button></form>\n",
                   v.K() - 1);
  h += fmt::format("<pre id=\"program\">{}</pre></section>\n",
                   embed ? "Click a rank label in the diagram, or enter a rank."
                         : xml_escape(fmt::format("{} ranks in view: programs are embedded for at most {}; use "
                                                  "--ranks to choose some, or `collplan show PLAN --rank R`.",
                                                  R.size(), kHtmlMaxPrograms)));
  h += fmt::format("<script type=\"application/json\" id=\"programs\">{}</script>\n", script_json(programs));
  h += fmt::format("<script>{}</script>\n</body>\n</html>\n", kScript);
  return h;
}

}  // namespace collplan::backend
