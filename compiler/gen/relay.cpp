// Relay-and-combine schedules → plans (see relay.h for the plan class).
//
// Building a plan for one sink k: the partials for k in the schedule form a
// DAG (a partial u sends in round t may include every partial for k that u
// received before t; the output may include every partial k received). Walk
// it backwards from the output in decreasing round order: each received
// partial is claimed by the latest element of its receiver that may include
// it (so each feeds exactly one element: a tree), and an element is live when
// claimed. The live elements' raw inputs cover every input exactly when the
// schedule is valid; each input j is then assigned to one live element (the
// output first) and enters the sum there with coefficient A[j][k]. Elements
// that end up empty, raw copies nobody uses and second copies of an input
// are left out, so C2 can only fall below the schedule's Σ d_t.
#include "gen/relay.h"

#include <algorithm>
#include <bit>
#include <map>

#include <fmt/format.h>

#include "matrix/matrix.h"
#include "support/error.h"

namespace collplan::gen {

using Mask = uint64_t;

uint64_t RelaySchedule::C2() const {
  uint64_t c = 0;
  for (uint32_t d : sizes) c += d;
  return c;
}

namespace {

struct Coverage {
  // raw[t][v], cov[t][v][k] for t = 0..T
  std::vector<std::vector<Mask>> raw;
  std::vector<std::vector<std::vector<Mask>>> cov;
};

Mask bit(uint32_t j) { return Mask{1} << j; }

// "" or the first problem; fills `c` as far as the schedule is well formed.
std::string simulate(const RelaySchedule& s, Coverage& c) {
  const uint32_t K = s.K, T = s.T();
  if (K < 2 || K > kMaxRelayRanks) return fmt::format("K = {} is out of range (2..{})", K, kMaxRelayRanks);
  if (s.p < 1) return "p = 0: a schedule needs p >= 1 ports";
  if (T == 0) return "a schedule needs at least one round";
  if (s.rounds.size() != T) return fmt::format("{} sizes but {} rounds", T, s.rounds.size());
  c.raw.assign(T + 1, std::vector<Mask>(K, 0));
  c.cov.assign(T + 1, std::vector<std::vector<Mask>>(K, std::vector<Mask>(K, 0)));
  for (uint32_t v = 0; v < K; ++v) {
    c.raw[0][v] = bit(v);
    for (uint32_t k = 0; k < K; ++k) c.cov[0][v][k] = bit(v);
  }
  for (uint32_t t = 1; t <= T; ++t) {
    if (s.sizes[t - 1] == 0) return fmt::format("round {} has size 0", t);
    std::vector<std::vector<bool>> out(K, std::vector<bool>(s.p)), in(K, std::vector<bool>(s.p));
    for (uint32_t v = 0; v < K; ++v) {
      c.raw[t][v] = c.raw[t - 1][v];
      c.cov[t][v] = c.cov[t - 1][v];
    }
    for (const RelayMessage& m : s.rounds[t - 1]) {
      if (m.from >= K || m.to >= K || m.port >= s.p || m.from == m.to)
        return fmt::format("round {}: message {}→{} on port {} is out of range (K = {}, p = {})", t, m.from, m.to,
                           m.port, K, s.p);
      if (out[m.from][m.port] || in[m.to][m.port])
        return fmt::format("round {}: port {} of rank {} or {} is used twice", t, m.port, m.from, m.to);
      out[m.from][m.port] = in[m.to][m.port] = true;
      if (m.raws.size() + m.partials.size() > s.sizes[t - 1])
        return fmt::format("round {}: message {}→{} has {} elements, more than d = {}", t, m.from, m.to,
                           m.raws.size() + m.partials.size(), s.sizes[t - 1]);
      for (uint32_t j : m.raws) {
        if (j >= K || !(c.raw[t - 1][m.from] & bit(j)))
          return fmt::format("round {}: rank {} sends x_{} which it does not hold", t, m.from, j);
        c.raw[t][m.to] |= bit(j);
      }
      for (uint32_t k : m.partials) {
        if (k >= K) return fmt::format("round {}: a partial for sink {} (K = {})", t, k, K);
        c.cov[t][m.to][k] |= c.cov[t - 1][m.from][k];
      }
    }
    for (uint32_t v = 0; v < K; ++v)
      for (uint32_t k = 0; k < K; ++k) c.cov[t][v][k] |= c.raw[t][v];
  }
  const Mask all = K == 64 ? ~Mask{0} : bit(K) - 1;
  for (uint32_t k = 0; k < K; ++k)
    if (c.cov[T][k][k] != all)
      return fmt::format("sink {} is not covered: {} of {} inputs reach it", k, std::popcount(c.cov[T][k][k]), K);
  return "";
}

}  // namespace

std::string relay_schedule_problem(const RelaySchedule& s) {
  Coverage c;
  return simulate(s, c);
}

ir::Plan build_relay_plan(const RelaySchedule& s, const Spec& spec) {
  using namespace ir;
  Coverage cv;
  const std::string problem = simulate(s, cv);
  COLLPLAN_ASSERT(problem.empty(), "relay schedule invalid: " + problem);
  COLLPLAN_ASSERT(spec.op == OpKind::Encode && spec.K == s.K && spec.p == s.p && spec.lambda == 1,
                  "relay schedule does not match the spec");
  const uint32_t K = s.K, T = s.T();
  const Matrix A = materialize(spec.matrix, spec.field);

  // Elements: (round, message index, position in partials) for partials.
  struct Node {
    uint32_t t, msg, k;
    bool live = false, nonempty = false;
    std::vector<uint32_t> children;  // node ids
    Mask assigned = 0;
  };
  std::vector<Node> nodes;
  // partial_node[t-1][msg][i]
  std::vector<std::vector<std::vector<uint32_t>>> partial_node(T);
  for (uint32_t t = 1; t <= T; ++t) {
    partial_node[t - 1].resize(s.rounds[t - 1].size());
    for (uint32_t mi = 0; mi < s.rounds[t - 1].size(); ++mi)
      for (uint32_t k : s.rounds[t - 1][mi].partials) {
        partial_node[t - 1][mi].push_back(static_cast<uint32_t>(nodes.size()));
        nodes.push_back(Node{t, mi, k, false, false, {}, 0});
      }
  }
  auto from_of = [&](const Node& n) { return s.rounds[n.t - 1][n.msg].from; };
  auto to_of = [&](const Node& n) { return s.rounds[n.t - 1][n.msg].to; };

  // Per sink: claim backwards, assign inputs.
  std::vector<std::vector<uint32_t>> final_children(K);
  std::vector<Mask> final_assigned(K, 0);
  for (uint32_t k = 0; k < K; ++k) {
    std::vector<bool> claimed(nodes.size(), false);
    // Unclaimed partials for k received by `v` in rounds < `before`, claimed
    // into `into`.
    auto claim = [&](uint32_t v, uint32_t before, std::vector<uint32_t>& into) {
      for (uint32_t id = 0; id < nodes.size(); ++id) {
        Node& n = nodes[id];
        if (n.k == k && !claimed[id] && n.t < before && to_of(n) == v) {
          claimed[id] = true;
          n.live = true;
          into.push_back(id);
        }
      }
    };
    claim(k, T + 1, final_children[k]);
    std::vector<uint32_t> live_order;  // decreasing t
    for (uint32_t t = T; t >= 1; --t)
      for (uint32_t id = 0; id < nodes.size(); ++id)
        if (nodes[id].k == k && nodes[id].t == t && nodes[id].live) {
          claim(from_of(nodes[id]), t, nodes[id].children);
          live_order.push_back(id);
        }
    // Assign each input to one live element whose sender holds it raw.
    const Mask all = K == 64 ? ~Mask{0} : bit(K) - 1;
    Mask left = all;
    final_assigned[k] = cv.raw[T][k] & left;
    left &= ~final_assigned[k];
    for (uint32_t id : live_order) {
      Node& n = nodes[id];
      n.assigned = cv.raw[n.t - 1][from_of(n)] & left;
      left &= ~n.assigned;
    }
    COLLPLAN_ASSERT(left == 0, fmt::format("relay plan: sink {} left uncovered", k));
    // Non-empty bottom-up (increasing t = reverse of live_order).
    for (auto it = live_order.rbegin(); it != live_order.rend(); ++it) {
      Node& n = nodes[*it];
      n.nonempty = n.assigned != 0;
      for (uint32_t c : n.children) n.nonempty = n.nonempty || nodes[c].nonempty;
    }
  }

  // Raw copies that are used: x_j at v is used when some element or output
  // at v takes it, or v forwards it in a kept raw element. The first copy to
  // arrive is the one kept.
  std::vector<std::vector<uint32_t>> first_round(K, std::vector<uint32_t>(K, UINT32_MAX));
  for (uint32_t v = 0; v < K; ++v) first_round[v][v] = 0;
  // keep_raw[t-1][msg][i]
  std::vector<std::vector<std::vector<bool>>> keep_raw(T);
  std::vector<std::vector<std::vector<bool>>> first_copy(T);
  for (uint32_t t = 1; t <= T; ++t) {
    keep_raw[t - 1].resize(s.rounds[t - 1].size());
    first_copy[t - 1].resize(s.rounds[t - 1].size());
    for (uint32_t mi = 0; mi < s.rounds[t - 1].size(); ++mi) {
      const RelayMessage& m = s.rounds[t - 1][mi];
      keep_raw[t - 1][mi].assign(m.raws.size(), false);
      first_copy[t - 1][mi].assign(m.raws.size(), false);
      for (uint32_t i = 0; i < m.raws.size(); ++i)
        if (first_round[m.to][m.raws[i]] == UINT32_MAX) {
          first_round[m.to][m.raws[i]] = t;
          first_copy[t - 1][mi][i] = true;
        }
    }
  }
  std::vector<Mask> needed(K, 0);
  for (uint32_t k = 0; k < K; ++k) needed[k] |= final_assigned[k];
  for (const Node& n : nodes)
    if (n.live && n.nonempty) needed[from_of(n)] |= n.assigned;
  for (uint32_t t = T; t >= 1; --t)
    for (uint32_t mi = 0; mi < s.rounds[t - 1].size(); ++mi) {
      const RelayMessage& m = s.rounds[t - 1][mi];
      for (uint32_t i = 0; i < m.raws.size(); ++i)
        if (first_copy[t - 1][mi][i] && (needed[m.to] & bit(m.raws[i]))) {
          keep_raw[t - 1][mi][i] = true;
          needed[m.from] |= bit(m.raws[i]);
        }
    }

  // Emit.
  Plan plan = make_plan(spec, T);
  std::vector<std::vector<SlotId>> raw_slot(K, std::vector<SlotId>(K, UINT32_MAX));
  std::vector<SlotId> node_slot(nodes.size(), UINT32_MAX);
  for (Program& prog : plan.ranks) {
    prog.inputs = {prog.new_slot()};
    raw_slot[prog.rank][prog.rank] = prog.inputs[0];
  }
  // The raw part of an element for sink k is an Op tagged with matrix_col k
  // (its coefficients are A[j][k], so `collplan recode` can put another
  // matrix into the plan), computed at the end of the step before the send;
  // the element adds the partials it includes. Round 1 has no step before:
  // a round-1 partial holds its raw terms itself (the search never makes
  // one: in round 1 a rank holds only its own input, sent raw).
  auto raw_terms = [&](Mask assigned, uint32_t at, uint32_t k) {
    std::vector<Term> terms;
    for (uint32_t j = 0; j < K; ++j)
      if (assigned & bit(j)) terms.push_back(Term{raw_slot[at][j], A.at(j, k)});
    return terms;
  };
  auto partial_combo = [&](const Node& n, uint32_t at) {
    Combo c;
    if (n.assigned) {
      Program& prog = plan.ranks[at];
      if (n.t >= 2) {
        const SlotId w = prog.new_slot();
        prog.at_any(n.t - 1).ops.push_back(make_op(prog, w, raw_terms(n.assigned, at, n.k), n.k));
        c.terms.push_back(Term{w, 1});
      } else {
        c.terms = raw_terms(n.assigned, at, n.k);
      }
    }
    for (uint32_t ch : n.children)
      if (nodes[ch].nonempty) c.terms.push_back(Term{node_slot[ch], 1});
    return c;
  };
  for (uint32_t t = 1; t <= T; ++t) {
    const auto& msgs = s.rounds[t - 1];
    std::vector<std::vector<Combo>> payloads(msgs.size());
    for (uint32_t mi = 0; mi < msgs.size(); ++mi) {
      const RelayMessage& m = msgs[mi];
      for (uint32_t i = 0; i < m.raws.size(); ++i)
        if (keep_raw[t - 1][mi][i]) payloads[mi].push_back(unit(raw_slot[m.from][m.raws[i]]));
      for (uint32_t i = 0; i < m.partials.size(); ++i) {
        const Node& n = nodes[partial_node[t - 1][mi][i]];
        if (n.live && n.nonempty) payloads[mi].push_back(partial_combo(n, m.from));
      }
    }
    for (uint32_t mi = 0; mi < msgs.size(); ++mi) {
      if (payloads[mi].empty()) continue;
      const RelayMessage& m = msgs[mi];
      Program& src = plan.ranks[m.from];
      src.at_any(t).sends.push_back(make_send(plan, src, m.port, m.to, std::move(payloads[mi])));
    }
    for (uint32_t mi = 0; mi < msgs.size(); ++mi) {
      const RelayMessage& m = msgs[mi];
      Program& dst = plan.ranks[m.to];
      std::vector<SlotId> into;
      for (uint32_t i = 0; i < m.raws.size(); ++i)
        if (keep_raw[t - 1][mi][i]) {
          raw_slot[m.to][m.raws[i]] = dst.new_slot();
          into.push_back(raw_slot[m.to][m.raws[i]]);
        }
      for (uint32_t i = 0; i < m.partials.size(); ++i) {
        const uint32_t id = partial_node[t - 1][mi][i];
        if (nodes[id].live && nodes[id].nonempty) {
          node_slot[id] = dst.new_slot();
          into.push_back(node_slot[id]);
        }
      }
      if (!into.empty()) dst.at_any(t).recvs.push_back(make_recv(plan, dst, t, m.port, m.from, std::move(into)));
    }
  }
  for (Program& prog : plan.ranks) {
    const uint32_t k = prog.rank;
    const SlotId y = prog.new_slot();
    prog.outputs = {y};
    Step& last = prog.at_any(T);
    last.ops.push_back(make_op(prog, y, raw_terms(final_assigned[k], k, k), k));  // x_k at least
    std::vector<Term> add = {Term{y, 1}};
    for (uint32_t ch : final_children[k])
      if (nodes[ch].nonempty) add.push_back(Term{node_slot[ch], 1});
    if (add.size() > 1) last.ops.push_back(make_op(prog, y, std::move(add)));
  }
  return plan;
}

nlohmann::json relay_schedule_json(const RelaySchedule& s) {
  nlohmann::json rounds = nlohmann::json::array();
  for (const auto& r : s.rounds) {
    nlohmann::json msgs = nlohmann::json::array();
    for (const RelayMessage& m : r)
      msgs.push_back({{"from", m.from}, {"port", m.port}, {"to", m.to}, {"raws", m.raws}, {"partials", m.partials}});
    rounds.push_back(std::move(msgs));
  }
  return {{"K", s.K}, {"p", s.p}, {"sizes", s.sizes}, {"rounds", std::move(rounds)}};
}

RelaySchedule relay_schedule_from_json(const nlohmann::json& j) {
  auto u32 = [](const nlohmann::json& v, const char* what) -> uint32_t {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > int64_t{UINT32_MAX})
      user_error("relay schedule: '{}' must be an unsigned 32-bit integer, got {}", what, v.dump());
    return v.get<uint32_t>();
  };
  auto list = [&](const nlohmann::json& v, const char* what) {
    if (!v.is_array()) user_error("relay schedule: '{}' must be an array, got {}", what, v.dump());
    std::vector<uint32_t> out;
    for (const auto& e : v) out.push_back(u32(e, what));
    return out;
  };
  auto key = [](const nlohmann::json& o, const char* k) -> const nlohmann::json& {
    if (!o.is_object() || !o.contains(k)) user_error("relay schedule: missing key '{}'", k);
    return o.at(k);
  };
  RelaySchedule s;
  s.K = u32(key(j, "K"), "K");
  s.p = u32(key(j, "p"), "p");
  s.sizes = list(key(j, "sizes"), "sizes");
  const auto& rounds = key(j, "rounds");
  if (!rounds.is_array()) user_error("relay schedule: 'rounds' must be an array");
  for (const auto& r : rounds) {
    if (!r.is_array()) user_error("relay schedule: each round must be an array of messages");
    std::vector<RelayMessage> msgs;
    for (const auto& m : r)
      msgs.push_back({u32(key(m, "from"), "from"), u32(key(m, "port"), "port"), u32(key(m, "to"), "to"),
                      list(key(m, "raws"), "raws"), list(key(m, "partials"), "partials")});
    s.rounds.push_back(std::move(msgs));
  }
  return s;
}

}  // namespace collplan::gen
