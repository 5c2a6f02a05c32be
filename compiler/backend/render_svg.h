// Pictures of a plan (`collplan show --svg`, docs/visualisation.md): the round
// diagram, and the summary view for plans too large to draw message by
// message. Hand-written SVG 1.1, no external dependencies; the output is a
// function of the plan and the options only (same plan, same bytes), so it
// serves as a golden file and as committed documentation.
//
// ─── Round diagram ───────────────────────────────────────────────────────────
//
// Ranks are rows, steps are columns. Every message is one arrow from its
// sender's row in the column of the step it is sent in to its receiver's row
// in the column of the step it lands in (sent + λ − 1), so with λ > 1 arrows
// span λ columns: the message's flight time. The arrow's colour (and, beyond
// ten ports, its dash pattern) is its port; its label is its size in plan
// elements (with `coefficients`, its payload's combinations follow, and the
// tooltip lists them all). Every arrow is a <g class="msg"
// data-msg="from,to,port,step"> (step = the step it is sent in), one per
// message of the plan drawn, so tools and tests can find them. Each cell
// (rank, step) starts with p small squares for the send ports and ends with p
// for the receive ports: filled in the port's colour when busy, hollow when
// idle (not drawn beyond 16 ports). A grey dot marks a step in which the rank
// runs ops. The critical path (plan_view.h) is drawn as a wide yellow band
// under its arrows. Rank labels carry data-rank="r" (the explorer page opens
// that rank's program on a click).
//
// ─── Summary view ────────────────────────────────────────────────────────────
//
// Per step: messages, elements, largest message (the step's share of C2),
// the busiest port and its elements, the share of the K·p send ports that
// send (the rest is idle), the ranks active, the critical-path messages; then a heat map of elements sent per rank and step, ranks binned
// into at most kHeatRows rows (a bin sums its ranks), darker = more.
//
// ─── Zoom ────────────────────────────────────────────────────────────────────
//
// `ranks` and `steps` restrict the view to those rows and columns. A message
// is drawn when one of its ranks is in view and its flight [sent, lands]
// meets the steps in view; an end outside the view is drawn at the view's
// edge, labelled with the rank it goes to or comes from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backend/plan_view.h"

namespace collplan::backend {

// Above these (in the view), `Auto` draws the summary instead of the diagram.
inline constexpr uint32_t kDiagramMaxRanks = 64;
inline constexpr uint64_t kDiagramMaxMessages = 2000;
// Rows of the summary's heat map at most.
inline constexpr uint32_t kHeatRows = 512;

enum class ViewMode { Auto, Diagram, Summary };

struct RenderOptions {
  std::optional<Range> ranks, steps;  // zoom (inclusive); none = all
  bool coefficients = false;          // payload combinations on the arrows
  ViewMode mode = ViewMode::Auto;
  std::string title;                  // shown above the picture (e.g. the file name)
};

// The rank and step ranges the options select (all when not given).
Range rank_range(const PlanView& v, const RenderOptions& o);
Range step_range(const PlanView& v, const RenderOptions& o);
// Whether `o` gives the summary view for `v`: Summary, or Auto with more
// than kDiagramMaxRanks ranks or kDiagramMaxMessages messages in view.
bool summary_chosen(const PlanView& v, const RenderOptions& o);
// Messages drawn under `o` (the zoom rule above).
uint64_t messages_in_view(const PlanView& v, const RenderOptions& o);

// The diagram or the summary, as summary_chosen() decides.
std::string render_svg(const PlanView& v, const RenderOptions& o);
std::string render_diagram_svg(const PlanView& v, const RenderOptions& o);
std::string render_summary_svg(const PlanView& v, const RenderOptions& o);
// The summary's table as text (`collplan show --summary` without a file).
std::string summary_text(const PlanView& v, const RenderOptions& o);

// The colour of port `p` (#rrggbb) and its SVG dash pattern ("" = solid);
// shared by the DOT and HTML renderers.
const char* port_colour(uint32_t p);
const char* port_dash(uint32_t p);
// `s` with &, <, >, " escaped for XML text and attributes.
std::string xml_escape(const std::string& s);
// One line naming the plan: op, K, p, λ, field, algorithm, C1, C2.
std::string plan_caption(const PlanView& v);

}  // namespace collplan::backend
