// Repair and decode (docs/repair.md): every generator's plans exact on a
// grid of codes and loss patterns, the replay equal to a decode computed
// from the code itself (not from the postcondition the checker uses), the
// local repair of an LRC, and bad input refused by name.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "gen/registry.h"
#include "ir/binary.h"
#include "json/json.h"
#include "matrix/codes.h"
#include "matrix/postcondition.h"
#include "matrix/repair.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "repair_spec.h"
#include "runtime/transport/threads.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using collplan::test::repair_spec;
using collplan::test::verify_exact;

namespace {

std::vector<std::vector<uint32_t>> subsets(uint32_t N, uint32_t size) {
  std::vector<std::vector<uint32_t>> out;
  std::vector<uint32_t> cur;
  auto rec = [&](auto&& self, uint32_t from) -> void {
    if (cur.size() == size) {
      out.push_back(cur);
      return;
    }
    for (uint32_t r = from; r < N; ++r) {
      cur.push_back(r);
      self(self, r + 1);
      cur.pop_back();
    }
  };
  rec(rec, 0);
  return out;
}

std::string csv(const std::vector<uint32_t>& v) {
  std::string s;
  for (uint32_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// Compiles spec with every applicable generator and checks each exactly.
// Returns how many plans were checked.
size_t check_every_generator(const Spec& spec) {
  size_t n = 0;
  for (const gen::Candidate& c : gen::candidates(spec, passes::CostModel{})) {
    if (!c.why_not.empty()) continue;
    INFO("generator " << c.generator->name);
    pipeline::CompileOptions opt;
    opt.algorithm = c.generator->name;
    const ir::Plan plan = pipeline::compile(spec, opt).plan;
    verify_exact(plan);
    ++n;
  }
  return n;
}

// The grid: every N in [lo, hi], K < N, every lost set of size <= 3 (all of
// them while N <= exhaustive_upto, else `sample` random ones per size),
// systematic and non-systematic RS, repair and decode.
size_t grid(uint32_t lo, uint32_t hi, uint32_t exhaustive_upto, size_t sample, const Field& f, uint32_t p,
            uint32_t lambda, uint32_t blocks) {
  std::mt19937 rng(7);
  size_t checked = 0;
  for (uint32_t N = lo; N <= hi; ++N)
    for (uint32_t K = 1; K < N; ++K)
      for (uint32_t size = 0; size <= std::min(3u, N - K); ++size) {
        std::vector<std::vector<uint32_t>> sets = subsets(N, size);
        if (N > exhaustive_upto && sets.size() > sample) {
          std::shuffle(sets.begin(), sets.end(), rng);
          sets.resize(sample);
        }
        for (const auto& lost : sets)
          for (const bool systematic : {true, false})
            for (const char* op : {"repair", "decode"}) {
              if (size == 0 && std::string(op) == "repair") continue;
              INFO(op << " N " << N << " K " << K << " lost " << csv(lost) << " systematic " << systematic << " "
                      << f.name() << " p " << p << " lambda " << lambda << " n " << blocks);
              const Spec s = repair_spec(op, N, K, csv(lost), f, "rs", systematic, p, lambda, blocks);
              checked += check_every_generator(s);
            }
      }
  return checked;
}

// Element e of a little-endian vector of `eb`-byte elements.
void put(std::vector<unsigned char>& v, size_t e, uint32_t eb, Elem x) { std::memcpy(&v[e * eb], &x, eb); }

}  // namespace

TEST_CASE("repair and decode: every generator exact, N <= 7, every lost set, both code forms", "[repair]") {
  CHECK(grid(2, 7, 7, 0, Field::gf256(), 1, 1, 1) > 1000);
}

TEST_CASE("repair and decode: every generator exact, N <= 24, three fields, p, lambda, blocks", "[repair][.slow]") {
  size_t checked = 0;
  checked += grid(8, 12, 12, 0, Field::gf256(), 1, 1, 1);
  checked += grid(13, 24, 0, 6, Field::gf256(), 2, 1, 1);
  checked += grid(2, 12, 9, 8, Field::gf65536(), 1, 2, 3);
  checked += grid(2, 12, 9, 8, Field::prime(257), 3, 1, 2);
  WARN(checked << " plans checked exactly");
  CHECK(checked > 10000);
}

// Replays every applicable generator's plan for `s` on the threads
// transport and compares each rank's bytes with a decode computed from x
// and G alone: c = x·G, the lost ranks get c_l, decode's rank to[j] gets
// x_j. Neither F nor the postcondition is used. Returns the plans replayed.
size_t replay_matches_decode(const Spec& s) {
  const Field& f = s.field;
  const uint32_t N = s.N, K = s.K;
  const Matrix G = full_generator(s, coded_matrix(s));
  const uint32_t eb = f.elem_bytes(), n = s.blocks;
  const size_t len = 37;
  SplitMix64 rng(N * 31 + K);
  // x_k in n blocks of len elements.
  std::vector<std::vector<std::vector<Elem>>> x(K, std::vector<std::vector<Elem>>(n, std::vector<Elem>(len)));
  for (auto& xk : x)
    for (auto& blk : xk)
      for (Elem& e : blk) e = rng.uniform(f);
  auto symbol = [&](uint32_t j, uint32_t b, size_t e) {
    Elem c = 0;
    for (uint32_t k = 0; k < K; ++k) c = f.add(c, f.mul(x[k][b][e], G.at(k, j)));
    return c;
  };
  size_t replayed = 0;
  for (const gen::Candidate& c : gen::candidates(s, passes::CostModel{})) {
    if (!c.why_not.empty()) continue;
    const std::string alg = c.generator->name;
    INFO(op_name(s.op) << " " << f.name() << " N " << N << " K " << K << " lost " << csv(s.lost) << " " << alg);
    pipeline::CompileOptions opt;
    opt.algorithm = alg;
    const ir::Plan plan = pipeline::compile(s, opt).plan;
    std::vector<std::vector<std::vector<unsigned char>>> in(N), out(N);
    std::vector<std::vector<const void*>> ins(N);
    std::vector<std::vector<void*>> outs(N);
    const std::vector<RankIO> io = rank_ios(s);
    for (uint32_t r = 0; r < N; ++r) {
      for (uint32_t b = 0; b < io[r].inputs; ++b) {
        in[r].emplace_back(len * eb);
        for (size_t e = 0; e < len; ++e) put(in[r].back(), e, eb, symbol(r, b, e));
      }
      out[r].assign(io[r].outputs, std::vector<unsigned char>(len * eb, 0xEE));
      for (auto& v : in[r]) ins[r].push_back(v.data());
      for (auto& v : out[r]) outs[r].push_back(v.data());
    }
    rt::run_threads(plan, len, ins, outs);
    for (uint32_t r = 0; r < N; ++r) {
      std::vector<std::vector<unsigned char>> want;
      if (s.op == OpKind::Repair) {
        if (std::binary_search(s.lost.begin(), s.lost.end(), r))
          for (uint32_t b = 0; b < n; ++b) {
            want.emplace_back(len * eb);
            for (size_t e = 0; e < len; ++e) put(want.back(), e, eb, symbol(r, b, e));
          }
      } else {
        for (uint32_t j = 0; j < K; ++j)
          if (s.to[j] == r)
            for (uint32_t b = 0; b < n; ++b) {
              want.emplace_back(len * eb);
              for (size_t e = 0; e < len; ++e) put(want.back(), e, eb, x[j][b][e]);
            }
      }
      INFO("rank " << r);
      CHECK(out[r] == want);
    }
    ++replayed;
  }
  return replayed;
}

TEST_CASE("repair and decode: replayed bytes equal a decode computed from the code", "[repair][runtime]") {
  size_t replayed = 0;
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)})
    for (const auto& [op, N, K, lost, to] :
         {std::tuple{"repair", 9u, 5u, "1,4,8", ""}, std::tuple{"repair", 6u, 3u, "0", ""},
          std::tuple{"decode", 9u, 5u, "0,2,3", ""}, std::tuple{"decode", 8u, 4u, "5", "7"}})
      for (const bool systematic : {true, false})
        replayed += replay_matches_decode(repair_spec(op, N, K, lost, f, "rs", systematic, 1, 1, 2, to));
  CHECK(replayed == 3 * 2 * (5 + 5 + 4 + 4));  // repair-decentralized needs receivers that are not helpers
  // An LRC's local repair and a Lagrange code.
  CHECK(replay_matches_decode(repair_spec("repair", 10, 6, "4", Field::gf256(), "lrc:2")) == 4);
  CHECK(replay_matches_decode(repair_spec("decode", 7, 3, "1,5", Field::prime(257), "lagrange", false)) == 3);
}

