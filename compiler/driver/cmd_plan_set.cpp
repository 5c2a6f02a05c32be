// `collplan plan-set`: the plans an MPI program's collectives are served
// from (libcollplan_pmpi, docs/pmpi.md), compiled, verified and indexed.
//
// For every operation and communicator size asked for, every generator of
// the operation is compiled at every block count 1, 2, 4, … --max-blocks
// (p = 1, λ = 1: MPI's point-to-point model), verified as every compile is,
// and, for reductions, checked for what a replay with MPI's operators needs
// (passes/verify_reduction.h: exact for every commutative operator, operand
// order kept, identical bits on every rank). Then, at each message size of
// the ladder 1 B, 2 B, 4 B, … --max-bytes, the cost model
//     time = C1·alpha + C2·⌈bytes / n⌉·beta
// (alpha, beta from --cost-file or the flags) picks the fastest candidate,
// and consecutive sizes with the same winner become one row of the table.
// A reduction's rows come in up to three passes: the fastest exact plan,
// then, where that one does not give identical bits on every rank, the
// fastest that does (floating-point data needs it), then, where neither
// keeps operand order, the fastest that does (non-commutative operators).
// The first row that fits a call wins (plan_table.h), so each call finds
// the fastest plan it may use. Only the plans some row names are written,
// unless --candidates asks for alternatives for `collplan tune` to time:
// --candidates N adds, at each size of the ladder and for each pass, the N
// fastest candidates by the cost model; --candidates all adds every
// verified candidate. They are listed in "plans" but no row names them.
// --lambdas adds candidates compiled at postal latencies λ > 1 (one block,
// only generators whose schedule λ reshapes: the postal trees become stars
// and the direct exchanges put every message in flight at once at λ = K − 1),
// written as alternatives with --candidates for tune to time: the model's
// alpha is one message's whole latency, which says nothing about λ.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "driver/cost_flags.h"
#include "gen/registry.h"
#include "ir/binary.h"
#include "ir/spec.h"
#include "passes/verify_reduction.h"
#include "pipeline/pipeline.h"
#include "runtime/pmpi/plan_table.h"
#include "support/error.h"
#include "support/safe_file.h"

