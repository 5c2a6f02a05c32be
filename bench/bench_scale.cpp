// Compile + verify time and peak memory against K, per operation: each point
// is one `collplan compile` process (the user's command, its whole pipeline:
// generation, every pass, the checker after each, the file written), timed
// from fork to exit, its peak resident memory read from wait4's rusage, its
// plan's size from the file. K doubles from 256 up to each group's largest;
// the growth exponent between doublings is log2(time ratio) and
// log2(memory ratio). The baseline is the plan itself: "peak/plan" divides
// the peak memory by the plan file's size (the least any compile must
// produce).
//
//   bench_scale [--collplan PATH] [--only GROUP[,GROUP...]] [--max-k K]
//               [--cap SECONDS]
//   GROUP: allgather, reduce-scatter, allreduce-rsa, allreduce, prefix,
//          broadcast, reduce, encode, rank, check (default: all)
//   check: the largest plan of several groups checked twice, by
//          `collplan check --mode randomized` (the whole plan decoded) and by
//          `collplan check --streaming` (rank by rank, then step by step);
//          time, peak memory and peak/plan of each, same seed
//   --cap: a group stops doubling once a point took longer (default 90 s)
//
// Goals (docs/scale.md): allgather and reduce-scatter at K = 4096 in < 20 s
// and <= 4x the plan's size; the bandwidth-optimal allreduce (n = K) at
// K = 4096 in < 30 s; the latency-optimal allreduce, prefix, broadcast and
// reduce at K = 65536 in < 30 s; encode (p = 2, GF(2^8)) at K = 16384 in
// < 60 s and < 4 GB; one rank of any rank-local generator at K = 2^20 in
// < 1 s. One run per point: the machine is shared and noisy, so the figures
// are indications, not medians.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace {

struct Point {
  bool ok = false;
  double seconds = 0, peak_mb = 0, plan_mb = 0;
};