TEST_CASE("repair and decode: replayed bytes equal a direct decode, every N <= 10 and lost set of size <= 2, three "
          "fields",
          "[repair][runtime][.slow]") {
  size_t replayed = 0;
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)})
    for (uint32_t N = 2; N <= 10; ++N)
      for (uint32_t K = 1; K < N; ++K)
        for (uint32_t size = 0; size <= std::min(2u, N - K); ++size)
          for (const auto& lost : subsets(N, size))
            for (const char* op : {"repair", "decode"}) {
              if (size == 0 && std::string(op) == "repair") continue;
              replayed += replay_matches_decode(repair_spec(op, N, K, csv(lost), f, "rs", (N + K) % 2 == 0, 1 + N % 2,
                                                            1 + K % 2, 1 + size));
            }
  WARN(replayed << " plans replayed");
  CHECK(replayed > 5000);
}

TEST_CASE("repair: an LRC's single loss is repaired from its local group, two losses through the global parities",
          "[repair][lrc]") {
  // (k, l, r) = (6, 2, 2): data 0..5 in groups {0,1,2} and {3,4,5}, local
  // parities at 6 and 7, global parities at 8 and 9.
  const Spec one = repair_spec("repair", 10, 6, "4", Field::gf256(), "lrc:2");
  CHECK(one.helpers == std::vector<uint32_t>{3, 5, 7});
  const Spec parity = repair_spec("repair", 10, 6, "6", Field::gf256(), "lrc:2");
  CHECK(parity.helpers == std::vector<uint32_t>{0, 1, 2});
  const Spec two = repair_spec("repair", 10, 6, "3,4", Field::gf256(), "lrc:2");
  CHECK(two.helpers.size() == 6);
  for (const Spec& s : {one, parity, two}) {
    INFO("lost " << csv(s.lost));
    CHECK(check_every_generator(s) >= 3);
    // A local repair reads only the group: no other rank sends.
    pipeline::CompileOptions opt;
    opt.algorithm = "repair-central";
    const ir::Plan plan = pipeline::compile(s, opt).plan;
    for (const ir::Program& prog : plan.ranks)
      for (const ir::Step& st : prog.steps)
        if (!st.sends.empty())
          CHECK(std::binary_search(s.helpers.begin(), s.helpers.end(), prog.rank));
  }
  // The local repair's bound and cost: 2 helpers + the local parity.
  pipeline::CompileOptions opt;
  opt.algorithm = "repair-tree";
  const auto res = pipeline::compile(one, opt);
  CHECK(res.cost.C1 == 2);  // (p+1)-nomial tree on 4 ranks
  CHECK(res.cost.lb_C1 == 2);
  // A whole group's data (3 symbols) is rebuilt from its local parity and
  // the 2 global parities; with the local parity lost too, 2 equations
  // remain for 3 unknowns: refused, naming the first target that fails.
  const Spec group = repair_spec("repair", 10, 6, "0,1,2", Field::gf256(), "lrc:2");
  CHECK(check_every_generator(group) >= 3);
  CHECK_THROWS_WITH(repair_spec("repair", 10, 6, "0,1,2,6", Field::gf256(), "lrc:2"),
                    Catch::Contains("lost rank 0 cannot be rebuilt") && Catch::Contains("unrecoverable"));
}

