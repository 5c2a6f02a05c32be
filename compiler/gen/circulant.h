// Circulant-graph broadcast schedules (Träff, "(Poly)Logarithmic time
// construction of round-optimal n-block broadcast schedules for broadcast and
// irregular allgather in MPI"; docs/circulant.md). Here p is the number of
// processors of the paper (the spec's K); every rank has one port.
//
// q = ⌈log₂p⌉. In round i of a phase of q rounds, processor r sends to
// r + skips[i] and receives from r − skips[i] (mod p). The schedule of r is
// two arrays of q block numbers, relative to the current phase:
//   recv[i]  the block r receives in round i: its baseblock (>= 0, this
//            phase's block) in the round i with skips[i] <= r < skips[i+1],
//            and b − q (a block of the previous phase) in every other round;
//   send[i]  the block r sends in round i: what r + skips[i] receives.
// Schedules are those of the paper's Algorithms 1–5 with these corrections
// (an independent check of the printed algorithms found them):
//   Alg 3  the loop over k' needs a sentinel skips[−1] = 0; processor 0 in a
//          range (the root, or the start of a home range already counted)
//          contributes no block; the final branch {0, …, k−1} is wrong for
//          two small cases (k = 3 with skips[2] = 3, e.g. [2,3] → {1,2};
//          k = 4 with skips[2..3] = 3, 5, e.g. [3,5] → {0,2,3}): ranges with
//          k <= 4 are decomposed exactly (at most 8 processors).
//   Alg 4  the set B of blocks already held starts as {baseblock(r)}, not ∅
//          (otherwise the last round can have two candidates); the root has
//          no baseblock, B = ∅.
// With them Tables 1–4 of the paper (p = 20, 33, 32, 31) are reproduced
// cell for cell (tests/unit/test_circulant.cpp); the root's baseblock cell
// is undefined (printed 0 or −1 there).
//
// Cost per processor, independent of all others: baseblock O(q), a range
// query O(q), recv O(q²), send O(q³) time; O(q) space (no heap).
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "support/error.h"

namespace collplan::gen {

inline constexpr uint64_t kCirculantMaxP = uint64_t{1} << 31;  // q <= 31

struct CirculantSchedule {
  uint32_t q = 0;
  std::array<int8_t, 32> recv{}, send{};  // entries 0..q-1, values in [−q, q−1]
};

class Circulant {
 public:
  // 1 <= p <= 2^31 (UserError otherwise). Algorithm 1.
  explicit Circulant(uint64_t p);

  uint64_t p() const { return p_; }
  uint32_t q() const { return q_; }
  uint64_t skip(uint32_t k) const { return s_[k]; }  // 0 <= k <= q, skips[q] = p
  const uint64_t* skips() const { return s_.data(); }

  // Algorithm 2: the first block processor r (1 <= r < p) receives.
  uint32_t baseblock(uint64_t r) const;
  // Algorithm 3 (corrected): bit b set iff some processor in [a, b]
  // (0 <= a, b < p; a > b is empty) has baseblock b; processor 0 has none.
  uint32_t range_blocks(uint64_t a, uint64_t b) const;
  // The same over the cyclic range a, a+1, …, b (mod p), a <= b, b − a < p.
  uint32_t cyclic_range_blocks(int64_t a, int64_t b) const;
  // Algorithm 4 (corrected): recv[0..rounds−1] of processor r, rounds <= q.
  void recvsched(uint64_t r, uint32_t rounds, int8_t* recv) const;
  // Algorithm 5: send[i] = recvsched(r + skips[i], i+1)[i].
  void sendsched(uint64_t r, int8_t* send) const;
  // Both, for processor r (0 <= r < p).
  CirculantSchedule schedule(uint64_t r) const;

