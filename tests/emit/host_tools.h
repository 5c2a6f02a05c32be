// Running host commands and reading files, for the tests and the benchmark
// that build emitted C++ with the system compiler.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../support/subprocess.h"

namespace emit_test {

struct CmdResult {
  int status = -1;
  std::string output;  // stdout, then stderr
};

// Runs `cmd` through the shell (collplan::test::run_command); status is the
// exit code (128 when a signal ended it).
inline CmdResult run_cmd(const std::string& cmd) {
  const collplan::test::CommandResult r = collplan::test::run_command(cmd);
  return {r.signal != 0 ? 128 : r.status, r.output()};
}

inline std::vector<unsigned char> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& p, const std::vector<unsigned char>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace emit_test
