// `collplan tune`: the plan set's table chosen by measurement. The timing
// needs MPI and libcollplan_pmpi, which the collplan executable does not
// link, so the command is its own program, collplan-tune (built when MPI
// is found, installed beside collplan; runtime/pmpi/tune.cpp), and
// `collplan tune ARGS` execs it with ARGS: under mpirun every rank does.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "driver/cli.h"
#include "driver/report.h"
#include "support/error.h"

namespace collplan::cli {

namespace {

// The directory of the running executable ("" when it cannot be known).
std::string self_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace

int exec_tune(int argc, char** argv) {
  const std::string dir = self_dir();
  const std::string prog = (dir.empty() ? std::string(".") : dir) + "/collplan-tune";
  if (access(prog.c_str(), X_OK) != 0)
    return report(2, "input",
                  fmt::format("collplan tune needs MPI: this collplan was built without it (no collplan-tune "
                              "beside it, at {}); rebuild with MPI found (docs/pmpi.md)",
                              prog));
  std::vector<char*> args{const_cast<char*>(prog.c_str())};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(prog.c_str(), args.data());
  return report(4, "resource", fmt::format("collplan tune: cannot run {}: {}", prog, std::strerror(errno)));
}

void add_tune_command(CLI::App& app, CommandList&) {
  // Listed for --help only: main hands `collplan tune ...` to exec_tune
  // before parsing, so collplan-tune parses (and documents) its arguments.
  app.add_subcommand("tune",
                     "choose a plan set's table by timing its plans against MPI on this machine; run as "
                     "`mpirun -np K collplan tune --plans DIR` (collplan tune --help; docs/pmpi.md)");
}

}  // namespace collplan::cli
