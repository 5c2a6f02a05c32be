// Replay of a plan on a simulated cluster (SimGrid S4U): how long the plan
// would take on K hosts of a given network, without K machines.
//
// ─── Model ───────────────────────────────────────────────────────────────────
//
// Platform: SimGrid's cluster tag (one host per rank, each with a private
// split-duplex link — separate up and down directions — to a non-blocking
// crossbar; no backbone), so a rank sends at the full link bandwidth to any
// peer and contention exists only at the NICs. The route between two hosts
// crosses two links (the sender's up, the receiver's down); each link gets
// half the host-to-host latency. Network model CM02 without cross-traffic:
// a lone message of B bytes takes exactly latency + B / bandwidth, and
// concurrent flows share a link's bandwidth max-min fairly (no TCP
// correction factors, so the figures are those of the α-β model with
// contention).
//
// Replay: one actor per rank, steps 1..num_steps in order, as the engine
// (runtime/engine.h) does it:
//   (1) evaluate step t's send payloads      execute(flops of the payloads)
//   (2) post step t's sends (put_async to the receiver's mailbox for this
//       sender and port) and the receives of messages sent to this rank in
//       step t (get_async)
//   (3) wait for the communications due in step t: receives of messages sent
//       in step t−λ+1 and this rank's own sends of step t−λ+1
//   (4) run step t's ops                     execute(flops of the ops)
// so postal latency λ is honoured as in the plan: a message sent in step t is
// consumed in step t+λ−1, and up to λ steps of messages are in flight.
// Messages carry no data, only their size: payload elements × ℓ × the
// field's element width.
//
// Computation: a combination of n terms costs n × (bytes of one element
// vector) flops, i.e. one flop = one byte of multiply-accumulate; a single
// term with coefficient 1 is a copy and costs nothing (the engine forwards
// such payloads zero-copy). Hosts compute at `Platform::speed` such flops per
// second (default 2·10^10: the GF(2^8) multiply-accumulate kernels run at
// 20–35 GB/s on one core, docs/benchmarks.md).
//
// The simulation runs in a forked child process (SimGrid allows one engine
// per process), so simulate() may be called any number of times; it is
// deterministic: the same plan, ℓ and platform give the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/plan.h"

namespace collplan::sim {

struct Platform {
  uint32_t hosts = 0;
  double bandwidth = 1.25e9;  // bytes/s per link direction (10 Gbit/s)
  double latency = 1e-6;      // s, host to host (two links of latency/2)
  double speed = 2e10;        // flops/s per host (flop: see "Computation")
};

// The platform as a SimGrid XML file's text (hosts h0..h{K-1}); the SMPI
// baselines run on the same text.
std::string platform_xml(const Platform& p);

// The SimGrid options (--cfg=...) the model above needs, shared with the SMPI
// runs so that both see the same network.
const char* const* network_config();  // null-terminated

struct SimResult {
  double time = 0;       // simulated seconds until the last rank finished
  uint64_t messages = 0; // messages sent, all ranks
  double bytes = 0;      // bytes sent, all ranks
  double flops = 0;      // modeled computation, all ranks
};

// Simulates `plan` with vectors of `len` field elements per plan element on
// `platform` (hosts = 0 means the plan's rank count; otherwise it must be at
// least that, UserError if not).
SimResult simulate(const ir::Plan& plan, size_t len, Platform platform);

}  // namespace collplan::sim
