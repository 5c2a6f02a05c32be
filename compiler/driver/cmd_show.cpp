// `collplan show PLAN`: the plan as text (all ranks, or one --rank, read
// alone from a .cplan), or with picture flags drawn: --svg, --dot, --html,
// --summary. What is drawn and why: backend/render_svg.h, render_dot.h,
// render_html.h, docs/visualisation.md.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/render_dot.h"
#include "backend/render_html.h"
#include "backend/render_svg.h"
#include "driver/cli.h"
#include "ir/binary.h"
#include "ir/text.h"
#include "passes/verify.h"
#include "support/error.h"
#include "support/safe_file.h"
#include "support/limits.h"

namespace collplan::cli {

namespace {

void write_file(const std::string& path, const std::string& text, const char* flag) {
  files::write_file(path, fmt::format("{} file", flag), text);
}

nlohmann::json read_trace(const std::string& path) {
  const std::string text = files::read_regular_file(path, "--trace file", kMaxTraceFileBytes);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    user_error("--trace {}: not JSON ({})", path, e.what());
  }
}

int cmd_show(const std::string& path, std::optional<uint32_t> rank) {
  if (!rank) rank = single_rank_of(path);  // a single-rank file shows its rank
  if (rank && is_binary_file(path)) {
    // One rank alone, as a device would load it (no K-program plan: a
    // rank-local file's K may be 2^31).
    ir::PlanHeader hdr;
    const ir::Program prog = ir::read_rank(path, *rank, &hdr);
    std::cout << ir::to_text(hdr.spec, hdr.num_steps, prog);
    return 0;
  }
  const ir::Plan plan = load_plan(path);
  if (rank && *rank >= plan.ranks.size())
    user_error("--rank {} does not exist (valid: 0..{})", *rank, plan.ranks.size() - 1);
  std::cout << ir::to_text(plan, rank);
  return 0;
}

}  // namespace

void add_show_picture_options(CLI::App* show, ShowPictureOptions& o) {
  show->add_option("--svg", o.svg, "write the round diagram (or the summary of a large plan) as SVG here");
  show->add_option("--dot", o.dot, "write the round diagram as Graphviz DOT here");
  show->add_option("--html", o.html,
                   "write the plan explorer here: one self-contained page with the diagram, the cost report and "
                   "each rank's program on click");
  show->add_option("--trace", o.trace, "with --html: a trace of this plan (`collplan run --trace`) to show under it");
  show->add_flag("--coefficients", o.coefficients, "label each arrow with its payload's combinations too");
  auto* sum = show->add_flag("--summary", o.summary,
                             "the summary view (per step: messages, elements, busiest port; a rank x step heat map) "
                             "instead of the diagram; without --svg/--html, print the table");
  auto* dia = show->add_flag("--diagram", o.diagram,
                             fmt::format("draw every message even when the view has more than {} ranks, {} "
                                         "messages or 200 steps (where the summary is the default)",
                                         backend::kDiagramMaxRanks, backend::kDiagramMaxMessages));
  sum->excludes(dia);
  show->add_option("--ranks", o.ranks, "only ranks A-B (or one rank A) in the pictures");
  show->add_option("--steps", o.steps, "only steps A-B (or one step A) in the pictures");
}

bool ShowPictureOptions::any() const {
  return !svg.empty() || !dot.empty() || !html.empty() || !trace.empty() || coefficients || summary || diagram ||
         !ranks.empty() || !steps.empty();
}

int cmd_show_pictures(const std::string& path, std::optional<uint32_t> rank, const ShowPictureOptions& o) {
  if (rank) user_error("--rank {} prints one rank's program as text; the pictures take --ranks A-B instead", *rank);
  if (!o.trace.empty() && o.html.empty()) user_error("--trace {} is shown by the explorer page: add --html FILE", o.trace);
  const bool files = !o.svg.empty() || !o.dot.empty() || !o.html.empty();
  if (!files && !o.summary)
    user_error("--coefficients, --diagram, --ranks and --steps shape a picture: add --svg, --dot or --html FILE "
               "(or --summary for the table)");
  if (single_rank_of(path))
    user_error("{} holds one rank's program alone; a picture needs the whole plan (its other ranks' messages)", path);
  const ir::Plan plan = load_plan(path);
  ir::verify_structure(plan);  // the pictures rely on matched messages
  const backend::PlanView view(plan);
  backend::RenderOptions ro;
  ro.coefficients = o.coefficients;
  ro.mode = o.summary ? backend::ViewMode::Summary : o.diagram ? backend::ViewMode::Diagram : backend::ViewMode::Auto;
  ro.title = std::filesystem::path(path).filename().string();
  if (!o.ranks.empty()) ro.ranks = backend::parse_range(o.ranks, "--ranks", "ranks", 0, view.K() - 1);
  if (!o.steps.empty()) {
    if (view.steps() == 0) user_error("--steps {}: the plan has no steps", o.steps);
    ro.steps = backend::parse_range(o.steps, "--steps", "steps", 1, view.steps());
  }
  const char* what = backend::summary_chosen(view, ro) ? "summary" : "round diagram";
  if (!o.svg.empty()) {
    write_file(o.svg, backend::render_svg(view, ro), "--svg");
    std::cout << fmt::format("wrote {} ({}, {} messages in view)\n", o.svg, what, backend::messages_in_view(view, ro));
  }
  if (!o.dot.empty()) {
    write_file(o.dot, backend::render_dot(view, ro), "--dot");
    std::cout << fmt::format("wrote {} (DOT round diagram)\n", o.dot);
  }
  if (!o.html.empty()) {
    std::optional<nlohmann::json> trace;
    if (!o.trace.empty()) trace = read_trace(o.trace);
    write_file(o.html, backend::render_html(view, ro, trace ? &*trace : nullptr), "--html");
    std::cout << fmt::format("wrote {} (explorer: {}{})\n", o.html, what, trace ? ", measured timeline" : "");
  }
  if (!files) std::cout << backend::summary_text(view, ro);
  return 0;
}

void add_show_command(CLI::App& app, CommandList& cmds) {
  struct ShowFlags {
    std::string path;
    std::optional<uint32_t> rank;
    ShowPictureOptions pictures;
  };
  auto f = std::make_shared<ShowFlags>();
  auto* show = app.add_subcommand("show", "print a plan as text (all ranks, or one), or draw it (SVG, DOT, HTML "
                                          "explorer, summary)");
  show->add_option("plan", f->path, "plan file (.cplan or .json)")->required();
  show->add_option("--rank", f->rank, "only this rank (read alone from a .cplan)");
  add_show_picture_options(show, f->pictures);
  cmds.push_back({show, [f] {
                    return f->pictures.any() ? cmd_show_pictures(f->path, f->rank, f->pictures)
                                             : cmd_show(f->path, f->rank);
                  }});
}

}  // namespace collplan::cli
