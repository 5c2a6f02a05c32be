// Approved ("golden") files: compared byte for byte with what the code makes
// now, or rewritten with it when COLLPLAN_APPROVE=1 (scripts/approve.sh).
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace collplan::test {

// tests/golden/<name>.
inline std::string golden_path(const std::string& name) {
  return std::string(COLLPLAN_SOURCE_DIR) + "/tests/golden/" + name;
}

// The approved file at `path` against `text`.
inline void approve_or_compare_file(const std::string& path, const std::string& text) {
  if (const char* a = std::getenv("COLLPLAN_APPROVE"); a && std::string(a) == "1") {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    WARN("approved " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  INFO("approved file " << path << " (run scripts/approve.sh after an intended change)");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == text);
}

// The approved file tests/golden/<name> against `text`.
inline void approve_or_compare(const std::string& name, const std::string& text) {
  approve_or_compare_file(golden_path(name), text);
}

}  // namespace collplan::test