namespace collplan::cli {

namespace {

using pmpi::CallOp;

struct PlanSetFlags {
  std::string ops = "broadcast,reduce,allgather,allreduce,reduce-scatter,prefix";
  std::string K = "2-16";
  uint64_t max_bytes = uint64_t{4} << 20;
  uint32_t max_blocks = 64;
  std::string cost_file;
  std::optional<double> alpha, beta;
  std::string out;
  std::string extra = "0";  // --candidates: a count or "all"
  std::string lambdas = "1";  // --lambdas: postal latencies, numbers or K-1
  bool quiet = false;
};

// Measured with `collplan calibrate --transport mpi` under Open MPI on one
// node (shared memory); a cluster has larger values: calibrate there.
constexpr double kDefaultAlpha = 2e-6;
constexpr double kDefaultBeta = 1.5e-10;

std::vector<uint32_t> parse_ranks(const std::string& text) {
  std::vector<uint32_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    auto num = [&](const std::string& s) -> uint32_t {
      uint32_t v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 2 || v > 4096)
        user_error("--K: \"{}\" in \"{}\" is not a communicator size in 2..4096 (give sizes and ranges: 2-16,24,32)", s,
                   text);
      return v;
    };
    if (dash == std::string::npos) {
      out.push_back(num(item));
    } else {
      const uint32_t lo = num(item.substr(0, dash)), hi = num(item.substr(dash + 1));
      if (lo > hi) user_error("--K: range \"{}\" is empty (write low-high)", item);
      for (uint32_t k = lo; k <= hi; ++k) out.push_back(k);
    }
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The table operations an --ops name stands for (prefix: scan and exscan).
std::vector<CallOp> call_ops_of(const std::string& name) {
  if (name == "broadcast") return {CallOp::broadcast};
  if (name == "reduce") return {CallOp::reduce};
  if (name == "allgather") return {CallOp::allgather};
  if (name == "allreduce") return {CallOp::allreduce};
  if (name == "reduce-scatter") return {CallOp::reduce_scatter};
  if (name == "prefix") return {CallOp::scan, CallOp::exscan};
  if (name == "allgatherv")
    user_error("--ops: allgatherv calls are served by the allgather plans (padded to the largest count); list "
               "allgather");
  user_error("--ops: \"{}\" is not an operation MPI programs call (valid: broadcast, reduce, allgather, allreduce, "
             "reduce-scatter, prefix)",
             name);
}

OpKind op_kind_of(CallOp op) {
  switch (op) {
    case CallOp::broadcast: return OpKind::Broadcast;
    case CallOp::reduce: return OpKind::Reduce;
    case CallOp::allgather: return OpKind::Allgather;
    case CallOp::allreduce: return OpKind::Allreduce;
    case CallOp::reduce_scatter: return OpKind::ReduceScatter;
    case CallOp::scan: case CallOp::exscan: return OpKind::Prefix;
  }
  return OpKind::Allreduce;
}

bool is_reduction(CallOp op) { return op != CallOp::broadcast && op != CallOp::allgather; }

// --lambdas for communicator size K: "K-1" stands for max(K − 1, 1). λ = 1
// comes first always: the rows are chosen among its candidates.
std::vector<uint32_t> lambdas_for(const std::string& text, uint32_t K) {
  std::vector<uint32_t> out{1};
  for (size_t pos = 0; pos <= text.size();) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    uint32_t v = 0;
    if (item == "K-1") {
      v = std::max(K - 1, 1u);
    } else {
      auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 1 || v > 4096)
        user_error("--lambdas: \"{}\" in \"{}\" is not a postal latency (valid: 1..4096 or K-1, comma-separated)",
                   item, text);
    }
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

struct Candidate {
  std::string name, algorithm;
  uint32_t blocks = 1;
  uint32_t lambda = 1;  // > 1: an alternative for tune only (the cost model's alpha describes λ = 1)
  ir::Plan plan;
  uint32_t C1 = 0;
  uint64_t C2 = 0;
  bool exact = true, ordered = true, consistent = true;
  double time(uint64_t bytes, double alpha, double beta) const {
    return C1 * alpha + static_cast<double>(C2) * static_cast<double>((bytes + blocks - 1) / blocks) * beta;
  }
};

std::vector<Candidate> candidates(CallOp op, uint32_t K, const PlanSetFlags& f, std::vector<std::string>& log) {
  std::vector<Candidate> out;
  const OpKind kind = op_kind_of(op);
  for (const gen::GeneratorInfo& g : gen::generators()) {
    if (std::find(g.ops.begin(), g.ops.end(), kind) == g.ops.end()) continue;
    // λ > 1 plans are written only as --candidates alternatives: without
    // those they are not compiled at all.
    for (uint32_t lambda : lambdas_for(f.extra == "0" ? std::string("1") : f.lambdas, K))
    for (uint32_t n = 1; n <= (kind == OpKind::Prefix || lambda > 1 ? 1u : f.max_blocks); n *= 2) {
      pipeline::SpecFlags sf;
      sf.op = op_name(kind);
      sf.K = K;
      sf.blocks = n;
      sf.lambda = lambda;
      sf.exclusive = op == CallOp::exscan;
      sf.field = "gf256";
      Candidate c;
      try {
        const Spec spec = pipeline::build_spec(sf);
        if (lambda > 1) {
          // Kept only where λ changes the schedule's shape (the postal trees,
          // the direct exchanges), not where it only stretches every round
          // of the λ = 1 schedule to λ steps.
          if (g.why_not && !g.why_not(spec, {}).empty()) continue;  // e.g. the circulant ones: λ = 1 only
          Spec one = spec;
          one.lambda = 1;
          if (g.estimate(spec, {}).C1 >= uint64_t{lambda} * g.estimate(one, {}).C1) continue;
        }
        pipeline::CompileOptions co;
        co.algorithm = g.name;
        pipeline::CompileResult r = pipeline::compile(spec, co);
        c.plan = std::move(r.plan);
        c.C1 = r.cost.C1;
        c.C2 = r.cost.C2;
      } catch (const UserError& e) {
        log.push_back(fmt::format("{} K={} n={} lambda={} {}: not built: {}", pmpi::call_op_name(op), K, n, lambda,
                                  g.name, e.what()));
        continue;
      }
      c.algorithm = g.name;
      c.blocks = n;
      c.lambda = lambda;
      c.name = fmt::format("{}-K{}-n{}-{}{}", pmpi::call_op_name(op), K, n, g.name,
                           lambda > 1 ? fmt::format("-l{}", lambda) : std::string());
      if (is_reduction(op)) {
        const passes::ReductionProperties p = passes::reduction_properties(c.plan);
        c.exact = p.exact;
        c.ordered = p.ordered;
        c.consistent = p.consistent;
        if (!c.exact) {
          log.push_back(fmt::format("{}: left out, not exact for MPI's operators: {}", c.name, p.why_not_exact));
          continue;
        }
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

int run_plan_set(const PlanSetFlags& f) {
  double alpha = kDefaultAlpha, beta = kDefaultBeta;
  std::string cost_from = "defaults (one node, shared memory)";
  if (!f.cost_file.empty()) {
    const CostFile cf = read_cost_file(f.cost_file);
    alpha = cf.alpha_s;
    beta = cf.beta_s_per_byte;
    cost_from = f.cost_file;
  }
  if (f.alpha) alpha = *f.alpha, cost_from = "flags";
  if (f.beta) beta = *f.beta, cost_from = "flags";
  std::vector<CallOp> ops;
  for (size_t pos = 0; pos <= f.ops.size();) {
    const size_t comma = std::min(f.ops.find(',', pos), f.ops.size());
    for (CallOp o : call_ops_of(f.ops.substr(pos, comma - pos)))
      if (std::find(ops.begin(), ops.end(), o) == ops.end()) ops.push_back(o);
    pos = comma + 1;
  }
  const std::vector<uint32_t> Ks = parse_ranks(f.K);
  std::filesystem::create_directories(f.out);

  nlohmann::json plans = nlohmann::json::object(), table = nlohmann::json::array();
  std::vector<std::string> log;
  size_t written = 0;
  for (CallOp op : ops)
    for (uint32_t K : Ks) {
      std::vector<Candidate> cands = candidates(op, K, f, log);
      if (cands.empty()) {
        log.push_back(fmt::format("{} K={}: no plan could be built; its calls go to MPI", pmpi::call_op_name(op), K));
        continue;
      }
      // The sizes of the ladder and, per pass, the winner at each.
      std::vector<uint64_t> sizes;
      for (uint64_t s = 1; s <= f.max_bytes; s *= 2) sizes.push_back(s);
      if (sizes.back() != f.max_bytes) sizes.push_back(f.max_bytes);
      auto best = [&](uint64_t s, auto ok) -> int {
        int w = -1;
        for (size_t i = 0; i < cands.size(); ++i)
          if (cands[i].lambda == 1 && ok(cands[i]) &&
              (w < 0 || cands[i].time(s, alpha, beta) < cands[static_cast<size_t>(w)].time(s, alpha, beta)))
            w = static_cast<int>(i);
        return w;
      };
      std::vector<std::vector<int>> passes(3, std::vector<int>(sizes.size(), -1));
      for (size_t i = 0; i < sizes.size(); ++i) {
        passes[0][i] = best(sizes[i], [](const Candidate&) { return true; });
        if (!is_reduction(op)) continue;
        const int a = passes[0][i];
        if (a >= 0 && !cands[static_cast<size_t>(a)].consistent)
          passes[1][i] = best(sizes[i], [](const Candidate& c) { return c.consistent; });
        const int b = passes[1][i] >= 0 ? passes[1][i] : a;
        if (b >= 0 && !(cands[static_cast<size_t>(b)].ordered && cands[static_cast<size_t>(b)].consistent))
          passes[2][i] = best(sizes[i], [](const Candidate& c) { return c.ordered && c.consistent; });
      }
      std::set<int> used;
      // --candidates: the alternatives tune times, per size and pass.
      if (f.extra == "all") {
        for (size_t i = 0; i < cands.size(); ++i) used.insert(static_cast<int>(i));
      } else if (const uint32_t extra = static_cast<uint32_t>(std::stoul(f.extra)); extra > 0) {
        const std::vector<std::function<bool(const Candidate&)>> classes = {
            [](const Candidate&) { return true; }, [](const Candidate& c) { return c.consistent; },
            [](const Candidate& c) { return c.ordered && c.consistent; }};
        for (uint64_t s : sizes)
          for (size_t k = 0; k < (is_reduction(op) ? classes.size() : 1); ++k) {
            std::vector<int> order;
            for (size_t i = 0; i < cands.size(); ++i)
              if (cands[i].lambda == 1 && classes[k](cands[i])) order.push_back(static_cast<int>(i));
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
              return cands[static_cast<size_t>(a)].time(s, alpha, beta) < cands[static_cast<size_t>(b)].time(s, alpha, beta);
            });
            for (size_t i = 0; i < order.size() && i < extra; ++i) used.insert(order[i]);
          }
        // The --lambdas alternatives: the model cannot rank them, tune can.
        for (size_t i = 0; i < cands.size(); ++i)
          if (cands[i].lambda > 1) used.insert(static_cast<int>(i));
      }
      for (const auto& pass : passes)
        for (size_t i = 0; i < sizes.size();) {
          const int w = pass[i];
          size_t j = i;
          while (j + 1 < sizes.size() && pass[j + 1] == w) ++j;
          if (w >= 0) {
            const uint64_t lo = i == 0 ? 1 : sizes[i - 1] + 1;
            table.push_back({{"op", pmpi::call_op_name(op)},
                             {"K", K},
                             {"bytes", {lo, sizes[j]}},
                             {"plan", cands[static_cast<size_t>(w)].name}});
            used.insert(w);
          }
          i = j + 1;
        }
      for (int w : used) {
        const Candidate& c = cands[static_cast<size_t>(w)];
        const std::string file = c.name + ".cplan";
        ir::write_binary(c.plan, f.out + "/" + file);
        ++written;
        nlohmann::json e = {{"file", file},       {"digest", ir::plan_digest(c.plan).hex()},
                            {"op", pmpi::call_op_name(op)}, {"K", K},
                            {"blocks", c.blocks}, {"lambda", c.lambda}, {"algorithm", c.algorithm},
                            {"C1", c.C1},         {"C2", c.C2}};
        if (is_reduction(op)) {
          e["exact"] = c.exact;
          e["ordered"] = c.ordered;
          e["consistent"] = c.consistent;
        }
        plans[c.name] = e;
      }
      if (!f.quiet)
        std::cerr << fmt::format("{} K={}: {} candidates, {} plan(s) written\n", pmpi::call_op_name(op), K,
                                 cands.size(), used.size());
    }
  nlohmann::json index = {{"format", pmpi::kPlanSetFormat},
                          {"version", pmpi::kPlanSetVersion},
                          {"tuned", false},
                          {"cost", {{"alpha_s", alpha}, {"beta_s_per_byte", beta}, {"from", cost_from}}},
                          {"plans", plans},
                          {"table", table}};
  const std::string text = index.dump(1) + "\n";
  // What the library will read must parse: a bug here is ours, not the user's.
  try {
    (void)pmpi::parse_plan_table(text, f.out + "/index.json", f.out);
  } catch (const UserError& e) {
    ::collplan::internal_error(__FILE__, __LINE__,
                               fmt::format("plan-set wrote an index it cannot read back: {}", e.what()));
  }
  files::write_file(f.out + "/index.json", "plan set index", text);
  for (const std::string& l : log)
    if (!f.quiet) std::cerr << "  " << l << "\n";
  std::cout << fmt::format("wrote {}/index.json: {} rows, {} plans (cost model alpha = {:.3g} s, beta = {:.3g} s/B "
                           "from {})\n",
                           f.out, table.size(), written, alpha, beta, cost_from);
  return 0;
}

}  // namespace

void add_plan_set_command(CLI::App& app, CommandList& cmds) {
  auto f = std::make_shared<PlanSetFlags>();
  auto* c = app.add_subcommand("plan-set",
                               "compile, verify and index the plans libcollplan_pmpi serves MPI collectives from "
                               "(docs/pmpi.md)");
  c->add_option("--ops", f->ops,
                "operations, comma-separated: broadcast, reduce, allgather, allreduce, reduce-scatter, prefix "
                "(prefix: MPI_Scan and MPI_Exscan)")
      ->capture_default_str();
  c->add_option("--K", f->K, "communicator sizes: a list of sizes and ranges, e.g. 2-16,24,32 (2..4096)")
      ->capture_default_str();
  add_uint_option(c, "--max-bytes", f->max_bytes, "largest message the table covers (bytes)", "1..2^40");
  add_uint_option(c, "--max-blocks", f->max_blocks, "largest block count tried (powers of two up to it)", "1..4096");
  c->add_option("--cost-file", f->cost_file, "alpha and beta from `collplan calibrate` (default: one node's values)");
  c->add_option("--alpha", f->alpha, "start-up time per message, seconds (overrides --cost-file)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--beta", f->beta, "time per byte, seconds (overrides --cost-file)")->check(CLI::NonNegativeNumber);
  c->add_option("-o,--output", f->out, "directory to write the plans and index.json to")->required();
  c->add_option("--candidates", f->extra,
                "also write alternatives for `collplan tune` to time, listed in \"plans\" but in no row: N (the N "
                "fastest by the cost model at each size and property class) or all (every verified candidate)")
      ->capture_default_str();
  c->add_option("--lambdas", f->lambdas,
                "postal latencies to compile at besides 1, comma-separated: numbers in 1..4096 or K-1 (the "
                "communicator size minus one). A lambda > 1 candidate is kept where it changes the schedule's "
                "shape (postal trees, direct exchanges: stars at K-1), at one block, and only as an alternative "
                "for `collplan tune` "
                "(written with --candidates, named by no row: the cost model's alpha describes lambda = 1)")
      ->capture_default_str();
  c->add_flag("--quiet", f->quiet, "print the summary line only");
  cmds.push_back({c, [f] {
                    if (f->max_bytes < 1 || f->max_bytes > (uint64_t{1} << 40))
                      user_error("--max-bytes {} is out of range (valid: 1..2^40)", f->max_bytes);
                    if (f->extra != "all") {
                      uint32_t n = 0;
                      auto [p, ec] = std::from_chars(f->extra.data(), f->extra.data() + f->extra.size(), n);
                      if (f->extra.empty() || ec != std::errc() || p != f->extra.data() + f->extra.size() || n > 64)
                        user_error("--candidates \"{}\" is not a count in 0..64 or \"all\"", f->extra);
                    }
                    if (f->max_blocks < 1 || f->max_blocks > 4096)
                      user_error("--max-blocks {} is out of range (valid: 1..4096)", f->max_blocks);
                    (void)lambdas_for(f->lambdas, 2);  // refused before anything is compiled
                    return run_plan_set(*f);
                  }});
}

}  // namespace collplan::cli