// Runs `args` (argv[0] = the binary) with stdout and stderr to /dev/null.
// `out` is the file it writes (removed first), or with `reads`, the plan it
// reads (kept).
Point run(const std::vector<std::string>& args, const std::string& out, bool reads = false) {
  if (!reads) std::filesystem::remove(out);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (FILE* null = std::fopen("/dev/null", "w")) {
      dup2(fileno(null), 1);
      dup2(fileno(null), 2);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  Point p;
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.peak_mb = ru.ru_maxrss / 1024.0;  // kilobytes on Linux
  p.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && std::filesystem::exists(out);
  if (p.ok) p.plan_mb = std::filesystem::file_size(out) / 1048576.0;
  return p;
}

struct Group {
  std::string name, op, algorithm, extra;  // extra: more flags ("n=K": --blocks K)
  uint32_t first_k, last_k;
  const char* goal;
};

const std::vector<Group>& groups() {
  static const std::vector<Group> g = {
      {"allgather", "allgather", "dissemination-allgather", "", 256, 4096, "K=4096: < 20 s, <= 4x plan"},
      {"allgather", "allgather", "circulant-allgather", "", 256, 4096, "K=4096: < 20 s, <= 4x plan"},
      {"reduce-scatter", "reduce-scatter", "dissemination-reduce-scatter", "", 256, 4096, "K=4096: < 20 s, <= 4x plan"},
      {"reduce-scatter", "reduce-scatter", "circulant-reduce-scatter", "", 256, 4096, "K=4096: < 20 s, <= 4x plan"},
      {"allreduce-rsa", "allreduce", "reduce-scatter-allgather", "n=K", 256, 4096, "K=4096: < 30 s, <= 4x plan"},
      {"allreduce", "allreduce", "dissemination-allreduce", "", 256, 65536, "K=65536: < 30 s, <= 4x plan"},
      {"prefix", "prefix", "postal-prefix", "", 256, 65536, "K=65536: < 30 s, <= 4x plan"},
      {"broadcast", "broadcast", "auto", "", 256, 65536, "K=65536: < 30 s, <= 4x plan"},
      {"reduce", "reduce", "auto", "", 256, 65536, "K=65536: < 30 s, <= 4x plan"},
      {"encode", "encode", "auto", "--p 2", 256, 16384, "K=16384: < 60 s, < 4 GB"},
  };
  return g;
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string part;
  while (std::getline(in, part, sep[0]))
    if (!part.empty()) out.push_back(part);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string collplan = COLLPLAN_BINARY;
  std::set<std::string> only;
  uint32_t max_k = UINT32_MAX;
  double cap = 90;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_scale: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--collplan") collplan = value();
    else if (a == "--only") for (const auto& g : split(value(), ",")) only.insert(g);
    else if (a == "--max-k") max_k = static_cast<uint32_t>(std::stoul(value()));
    else if (a == "--cap") cap = std::stod(value());
    else {
      std::fprintf(stderr,
                   "usage: bench_scale [--collplan PATH] [--only GROUP,...] [--max-k K] [--cap SECONDS]\n"
                   "GROUP: allgather reduce-scatter allreduce-rsa allreduce prefix broadcast reduce encode rank check\n");
      return 2;
    }
  }
  const std::string dir = (std::filesystem::temp_directory_path() / fmt::format("bench_scale_{}", getpid())).string();
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/plan.cplan";

  fmt::print("{:<15} {:<29} {:>6} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7}\n", "group", "algorithm", "K", "seconds",
             "peak_MB", "plan_MB", "peak/plan", "t_exp", "m_exp");
  for (const Group& g : groups()) {
    if (!only.empty() && !only.count(g.name)) continue;
    Point prev;
    for (uint32_t K = g.first_k; K <= std::min(g.last_k, max_k); K *= 2) {
      std::vector<std::string> args = {collplan, "compile", "--op", g.op, "--K", std::to_string(K), "--algorithm",
                                       g.algorithm, "-q", "-o", out};
      if (g.extra == "n=K") args.insert(args.end(), {"--blocks", std::to_string(K)});
      else for (const auto& e : split(g.extra, " ")) args.push_back(e);
      const Point p = run(args, out);
      if (!p.ok) {
        fmt::print("{:<15} {:<29} {:>6} failed (exit status or no plan written; run the command by hand: {})\n",
                   g.name, g.algorithm, K, fmt::join(args, " "));
        break;
      }
      const bool grow = prev.ok;
      fmt::print("{:<15} {:<29} {:>6} {:>9.2f} {:>9.1f} {:>9.2f} {:>9.2f} {:>7} {:>7}\n", g.name, g.algorithm, K,
                 p.seconds, p.peak_mb, p.plan_mb, p.peak_mb / p.plan_mb,
                 grow ? fmt::format("{:.2f}", std::log2(p.seconds / prev.seconds)) : "-",
                 grow ? fmt::format("{:.2f}", std::log2(p.peak_mb / prev.peak_mb)) : "-");
      fmt::print("RESULT scale {} {} {} {:.4f} {:.1f} {:.3f}\n", g.name, g.algorithm, K, p.seconds, p.peak_mb,
                 p.plan_mb);
      std::fflush(stdout);
      prev = p;
      if (p.seconds > cap) break;
    }
    fmt::print("{:<15} {:<29} goal {}\n", g.name, g.algorithm, g.goal);
  }

  if (only.empty() || only.count("rank")) {
    // One rank alone at K = 2^20, for every generator that can (`collplan
    // list` marks them "compile --rank").
    const uint32_t K = 1u << 20;
    struct RankCase {
      const char* op;
      const char* algorithm;
      const char* extra;
    };
    static const RankCase kCases[] = {
        {"broadcast", "circulant-broadcast", ""},     {"broadcast", "tree-broadcast", ""},
        {"broadcast", "pipelined-broadcast", ""},     {"broadcast", "postal-broadcast", ""},
        {"reduce", "circulant-reduce", ""},           {"reduce", "tree-reduce", ""},
        {"reduce", "pipelined-reduce", ""},           {"allgather", "circulant-allgather", ""},
        {"allgather", "dissemination-allgather", ""}, {"reduce-scatter", "dissemination-reduce-scatter", ""},
        {"allreduce", "circulant-allreduce", ""},     {"allreduce", "dissemination-allreduce", ""},
        {"allreduce", "reduce-scatter-allgather", ""}, {"prefix", "postal-prefix", ""}};
    for (const RankCase& c : kCases) {
      std::vector<std::string> args = {collplan, "compile", "--op", c.op, "--K", std::to_string(K), "--algorithm",
                                       c.algorithm, "--rank", "12345", "-q", "-o", out};
      for (const auto& e : split(c.extra, " ")) args.push_back(e);
      const Point p = run(args, out);
      fmt::print("{:<15} {:<29} {:>6} {}\n", "rank 12345", c.algorithm, "2^20",
                 p.ok ? fmt::format("{:.3f} s, {:.1f} MB peak, {:.3f} MB file (goal < 1 s)", p.seconds, p.peak_mb,
                                    p.plan_mb)
                      : std::string("failed"));
      if (p.ok) fmt::print("RESULT rank {} {} {:.4f} {:.1f}\n", c.algorithm, K, p.seconds, p.peak_mb);
    }
  }
  if (only.empty() || only.count("check")) {
    // The whole-plan check against the streaming one, on large plans.
    struct CheckCase {
      const char* op;
      const char* algorithm;
      uint32_t K;
      const char* extra;
    };
    static const CheckCase kCases[] = {{"allgather", "circulant-allgather", 4096, ""},
                                       {"reduce-scatter", "circulant-reduce-scatter", 4096, ""},
                                       {"allreduce", "reduce-scatter-allgather", 2048, "n=K"},
                                       {"allreduce", "dissemination-allreduce", 65536, ""},
                                       {"prefix", "postal-prefix", 65536, ""},
                                       {"encode", "auto", 8192, "--p 2"}};
    fmt::print("\n{:<15} {:<26} {:>6} {:>8} | {:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | {:>7}\n", "check", "algorithm",
               "K", "plan_MB", "whole_s", "whole_MB", "/plan", "stream_s", "stream_MB", "/plan", "mem x");
    for (const CheckCase& c : kCases) {
      if (c.K > max_k) continue;
      std::vector<std::string> args = {collplan, "compile", "--op", c.op, "--K", std::to_string(c.K), "--algorithm",
                                       c.algorithm, "-q", "-o", out};
      if (std::string(c.extra) == "n=K") args.insert(args.end(), {"--blocks", std::to_string(c.K)});
      else for (const auto& e : split(c.extra, " ")) args.push_back(e);
      const Point made = run(args, out);
      if (!made.ok) {
        fmt::print("{:<15} {:<26} {:>6} compile failed: {}\n", "check", c.algorithm, c.K, fmt::join(args, " "));
        continue;
      }
      const Point whole = run({collplan, "check", out, "--mode", "randomized", "--seed", "1"}, out, true);
      const Point stream = run({collplan, "check", out, "--streaming", "--seed", "1"}, out, true);
      if (!whole.ok || !stream.ok) {
        fmt::print("{:<15} {:<26} {:>6} check failed (whole {}, streaming {})\n", "check", c.algorithm, c.K,
                   whole.ok ? "ok" : "failed", stream.ok ? "ok" : "failed");
        continue;
      }
      fmt::print("{:<15} {:<26} {:>6} {:>8.1f} | {:>9.2f} {:>9.1f} {:>9.2f} | {:>9.2f} {:>9.1f} {:>9.2f} | {:>7.2f}\n",
                 "check", c.algorithm, c.K, made.plan_mb, whole.seconds, whole.peak_mb, whole.peak_mb / made.plan_mb,
                 stream.seconds, stream.peak_mb, stream.peak_mb / made.plan_mb, whole.peak_mb / stream.peak_mb);
      fmt::print("RESULT check {} {} {:.4f} {:.1f} {:.4f} {:.1f} {:.3f}\n", c.algorithm, c.K, whole.seconds,
                 whole.peak_mb, stream.seconds, stream.peak_mb, made.plan_mb);
      std::fflush(stdout);
    }
  }
  std::filesystem::remove_all(dir);
  return 0;
}