TEST_CASE("repair-lagrange: the structured generators where the RS points allow it", "[repair]") {
  // Non-systematic RS [8, 4] over GF(257): nothing lost among ranks 0..3,
  // so the helpers are 0..3 and decode is x = c_H·V(α_H)^{-1} with every
  // symbol at its own rank. The points come in cosets of the 4th roots of
  // unity (rs_points): the matrix goes to the encode registry as the
  // inverse-draw-loose family, whose generator competes on modeled cost.
  const Spec dec = repair_spec("decode", 8, 4, "5,7", Field::prime(257), "rs", false);
  REQUIRE(dec.helpers == std::vector<uint32_t>{0, 1, 2, 3});
  pipeline::CompileOptions opt;
  opt.algorithm = "repair-lagrange";
  const auto d = pipeline::compile(dec, opt);
  INFO(d.plan.spec.algorithm);
  CHECK(d.plan.spec.algorithm.find("inverse-draw-loose") != std::string::npos);
  CHECK(d.plan.spec.algorithm.find("sent to their receivers") == std::string::npos);
  // Non-systematic RS [32, 16] over GF(65537): x = c_H·V(α_H)^{-1} is an
  // inverse DFT of radix 2 among the 16 data ranks, 4 steps of one element:
  // C1 at its lower bound, against 16 steps for the central decode.
  const Spec big = repair_spec("decode", 32, 16, "31", Field::prime(65537), "rs", false);
  const auto b = pipeline::compile(big, opt);
  INFO(b.plan.spec.algorithm);
  CHECK(b.plan.spec.algorithm.find("inverse-dft P=2") != std::string::npos);
  CHECK(b.cost.C1 == 4);
  CHECK(b.cost.C2 == 4);
  CHECK(b.cost.lb_C1 == 4);
  CHECK(pipeline::compile(big, {}).plan.spec.algorithm.rfind("repair-lagrange", 0) == 0);  // auto picks it
  // Repair of two lost ranks: the Lagrange matrix among the first K
  // survivors, the two symbols computed at helpers and sent on.
  const Spec rep = repair_spec("repair", 8, 4, "1,6", Field::prime(257), "rs", true);
  const auto r = pipeline::compile(rep, opt);
  INFO(r.plan.spec.algorithm);
  CHECK(r.plan.spec.algorithm.find("lagrange matrix") != std::string::npos);
  CHECK(r.plan.spec.algorithm.find("sent to their receivers") != std::string::npos);
  // Not an RS code, or more symbols than helpers: not applicable, by name.
  const gen::GeneratorInfo& g = gen::find_generator("repair-lagrange");
  CHECK(g.why_not(repair_spec("repair", 8, 4, "1", Field::gf256(), "random"), {}).find("not collplan's Reed-Solomon") !=
        std::string::npos);
  CHECK(g.why_not(repair_spec("repair", 10, 6, "4", Field::gf256(), "lrc:2"), {}).find("exactly K = 6 helpers") !=
        std::string::npos);
  CHECK(g.why_not(repair_spec("repair", 10, 3, "0,1,2,3", Field::gf256(), "rs"), {}).find("more than the K = 3") !=
        std::string::npos);
}

