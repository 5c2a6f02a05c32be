// `collplan extract PLAN --rank R -o FILE`: a single-rank file (ir/binary.h),
// so a device gets only its own program, still bound to the plan by the
// plan's header and content hash. And what `collplan check` can say about
// such a file: the structure of that rank and its part of the cost.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "ir/binary.h"
#include "passes/cost.h"
#include "passes/verify.h"
#include "ir/spec.h"

namespace collplan::cli {

std::optional<ir::Rank> single_rank_of(const std::string& path) {
  if (!is_binary_file(path)) return std::nullopt;
  return ir::read_header(path).only_rank;
}

int check_single_rank(const std::string& path, bool json) {
  ir::PlanHeader hdr;
  const ir::Program prog = ir::read_rank(path, *single_rank_of(path), &hdr);
  const bool alone = hdr.compiled_alone;
  passes::verify_rank_structure(hdr.spec, hdr.num_steps, prog, alone ? kMaxRankLocalRanks : kMaxPlanRanks);
  const auto c = passes::rank_cost(hdr.num_steps, prog);
  const std::string not_checked =
      alone ? fmt::format("matching of its sends and receives with the other ranks (peers, steps, sizes), the algebra "
                          "against the postcondition, the plan's C2: one rank compiled alone does not prove the "
                          "whole-plan postcondition; {}",
                          num_ranks(hdr.spec) <= kMaxPlanRanks
                              ? "compile the whole plan (the same command without --rank) to prove it"
                              : fmt::format("K = {} is above the whole-plan limit {}, so no whole plan can be built "
                                            "(`collplan verify-circulant --p K --sample-ranks S` checks the circulant "
                                            "schedules this rank follows)",
                                            num_ranks(hdr.spec), kMaxPlanRanks))
            : std::string("matching of its sends and receives with the other ranks (peers, steps, sizes), the algebra "
                          "against the postcondition, the plan's C2: they need every rank (check the whole plan file)");
  if (json) {
    nlohmann::json j;
    j["ok"] = true;
    j["single_rank"] = prog.rank;
    j["compiled_alone"] = alone;
    j["checked"] = "structure of this rank";
    j["not_checked"] = not_checked;
    j["cost"] = passes::rank_cost_json(c);
    j[alone ? "file_digest" : "digest"] = hdr.content_hash.hex();
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const Spec& s = hdr.spec;
  std::cout << fmt::format("{}: rank {} of {} ({}) — {} K={} p={} lambda={} field={} algorithm={}\n", path,
                           prog.rank, num_ranks(s), alone ? "rank-local file, compiled alone" : "single-rank file",
                           op_name(s.op), s.K, s.p, s.lambda, s.field.name(), s.algorithm);
  if (alone)
    std::cout << fmt::format("file digest {} (this file's own: header, its index entry and the rank's blob verified "
                             "against it; no whole plan exists, so it is no plan digest)\n",
                             hdr.content_hash.hex());
  else
    std::cout << fmt::format("plan digest {} (header, index and this rank's blob verified against it)\n",
                             hdr.content_hash.hex());
  std::cout << "structure: OK for this rank (bounds, ports per step, postal timing of its receives, nothing in flight "
               "after the last step, read-before-write, outputs written, input/output counts)\n";
  std::cout << "not checked: " << not_checked << "\n";
  std::cout << passes::rank_cost_text(c);
  return 0;
}

namespace {

struct ExtractFlags {
  std::string plan, out;
  uint32_t rank = 0;
};

int run_extract(const ExtractFlags& f) {
  ir::extract_rank(f.plan, f.rank, f.out);
  ir::PlanHeader hdr;
  const ir::Program prog = ir::read_rank(f.out, f.rank, &hdr);
  std::cout << fmt::format("wrote {}: rank {} of {} ({} steps acted in, {} terms), plan digest {}\n", f.out, f.rank,
                           num_ranks(hdr.spec), prog.steps.size(), ir::count_terms(prog), hdr.content_hash.hex());
  return 0;
}

}  // namespace

void add_extract_command(CLI::App& app, CommandList& cmds) {
  static ExtractFlags f;
  auto* c = app.add_subcommand("extract",
                               "write one rank's program alone (a single-rank .cplan that keeps the plan's header and "
                               "digest), for a device that needs only its own");
  c->add_option("plan", f.plan, "binary plan file (.cplan)")->required();
  c->add_option("--rank", f.rank, "the rank to extract")->required();
  c->add_option("-o,--output", f.out, "single-rank file to write")->required();
  cmds.push_back({c, [] { return run_extract(f); }});
}

}  // namespace collplan::cli
