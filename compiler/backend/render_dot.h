// The round diagram as Graphviz DOT (`collplan show --dot`), for readers who
// lay plans out with their own tools (dot -Tsvg, -Tpdf, xdot).
//
// Node r{r}_{b} is rank r after step b (b = 0: its inputs); nodes of one b
// form one column (rank=same), and grey edges r{r}_{b−1} → r{r}_{b} keep each
// rank on its row. A message sent by a in step s landing at b in step
// s + λ − 1 is the edge r{a}_{s−1} → r{b}_{s+λ−1}: it reads a's slots as they
// were after step s − 1 and its data can be used after step s + λ − 1. Edge
// attributes: label = elements (with `coefficients` the payload follows),
// colour and style = port (render_svg.h's palette), penwidth 3 on the
// critical path (plan_view.h), class "msg" and id "msg_from_to_port_step".
// With a zoom, messages with both ranks in view whose flight meets the steps
// in view are drawn, clipped to the columns shown.
#pragma once

#include <string>

#include "backend/render_svg.h"

namespace collplan::backend {

std::string render_dot(const PlanView& v, const RenderOptions& o);

}  // namespace collplan::backend
