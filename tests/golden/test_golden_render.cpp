// Golden pictures: the SVG and DOT of small plans (backend/render_svg.h,
// render_dot.h) must equal the approved files in tests/golden/render/. The
// renderers' other checks: tests/unit/test_render.cpp.
#include <catch2/catch.hpp>

#include <string>

#include "backend/plan_view.h"
#include "backend/render_dot.h"
#include "backend/render_svg.h"
#include "golden_support.h"
#include "test_util.h"

using namespace collplan;
using backend::PlanView;
using backend::RenderOptions;
using test::approve_or_compare;

namespace {

// An encode plan over GF(2^8) with the matrix tests/unit/test_render.cpp uses.
ir::Plan encode(uint32_t K, uint32_t p, uint32_t lambda, const char* algorithm) {
  return test::compiled(test::random_encode_spec(K, p, Field::gf256(), 7, lambda), algorithm);
}

}  // namespace

TEST_CASE("render: golden SVG and DOT of small plans", "[render][golden]") {
  const ir::Plan k4 = encode(4, 1, 1, "prepare-shoot");
  const PlanView v4(k4);
  RenderOptions o;
  o.title = "encode K=4 p=1";
  approve_or_compare("render/encode-K4-p1.svg", backend::render_diagram_svg(v4, o));
  approve_or_compare("render/encode-K4-p1.dot", backend::render_dot(v4, o));
  o.coefficients = true;
  approve_or_compare("render/encode-K4-p1-coefficients.svg", backend::render_diagram_svg(v4, o));

  // Two ports and λ = 2: arrows span two columns, ports in two colours.
  const ir::Plan k5 = encode(5, 2, 2, "postal-prepare-shoot");
  const PlanView v5(k5);
  RenderOptions o5;
  o5.title = "encode K=5 p=2 lambda=2";
  approve_or_compare("render/encode-K5-p2-l2.svg", backend::render_diagram_svg(v5, o5));
  approve_or_compare("render/encode-K5-p2-l2.dot", backend::render_dot(v5, o5));
  approve_or_compare("render/encode-K5-p2-l2-summary.svg", backend::render_summary_svg(v5, o5));
}
