// Pictures of plans (backend/render_svg.h, render_dot.h, render_html.h,
// plan_view.h): every message of a plan exactly once in the SVG (by its data-msg key), the zoom rule, the critical
// path's definition on a plan built by hand, the summary's totals against the
// cost pass, and the user errors of the range flags. Golden pictures:
// tests/golden/test_golden_render.cpp; `collplan show`:
// tests/cli/test_cli_render.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "backend/plan_view.h"
#include "backend/render_dot.h"
#include "backend/render_html.h"
#include "backend/render_svg.h"
#include "matrix/matrix.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using backend::PlanView;
using backend::RenderOptions;

namespace {

using test::compiled;

ir::Plan encode(uint32_t K, uint32_t p, uint32_t lambda, const char* algorithm = "prepare-shoot") {
  const Field f = Field::gf256();
  return compiled(make_encode_spec(K, p, lambda, f, matrix_random(K, 7, f)), algorithm);
}

ir::Plan broadcast(uint32_t K, uint32_t p, uint32_t lambda, uint32_t blocks, const char* algorithm) {
  Spec s;
  s.op = OpKind::Broadcast;
  s.K = K;
  s.p = p;
  s.lambda = lambda;
  s.blocks = blocks;
  return compiled(s, algorithm);
}

using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;  // from, to, port, sent

// Every data-msg="from,to,port,step" of an SVG, with its multiplicity.
std::map<Key, int> svg_messages(const std::string& svg) {
  std::map<Key, int> out;
  static const std::regex re("data-msg=\"(\\d+),(\\d+),(\\d+),(\\d+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    ++out[{std::stoul((*it)[1]), std::stoul((*it)[2]), std::stoul((*it)[3]), std::stoul((*it)[4])}];
  return out;
}

// The plan's messages read straight from its programs (not through the view).
std::map<Key, int> plan_messages(const ir::Plan& plan, const backend::Range& ranks, const backend::Range& steps) {
  std::map<Key, int> out;
  for (const ir::Program& prog : plan.ranks)
    for (const ir::Step& st : prog.steps)
      for (const ir::Send& s : st.sends) {
        const uint32_t lands = st.t + plan.spec.lambda - 1;
        if ((ranks.contains(prog.rank) || ranks.contains(s.to)) && st.t <= steps.hi && lands >= steps.lo)
          ++out[{prog.rank, s.to, s.port, st.t}];
      }
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("render: every message of a plan is exactly one arrow of the SVG", "[render]") {
  const std::vector<ir::Plan> plans = {encode(4, 1, 1), encode(9, 2, 1), encode(7, 1, 3, "postal-prepare-shoot"),
                                       broadcast(8, 1, 2, 4, "postal-broadcast"),
                                       broadcast(12, 1, 1, 4, "circulant-broadcast")};
  for (const ir::Plan& plan : plans) {
    INFO(plan.spec.algorithm << " K=" << plan.spec.K);
    const PlanView v(plan);
    RenderOptions o;
    o.mode = backend::ViewMode::Diagram;
    const std::string svg = backend::render_svg(v, o);
    const auto want = plan_messages(plan, {0, v.K() - 1}, {1, v.steps()});
    const auto got = svg_messages(svg);
    REQUIRE(!want.empty());
    CHECK(got == want);
    for (const auto& [k, n] : got) CHECK(n == 1);
    // The DOT has one message edge per message too.
    CHECK(count(backend::render_dot(v, o), "class=\"msg\"") == want.size());
  }
}

TEST_CASE("render: a zoomed view draws exactly the messages touching its ranks and steps", "[render]") {
  const ir::Plan plan = encode(9, 2, 1);
  const PlanView v(plan);
  for (auto [ranks, steps] : {std::pair<backend::Range, backend::Range>{{2, 4}, {1, v.steps()}},
                              {{0, 8}, {2, 2}},
                              {{3, 3}, {1, 2}}}) {
    RenderOptions o;
    o.ranks = ranks;
    o.steps = steps;
    const std::string svg = backend::render_svg(v, o);
    const auto want = plan_messages(plan, ranks, steps);
    CHECK(svg_messages(svg) == want);
    CHECK(backend::messages_in_view(v, o) == want.size());
    // Rows are the ranks in view.
    CHECK(count(svg, "class=\"rank\" data-rank=") == ranks.size());
  }
}

TEST_CASE("render: the critical path follows the data, not the busiest messages", "[render]") {
  // Rank 0 sends its input to 1 in step 1; 1 forwards (x0 + x1) to 2 in step
  // 2; in step 2 rank 0 also sends its input straight to 2, and rank 2's
  // output sums everything. Both step-2 messages land in step 2, but only
  // the forwarded one carries data that travelled since step 1: the path is
  // 0→1 (step 1), 1→2 (step 2), and the direct 0→2 has slack 1.
  Spec s = make_encode_spec(3, 2, 1, Field::gf256(), matrix_random(3, 1, Field::gf256()));
  ir::Plan plan = ir::make_plan(s, 2);
  auto& r0 = plan.ranks[0];
  auto& r1 = plan.ranks[1];
  auto& r2 = plan.ranks[2];
  const ir::SlotId x0 = r0.new_slot(), x1 = r1.new_slot(), a1 = r1.new_slot(), x2 = r2.new_slot(), b2 = r2.new_slot(),
                   c2 = r2.new_slot();
  r0.inputs = {x0};
  r1.inputs = {x1};
  r2.inputs = {x2};
  r0.outputs = {x0};
  r1.outputs = {a1};
  r2.outputs = {x2};
  r0.at(1).sends.push_back(ir::make_send(plan, r0, 0, 1, {ir::unit(x0)}));
  r1.at(1).recvs.push_back(ir::make_recv(plan, r1, 1, 0, 0, {a1}));
  r1.at(1).ops.push_back(ir::make_op(r1, a1, {{a1, 1}, {x1, 1}}));
  r1.at(2).sends.push_back(ir::make_send(plan, r1, 0, 2, {ir::unit(a1)}));
  // Rank 2 receives both in step 2, so they come on different ports.
  r0.at(2).sends.push_back(ir::make_send(plan, r0, 1, 2, {ir::unit(x0)}));
  r2.at(2).recvs.push_back(ir::make_recv(plan, r2, 2, 1, 0, {b2}));
  r2.at(2).recvs.push_back(ir::make_recv(plan, r2, 2, 0, 1, {c2}));
  r2.at(2).ops.push_back(ir::make_op(r2, x2, {{x2, 1}, {b2, 1}, {c2, 1}}));

  const PlanView v(plan);
  REQUIRE(v.messages().size() == 3);
  const auto& path = v.critical_path();
  REQUIRE(path.size() == 2);
  const backend::Message& first = v.messages()[path[0]];
  const backend::Message& second = v.messages()[path[1]];
  CHECK(std::tie(first.from, first.to, first.sent) == std::tuple(0u, 1u, 1u));
  CHECK(std::tie(second.from, second.to, second.sent) == std::tuple(1u, 2u, 2u));
  CHECK(v.critical_end() == 2);
  CHECK(backend::critical_path_text(v) == "r0 →(port 0, step 1) r1 →(port 0, step 2) r2");
  for (const backend::Message& m : v.messages())
    if (m.from == 0 && m.to == 2) {
      CHECK_FALSE(m.critical);
      CHECK(m.slack == 1);
    }
}

TEST_CASE("render: the critical path of compiled plans is a chain of messages", "[render]") {
  for (const ir::Plan& plan : {encode(9, 2, 1), encode(16, 1, 1), encode(7, 1, 3, "postal-prepare-shoot"),
                               broadcast(12, 1, 1, 4, "circulant-broadcast")}) {
    INFO(plan.spec.algorithm << " K=" << plan.spec.K);
    const PlanView v(plan);
    const auto& path = v.critical_path();
    REQUIRE(!path.empty());
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const backend::Message& a = v.messages()[path[i]];
      const backend::Message& b = v.messages()[path[i + 1]];
      CHECK(b.from == a.to);      // the receiver passes it on
      CHECK(b.sent > a.lands);    // from the step after it landed
    }
    CHECK(v.messages()[path.back()].lands == v.critical_end());
    CHECK(v.critical_end() <= v.steps());
    // These generators need every step: their last step delivers output data.
    CHECK(v.critical_end() == v.steps());
  }
}

TEST_CASE("render: the summary's totals are the cost pass's", "[render]") {
  for (const ir::Plan& plan : {encode(9, 2, 1), broadcast(8, 1, 2, 4, "postal-broadcast")}) {
    const PlanView v(plan);
    const auto c = passes::cost(plan);
    const auto sum = v.summary();
    REQUIRE(sum.size() == c.C1);
    uint64_t messages = 0, elements = 0, critical = 0;
    for (const auto& s : sum) {
      CHECK(s.largest == c.step_sizes[s.t - 1]);
      messages += s.messages;
      elements += s.elements;
      critical += s.critical;
      CHECK(s.busiest_port < plan.spec.p);
      CHECK(s.busiest_port_elements <= s.elements);
      // One send per (rank, port, step): busy send ports are the messages.
      CHECK(s.busy_send_ports == s.messages);
    }
    CHECK(messages == c.messages);
    CHECK(elements == c.elements);
    CHECK(critical == v.critical_path().size());
    uint64_t heat = 0;
    for (uint64_t x : v.traffic()) heat += x;
    CHECK(heat == c.elements);
    RenderOptions o;
    o.mode = backend::ViewMode::Summary;
    const std::string text = backend::summary_text(v, o);
    CHECK(count(text, "\n") == 4 + c.C1);
  }
}

TEST_CASE("render: the view mode follows the thresholds unless forced", "[render]") {
  const ir::Plan small = encode(9, 2, 1);
  const PlanView v(small);
  RenderOptions o;
  CHECK_FALSE(backend::summary_chosen(v, o));
  o.mode = backend::ViewMode::Summary;
  CHECK(backend::summary_chosen(v, o));
  CHECK(backend::render_svg(v, o).find("(summary)") != std::string::npos);
  const ir::Plan big = encode(backend::kDiagramMaxRanks + 1, 2, 1);
  const PlanView vb(big);
  RenderOptions ob;
  CHECK(backend::summary_chosen(vb, ob));
  ob.ranks = backend::Range{0, backend::kDiagramMaxRanks - 1};
  CHECK_FALSE(backend::summary_chosen(vb, ob));
}

TEST_CASE("render: bad --ranks and --steps are user errors naming the value and the valid range", "[render]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(backend::parse_range("5-3", "--ranks", "ranks", 0, 8),
                    Contains("--ranks 5-3") && Contains("reversed") && Contains("0..8"));
  CHECK_THROWS_WITH(backend::parse_range("2-9", "--steps", "steps", 1, 4),
                    Contains("--steps 2-9") && Contains("out of range") && Contains("1..4"));
  CHECK_THROWS_WITH(backend::parse_range("x", "--ranks", "ranks", 0, 8), Contains("not a number"));
  CHECK_THROWS_WITH(backend::parse_range("1-", "--ranks", "ranks", 0, 8), Contains("not a number"));
  CHECK_THROWS_AS(backend::parse_range("0", "--steps", "steps", 1, 4), UserError);
  const auto r = backend::parse_range("3", "--ranks", "ranks", 0, 8);
  CHECK((r.lo == 3 && r.hi == 3));
  const auto s = backend::parse_range("1-4", "--steps", "steps", 1, 4);
  CHECK((s.lo == 1 && s.hi == 4));
}

TEST_CASE("render: the explorer page is self-contained and embeds what it shows", "[render]") {
  const ir::Plan plan = encode(9, 2, 1);
  const PlanView v(plan);
  RenderOptions o;
  const std::string html = backend::render_html(v, o, nullptr);
  // No network: nothing loaded from elsewhere (the only URL is SVG's namespace).
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(count(html, "http://") == count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(html.find("<link") == std::string::npos);
  CHECK(svg_messages(html) == plan_messages(plan, {0, 8}, {1, v.steps()}));
  for (uint32_t r = 0; r < 9; ++r) CHECK(html.find("\"" + std::to_string(r) + "\":\"rank " + std::to_string(r) + ":") != std::string::npos);
  CHECK(html.find("C1 = ") != std::string::npos);
  CHECK(html.find("Lemma 2") != std::string::npos);
  // A trace of another plan is refused.
  nlohmann::json t = {{"traceEvents", nlohmann::json::array()}, {"otherData", {{"digest", "00"}}}};
  CHECK_THROWS_AS(backend::render_html(v, o, &t), UserError);
  nlohmann::json bad = {{"events", 1}};
  CHECK_THROWS_AS(backend::render_html(v, o, &bad), UserError);
  // Fields of the wrong type, or ranks the plan does not have.
  for (const char* text :
       {R"({"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":1,"dur":1,"name":7}]})",
        R"({"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":1,"dur":1,"name":"wait","args":{"run":-1}}]})",
        R"({"traceEvents":[{"ph":"X","pid":9,"tid":9,"ts":1,"dur":1,"name":"wait"}]})",
        R"({"traceEvents":[{"ph":"X","pid":"a","tid":0,"ts":1,"dur":1,"name":"wait"}]})",
        R"({"traceEvents":[]})"}) {
    INFO(text);
    const nlohmann::json t2 = nlohmann::json::parse(text);
    CHECK_THROWS_AS(backend::render_html(v, o, &t2), UserError);
  }
  // A well-formed trace of this plan is drawn: one row per rank.
  const nlohmann::json good = nlohmann::json::parse(
      R"({"traceEvents":[{"ph":"X","pid":2,"tid":2,"ts":1,"dur":3,"name":"wait","args":{"run":1,"step":1}}]})");
  const std::string with = backend::render_html(v, o, &good);
  CHECK(with.find("class=\"collplan-trace\"") != std::string::npos);
  CHECK(with.find("class=\"wait\"") != std::string::npos);
}

TEST_CASE("render: K = 4096 encode, the summary view renders in under 10 s and 5 MB", "[render][.slow]") {
  // The compile is not what is measured (bench_compile measures it); the
  // view (messages, critical path, port use) and the SVG are.
  const ir::Plan plan = encode(4096, 2, 1);
  const auto t0 = std::chrono::steady_clock::now();
  const PlanView v(plan);
  RenderOptions o;
  REQUIRE(backend::summary_chosen(v, o));
  const std::string svg = backend::render_svg(v, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("K = 4096 p = 2 encode: " << v.messages().size() << " messages, summary view " << svg.size() << " bytes in "
                                 << seconds << " s; critical path " << v.critical_path().size() << " messages");
  CHECK(seconds < 10);
  CHECK(svg.size() < 5'000'000);
  CHECK(svg.find("(summary)") != std::string::npos);
  CHECK(svg_messages(svg).empty());  // no arrows: the summary has no per-message elements
  CHECK(count(svg, "class=\"rank\" data-rank=") == backend::kHeatRows);
}
