// The relay-and-combine SAT encoding (docs/search.md, "The encoding").
//
// Variables, for rounds t = 1..T, ranks u, v, ports q, inputs j, sinks k:
//   L[t,u,v,q]    port q of u sends to v in round t
//   SR[t,u,q,j]   that message carries x_j unchanged
//   SP[t,u,q,k]   that message carries a partial for sink k (k ≠ u, t >= 2)
//   R[t,v,j]      v holds x_j after round t (R[0,v,j] = [j = v])
//   IR[t,v,q,j]   v receives x_j on port q in round t
//   IC[t,v,q,k,j] v receives on port q in round t a partial for k that may
//                 include x_j
//   C[t,v,k,j]    a partial for k that v sends in round t+1 may include x_j
// Clauses: a port sends to at most one rank and a rank's port hears from at
// most one (the plan IR's rule); a message has at most d_t elements
// (sequential counter); what is sent is held; what is received was sent by
// the rank linked to that port; R and C grow only by what is held or
// received; every sink's output may include every input. Implications run
// one way (a true R, C, IR or IC must be justified), which is all a
// satisfying assignment needs: the schedule is read off L, SR and SP and
// its coverage recomputed by gen/relay.cpp.
//
// Symmetry breaking and dominance (sound for the question "does a schedule
// with these sizes exist", proofs in docs/search.md): in round 1 a rank sends
// only its own input, raw (a partial of one input is that input, scaled); no
// rank sends a partial for itself (its coverage is already the rank's own);
// every round is saturated (no port q free at both a sender u and another
// rank v: adding u→v with x_u only adds coverage); after renaming the ports
// of round 1 and the ranks, rank 0's used round-1 ports are a prefix, port 0
// goes to rank 1 and port q to a rank <= q+1.
#include "search/relay_sat.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

#include <cadical.hpp>
#include <fmt/format.h>

#include "support/error.h"
#include "support/safe_file.h"

namespace collplan::search {

namespace {

using Clock = std::chrono::steady_clock;

class Cnf {
 public:
  int new_var() { return ++vars_; }
  void add(std::initializer_list<int> lits) { add(std::vector<int>(lits)); }
  void add(const std::vector<int>& lits) {
    for (int l : lits) flat_.push_back(l);
    flat_.push_back(0);
    ++clauses_;
  }
  // At most one of `xs` (pairwise: groups here have at most K members).
  void at_most_one(const std::vector<int>& xs) {
    for (size_t a = 0; a < xs.size(); ++a)
      for (size_t b = a + 1; b < xs.size(); ++b) add({-xs[a], -xs[b]});
  }
  // At most `bound` of `xs` (Sinz's sequential counter).
  void at_most(const std::vector<int>& xs, uint32_t bound) {
    const size_t n = xs.size();
    if (n <= bound) return;  // bound >= 1: sizes are checked first
    // s[i][j]: at least j+1 of xs[0..i] are true.
    std::vector<std::vector<int>> s(n, std::vector<int>(bound));
    for (size_t i = 0; i < n; ++i)
      for (uint32_t j = 0; j < bound; ++j) s[i][j] = new_var();
    add({-xs[0], s[0][0]});
    for (uint32_t j = 1; j < bound; ++j) add({-s[0][j]});
    for (size_t i = 1; i < n; ++i) {
      add({-xs[i], s[i][0]});
      add({-s[i - 1][0], s[i][0]});
      for (uint32_t j = 1; j < bound; ++j) {
        add({-xs[i], -s[i - 1][j - 1], s[i][j]});
        add({-s[i - 1][j], s[i][j]});
      }
      add({-xs[i], -s[i - 1][bound - 1]});
    }
  }
  int vars() const { return vars_; }
  uint64_t clauses() const { return clauses_; }
  const std::vector<int>& flat() const { return flat_; }

 private:
  int vars_ = 0;
  uint64_t clauses_ = 0;
  std::vector<int> flat_;
};

class Deadline : public CaDiCaL::Terminator {
 public:
  explicit Deadline(double seconds) : end_(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))), on_(seconds > 0) {}
  bool terminate() override { return on_ && Clock::now() >= end_; }

 private:
  Clock::time_point end_;
  bool on_;
};

class LearnCounter : public CaDiCaL::Learner {
 public:
  bool learning(int) override {
    ++count;
    return false;
  }
  void learn(int) override {}
  uint64_t count = 0;
};

}  // namespace

const char* sat_result_name(SatResult r) {
  switch (r) {
    case SatResult::Sat: return "sat";
    case SatResult::Unsat: return "unsat";
    case SatResult::Unknown: return "unknown";
  }
  return "?";
}

