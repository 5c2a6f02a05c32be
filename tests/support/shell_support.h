// Runs a shell command from a test, as a user would run the collplan CLI.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace collplan::test {

struct ShellResult {
  int status;          // the exit status
  std::string output;  // what the command wrote to stdout
};

// Runs `cmd` through /bin/sh; a command killed by a signal (a crash) fails
// the test.
inline ShellResult run_shell(const std::string& cmd) {
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  const int st = pclose(f);
  REQUIRE(WIFEXITED(st));  // a signal (crash) is a failure
  return {WEXITSTATUS(st), out};
}

// The collplan CLI with `args`, stdout and stderr together.
inline ShellResult run_collplan(const std::string& args) {
  return run_shell(std::string(COLLPLAN_CLI) + " " + args + " 2>&1");
}

}  // namespace collplan::test
