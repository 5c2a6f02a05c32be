// Replay traces (trace.h).
#include "runtime/trace.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "support/error.h"
#include "support/safe_file.h"

namespace collplan::rt {

const char* trace_kind_name(TraceKind k) {
  switch (k) {
    case TraceKind::run: return "run";
    case TraceKind::step: return "step";
    case TraceKind::post_send: return "post_send";
    case TraceKind::post_recv: return "post_recv";
    case TraceKind::wait: return "wait";
    case TraceKind::combine: return "combine";
  }
  return "unknown";
}

int64_t trace_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TracingTransport::TracingTransport(Transport& inner, uint32_t lambda) : inner_(inner), lambda_(lambda) {}

TraceEvent TracingTransport::ev(TraceKind k, int64_t t0, int64_t t1) const {
  TraceEvent e;
  e.t0_ns = t0;
  e.t1_ns = t1;
  e.rank = inner_.rank();
  e.kind = k;
  e.run = run_;
  e.step = cur_step_;
  return e;
}

void TracingTransport::enter(uint32_t step, int64_t t) {
  if (step == cur_step_) return;
  TraceEvent c = ev(TraceKind::combine, last_end_, t);
  c.next_step = step;
  events_.push_back(c);
  if (cur_step_ != 0) events_.push_back(ev(TraceKind::step, step_start_, last_end_));
  cur_step_ = step;
  step_start_ = last_end_;
}

Status TracingTransport::begin(uint32_t max_requests) {
  const int64_t t = trace_now_ns();
  // Room for another run as long as the last one, so that from the second
  // run on recording does not allocate inside the round loop.
  events_.reserve(events_.size() + std::max<size_t>(last_run_events_, 256));
  run_first_event_ = events_.size();
  ++run_;
  cur_step_ = 0;
  run_start_ = step_start_ = last_end_ = t;
  reqs_.assign(max_requests, Req{});
  return inner_.begin(max_requests);
}

Status TracingTransport::post_send(ReqId id, const SendDesc& d) {
  const int64_t t0 = trace_now_ns();
  enter(d.step, t0);
  const Status st = inner_.post_send(id, d);
  const int64_t t1 = trace_now_ns();
  if (id < reqs_.size()) reqs_[id] = Req{d.step, d.bytes};
  TraceEvent e = ev(TraceKind::post_send, t0, t1);
  e.peer = d.to;
  e.port = d.port;
  e.bytes = d.bytes;
  events_.push_back(e);
  leave(t1);
  return st;
}

Status TracingTransport::post_recv(ReqId id, const RecvDesc& d) {
  const int64_t t0 = trace_now_ns();
  enter(d.sent_at, t0);
  const Status st = inner_.post_recv(id, d);
  const int64_t t1 = trace_now_ns();
  if (id < reqs_.size()) reqs_[id] = Req{d.sent_at, d.bytes};
  TraceEvent e = ev(TraceKind::post_recv, t0, t1);
  e.peer = d.from;
  e.port = d.port;
  e.bytes = d.bytes;
  events_.push_back(e);
  leave(t1);
  return st;
}

template <class Call>
Status TracingTransport::record_wait(const ReqId* ids, size_t n, Call call) {
  const int64_t t0 = trace_now_ns();
  uint32_t step = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < n; ++i)
    if (ids[i] < reqs_.size()) {
      step = std::max(step, reqs_[ids[i]].step + lambda_ - 1);
      bytes += reqs_[ids[i]].bytes;
    }
  bool done = true;
  const Status st = call(&done);
  if (!done) return st;
  enter(n == 0 || step == 0 ? cur_step_ : step, t0);
  const int64_t t1 = trace_now_ns();
  TraceEvent e = ev(TraceKind::wait, t0, t1);
  e.count = static_cast<uint32_t>(n);
  e.bytes = bytes;
  events_.push_back(e);
  leave(t1);
  return st;
}

Status TracingTransport::wait(const ReqId* ids, size_t n, size_t* failed_index) {
  return record_wait(ids, n, [&](bool*) { return inner_.wait(ids, n, failed_index); });
}

Status TracingTransport::test(const ReqId* ids, size_t n, bool* done, size_t* failed_index) {
  return record_wait(ids, n, [&](bool* d) {
    const Status st = inner_.test(ids, n, done, failed_index);
    *d = *done;
    return st;
  });
}

Status TracingTransport::end() {
  const int64_t t = trace_now_ns();
  TraceEvent c = ev(TraceKind::combine, last_end_, t);
  c.next_step = 0;
  events_.push_back(c);
  if (cur_step_ != 0) events_.push_back(ev(TraceKind::step, step_start_, t));
  TraceEvent r = ev(TraceKind::run, run_start_, t);
  r.step = 0;
  events_.push_back(r);
  last_run_events_ = events_.size() - run_first_event_;
  return inner_.end();
}

