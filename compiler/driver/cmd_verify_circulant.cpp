// `collplan verify-circulant`: validity of Träff's circulant schedules at
// scale (docs/circulant.md, "Validity and its check"; the checks are gen/circulant_check.h's (R), (S), (C)).
//
//   --Kmax N            every rank of every K in [--Kmin, N], whole K at a
//                       time on the fast path (O(K log K) per K), spread
//                       over --threads workers, largest K first; a progress
//                       line (K done, ranks/s, ETA) every --progress seconds.
//   --reference         the same with the per-rank Algorithms 2–5 (O(q³)
//                       per rank): slow, the path the fast one is tested
//                       against.
//   --K K --sample-ranks S
//                       spot check of S ranks of one K <= 2^31 (0, 1, K−1,
//                       the skips and their neighbours, then seeded random
//                       ranks) with the per-rank algorithms only.
// Exit status 1 and the first violation when a schedule is wrong. The
// processor count is --K (--Kmin/--Kmax for the sweep), as everywhere in
// collplan; --p, which means ports elsewhere, is refused with a pointer to --K
// (the circulant schedules have one port). `p` below is the paper's name.
#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/cli.h"
#include "gen/circulant_check.h"
#include "matrix/matrix.h"
#include "support/error.h"
#include "support/limits.h"

