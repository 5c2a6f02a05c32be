// Repair and decode specs for tests, built as `compile` builds them (the
// helpers chosen by default unless given).
#pragma once

#include <string>

#include "pipeline/spec_flags.h"

namespace collplan::test {

// op: "repair" or "decode"; code: rs, lagrange, lrc:L, random; lost, helpers
// and to as comma-separated lists ("" = none / default).
inline Spec repair_spec(const std::string& op, uint32_t N, uint32_t K, const std::string& lost,
                        const Field& f = Field::gf256(), const std::string& code = "rs", bool systematic = true,
                        uint32_t p = 1, uint32_t lambda = 1, uint32_t blocks = 1, const std::string& to = "",
                        const std::string& helpers = "") {
  pipeline::SpecFlags sf;
  sf.op = op;
  sf.N = N;
  sf.K = K;
  sf.p = p;
  sf.lambda = lambda;
  sf.blocks = blocks;
  sf.field = f.name();
  sf.code = code;
  sf.systematic = systematic;
  sf.lost = lost;
  sf.to = to;
  sf.helpers = helpers;
  return pipeline::build_spec(sf);
}

}  // namespace collplan::test