 private:
  uint32_t range_rec(uint64_t a, uint64_t b, int k) const;
  uint32_t baseblock_below(uint64_t r, int k) const;  // 1 <= r <= skips[k]
  uint64_t p_;
  uint32_t q_;
  std::array<uint64_t, 33> s_{};
};

// The cyclic range a..b (a <= b, b − a < p, signed) as one or two plain
// ranges 0 <= a' <= b' < p, OR-ing `plain(a', b')` over them.
template <typename Plain>
uint32_t circulant_cyclic(uint64_t p, int64_t a, int64_t b, const Plain& plain) {
  COLLPLAN_ASSERT(a <= b && static_cast<uint64_t>(b - a) < p, "circulant: cyclic range longer than p");
  const int64_t P = static_cast<int64_t>(p);
  const uint64_t an = static_cast<uint64_t>(((a % P) + P) % P), bn = static_cast<uint64_t>(((b % P) + P) % P);
  if (an <= bn) return plain(an, bn);
  return plain(an, p - 1) | plain(0, bn);
}

// Algorithm 4 (corrected) over any source of baseblocks and range queries,
// so the per-rank path (Circulant) and the whole-p path
// (gen/circulant_check.h) share one statement of it. skips[0..q],
// baseblock(x) for 1 <= x < p, range(a, b) = the block set of the cyclic
// range a..b (a <= b, signed, taken mod p). Writes recv[0..rounds−1].
template <typename Baseblock, typename Range>
void circulant_recvsched(uint64_t p, uint32_t q, const uint64_t* skips, uint64_t r, uint32_t rounds, int8_t* recv,
                         const Baseblock& baseblock, const Range& range) {
  const int64_t R = static_cast<int64_t>(r);
  const uint32_t own = r == 0 ? 0 : baseblock(r);
  uint32_t B = r == 0 ? 0 : 1u << own;  // not ∅: the baseblock is held too
  int64_t sum = 0;                      // skips[0] + … + skips[i]
  for (uint32_t i = 0; i < rounds; ++i) {
    sum += static_cast<int64_t>(skips[i]);
    if (skips[i] <= r && r < skips[i + 1]) {  // the home round
      recv[i] = static_cast<int8_t>(own);
      continue;
    }
    uint32_t b;
    if (i == 0) {
      b = baseblock((r + p - 1) % p);
    } else if (i + 1 < q) {
      // A new block from the range r' = r − skips[i] may have got before r
      // hears r − skips[i+1] next round; else from the wider range r' can
      // have heard in rounds 0..i−1 (Lemma 1). The largest new one.
      uint32_t U = range(R - static_cast<int64_t>(skips[i + 1]) + 1, R - static_cast<int64_t>(skips[i])) & ~B;
      if (U == 0) U = range(R - sum, R - static_cast<int64_t>(skips[i + 1])) & ~B;
      COLLPLAN_ASSERT(U != 0, "circulant: recvsched found no new block");
      b = 31 - static_cast<uint32_t>(std::countl_zero(U));
    } else {  // the last round: the one block of the phase not yet held
      const uint32_t U = ((q >= 32 ? 0u : 1u << q) - 1) & ~B;
      COLLPLAN_ASSERT(std::popcount(U) == 1, "circulant: recvsched's last round has not exactly one block left");
      b = static_cast<uint32_t>(std::countr_zero(U));
    }
    B |= 1u << b;
    recv[i] = static_cast<int8_t>(static_cast<int32_t>(b) - static_cast<int32_t>(q));
  }
}

// The block (in 0..n−1) processor r handles in absolute round i (0-based,
// counting Algorithm 6's x dummy rounds) given its phase-relative schedule
// entry v = sched[i mod q]: v + q·⌊i/q⌋ − x, capped at n−1; −1 when negative
// (nothing is sent or received).
inline int64_t circulant_block(int64_t v, uint64_t i, uint32_t q, uint32_t x, uint32_t n) {
  const int64_t b = v + static_cast<int64_t>((i / q) * q) - static_cast<int64_t>(x);
  if (b < 0) return -1;
  return b > static_cast<int64_t>(n) - 1 ? static_cast<int64_t>(n) - 1 : b;
}

// Algorithm 6's dummy rounds: x = (q − (n−1+q) mod q) mod q, so that
// x + n − 1 + q is a multiple of q.
inline uint32_t circulant_dummy_rounds(uint32_t q, uint32_t n) {
  return q == 0 ? 0 : (q - (n - 1 + q) % q) % q;
}

}  // namespace collplan::gen
