// Replay traces (`collplan run --trace FILE`): a Transport decorator that
// records what one rank's engine does, and the Chrome trace event JSON that
// Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// ─── What is recorded ────────────────────────────────────────────────────────
//
// TracingTransport forwards every call to the transport it wraps and records,
// with wall-clock timestamps (system_clock, so that processes on one host
// share a time base; across hosts the trace is as aligned as their clocks):
//   run        begin() … end(): one replay of the plan
//   post_send  the call, with to, port, step, bytes
//   post_recv  the call, with from, port, sent_at, bytes
//   wait       the call, with the step it belongs to, the requests waited for
//              and their bytes (sends and receives)
//   combine    the time between two transport calls of different steps (and
//              from begin() to the first call, from the last call to end()):
//              the engine's local work, i.e. the ops of `step` and the
//              payload evaluation of `next_step` (step 0 = before the
//              first step, next_step 0 = after the last step).
//              The decorator sees only transport calls, so it cannot split
//              the two; gaps between calls of one step (a few ns of engine
//              bookkeeping) are not recorded.
//   step       from the end of the previous step's last transport call (or
//              begin()) to the end of this step's last one (for the last
//              step: to end()), so step spans tile the run and each contains
//              its calls and the combine span before them.
// Steps are derived from the messages (the engine is not touched): posts
// belong to the step their message is sent in (SendDesc::step,
// RecvDesc::sent_at: the engine posts both sides then); a wait belongs to
// step s + λ − 1 of the latest message s it waits for (it completes the
// messages due in that step); a wait for nothing belongs to the current step.
//
// ─── Chrome trace JSON ───────────────────────────────────────────────────────
//
//   {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
// Every event above is a complete event ("ph": "X") with name, cat
// "collplan", ts and dur in microseconds (fractional: ns resolution) from the
// earliest event of the trace, pid = tid = the rank (one track per rank), and
// args (the fields above, plus "run", 1-based). Metadata events ("ph": "M")
// name each process "rank r" and sort them by rank. otherData carries what
// the caller passes (plan, transport, len, reps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/transport.h"

namespace collplan::rt {

enum class TraceKind : uint32_t { run = 0, step, post_send, post_recv, wait, combine };

const char* trace_kind_name(TraceKind k);

// One recorded span. Plain data, so that a distributed run can gather the
// events of every rank as bytes (MPI, TCP).
struct TraceEvent {
  int64_t t0_ns = 0, t1_ns = 0;  // system_clock, ns since the epoch
  uint64_t bytes = 0;
  uint32_t rank = 0;
  TraceKind kind = TraceKind::run;
  uint32_t run = 0;              // 1-based replay number
  uint32_t step = 0;
  uint32_t peer = 0;             // post_send: to; post_recv: from
  uint32_t port = 0;
  uint32_t count = 0;            // wait: requests
  uint32_t next_step = 0;        // combine: the step after the gap (0 = end)
};

// Wraps `inner` (which must outlive it) and appends what it sees to its own
// event list. Forwards every call unchanged, including the statuses, so a
// traced run behaves as an untraced one apart from two clock reads and a
// record per call. begin() reserves room for a run as long as the previous
// one, so only the first run's recording may allocate in the round loop.
class TracingTransport final : public Transport {
 public:
  // `lambda`: the plan's postal latency (to date the waits).
  TracingTransport(Transport& inner, uint32_t lambda);

  ir::Rank rank() const override { return inner_.rank(); }
  uint32_t size() const override { return inner_.size(); }
  Status begin(uint32_t max_requests) override;
  Status expect(const RecvDesc* recvs, size_t n) override { return inner_.expect(recvs, n); }
  Status post_send(ReqId id, const SendDesc& d) override;
  Status post_recv(ReqId id, const RecvDesc& d) override;
  Status wait(const ReqId* ids, size_t n, size_t* failed_index) override;
  // Forwarded; a test that completes its requests is recorded as a wait
  // (one that does not, as nothing).
  Status test(const ReqId* ids, size_t n, bool* done, size_t* failed_index) override;
  Status end() override;
  void abandon() override { inner_.abandon(); }
  std::string error_detail() const override { return inner_.error_detail(); }
  // Forwarded, so a traced run moves its messages exactly as an untraced one
  // (descriptors with pieces pass through unchanged; d.bytes is their total).
  uint32_t max_pieces() const override { return inner_.max_pieces(); }

  const std::vector<TraceEvent>& events() const { return events_; }

 private:
  struct Req {
    uint32_t step = 0;
    uint64_t bytes = 0;
  };
  // Before a call of step `step` starting at `t`: the combine gap and the
  // step boundary, if the step changes.
  void enter(uint32_t step, int64_t t);
  void leave(int64_t t) { last_end_ = t; }
  TraceEvent ev(TraceKind k, int64_t t0, int64_t t1) const;
  // wait() and a completing test(): `call` runs the inner transport's.
  template <class Call>
  Status record_wait(const ReqId* ids, size_t n, Call call);

  Transport& inner_;
  uint32_t lambda_;
  std::vector<TraceEvent> events_;
  std::vector<Req> reqs_;
  size_t run_first_event_ = 0, last_run_events_ = 0;
  uint32_t run_ = 0, cur_step_ = 0;
  int64_t run_start_ = 0, step_start_ = 0, last_end_ = 0;
};

// ns since the epoch on the clock the tracer uses.
int64_t trace_now_ns();

// The Chrome trace JSON of `events` (any ranks, any order); `other` becomes
// otherData.
nlohmann::json trace_json(const std::vector<TraceEvent>& events, const nlohmann::json& other);
// Writes trace_json() to `path`; UserError naming the path when it cannot.
void write_trace(const std::string& path, const std::vector<TraceEvent>& events, const nlohmann::json& other);

// A distributed run's rank-to-rank gather over the plan's own transport
// (used for TCP, whose processes share no other channel): every rank calls
// it after its last run; rank 0 gets every rank's events appended to
// `events` (its own first), the others send theirs and wait for rank 0's
// acknowledgement, so no process exits while its events are in flight.
// Uses steps beyond any plan's (0xFFFFFF00 on), outside the round loop.
// UserError naming the rank and the transport's detail on failure.
void gather_trace(Transport& tr, std::vector<TraceEvent>& events);

}  // namespace collplan::rt
