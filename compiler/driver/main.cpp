// collplan — the command-line driver. Each subcommand is a straight list of
// steps over the library: parse the spec, compile, verify, write; or load,
// check, print; or load, replay, compare. Each lives in its own file
// (driver/cmd_<name>.cpp, see driver/cli.h); main only adds them, parses
// and turns what a subcommand throws into the exit status.
//
// Exit status: 0 success; 1 the plan is wrong (checker or replay mismatch);
// 2 bad input (spec, file, flags); 3 internal error (a collplan bug); 4 the
// environment ran out of memory or file descriptors.
#include <new>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "driver/cli.h"
#include "driver/names.h"
#include "driver/report.h"
#include "support/error.h"

using namespace collplan;
using namespace collplan::cli;

namespace {

// The subcommands, in the order `collplan --help` lists them.
using AddCommand = void (*)(CLI::App&, CommandList&);
constexpr AddCommand kCommands[] = {
    add_emit_cpp_command, add_extract_command, add_run_command,    add_verify_circulant_command,
    add_search_command,   add_compile_command, add_check_command,  add_show_command,
    add_list_command,     add_bound_command,   add_import_command, add_export_command,
    add_recode_command,   add_keygen_command,  add_calibrate_command, add_plan_set_command,
    add_tune_command,
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"collplan — offline schedule compiler for (coded) collective communication.\n"
               "Compiles a spec (operation, K, p, lambda, field, matrix) into a verified per-processor plan,\n"
               "checks plans against their postcondition and lower bounds, and replays them (in-process, over MPI or over TCP)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "collplan 0.1.0");
  app.footer(std::string("Examples:\n"
                         "  collplan compile --op encode --K 16 --p 2 --field gf256 -o a.cplan\n"
                         "  collplan compile --op broadcast --K 64 --blocks auto --cost-len 100000 --explain\n"
                         "  collplan check a.cplan --format json\n"
                         "  collplan run a.cplan --len 65536\n"
                         "  mpirun -np 4 collplan calibrate --transport mpi -o cost.json   (then compile --cost-file cost.json)\n"
                         "  collplan list --format json\n"
                         "  collplan <command> --help     (options and examples of one command)\n\n") +
             kExitCodes + "\nDocumentation: docs/cli.md (conventions, JSON outputs, limits).");
  CommandList commands;
  for (const AddCommand add : kCommands) add(app, commands);

  // tune's arguments are collplan-tune's (an MPI program): passed on whole.
  if (argc >= 2 && std::string(argv[1]) == "tune") return exec_tune(argc, argv);
  try {
    check_names(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's own errors, in collplan's one format; usage errors are bad input.
    std::string msg = e.what();
    std::string cmd;
    for (const CLI::App* c : app.get_subcommands()) cmd = c->get_name();
    return report(2, "input", fmt::format("{}{} (see collplan {}--help)", cmd.empty() ? "" : cmd + ": ", msg,
                                          cmd.empty() ? "" : cmd + " "));
  } catch (const UserError& e) {
    return report(2, "input", e.what());
  }

  try {
    for (const auto& c : commands)
      if (*c.app) return c.run();
  } catch (const VerifyError& e) {
    return report(1, fault_name(e.kind()), fmt::format("plan rejected ({}): {}", fault_name(e.kind()), e.what()));
  } catch (const UserError& e) {
    return report(2, "input", e.what());
  } catch (const InternalError& e) {
    return report(3, "internal", e.what());
  } catch (const ResourceError& e) {
    return report(4, "resource", e.what());
  } catch (const std::bad_alloc&) {
    // Sizes are checked against collplan's limits before anything large is
    // allocated, so what is left is the environment: ulimit -v or a machine
    // whose memory is taken.
    return report(4, "resource",
                  "out of memory: an allocation failed within collplan's size limits (docs/cli.md, \"Limits\"); "
                  "raise `ulimit -v` or free memory, or use a smaller K or --blocks");
  } catch (const std::exception& e) {
    return report(3, "internal", fmt::format("internal error: {} (this is a bug in collplan)", e.what()));
  }
  return 0;
}
