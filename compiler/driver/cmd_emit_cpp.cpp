// `collplan emit-cpp PLAN -o DIR [--rank R]`: the C++ backend
// (backend/emit_cpp.h). The plan is checked first: collplan never turns an
// unchecked plan into code. A whole plan is verified completely (like
// `collplan run`); a single-rank file (`collplan extract`) as far as one rank
// can be (passes::verify_rank_structure) — its whole plan was verified when
// it was compiled, and the file carries that plan's digest.
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "backend/emit_cpp.h"
#include "driver/cli.h"
#include "ir/binary.h"
#include "passes/verify.h"
#include "support/error.h"

namespace collplan::cli {

namespace {

// "0,2,5-7" → {0, 2, 5, 6, 7}; every rank < K. UserError naming the bad part.
std::vector<ir::Rank> parse_rank_list(const std::string& text, uint32_t K) {
  std::vector<ir::Rank> out;
  size_t pos = 0;
  const auto number = [&](const std::string& part, const std::string& digits) -> uint32_t {
    if (digits.empty() || digits.size() > 10 || digits.find_first_not_of("0123456789") != std::string::npos)
      user_error("--ranks '{}': '{}' is not a rank or a range A-B of ranks (valid ranks: 0..{})", text, part, K - 1);
    const unsigned long long v = std::stoull(digits);
    if (v >= K) user_error("--ranks '{}': rank {} does not exist (valid: 0..{})", text, v, K - 1);
    return static_cast<uint32_t>(v);
  };
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(pos, comma - pos);
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part, part));
    } else {
      const uint32_t a = number(part, part.substr(0, dash)), b = number(part, part.substr(dash + 1));
      if (a > b) user_error("--ranks '{}': range '{}' runs backwards", text, part);
      if (static_cast<size_t>(b - a) + out.size() >= (size_t{1} << 24))
        user_error("--ranks '{}': more than 2^24 ranks; emit all ranks (omit --ranks) instead", text);
      for (uint32_t r = a; r <= b; ++r) out.push_back(r);
    }
    pos = comma + 1;
  }
  return out;
}

struct EmitFlags {
  std::string plan, dir, name = "collplan_plan";
  std::string ranks;  // --rank/--ranks: "3", "0,2,5-7" or "all"
  bool no_comments = false, copy_runtime = false;
};

int run_emit_cpp(const EmitFlags& f) {
  ir::Plan plan;
  ir::Program one;
  backend::PlanPrograms view;
  std::string checked;
  if (const auto only = single_rank_of(f.plan)) {
    // One rank's program: check what can be checked of it alone.
    ir::PlanHeader hdr;
    one = ir::read_rank(f.plan, *only, &hdr);
    // The plan view holds a program pointer per rank, so K is held to a
    // whole plan's limit even for a rank compiled alone.
    if (num_ranks(hdr.spec) > kMaxPlanRanks)
      user_error("emit-cpp: {} is a rank-local file of K = {} ranks; emit-cpp reads plans of "
                 "K <= {} ranks",
                 f.plan, num_ranks(hdr.spec), kMaxPlanRanks);
    passes::verify_rank_structure(hdr.spec, hdr.num_steps, one);
    view.spec = hdr.spec;
    view.num_steps = hdr.num_steps;
    view.digest = hdr.content_hash;
    view.ranks.assign(num_ranks(hdr.spec), nullptr);
    view.ranks[*only] = &one;
    checked = fmt::format("structure of rank {}; {}", *only,
                          hdr.compiled_alone ? "rank-local file (compiled alone; the digest is the file's own)"
                                             : "single-rank file");
  } else {
    plan = load_plan(f.plan);
    checked = passes::verify(plan).describe();
    view = backend::view_of(plan);
  }
  backend::EmitCppOptions opt;
  opt.name = f.name;
  if (!f.ranks.empty() && f.ranks != "all") opt.ranks = parse_rank_list(f.ranks, static_cast<uint32_t>(view.ranks.size()));
  opt.comments = !f.no_comments;
  auto files = backend::emit_cpp(view, opt);
  if (f.copy_runtime)
    for (const std::string& h : backend::runtime_headers()) files.push_back({h, backend::embedded_file(h)});
  backend::write_files(files, f.dir);
  size_t bytes = 0;
  for (const auto& file : files) bytes += file.text.size();
  std::cout << fmt::format("{}: checked ({}), digest {}\n", f.plan, checked, view.digest.hex());
  std::cout << fmt::format("wrote {} files ({} bytes) to {}: {}", files.size(), bytes, f.dir, files[0].name);
  for (size_t i = 1; i < files.size() && i < 4; ++i) std::cout << ", " << files[i].name;
  std::cout << (files.size() > 4 ? ", ...\n" : "\n");
  return 0;
}

}  // namespace

void add_emit_cpp_command(CLI::App& app, CommandList& cmds) {
  static EmitFlags f;
  auto* c = app.add_subcommand(
      "emit-cpp",
      "write C++17 sources for a checked plan: one fully unrolled file per rank (<name>_rank<r>.cpp) and a dispatch "
      "header (<name>.h); they need only collplan_embedded.h (no MPI, no heap, no exceptions)");
  c->add_option("plan", f.plan,
                "plan file (.cplan, a single-rank .cplan from `collplan extract` or `compile --rank`, or .json)")
      ->required();
  c->add_option("-o,--output", f.dir, "directory to write into (created if missing)")->required();
  c->add_option("--rank,--ranks", f.ranks,
                "emit only these ranks' sources: one rank (3), a list with ranges (0,2,5-7) or all (the default); the "
                "dispatch header describes only the emitted ranks");
  c->add_option("--name", f.name, "C++ namespace of the plan and prefix of the file names")->capture_default_str();
  c->add_flag("--no-comments", f.no_comments, "leave out the plan's text form above each statement");
  c->add_flag("--copy-runtime", f.copy_runtime,
              "also write the runtime headers (collplan_embedded.h, collplan_kernels.h and the GF kernel library "
              "collplan_gf*.h) into "
              "the directory");
  cmds.push_back({c, [] { return run_emit_cpp(f); }});
}

}  // namespace collplan::cli