TEST_CASE("repair: costs of the central, tree and pipelined generators are their formulas", "[repair]") {
  // RS [12, 8], 3 lost, n = 4 blocks, p = 1: central reads 8 chunks per
  // receiver: C1 = max(8, 3) = 8, C2 = 4*8. Tree: 3 symbols x ceil(log2 9) = 4
  // rounds. Pipelined: 3 x (n - 1 + 8) = 33.
  const Spec s = repair_spec("repair", 12, 8, "1,4,9", Field::gf256(), "rs", true, 1, 1, 4);
  auto cost = [&](const char* alg) {
    pipeline::CompileOptions opt;
    opt.algorithm = alg;
    return pipeline::compile(s, opt).cost;
  };
  CHECK(cost("repair-central").C1 == 8);
  CHECK(cost("repair-central").C2 == 32);
  CHECK(cost("repair-tree").C1 == 12);
  CHECK(cost("repair-pipelined").C1 == 33);
  CHECK(cost("repair-decentralized").C1 == 4);
  CHECK(cost("repair-central").lb_C1 == 4);
  CHECK(cost("repair-central").lb_C2 == 4);
}

TEST_CASE("repair: --blocks auto streams a long chunk in blocks", "[repair][heavy]") {
  // RS [12, 8], one lost chunk of a million elements, beta = tau = 1: a
  // streamed schedule (the pipelined chain, or the decentralized plan's
  // circulant row reduce) wants n in the thousands, up to the checker's
  // limit 11 * n^2 <= 2^26; a short chunk stays whole.
  Spec s = repair_spec("repair", 12, 8, "1");
  passes::CostModel cm{1, 1, 1000000};
  const std::string note = pipeline::resolve_auto_blocks(s, cm);
  INFO(note);
  CHECK(note.find("modeled fastest over n <= 2469") != std::string::npos);
  CHECK(s.blocks > 1000);
  CHECK(uint64_t{11} * s.blocks * s.blocks <= (uint64_t{1} << 26));
  Spec t = repair_spec("repair", 12, 8, "1");
  passes::CostModel shortc{1000, 1, 16};
  (void)pipeline::resolve_auto_blocks(t, shortc);
  CHECK(t.blocks <= 2);
  // A chunk of 20000 elements: the chosen plan streams, about n + log steps.
  Spec u = repair_spec("repair", 12, 8, "1");
  passes::CostModel mid{1, 1, 20000};
  (void)pipeline::resolve_auto_blocks(u, mid);
  pipeline::CompileOptions opt;
  opt.cost_model = mid;
  const auto res = pipeline::compile(u, opt);
  INFO(res.plan.spec.algorithm);
  CHECK(u.blocks > 100);
  CHECK(res.cost.C1 <= u.blocks + 8);
}

