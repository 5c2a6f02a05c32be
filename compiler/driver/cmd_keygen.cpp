// `collplan keygen -o FILE`: a fresh job key for the TCP transport (32 random
// bytes as 64 hex digits, file mode 0600, never over an existing file unless
// --force). Every rank of a job then gives it to `run --key-file` (or
// $COLLPLAN_TCP_KEY_FILE): docs/runtime.md, "TCP".
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "driver/cli.h"
#include "runtime/transport/tcp.h"

namespace collplan::cli {

void add_keygen_command(CLI::App& app, CommandList& cmds) {
  struct Options {
    std::string out;
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  auto* k = app.add_subcommand("keygen", "write a fresh random job key for TCP runs (run --key-file)");
  k->add_option("-o,--output", o->out, "the key file to create (mode 0600)")->required();
  k->add_flag("--force", o->force, "replace an existing file");
  k->footer("Example:\n"
            "  collplan keygen -o job.key   # copy it to every rank's machine, then\n"
            "  collplan run a.cplan --transport tcp --peers peers.txt --rank 0 --key-file job.key\n"
            "Exit status: 0 written; 2 the file exists (without --force) or cannot be written.");
  cmds.push_back({k, [o] {
                    rt::write_key_file(o->out, o->force);
                    std::cout << fmt::format("keygen: wrote a new job key to {} (mode 0600)\n", o->out);
                    return 0;
                  }});
}

}  // namespace collplan::cli
