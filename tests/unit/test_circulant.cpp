// Circulant-graph schedules (gen/circulant.h): the paper's Tables 1–4
// reproduced cell for cell, the corrected range query against a brute-force
// scan, and validity of every rank's schedules (each round sends a block the
// rank holds, receives a new one, all blocks arrive) over a sweep of p.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gen/circulant.h"
#include "gen/circulant_check.h"
#include "support/error.h"

using namespace collplan;
using gen::Circulant;

namespace {

// Transcribed from the paper's Tables 1–4: the baseblock row, q receive
// rows, q send rows (the processor-number row omitted). Table 1 (p = 20)
// prints 0 and Table 2 (p = 33) prints −1 as the root's baseblock, which is
// undefined; that cell is not compared.
struct Table {
  uint64_t p;
  std::vector<const char*> rows;
};
const std::vector<Table> kTables = {
#include "circulant_tables.inc"
};

std::vector<int> parse_row(const char* s) {
  std::vector<int> v;
  std::istringstream in(s);
  for (int x; in >> x;) v.push_back(x);
  return v;
}

}  // namespace

TEST_CASE("circulant skips by successive halving (Algorithm 1)", "[circulant]") {
  auto skips = [](uint64_t p) {
    Circulant c(p);
    std::vector<uint64_t> s;
    for (uint32_t k = 0; k <= c.q(); ++k) s.push_back(c.skip(k));
    return s;
  };
  CHECK(skips(20) == std::vector<uint64_t>{1, 2, 3, 5, 10, 20});
  CHECK(skips(33) == std::vector<uint64_t>{1, 2, 3, 5, 9, 17, 33});
  CHECK(skips(32) == std::vector<uint64_t>{1, 2, 4, 8, 16, 32});
  CHECK(skips(31) == std::vector<uint64_t>{1, 2, 4, 8, 16, 31});
  CHECK(skips(1) == std::vector<uint64_t>{1});
  CHECK(skips(2) == std::vector<uint64_t>{1, 2});
  CHECK(Circulant(uint64_t{1} << 31).q() == 31);
  CHECK(Circulant((uint64_t{1} << 30) + 1).q() == 31);
  CHECK_THROWS_WITH(Circulant(0), Catch::Contains("p = 0") && Catch::Contains("1..2147483648"));
  CHECK_THROWS_WITH(Circulant((uint64_t{1} << 31) + 1), Catch::Contains("p = 2147483649"));
}

TEST_CASE("circulant Tables 1-4 of the paper reproduced cell for cell", "[circulant]") {
  for (const Table& t : kTables) {
    Circulant c(t.p);
    const uint32_t q = c.q();
    REQUIRE(t.rows.size() == 1 + 2 * q);
    std::vector<std::vector<int>> rows;
    for (const char* s : t.rows) {
      rows.push_back(parse_row(s));
      REQUIRE(rows.back().size() == t.p);
    }
    for (uint64_t r = 0; r < t.p; ++r) {
      INFO(fmt::format("p = {}, processor {}", t.p, r));
      if (r > 0) CHECK(static_cast<int>(c.baseblock(r)) == rows[0][r]);
      const gen::CirculantSchedule s = c.schedule(r);
      for (uint32_t i = 0; i < q; ++i) {
        INFO(fmt::format("round {}", i));
        CHECK(s.recv[i] == rows[1 + i][r]);
        CHECK(s.send[i] == rows[1 + q + i][r]);
      }
    }
  }
}

TEST_CASE("circulant range query (corrected Algorithm 3) equals a scan of baseblocks", "[circulant]") {
  // Every range of every p <= 130, including the two cases the printed
  // final branch gets wrong.
  {
    Circulant c(20);  // skips 1, 2, 3, 5, ...
    CHECK(c.range_blocks(2, 3) == 0b110u);    // {1, 2}, not {0, 1, 2}
    CHECK(c.range_blocks(3, 5) == 0b1101u);   // {0, 2, 3}, not {0, 1, 2, 3}
  }
  for (uint64_t p = 2; p <= 130; ++p) {
    Circulant c(p);
    for (uint64_t a = 0; a < p; ++a) {
      uint32_t scan = 0;
      for (uint64_t b = a; b < p; ++b) {
        if (b > 0) scan |= 1u << c.baseblock(b);
        INFO(fmt::format("p = {}, range [{}, {}]", p, a, b));
        REQUIRE(c.range_blocks(a, b) == scan);
      }
    }
  }
}