TEST_CASE("repair and decode: the spec round-trips through the binary and JSON plan files", "[repair]") {
  const Spec s = repair_spec("decode", 9, 5, "2,6", Field::gf65536(), "rs", false, 2, 1, 1, "8,8,0,1,2");
  const ir::Plan plan = pipeline::compile(s, {}).plan;
  const std::vector<uint8_t> bytes = ir::encode_binary(plan);
  CHECK(ir::decode_binary(bytes.data(), bytes.size()) == plan);
  CHECK(ir::from_json(ir::to_json(plan, true)) == plan);
  CHECK(plan.spec.to == std::vector<uint32_t>{8, 8, 0, 1, 2});
  CHECK(plan.spec.lost == std::vector<uint32_t>{2, 6});
}

TEST_CASE("repair and decode: bad input is refused, naming the value", "[repair][errors]") {
  const Field f = Field::gf256();
  CHECK_THROWS_WITH(repair_spec("repair", 6, 4, ""), Catch::Contains("--lost is required for repair"));
  CHECK_THROWS_WITH(repair_spec("repair", 6, 4, "1,2,3"), Catch::Contains("at most N - K = 2"));
  CHECK_THROWS_WITH(repair_spec("repair", 6, 4, "6"), Catch::Contains("rank 6 is not a processor (valid: 0..5)"));
  CHECK_THROWS_WITH(repair_spec("repair", 6, 4, "1,1"), Catch::Contains("rank 1 is named twice"));
  CHECK_THROWS_WITH(repair_spec("repair", 6, 4, "1", f, "rs", true, 1, 1, 1, "", "1,2,3,4"),
                    Catch::Contains("helper 1 is lost"));
  // A dependent helper: an LRC's local parity 6 is the sum of data 0, 1, 2.
  CHECK_THROWS_WITH(repair_spec("repair", 10, 6, "9", f, "lrc:2", true, 1, 1, 1, "", "0,1,2,6"),
                    Catch::Contains("helper 6's symbol is a linear combination of the other helpers' (0,1,2,6)"));
  CHECK_THROWS_WITH(repair_spec("repair", 6, 4, "5", f, "rs", true, 1, 1, 1, "", "0,1,2"),
                    Catch::Contains("lost rank 5 cannot be rebuilt from helpers 0,1,2"));
  CHECK_THROWS_WITH(repair_spec("repair", 6, 4, "5", f, "rs", true, 1, 1, 1, "", "0,1,2,3,4"),
                    Catch::Contains("5 helpers are too many"));
  CHECK_THROWS_WITH(repair_spec("decode", 6, 4, "1", f, "rs", true, 1, 1, 1, "0,1"),
                    Catch::Contains("--to 0,1: 2 ranks given; decode needs K = 4"));
  CHECK_THROWS_WITH(repair_spec("repair", 10, 6, "1", f, "lrc:7"), Catch::Contains("1 <= L <= K = 6"));
  CHECK_THROWS_WITH(repair_spec("repair", 10, 6, "1", f, "lrc:2", false),
                    Catch::Contains("an LRC is a systematic code here"));
  // A repair whose helpers are fewer than K and do not span the lost column.
  CHECK_THROWS_WITH(repair_spec("repair", 10, 6, "4", f, "lrc:2", true, 1, 1, 1, "", "3,5"),
                    Catch::Contains("lost rank 4 cannot be rebuilt from helpers 3,5"));
  // The decentralized generator names why it does not apply.
  const Spec d = repair_spec("decode", 6, 4, "1");
  CHECK_THROWS_WITH(gen::require_applicable(gen::find_generator("repair-decentralized"), d, passes::CostModel{}),
                    Catch::Contains("is a helper and a receiver"));
}