namespace collplan::cli {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct VerifyCirculantFlags {
  uint64_t pmin = 1, pmax = 0, p = 0, sample = 0, seed = 1;
  unsigned threads = 0;
  double progress = 10;
  bool reference = false;
  std::string format = "text";
};

std::string eta_text(double s) {
  if (!std::isfinite(s)) return "?";
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

// Work of one p, the unit of the ETA: ranks times rounds.
double work_of(uint64_t p) { return static_cast<double>(p) * (gen::Circulant(p).q() + 1); }

int run_all(const VerifyCirculantFlags& f) {
  if (f.pmax < f.pmin) user_error("--Kmax {} is below --Kmin {}", f.pmax, f.pmin);
  if (f.pmin < 1) user_error("--Kmin 0: K starts at 1 processor");
  if (f.threads > kMaxThreads) user_error("--threads {} is too many: at most {}", f.threads, kMaxThreads);
  if (f.pmax > (uint64_t{1} << 24))
    user_error("--Kmax {} is too large for the whole-K sweep (at most 16777216); spot-check larger K with --K K "
               "--sample-ranks S",
               f.pmax);
  const unsigned T = f.threads ? f.threads : std::max(1u, std::thread::hardware_concurrency());
  double total_work = 0;
  for (uint64_t p = f.pmin; p <= f.pmax; ++p) total_work += work_of(p);

  std::atomic<uint64_t> next{f.pmax};  // largest first: the tail is short
  std::atomic<uint64_t> ranks_done{0}, ps_done{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  double work_done = 0;
  const auto t0 = Clock::now();
  auto worker = [&] {
    gen::CirculantTable t;
    gen::CirculantScratch scratch;
    while (!failed.load()) {
      const uint64_t p = next.fetch_sub(1);
      if (p < f.pmin || p > f.pmax) break;
      if (f.reference) gen::circulant_table_reference(p, t);
      else gen::circulant_table_fast(p, t, scratch);
      std::string e = gen::check_circulant_table(gen::Circulant(p), t);
      std::lock_guard<std::mutex> lock(mu);
      if (!e.empty()) {
        if (error.empty()) error = std::move(e);
        failed = true;
      }
      work_done += work_of(p);
      ranks_done += p;
      ++ps_done;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < T; ++i) pool.emplace_back(worker);
  // Progress on stderr while the workers run.
  const uint64_t num_p = f.pmax - f.pmin + 1;
  auto last = Clock::now();
  while (ps_done.load() < num_p && !failed.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (since(last) < f.progress) continue;
    last = Clock::now();
    double w;
    {
      std::lock_guard<std::mutex> lock(mu);
      w = work_done;
    }
    const double el = since(t0);
    const double eta = w > 0 ? el * (total_work - w) / w : INFINITY;
    std::cerr << fmt::format("verify-circulant: {} of {} values of p done ({:.1f}% of the work), {} ranks, {:.3g} "
                             "ranks/s, elapsed {}, ETA {}\n",
                             ps_done.load(), num_p, 100 * w / total_work, ranks_done.load(), ranks_done.load() / el,
                             eta_text(el), eta_text(eta));
  }
  for (auto& th : pool) th.join();
  const double el = since(t0);
  if (failed) verify_error("circulant schedule invalid: {}", error);
  if (f.format == "json") {
    std::cout << nlohmann::json{{"ok", true},
                                {"mode", "sweep"},
                                {"Kmin", f.pmin},
                                {"Kmax", f.pmax},
                                {"path", f.reference ? "reference" : "fast"},
                                {"threads", T},
                                {"ranks_checked", ranks_done.load()},
                                {"seconds", el}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("verified every rank of every p in [{}, {}] ({} path, {} threads): {} ranks in {:.2f} s, "
                           "{:.3g} ranks/s\n",
                           f.pmin, f.pmax, f.reference ? "per-rank reference" : "whole-p fast", T, ranks_done.load(),
                           el, ranks_done.load() / std::max(el, 1e-9));
  return 0;
}

int run_sample(const VerifyCirculantFlags& f) {
  if (f.p < 1 || f.p > gen::kCirculantMaxP)
    user_error("--K {} is out of range (valid: 1..{})", f.p, gen::kCirculantMaxP);
  if (f.sample == 0) user_error("--sample-ranks 0: give the number of ranks to check (>= 1)");
  if (f.sample > kMaxSampleRanks)
    user_error("--sample-ranks {} is too many: at most 2^24 = {} (the ranks are held in a set; --Kmax checks every "
               "rank of every K up to 2^24)",
               f.sample, kMaxSampleRanks);
  if (f.threads > kMaxThreads) user_error("--threads {} is too many: at most {}", f.threads, kMaxThreads);
  const gen::Circulant c(f.p);
  // The ranks most likely to hit a corner: the ends, the skips and their
  // neighbours; then seeded uniform ones.
  std::set<uint64_t> picked;
  auto pick = [&](uint64_t r) {
    if (picked.size() < f.sample && r < f.p) picked.insert(r);
  };
  pick(0);
  pick(1);
  pick(f.p - 1);
  for (uint32_t k = 0; k <= c.q() && picked.size() < f.sample; ++k) {
    pick(c.skip(k) - 1);
    pick(c.skip(k));
    pick(c.skip(k) + 1);
  }
  SplitMix64 rng(f.seed);
  while (picked.size() < std::min<uint64_t>(f.sample, f.p)) pick(rng.next() % f.p);
  const std::vector<uint64_t> ranks(picked.begin(), picked.end());

  const unsigned T = f.threads ? f.threads : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  const auto t0 = Clock::now();
  auto worker = [&] {
    for (size_t i; !failed.load() && (i = next.fetch_add(1)) < ranks.size();) {
      std::string e = gen::check_circulant_rank(c, ranks[i]);
      if (e.empty()) continue;
      std::lock_guard<std::mutex> lock(mu);
      if (error.empty()) error = std::move(e);
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < T; ++i) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
  const double el = since(t0);
  if (failed) verify_error("circulant schedule invalid: {}", error);
  if (f.format == "json") {
    std::cout << nlohmann::json{{"ok", true},           {"mode", "sample"}, {"K", f.p}, {"q", c.q()},
                                {"ranks_checked", ranks.size()}, {"seed", f.seed},   {"threads", T}, {"seconds", el}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("verified {} sampled ranks of p = {} (q = {}; each rank's schedule and its {} senders' and "
                           "receivers'): {:.3f} s, {:.3g} ranks/s\n",
                           ranks.size(), f.p, c.q(), 2 * c.q(), el, ranks.size() / std::max(el, 1e-9));
  return 0;
}

}  // namespace

void add_verify_circulant_command(CLI::App& app, CommandList& cmds) {
  static VerifyCirculantFlags f;
  static uint64_t ports = 0;
  auto* c = app.add_subcommand("verify-circulant",
                               "check Träff's circulant broadcast schedules: every rank of every K <= --Kmax, or "
                               "sampled ranks of one --K up to 2^31");
  add_uint_option(c, "--Kmax,--pmax", f.pmax, "check every rank of every K in [--Kmin, --Kmax] (at most 2^24)", "1..16777216");
  add_uint_option(c, "--Kmin,--pmin", f.pmin, "smallest K of the sweep", "1..--Kmax");
  add_uint_option(c, "--K", f.p, "spot check: the processor count (1..2^31)", "1..2147483648");
  c->add_option("--p", ports, "refused: the processor count is --K (p means ports in collplan; these schedules have one)")
      ->group("");
  add_uint_option(c, "--sample-ranks", f.sample, "spot check: number of ranks of --K to check (at most 2^24)", "1..16777216");
  add_uint_option(c, "--seed", f.seed, "spot check: seed of the random ranks", "0..18446744073709551615");
  c->add_option("--threads", f.threads, "worker threads (default: hardware concurrency; at most 1024)");
  c->add_option("--progress", f.progress, "seconds between progress lines on stderr")->capture_default_str();
  c->add_flag("--reference", f.reference, "sweep with the per-rank algorithms (O(q^3) per rank) instead of the fast path");
  add_format_option(c, f.format);
  c->footer("Examples:\n"
            "  collplan verify-circulant --Kmax 16384 --threads 2\n"
            "  collplan verify-circulant --K 2147483648 --sample-ranks 1000 --format json\n"
            "Exit status: 0 every checked schedule is valid; 1 a schedule is wrong; 2 bad input.");
  cmds.push_back({c, [c] {
                    g_json_errors = f.format == "json";
                    if (c->count("--p") > 0)
                      user_error("verify-circulant: --p is the port count in collplan (these schedules have one "
                                 "port); give the processor count as --K, e.g. --K {} --sample-ranks 100",
                                 ports);
                    const bool sweep = c->count("--Kmax") > 0, sample = c->count("--K") + c->count("--sample-ranks") > 0;
                    if (sweep == sample)
                      user_error("verify-circulant: give either --Kmax N, or --K K with --sample-ranks S");
                    if (sample && (c->count("--K") == 0 || c->count("--sample-ranks") == 0))
                      user_error("verify-circulant: a spot check needs both --K K and --sample-ranks S");
                    return sweep ? run_all(f) : run_sample(f);
                  }});
}

}  // namespace collplan::cli
