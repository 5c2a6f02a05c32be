// Approved ("golden") files under tests/golden/: compared byte for byte, or
// rewritten when COLLPLAN_APPROVE=1 (scripts/approve.sh).
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace collplan::test {

inline std::string golden_path(const std::string& name) {
  return std::string(COLLPLAN_SOURCE_DIR) + "/tests/golden/" + name;
}

inline void approve_or_compare(const std::string& name, const std::string& text) {
  const std::string path = golden_path(name);
  if (const char* a = std::getenv("COLLPLAN_APPROVE"); a && std::string(a) == "1") {
    std::ofstream(path, std::ios::binary) << text;
    WARN("approved " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  INFO("golden file " << path << " (run scripts/approve.sh after an intended change)");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  REQUIRE(ss.str() == text);
}

}  // namespace collplan::test
