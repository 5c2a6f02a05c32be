// What a Chrome trace viewer relies on in a trace JSON (runtime/trace.h's
// trace_json, `collplan run --trace`).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

namespace collplan::test {

// The checks a Chrome trace viewer relies on; returns the distinct pids.
inline std::set<uint32_t> check_chrome_trace(const nlohmann::json& j) {
  REQUIRE(j.is_object());
  REQUIRE(j.contains("traceEvents"));
  REQUIRE(j["traceEvents"].is_array());
  std::set<uint32_t> pids;
  for (const auto& e : j["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    REQUIRE(e.contains("tid"));
    REQUIRE(e.contains("name"));
    REQUIRE(e["name"].is_string());
    if (e["ph"] == "M") continue;
    REQUIRE(e["ph"] == "X");
    REQUIRE(e["ts"].is_number());
    REQUIRE(e["dur"].is_number());
    CHECK(e["ts"].get<double>() >= 0);
    CHECK(e["dur"].get<double>() >= 0);
    CHECK(e["pid"] == e["tid"]);
    pids.insert(e["pid"].get<uint32_t>());
  }
  return pids;
}

}  // namespace collplan::test
