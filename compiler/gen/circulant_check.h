// Validity of circulant schedules at scale (docs/circulant.md, "Validity and
// its check"; `collplan verify-circulant`). For p processors,
// q = ⌈log₂p⌉, every rank r must
//   (R) receive a new block in every round: recv[r] holds r's baseblock in
//       its home round (skips[h] <= r < skips[h+1]) and negative blocks
//       elsewhere, and the q entries are distinct mod q — one of every
//       block of a phase, so over the phases every block arrives;
//   (S) send only blocks it holds: send[r][i] >= 0 was received in an
//       earlier round j < i of the same phase; send[r][i] < 0 is r's
//       baseblock of the previous phase or was received in a round j < i
//       (the root holds every block);
//   (C) send what the receiver expects: send[r][i] = recv[r + skips[i]][i].
// Two ways to get the schedules:
//   reference  Algorithms 2–5 run per rank, O(q³) each (gen/circulant.h);
//   fast       the whole p at once: baseblocks of all ranks in O(p) from
//              the home-range recursion, range queries in O(1) from a
//              sparse table of block-set ORs, recv of every rank in O(q),
//              send[r][i] read off recv[r + skips[i]][i]: O(p log p) total.
// Tests compare the two schedule for schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gen/circulant.h"

namespace collplan::gen {

// All schedules of p processors, rank-major, q entries per rank.
struct CirculantTable {
  uint64_t p = 0;
  uint32_t q = 0;
  std::vector<uint8_t> bb;     // baseblock per rank (bb[0] unused)
  std::vector<int8_t> recv;    // recv[r*q + i]
  std::vector<int8_t> send;    // send[r*q + i]
};

// Per-rank reference path (Algorithms 2–5 for each rank).
void circulant_table_reference(uint64_t p, CirculantTable& t);

// Whole-p fast path; `scratch` is reused between calls to avoid allocation.
struct CirculantScratch {
  std::vector<uint32_t> sparse;  // levels × p block-set ORs
};
void circulant_table_fast(uint64_t p, CirculantTable& t, CirculantScratch& scratch);

// (R), (S), (C) over a whole table: "" or the first violation, naming p,
// rank, round and blocks.
std::string check_circulant_table(const Circulant& c, const CirculantTable& t);

// The reference path and the check for one p.
std::string check_circulant_reference(uint64_t p);

// Spot check of rank r of p (any p <= 2^31) with the per-rank algorithms
// only: (R) and (S) for r, (C) for r's sends (against the receivers'
// schedules) and for r's receives (the senders' schedules, which must also
// hold the block they send r). O(q⁴) time, O(q) space.
std::string check_circulant_rank(const Circulant& c, uint64_t r);

}  // namespace collplan::gen
