// Whole-p and per-rank validity checks of circulant schedules; the contract
// and the two paths are described in gen/circulant_check.h.
#include "gen/circulant_check.h"

#include <array>
#include <bit>

#include <fmt/format.h>

namespace collplan::gen {

namespace {

// (R) for a non-root rank: home round holds the baseblock, the others
// negative blocks, all q distinct mod q.
std::string check_recv(const Circulant& c, uint64_t r, uint32_t bb, const int8_t* recv) {
  const uint32_t q = c.q();
  uint32_t seen = 0;
  for (uint32_t i = 0; i < q; ++i) {
    const bool home = c.skip(i) <= r && r < c.skip(i + 1);
    const int v = recv[i];
    if (home ? v != static_cast<int>(bb) : (v < -static_cast<int>(q) || v >= 0))
      return fmt::format("p = {}: rank {} receives block {} in round {} ({})", c.p(), r, v, i,
                         home ? fmt::format("its home round, expected its baseblock {}", bb)
                              : "expected a block of the previous phase, -q..-1");
    const uint32_t res = static_cast<uint32_t>((v + static_cast<int>(q)) % static_cast<int>(q));
    if (seen >> res & 1) return fmt::format("p = {}: rank {} receives block {} twice (mod q = {}), again in round {}", c.p(), r, v, q, i);
    seen |= 1u << res;
  }
  return {};
}

// When rank r got each block of the phase: round[v + q] = the first round
// (0..q−1) in which r receives block v (−q <= v < q), −1 for r's baseblock
// of the previous phase (bb − q, held before the phase starts), q if never.
struct Rounds {
  std::array<int8_t, 64> round;
  Rounds(uint32_t q, uint64_t r, uint32_t bb, const int8_t* recv) {
    round.fill(static_cast<int8_t>(q));
    for (uint32_t j = q; j-- > 0;) round[recv[j] + q] = static_cast<int8_t>(j);
    if (r != 0) round[bb] = -1;
  }
  // Does r hold block v before round i? (The root holds every block.)
  bool holds(uint32_t q, uint64_t r, int v, uint32_t i) const {
    const int Q = static_cast<int>(q);
    return r == 0 || (v >= -Q && v < Q && round[v + Q] < static_cast<int>(i));
  }
};

std::string send_error(const Circulant& c, uint64_t r, uint32_t i, int v) {
  return fmt::format("p = {}: rank {} sends block {} in round {} before holding it", c.p(), r, v, i);
}

}  // namespace

void circulant_table_reference(uint64_t p, CirculantTable& t) {
  const Circulant c(p);
  const uint32_t q = c.q();
  t.p = p;
  t.q = q;
  t.bb.assign(p, 0);
  t.recv.assign(p * q, 0);
  t.send.assign(p * q, 0);
  for (uint64_t r = 0; r < p; ++r) {
    if (r > 0) t.bb[r] = static_cast<uint8_t>(c.baseblock(r));
    const CirculantSchedule s = c.schedule(r);
    for (uint32_t i = 0; i < q; ++i) {
      t.recv[r * q + i] = s.recv[i];
      t.send[r * q + i] = s.send[i];
    }
  }
}

void circulant_table_fast(uint64_t p, CirculantTable& t, CirculantScratch& scratch) {
  const Circulant c(p);
  const uint32_t q = c.q();
  t.p = p;
  t.q = q;
  t.bb.assign(p, 0);
  t.recv.resize(p * q);
  t.send.resize(p * q);
  // Baseblocks in O(p): skips[k] has block k; the rest of its home range
  // repeats ranks 1, 2, … .
  for (uint32_t k = 0; k < q; ++k) {
    t.bb[c.skip(k)] = static_cast<uint8_t>(k);
    for (uint64_t x = c.skip(k) + 1; x < c.skip(k + 1); ++x) t.bb[x] = t.bb[x - c.skip(k)];
  }
  // Sparse table: level j, entry a = OR of the block bits of ranks
  // a..a+2^j−1 (rank 0 contributes nothing).
  uint32_t levels = 1;
  while ((uint64_t{1} << levels) <= p) ++levels;
  scratch.sparse.resize(levels * p);
  uint32_t* sp = scratch.sparse.data();
  sp[0] = 0;
  for (uint64_t x = 1; x < p; ++x) sp[x] = 1u << t.bb[x];
  for (uint32_t j = 1; j < levels; ++j) {
    const uint64_t half = uint64_t{1} << (j - 1);
    uint32_t* cur = sp + j * p;
    const uint32_t* prev = sp + (j - 1) * p;
    for (uint64_t x = 0; x + 2 * half <= p; ++x) cur[x] = prev[x] | prev[x + half];
  }
  auto plain = [&](uint64_t a, uint64_t b) -> uint32_t {
    const uint32_t j = 63 - static_cast<uint32_t>(std::countl_zero(b - a + 1));
    const uint32_t* lvl = sp + j * p;
    return lvl[a] | lvl[b + 1 - (uint64_t{1} << j)];
  };
  auto range = [&](int64_t a, int64_t b) { return circulant_cyclic(p, a, b, plain); };
  auto bb = [&](uint64_t x) -> uint32_t { return t.bb[x]; };
  for (uint64_t r = 0; r < p; ++r) circulant_recvsched(p, q, c.skips(), r, q, t.recv.data() + (r * q), bb, range);
  for (uint64_t r = 0; r < p; ++r)
    for (uint32_t i = 0; i < q; ++i) t.send[r * q + i] = t.recv[((r + c.skip(i)) % p) * q + i];
}

std::string check_circulant_table(const Circulant& c, const CirculantTable& t) {
  const uint64_t p = c.p();
  const uint32_t q = c.q();
  for (uint64_t r = 0; r < p; ++r) {
    const int8_t* recv = t.recv.data() + (r * q);
    if (r > 0) {
      if (std::string e = check_recv(c, r, t.bb[r], recv); !e.empty()) return e;
    }
    const Rounds got(q, r, t.bb[r], recv);
    for (uint32_t i = 0; i < q; ++i) {
      const int v = t.send[r * q + i];
      if (!got.holds(q, r, v, i)) return send_error(c, r, i, v);
      const uint64_t to = (r + c.skip(i)) % p;
      if (t.recv[to * q + i] != v)
        return fmt::format("p = {}: rank {} sends block {} in round {} but rank {} expects block {}", p, r, v, i, to,
                           t.recv[to * q + i]);
    }
  }
  return {};
}

std::string check_circulant_reference(uint64_t p) {
  CirculantTable t;
  circulant_table_reference(p, t);
  return check_circulant_table(Circulant(p), t);
}

std::string check_circulant_rank(const Circulant& c, uint64_t r) {
  const uint64_t p = c.p();
  const uint32_t q = c.q();
  const CirculantSchedule s = c.schedule(r);
  const uint32_t bb = r == 0 ? 0 : c.baseblock(r);
  if (r > 0) {
    if (std::string e = check_recv(c, r, bb, s.recv.data()); !e.empty()) return e;
  }
  const Rounds got(q, r, bb, s.recv.data());
  for (uint32_t i = 0; i < q; ++i) {
    if (!got.holds(q, r, s.send[i], i)) return send_error(c, r, i, s.send[i]);
    // The sender of round i must hold, before round i, what it sends r.
    const uint64_t from = (r + p - c.skip(i)) % p;
    CirculantSchedule f;
    c.recvsched(from, q, f.recv.data());
    const uint32_t fbb = from == 0 ? 0 : c.baseblock(from);
    if (!Rounds(q, from, fbb, f.recv.data()).holds(q, from, s.recv[i], i)) return send_error(c, from, i, s.recv[i]);
    // What r sends must be what its receiver computes for itself.
    const uint64_t to = (r + c.skip(i)) % p;
    CirculantSchedule g;
    c.recvsched(to, q, g.recv.data());
    if (g.recv[i] != s.send[i])
      return fmt::format("p = {}: rank {} sends block {} in round {} but rank {} expects block {}", p, r, s.send[i], i,
                         to, g.recv[i]);
  }
  return {};
}

}  // namespace collplan::gen
