// The plan explorer (`collplan show --html`): one self-contained HTML page —
// no network access, the script inlined and hand-written — holding
//   the plan's caption and digest;
//   the cost report (passes/cost.h: C1, C2, their lower bounds and ratios,
//     step sizes) and the critical path hop by hop (plan_view.h);
//   the round diagram or the summary view (render_svg.h, same options);
//   with a trace (`collplan run --trace`, runtime/trace.h) of the same plan,
//     the measured timeline of its last run under the planned one: a row per
//     rank, its steps as alternating bands, post_send / post_recv / wait /
//     combine spans coloured by kind, times in µs;
//   the text form of one rank's program (ir/text.h), shown when a rank label
//     (or a heat-map row) is clicked, a rank is entered in the form, or the
//     page is opened with #rank=R in its URL (the script then clicks that
//     rank's label itself). Programs are embedded for at most kHtmlMaxPrograms
//     ranks in view; beyond, the page says so and names `collplan show --rank`.
// The page sets data-ready="1" on <body> when its script has run, counts
// script errors in data-js-errors, and records the selected rank in
// data-selected-rank, so that a headless browser can check it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "backend/render_svg.h"

namespace collplan::backend {

inline constexpr uint32_t kHtmlMaxPrograms = 256;

// `trace`: a parsed trace file, or nullptr. UserError when it is not a
// collplan trace (traceEvents of complete events with pid = rank) or was
// recorded from another plan (otherData.digest differs from the plan's).
std::string render_html(const PlanView& v, const RenderOptions& o, const nlohmann::json* trace);

// The measured timeline alone (SVG), as the page embeds it.
std::string render_trace_svg(const PlanView& v, const RenderOptions& o, const nlohmann::json& trace);

}  // namespace collplan::backend
