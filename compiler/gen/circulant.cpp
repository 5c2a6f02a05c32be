// Träff's per-processor schedule computation (Algorithms 1–5) with the
// corrections listed in gen/circulant.h.
#include "gen/circulant.h"

#include "support/error.h"

namespace collplan::gen {

namespace {
uint32_t below(uint32_t k) { return k >= 32 ? ~0u : (1u << k) - 1; }  // {0, …, k−1}
uint32_t bit(uint32_t b) { return 1u << b; }
}  // namespace

Circulant::Circulant(uint64_t p) : p_(p), q_(0) {
  if (p < 1 || p > kCirculantMaxP)
    user_error("circulant schedules: p = {} processors is out of range (valid: 1..{})", p, kCirculantMaxP);
  // Algorithm 1: successive halving, skips[q] = p, skips[k−1] = ⌈skips[k]/2⌉.
  while ((uint64_t{1} << q_) < p) ++q_;
  uint64_t x = p;
  for (int k = static_cast<int>(q_); k >= 0; --k) {
    s_[k] = x;
    x = x / 2 + x % 2;
  }
  COLLPLAN_ASSERT(s_[0] == 1, "circulant: skips[0] != 1");
}

// Algorithm 2, starting at level k with 1 <= r < skips[k]: the largest k
// with skips[k] <= r gives block k if r == skips[k]; otherwise r lies in the
// home range of k and has the baseblock of r − skips[k].
uint32_t Circulant::baseblock_below(uint64_t r, int k) const {
  while (r != s_[k]) {
    --k;
    if (s_[k] < r) r -= s_[k];
  }
  return static_cast<uint32_t>(k);
}

uint32_t Circulant::baseblock(uint64_t r) const {
  COLLPLAN_ASSERT(r >= 1 && r < p_, "circulant: baseblock of the root or of a rank out of range");
  return baseblock_below(r, static_cast<int>(q_));
}

// Algorithm 3. Requires b < skips[k].
uint32_t Circulant::range_rec(uint64_t a, uint64_t b, int k) const {
  if (a == 0) a = 1;  // processor 0: the root or a home-range start already counted
  if (a > b) return 0;
  while (b < s_[k]) --k;  // stops at k >= 0 since b >= 1 = skips[0]
  ++k;                    // the smallest k with b < skips[k]
  int kp = k;
  while (kp >= 0 && a <= s_[kp]) --kp;  // sentinel skips[−1] = 0 < a
  ++kp;                                 // the smallest k' with a <= skips[k']
  if (kp == k)  // skips[k−1] < a <= b < skips[k]: inside the home range of k−1
    return range_rec(a - s_[k - 1], b - s_[k - 1], k);
  if (kp + 1 == k) {  // a <= skips[k'] <= b < skips[k'+1]
    uint32_t B = bit(static_cast<uint32_t>(kp));
    if (a < s_[kp]) B |= range_rec(a - s_[kp - 1], s_[kp] - s_[kp - 1] - 1, k);
    return B | range_rec(0, b - s_[kp], kp);
  }
  // [a, b] contains [skips[k'], skips[k−1]] with k' <= k−2. For k >= 5 that
  // holds every block 0..k−1 (and no block >= k fits below skips[k]); for
  // k <= 4 it may not (skips 1,2,3,5: [2,3] holds {1,2}, [3,5] holds
  // {0,2,3}), so decompose exactly: b < skips[4] <= 9.
  if (k >= 5) return below(static_cast<uint32_t>(k));
  uint32_t B = 0;
  for (uint64_t r = a; r <= b; ++r) B |= bit(baseblock_below(r, k));
  return B;
}

uint32_t Circulant::range_blocks(uint64_t a, uint64_t b) const {
  COLLPLAN_ASSERT(a < p_ && b < p_, "circulant: range out of bounds");
  if (a > b) return 0;
  return range_rec(a, b, static_cast<int>(q_));
}

uint32_t Circulant::cyclic_range_blocks(int64_t a, int64_t b) const {
  return circulant_cyclic(p_, a, b, [this](uint64_t x, uint64_t y) { return range_blocks(x, y); });
}

void Circulant::recvsched(uint64_t r, uint32_t rounds, int8_t* recv) const {
  COLLPLAN_ASSERT(r < p_ && rounds <= q_, "circulant: recvsched arguments out of range");
  circulant_recvsched(
      p_, q_, s_.data(), r, rounds, recv, [this](uint64_t x) { return baseblock(x); },
      [this](int64_t a, int64_t b) { return cyclic_range_blocks(a, b); });
}

void Circulant::sendsched(uint64_t r, int8_t* send) const {
  COLLPLAN_ASSERT(r < p_, "circulant: sendsched rank out of range");
  std::array<int8_t, 32> tmp{};
  for (uint32_t i = 0; i < q_; ++i) {
    recvsched((r + s_[i]) % p_, i + 1, tmp.data());
    send[i] = tmp[i];
  }
}

CirculantSchedule Circulant::schedule(uint64_t r) const {
  CirculantSchedule s;
  s.q = q_;
  recvsched(r, q_, s.recv.data());
  sendsched(r, s.send.data());
  return s;
}

}  // namespace collplan::gen
