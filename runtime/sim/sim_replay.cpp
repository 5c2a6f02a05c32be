#include "runtime/sim/sim_replay.h"

#include <simgrid/s4u.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "support/error.h"

namespace sg4 = simgrid::s4u;

namespace collplan::sim {

namespace {

const char* const kConfig[] = {"--cfg=network/model:CM02", "--cfg=network/crosstraffic:0", nullptr};

// Flops of one combination (see "Computation" in the header).
double combo_flops(std::span<const ir::Term> terms, double row_bytes) {
  if (terms.size() == 1 && terms[0].coeff == 1) return 0;
  return static_cast<double>(terms.size()) * row_bytes;
}

// One rank's program turned into per-step actions (indexed by step 1..T).
struct RankSchedule {
  struct Msg {
    uint32_t peer, port;
    uint64_t bytes;
  };
  std::vector<std::vector<Msg>> sends, gets;  // posted in step t
  std::vector<double> payload_flops, op_flops;
};

RankSchedule schedule_of(const ir::Plan& plan, const ir::Program& prog, double row_bytes, SimResult& totals) {
  const uint32_t T = plan.num_steps;
  RankSchedule s;
  s.sends.resize(T + 1);
  s.gets.resize(T + 1);
  s.payload_flops.assign(T + 1, 0);
  s.op_flops.assign(T + 1, 0);
  for (const ir::Step& st : prog.steps) {
    if (st.t < 1 || st.t > T) user_error("rank {}: step {} outside 1..{}", prog.rank, st.t, T);
    for (const ir::Send& m : st.sends) {
      const auto bytes = static_cast<uint64_t>(m.payload.size() * row_bytes);
      s.sends[st.t].push_back({m.to, m.port, bytes});
      for (const ir::Combo& c : m.payload) s.payload_flops[st.t] += combo_flops(c.terms, row_bytes);
      ++totals.messages;
      totals.bytes += static_cast<double>(bytes);
    }
    for (const ir::Recv& r : st.recvs) {
      if (r.sent_at + plan.spec.lambda - 1 != st.t)
        user_error("rank {} step {}: a receive of a message sent in step {} (λ = {})", prog.rank, st.t, r.sent_at,
                   plan.spec.lambda);
      s.gets[r.sent_at].push_back({r.from, r.port, static_cast<uint64_t>(r.into.size() * row_bytes)});
    }
    for (const ir::Op& op : st.ops) s.op_flops[st.t] += combo_flops(op.terms, row_bytes);
  }
  for (uint32_t t = 1; t <= T; ++t) totals.flops += s.payload_flops[t] + s.op_flops[t];
  return s;
}

// Mailbox of the messages `from` sends to `to` through `port`. Every pair and
// port carries at most one message per step and both sides post in step
// order, so SimGrid's FIFO matching pairs each put with its get.
sg4::Mailbox* mailbox(uint32_t to, uint32_t from, uint32_t port) {
  return sg4::Mailbox::by_name(std::to_string(to) + ":" + std::to_string(from) + ":" + std::to_string(port));
}

void rank_actor(const RankSchedule* s, uint32_t rank, uint32_t lambda) {
  const size_t T = s->sends.size() - 1;
  // Communications posted in step t, due (waited for) in step t+λ−1.
  std::vector<std::vector<sg4::CommPtr>> posted(T + 1);
  static char token;
  std::vector<char*> sink(T + 1);
  for (size_t t = 1; t <= T; ++t) {
    if (s->payload_flops[t] > 0) sg4::this_actor::execute(s->payload_flops[t]);
    for (const auto& m : s->sends[t])
      posted[t].push_back(mailbox(m.peer, rank, m.port)->put_async(&token, m.bytes));
    for (const auto& m : s->gets[t]) posted[t].push_back(mailbox(rank, m.peer, m.port)->get_async<char>(&sink[t]));
    if (t + 1 >= lambda) {
      const size_t due = t + 1 - lambda;
      if (due >= 1 && !posted[due].empty()) sg4::Comm::wait_all(posted[due]);
    }
    if (s->op_flops[t] > 0) sg4::this_actor::execute(s->op_flops[t]);
  }
  // The verifier allows nothing in flight after the last step; a plan that
  // was not verified still ends with every message delivered.
  for (auto& p : posted)
    if (!p.empty()) sg4::Comm::wait_all(p);
}

// Runs the simulation in this (child) process; returns the result.
SimResult run_engine(const ir::Plan& plan, size_t len, const std::string& xml_path) {
  std::vector<std::string> args = {"collplan-sim", "--log=root.thres:critical"};
  for (const char* const* c = kConfig; *c; ++c) args.emplace_back(*c);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  sg4::Engine e(&argc, argv.data());
  e.load_platform(xml_path);

  SimResult r;
  const double row_bytes = static_cast<double>(len) * plan.spec.field.elem_bytes();
  std::vector<RankSchedule> scheds;
  scheds.reserve(plan.ranks.size());
  for (const ir::Program& prog : plan.ranks) scheds.push_back(schedule_of(plan, prog, row_bytes, r));
  for (uint32_t k = 0; k < plan.ranks.size(); ++k) {
    sg4::Host* h = e.host_by_name("h" + std::to_string(k));
    sg4::Actor::create("rank" + std::to_string(k), h, rank_actor, &scheds[k], k, plan.spec.lambda);
  }
  e.run();
  r.time = sg4::Engine::get_clock();
  return r;
}

void write_all(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

const char* const* network_config() { return kConfig; }

std::string platform_xml(const Platform& p) {
  char line[512];
  std::snprintf(line, sizeof line,
                "  <cluster id=\"cluster\" prefix=\"h\" suffix=\"\" radical=\"0-%u\" speed=\"%.17gf\" bw=\"%.17gBps\" "
                "lat=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                p.hosts - 1, p.speed, p.bandwidth, p.latency / 2);
  return std::string("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n") +
         "<platform version=\"4.1\">\n" + line + "</platform>\n";
}

SimResult simulate(const ir::Plan& plan, size_t len, Platform platform) {
  const auto K = static_cast<uint32_t>(plan.ranks.size());
  if (platform.hosts == 0) platform.hosts = K;
  if (platform.hosts < K) user_error("the platform has {} hosts but the plan has {} ranks", platform.hosts, K);
  if (!(platform.bandwidth > 0) || !(platform.latency >= 0) || !(platform.speed > 0))
    user_error("platform bandwidth ({}) and speed ({}) must be > 0, latency ({}) >= 0", platform.bandwidth,
               platform.speed, platform.latency);

  std::error_code ec;
  const std::filesystem::path tmpdir = std::filesystem::temp_directory_path(ec);
  if (ec) user_error("no temporary directory for the platform file ({}; check TMPDIR)", ec.message());
  std::string tmpl = (tmpdir / "collplan-sim-XXXXXX.xml").string();
  char* path = tmpl.data();
  const int xfd = ::mkstemps(path, 4);
  if (xfd < 0) user_error("cannot create a temporary platform file: {}", std::strerror(errno));
  const std::string xml = platform_xml(platform);
  write_all(xfd, xml.data(), xml.size());
  ::close(xfd);

  int fds[2];
  if (::pipe(fds) != 0) {
    ::unlink(path);
    user_error("pipe: {}", std::strerror(errno));
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    char ok = 1;
    std::string err;
    SimResult r;
    try {
      r = run_engine(plan, len, path);
    } catch (const std::exception& ex) {
      ok = 0;
      err = ex.what();
    }
    write_all(fds[1], &ok, 1);
    if (ok) {
      write_all(fds[1], &r, sizeof r);
    } else {
      write_all(fds[1], err.data(), err.size());
    }
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  ::unlink(path);
  if (pid < 0) user_error("fork: {}", std::strerror(errno));
  if (out.empty() || (out[0] == 1 && out.size() != 1 + sizeof(SimResult)))
    user_error("the SimGrid simulation ended without a result (exit status {})", status);
  if (out[0] != 1) user_error("the SimGrid simulation failed: {}", out.substr(1));
  SimResult r;
  std::memcpy(&r, out.data() + 1, sizeof r);
  return r;
}

}  // namespace collplan::sim