nlohmann::json trace_json(const std::vector<TraceEvent>& events, const nlohmann::json& other) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  std::vector<uint32_t> ranks;
  for (const TraceEvent& e : events) {
    origin = std::min(origin, e.t0_ns);
    ranks.push_back(e.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  nlohmann::json list = nlohmann::json::array();
  for (uint32_t r : ranks) {
    list.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"tid", r},
                    {"args", {{"name", fmt::format("rank {}", r)}}}});
    list.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", r}, {"tid", r}, {"args", {{"sort_index", r}}}});
    list.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", r}, {"args", {{"name", "engine"}}}});
  }
  // Sorted by rank, then time, longest first at equal starts: viewers nest
  // complete events by order, so enclosing spans come before their parts.
  std::vector<const TraceEvent*> order;
  order.reserve(events.size());
  for (const TraceEvent& e : events) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const TraceEvent* a, const TraceEvent* b) {
    if (a->rank != b->rank) return a->rank < b->rank;
    if (a->t0_ns != b->t0_ns) return a->t0_ns < b->t0_ns;
    return a->t1_ns - a->t0_ns > b->t1_ns - b->t0_ns;
  });
  for (const TraceEvent* e : order) {
    nlohmann::json args = {{"run", e->run}};
    switch (e->kind) {
      case TraceKind::run: break;
      case TraceKind::step: args["step"] = e->step; break;
      case TraceKind::post_send:
        args.update({{"to", e->peer}, {"port", e->port}, {"step", e->step}, {"bytes", e->bytes}});
        break;
      case TraceKind::post_recv:
        args.update({{"from", e->peer}, {"port", e->port}, {"sent_at", e->step}, {"bytes", e->bytes}});
        break;
      case TraceKind::wait: args.update({{"step", e->step}, {"requests", e->count}, {"bytes", e->bytes}}); break;
      case TraceKind::combine: args.update({{"step", e->step}, {"next_step", e->next_step}}); break;
    }
    const std::string name =
        e->kind == TraceKind::step ? fmt::format("step {}", e->step) : std::string(trace_kind_name(e->kind));
    list.push_back({{"name", name},
                    {"cat", "collplan"},
                    {"ph", "X"},
                    {"ts", static_cast<double>(e->t0_ns - origin) / 1000.0},
                    {"dur", static_cast<double>(std::max<int64_t>(e->t1_ns - e->t0_ns, 0)) / 1000.0},
                    {"pid", e->rank},
                    {"tid", e->rank},
                    {"args", args}});
  }
  nlohmann::json j;
  j["traceEvents"] = std::move(list);
  j["displayTimeUnit"] = "ns";
  j["otherData"] = other;
  return j;
}

void write_trace(const std::string& path, const std::vector<TraceEvent>& events, const nlohmann::json& other) {
  // Through a temporary renamed into place (support/safe_file.h): a run
  // killed while writing leaves the previous trace or none, never a part.
  files::OutputFile f(path, "--trace file");
  // One event per line: small enough to read, and diffable.
  const nlohmann::json j = trace_json(events, other);
  std::string text = "{\"displayTimeUnit\":\"ns\",\"otherData\":" + j["otherData"].dump() + ",\"traceEvents\":[\n";
  const auto& list = j["traceEvents"];
  for (size_t i = 0; i < list.size(); ++i) {
    text += list[i].dump();
    text += i + 1 < list.size() ? ",\n" : "\n";
    if (text.size() >= (1u << 16)) {
      f.write(text);
      text.clear();
    }
  }
  text += "]}\n";
  f.write(text);
  f.commit();
}

namespace {

constexpr ir::StepNo kGatherLen = 0xFFFFFF00u, kGatherData = 0xFFFFFF01u, kGatherAck = 0xFFFFFF02u;

void check(Transport& tr, Status st, const char* what) {
  if (st != Status::ok)
    user_error("--trace: rank {}: gathering the trace failed ({}: {}){}", tr.rank(), what, status_name(st),
               tr.error_detail().empty() ? "" : ": " + tr.error_detail());
}

}  // namespace

void gather_trace(Transport& tr, std::vector<TraceEvent>& events) {
  static_assert(std::is_trivially_copyable_v<TraceEvent>);
  const uint32_t K = tr.size();
  size_t failed = 0;
  if (tr.rank() == 0) {
    check(tr, tr.begin(2 * K), "begin");
    std::vector<uint64_t> counts(K, 0);
    std::vector<ReqId> ids;
    for (uint32_t r = 1; r < K; ++r) {
      check(tr, tr.post_recv(r, RecvDesc{0, r, kGatherLen, &counts[r], sizeof(uint64_t)}), "post_recv");
      ids.push_back(r);
    }
    check(tr, tr.wait(ids.data(), ids.size(), &failed), "wait");
    std::vector<std::vector<TraceEvent>> parts(K);
    ids.clear();
    for (uint32_t r = 1; r < K; ++r) {
      parts[r].resize(counts[r]);
      if (counts[r] == 0) continue;
      check(tr, tr.post_recv(r, RecvDesc{0, r, kGatherData, parts[r].data(), counts[r] * sizeof(TraceEvent)}),
            "post_recv");
      ids.push_back(r);
    }
    check(tr, tr.wait(ids.data(), ids.size(), &failed), "wait");
    for (uint32_t r = 1; r < K; ++r) events.insert(events.end(), parts[r].begin(), parts[r].end());
    // The acknowledgement: every rank may exit now.
    static const unsigned char ack = 1;
    ids.clear();
    for (uint32_t r = 1; r < K; ++r) {
      check(tr, tr.post_send(K + r, SendDesc{0, r, kGatherAck, &ack, 1}), "post_send");
      ids.push_back(K + r);
    }
    check(tr, tr.wait(ids.data(), ids.size(), &failed), "wait");
    check(tr, tr.end(), "end");
    return;
  }
  const uint64_t n = events.size();
  unsigned char ack = 0;
  check(tr, tr.begin(3), "begin");
  check(tr, tr.post_send(0, SendDesc{0, 0, kGatherLen, &n, sizeof n}), "post_send");
  if (n) check(tr, tr.post_send(1, SendDesc{0, 0, kGatherData, events.data(), n * sizeof(TraceEvent)}), "post_send");
  check(tr, tr.post_recv(2, RecvDesc{0, 0, kGatherAck, &ack, 1}), "post_recv");
  const ReqId all[3] = {0, 1, 2};
  const ReqId no_data[2] = {0, 2};
  check(tr, n ? tr.wait(all, 3, &failed) : tr.wait(no_data, 2, &failed), "wait");
  check(tr, tr.end(), "end");
}

}  // namespace collplan::rt