std::string solver_name() { return fmt::format("CaDiCaL {}", CaDiCaL::Solver::version()); }

RelayAnswer solve_relay(const RelayQuery& qy) {
  const uint32_t K = qy.K, P = qy.p, T = static_cast<uint32_t>(qy.sizes.size());
  if (K < 2 || K > kMaxSearchRanks)
    user_error("search: K = {} is out of range (valid: 2 <= K <= {}; the encoding grows as K^4)", K, kMaxSearchRanks);
  if (P < 1 || P > 8) user_error("search: p = {} is out of range (valid: 1 <= p <= 8)", P);
  if (T < 1 || T > 8) user_error("search: {} rounds is out of range (valid: 1..8)", T);
  for (uint32_t d : qy.sizes)
    if (d < 1 || d > 2 * K) user_error("search: message size {} is out of range (valid: 1..{})", d, 2 * K);
  const auto t0 = Clock::now();

  Cnf f;
  // Index helpers; 0 = "no variable" (constant false).
  auto idx4 = [](uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t B, uint32_t C, uint32_t D) {
    return ((size_t(a) * B + b) * C + c) * D + d;
  };
  std::vector<int> L((T + 1) * K * K * P, 0), SR((T + 1) * K * P * K, 0), SP((T + 1) * K * P * K, 0);
  std::vector<int> R((T + 1) * K * K, 0), IR((T + 1) * K * P * K, 0);
  std::vector<int> IC((T + 1) * K * P * K * K, 0), C((T + 1) * K * K * K, 0);
  auto l = [&](uint32_t t, uint32_t u, uint32_t v, uint32_t q) -> int& { return L[idx4(t, u, v, q, K, K, P)]; };
  auto sr = [&](uint32_t t, uint32_t u, uint32_t q, uint32_t j) -> int& { return SR[idx4(t, u, q, j, K, P, K)]; };
  auto sp = [&](uint32_t t, uint32_t u, uint32_t q, uint32_t k) -> int& { return SP[idx4(t, u, q, k, K, P, K)]; };
  auto rr = [&](uint32_t t, uint32_t v, uint32_t j) -> int& { return R[(size_t(t) * K + v) * K + j]; };
  auto ir = [&](uint32_t t, uint32_t v, uint32_t q, uint32_t j) -> int& { return IR[idx4(t, v, q, j, K, P, K)]; };
  auto ic = [&](uint32_t t, uint32_t v, uint32_t q, uint32_t k, uint32_t j) -> int& {
    return IC[(idx4(t, v, q, k, K, P, K)) * K + j];
  };
  auto cc = [&](uint32_t t, uint32_t v, uint32_t k, uint32_t j) -> int& { return C[idx4(t, v, k, j, K, K, K)]; };
  const int TRUE = f.new_var();
  f.add({TRUE});
  auto held = [&](uint32_t t, uint32_t v, uint32_t j) -> int {  // R as a literal (0 = false)
    if (t == 0) return j == v ? TRUE : 0;
    if (j == v) return TRUE;
    return rr(t, v, j);
  };
  auto covers = [&](uint32_t t, uint32_t v, uint32_t k, uint32_t j) -> int {  // C as a literal
    if (t == 0) return j == v ? TRUE : 0;
    return cc(t, v, k, j);
  };

  for (uint32_t t = 1; t <= T; ++t)
    for (uint32_t u = 0; u < K; ++u)
      for (uint32_t q = 0; q < P; ++q) {
        for (uint32_t v = 0; v < K; ++v)
          if (v != u) l(t, u, v, q) = f.new_var();
        for (uint32_t j = 0; j < K; ++j)
          if (t >= 2 || j == u) sr(t, u, q, j) = f.new_var();
        if (t >= 2)
          for (uint32_t k = 0; k < K; ++k)
            if (k != u) sp(t, u, q, k) = f.new_var();
      }
  for (uint32_t t = 1; t <= T; ++t)
    for (uint32_t v = 0; v < K; ++v) {
      for (uint32_t j = 0; j < K; ++j)
        if (j != v) rr(t, v, j) = f.new_var();
      for (uint32_t q = 0; q < P; ++q)
        for (uint32_t j = 0; j < K; ++j) {
          if (j != v) ir(t, v, q, j) = f.new_var();
          if (t >= 2)
            for (uint32_t k = 0; k < K; ++k) ic(t, v, q, k, j) = f.new_var();
        }
      if (t < T)
        for (uint32_t k = 0; k < K; ++k)
          for (uint32_t j = 0; j < K; ++j) cc(t, v, k, j) = f.new_var();
    }

  // The links of port q of u in round t: (to every other rank, from every
  // other rank).
  auto port_links = [&](uint32_t t, uint32_t u, uint32_t q) {
    std::pair<std::vector<int>, std::vector<int>> io;
    for (uint32_t v = 0; v < K; ++v)
      if (v != u) {
        io.first.push_back(l(t, u, v, q));
        io.second.push_back(l(t, v, u, q));
      }
    return io;
  };

  for (uint32_t t = 1; t <= T; ++t) {
    const uint32_t d = qy.sizes[t - 1];
    for (uint32_t q = 0; q < P; ++q)
      for (uint32_t u = 0; u < K; ++u) {
        const auto [dests, srcs] = port_links(t, u, q);
        std::vector<int> items;
        f.at_most_one(dests);
        f.at_most_one(srcs);
        for (uint32_t j = 0; j < K; ++j)
          if (int x = sr(t, u, q, j)) {
            items.push_back(x);
            if (j != u) f.add({-x, held(t - 1, u, j)});  // send only what is held
          }
        for (uint32_t k = 0; k < K; ++k)
          if (int x = sp(t, u, q, k)) items.push_back(x);
        for (int x : items) {  // something is sent only on a linked port
          std::vector<int> cl = {-x};
          cl.insert(cl.end(), dests.begin(), dests.end());
          f.add(cl);
        }
        f.at_most(items, d);
      }
    // Receiving.
    for (uint32_t v = 0; v < K; ++v)
      for (uint32_t q = 0; q < P; ++q) {
        std::vector<int> linked;
        for (uint32_t u = 0; u < K; ++u)
          if (u != v) linked.push_back(l(t, u, v, q));
        auto needs_sender = [&](int x) {
          std::vector<int> cl = {-x};
          cl.insert(cl.end(), linked.begin(), linked.end());
          f.add(cl);
        };
        for (uint32_t j = 0; j < K; ++j) {
          if (int x = ir(t, v, q, j)) {
            needs_sender(x);
            for (uint32_t u = 0; u < K; ++u) {
              if (u == v) continue;
              if (int s = sr(t, u, q, j)) f.add({-l(t, u, v, q), -x, s});
              else f.add({-l(t, u, v, q), -x});
            }
          }
          if (t >= 2)
            for (uint32_t k = 0; k < K; ++k) {
              const int x = ic(t, v, q, k, j);
              needs_sender(x);
              for (uint32_t u = 0; u < K; ++u) {
                if (u == v) continue;
                const int s = sp(t, u, q, k), c = covers(t - 1, u, k, j);
                if (!s || !c) {
                  f.add({-l(t, u, v, q), -x});
                  continue;
                }
                f.add({-l(t, u, v, q), -x, s});
                if (c != TRUE) f.add({-l(t, u, v, q), -x, c});
              }
            }
        }
      }
    // Holding and coverage grow only by what arrives.
    for (uint32_t v = 0; v < K; ++v)
      for (uint32_t j = 0; j < K; ++j) {
        if (j != v) {
          std::vector<int> cl = {-rr(t, v, j)};
          if (int h = held(t - 1, v, j)) cl.push_back(h);
          for (uint32_t q = 0; q < P; ++q) cl.push_back(ir(t, v, q, j));
          f.add(cl);
        }
        for (uint32_t k = 0; k < K; ++k) {
          if (t == T && k != v) continue;
          std::vector<int> cl;
          if (t < T) cl.push_back(-cc(t, v, k, j));  // at T: the sink's demand, a plain clause
          const int h = held(t, v, j);
          if (h == TRUE) continue;  // j == v: always covered
          cl.push_back(h);
          if (int c = covers(t - 1, v, k, j)) cl.push_back(c);
          if (t >= 2)
            for (uint32_t q = 0; q < P; ++q) cl.push_back(ic(t, v, q, k, j));
          f.add(cl);
        }
      }
  }

  // Saturation: no round leaves a port q free at a sender u and at another
  // rank v (u could send x_u to v there; see the file comment). It holds in
  // circulant mode too: there every rank uses the same ports, and using a
  // free one everywhere (u → u+1) keeps the schedule circulant.
  for (uint32_t t = 1; t <= T; ++t)
    for (uint32_t q = 0; q < P; ++q) {
      std::vector<int> out_used(K), in_used(K);
      for (uint32_t u = 0; u < K; ++u) {
        out_used[u] = f.new_var();
        in_used[u] = f.new_var();
        auto [outs, ins] = port_links(t, u, q);
        outs.insert(outs.begin(), -out_used[u]);
        ins.insert(ins.begin(), -in_used[u]);
        f.add(outs);
        f.add(ins);
      }
      for (uint32_t u = 0; u < K; ++u)
        for (uint32_t v = 0; v < K; ++v)
          if (u != v) f.add({out_used[u], in_used[v]});
    }

  if (qy.circulant) {
    auto eq = [&](int a, int b) {
      if (a == b) return;
      if (!a || !b) {
        if (a) f.add({-a});
        if (b) f.add({-b});
        return;
      }
      f.add({-a, b});
      f.add({a, -b});
    };
    for (uint32_t t = 1; t <= T; ++t)
      for (uint32_t u = 0; u + 1 < K; ++u)
        for (uint32_t q = 0; q < P; ++q)
          for (uint32_t x = 0; x < K; ++x) {
            const uint32_t x1 = (x + 1) % K;
            if (x != u) eq(l(t, u, x, q), l(t, u + 1, x1, q));
            eq(sr(t, u, q, x), sr(t, u + 1, q, x1));
            eq(sp(t, u, q, x), sp(t, u + 1, q, x1));
          }
  } else {
    // Rank 0's round-1 ports: used ones form a prefix, port 0 goes to rank 1
    // and port q to a rank <= q+1 (ranks named in order of first use).
    for (uint32_t q = 0; q < P; ++q)
      for (uint32_t v = q + 2; v < K; ++v) f.add({-l(1, 0, v, q)});
    for (uint32_t q = 1; q < P; ++q)
      for (uint32_t v = 1; v < K; ++v) {
        std::vector<int> cl = {-l(1, 0, v, q)};
        for (uint32_t w = 1; w < K; ++w) cl.push_back(l(1, 0, w, q - 1));
        f.add(cl);
      }
  }

  RelayAnswer ans;
  ans.variables = static_cast<uint64_t>(f.vars());
  ans.clauses = f.clauses();
  if (!qy.dimacs_path.empty()) {
    files::OutputFile out(qy.dimacs_path, "CNF file");
    std::string text = fmt::format("c collplan relay-and-combine search K={} p={} sizes={}{}\n", K, P,
                                   fmt::join(qy.sizes, ","), qy.circulant ? " circulant" : "");
    text += fmt::format("p cnf {} {}\n", f.vars(), f.clauses());
    for (int x : f.flat()) {
      fmt::format_to(std::back_inserter(text), "{}{}", x, x == 0 ? '\n' : ' ');
      if (text.size() >= (1u << 16)) {
        out.write(text);
        text.clear();
      }
    }
    out.write(text);
    out.commit();
  }

  CaDiCaL::Solver solver;
  solver.set("quiet", 1);
  if (!qy.proof_path.empty() && !solver.trace_proof(qy.proof_path.c_str()))
    user_error("search: cannot write the proof to '{}'", qy.proof_path);
  for (int x : f.flat()) solver.add(x);
  Deadline deadline(qy.time_limit_s);
  LearnCounter counter;
  solver.connect_terminator(&deadline);
  solver.connect_learner(&counter);
  const int res = solver.solve();
  solver.disconnect_terminator();
  solver.disconnect_learner();
  if (!qy.proof_path.empty()) solver.close_proof_trace();
  ans.learned = counter.count;
  ans.result = res == 10 ? SatResult::Sat : res == 20 ? SatResult::Unsat : SatResult::Unknown;
  if (ans.result == SatResult::Sat) {
    gen::RelaySchedule s;
    s.K = K;
    s.p = P;
    s.sizes = qy.sizes;
    s.rounds.resize(T);
    auto is_true = [&](int x) { return x && solver.val(x) > 0; };
    for (uint32_t t = 1; t <= T; ++t)
      for (uint32_t u = 0; u < K; ++u)
        for (uint32_t q = 0; q < P; ++q)
          for (uint32_t v = 0; v < K; ++v) {
            if (v == u || !is_true(l(t, u, v, q))) continue;
            gen::RelayMessage m{u, q, v, {}, {}};
            for (uint32_t j = 0; j < K; ++j)
              if (is_true(sr(t, u, q, j))) m.raws.push_back(j);
            for (uint32_t k = 0; k < K; ++k)
              if (is_true(sp(t, u, q, k))) m.partials.push_back(k);
            if (!m.raws.empty() || !m.partials.empty()) s.rounds[t - 1].push_back(std::move(m));
          }
    const std::string problem = gen::relay_schedule_problem(s);
    COLLPLAN_ASSERT(problem.empty(), "search: the solver's schedule is invalid: " + problem);
    ans.schedule = std::move(s);
  }
  ans.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return ans;
}

}  // namespace collplan::search