TEST_CASE("circulant schedules valid for every rank of every p <= 300", "[circulant]") {
  for (uint64_t p = 1; p <= 300; ++p) {
    INFO("p = " << p);
    REQUIRE(gen::check_circulant_reference(p).empty());
  }
}

TEST_CASE("circulant schedules valid for every rank of every p <= 2000 (per-rank path)", "[.slow][circulant]") {
  for (uint64_t p = 301; p <= 2000; ++p) {
    INFO("p = " << p);
    REQUIRE(gen::check_circulant_reference(p).empty());
  }
}

TEST_CASE("circulant whole-p fast path equals the per-rank reference", "[circulant]") {
  gen::CirculantTable ref, fast;
  gen::CirculantScratch scratch;
  for (uint64_t p = 1; p <= 300; ++p) {
    INFO("p = " << p);
    gen::circulant_table_reference(p, ref);
    gen::circulant_table_fast(p, fast, scratch);
    REQUIRE(fast.bb == ref.bb);
    REQUIRE(fast.recv == ref.recv);
    REQUIRE(fast.send == ref.send);
  }
  for (uint64_t p : {1000u, 1024u, 1025u, 2047u, 4097u}) {
    INFO("p = " << p);
    gen::circulant_table_reference(p, ref);
    gen::circulant_table_fast(p, fast, scratch);
    REQUIRE(fast.recv == ref.recv);
    REQUIRE(fast.send == ref.send);
  }
}

TEST_CASE("circulant schedules valid for every rank of every p <= 2000 (fast path)", "[circulant]") {
  gen::CirculantTable t;
  gen::CirculantScratch scratch;
  for (uint64_t p = 1; p <= 2000; ++p) {
    gen::circulant_table_fast(p, t, scratch);
    INFO("p = " << p);
    REQUIRE(gen::check_circulant_table(Circulant(p), t).empty());
  }
}

TEST_CASE("circulant checks reject a wrong schedule", "[circulant]") {
  gen::CirculantTable t;
  gen::CirculantScratch scratch;
  gen::circulant_table_fast(20, t, scratch);
  const Circulant c(20);
  REQUIRE(gen::check_circulant_table(c, t).empty());
  auto bad = t;
  bad.recv[4 * 5 + 1] = bad.recv[4 * 5 + 0];  // rank 4 receives round 0's block again in round 1
  CHECK_THAT(gen::check_circulant_table(c, bad), Catch::Contains("rank 4 expects block"));
  bad = t;
  bad.send[7 * 5 + 0] = 3;  // rank 7 (baseblock 1) sends block 3 in round 0
  CHECK_THAT(gen::check_circulant_table(c, bad), Catch::Contains("rank 7 sends block 3 in round 0 before holding it"));
  bad = t;
  std::swap(bad.send[9 * 5 + 2], bad.send[9 * 5 + 3]);  // held, but not what the receivers expect
  CHECK_THAT(gen::check_circulant_table(c, bad), Catch::Contains("rank 9 sends block"));
}

TEST_CASE("circulant spot checks of sampled ranks up to p = 2^31", "[circulant]") {
  for (uint64_t p : {2u, 3u, 20u, 33u, 1000u})
    for (uint64_t r = 0; r < p; ++r) REQUIRE(gen::check_circulant_rank(Circulant(p), r).empty());
  for (uint64_t p : {uint64_t{1} << 31, (uint64_t{1} << 31) - 1, (uint64_t{1} << 30) + 1, uint64_t{1000000007}}) {
    const Circulant c(p);
    for (uint64_t r : {uint64_t{0}, uint64_t{1}, p / 2, p / 3 + 1, p - 1, c.skip(c.q() - 1), c.skip(c.q() - 1) - 1}) {
      INFO("p = " << p << ", rank " << r);
      REQUIRE(gen::check_circulant_rank(c, r).empty());
    }
  }
}
