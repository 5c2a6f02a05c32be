// Runs the collplan executable this build made (COLLPLAN_CLI) as a user runs
// it: a subprocess, its arguments as shell words. Every test that runs the
// CLI goes through here; stdout, stderr and the exit status come back apart.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "subprocess.h"

namespace collplan::test {

// The collplan executable's path.
inline std::string collplan_cli() { return COLLPLAN_CLI; }

// Runs `command` through /bin/sh in `cwd` (see run_command); a process
// ended by a signal (a crash) fails the test.
inline CommandResult run_shell(const std::string& command, const std::filesystem::path& cwd = {}) {
  CommandResult r = run_command(command, cwd);
  INFO(command << "\nstdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.signal == 0);
  return r;
}

// `collplan args` in `cwd`. collplan exits 0, 1 (a wrong plan), 2 (bad
// input) or 3 (an internal error); 128 + n is the shell reporting that
// signal n ended it, a crash, which fails the test.
inline CommandResult run_collplan(const std::string& args, const std::filesystem::path& cwd = {}) {
  CommandResult r = run_shell(collplan_cli() + " " + args, cwd);
  INFO("collplan " << args << "\nstdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status < 128);
  return r;
}

}  // namespace collplan::test
