// The TCP part of the C API (collplan_tcp.h).
#include "collplan_tcp.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "capi_internal.h"
#include "runtime/engine.h"
#include "runtime/transport/tcp.h"

using namespace collplan;

struct collplan_tcp_collective {
  const collplan_plan* plan = nullptr;
  ir::Rank rank = 0;
  std::unique_ptr<rt::Engine> engine;
  std::unique_ptr<rt::TcpTransport> transport;
  std::vector<std::string> peers;
  rt::TcpOptions opt;
  bool broken = false;  // a run failed: the transport closed its connections
};

namespace {

// The handle without its connections: arguments checked (COLLPLAN_ERR_ARGUMENT),
// the engine built (COLLPLAN_ERR_PLAN).
int setup(const char* what, const collplan_plan* plan, const char* peers, int rank, int timeout_ms,
          const char* key_file, std::unique_ptr<collplan_tcp_collective>& c) {
  int st = capi::guard(what, COLLPLAN_ERR_ARGUMENT, [&] {
    const ir::Plan& p = capi::plan_of(plan);
    if (peers == nullptr) capi::arg_error("peers is NULL (a host:port list or a file of them)");
    const ir::Rank r = capi::rank_of(p, rank);
    if (timeout_ms < 0) capi::arg_error("timeout_ms = {} is negative (0: the default, 10000 ms)", timeout_ms);
    // A peer list that does not parse is the caller's argument too.
    std::vector<std::string> list = rt::parse_peers(peers, p.ranks.size());
    if (list.size() != p.ranks.size())
      capi::arg_error("the peer list '{}' has {} entries but the plan has {} ranks (one host:port per rank)", peers,
                      list.size(), p.ranks.size());
    c = std::make_unique<collplan_tcp_collective>();
    c->plan = plan;
    c->rank = r;
    c->peers = std::move(list);
    if (timeout_ms > 0) c->opt.connect_timeout = c->opt.timeout = std::chrono::milliseconds(timeout_ms);
    c->opt.key = rt::job_key(key_file ? key_file : "");  // NULL: $COLLPLAN_TCP_KEY_FILE, if set
  });
  if (st != COLLPLAN_OK) return st;
  return capi::guard(what, COLLPLAN_ERR_PLAN, [&] { c->engine = std::make_unique<rt::Engine>(plan->plan, c->rank); });
}

// Connects and completes the handshakes (COLLPLAN_ERR_TRANSPORT).
int connect(const char* what, collplan_tcp_collective& c) {
  return capi::guard(what, COLLPLAN_ERR_TRANSPORT, [&] {
    c.transport = std::make_unique<rt::TcpTransport>(c.peers, c.rank, c.plan->digest, c.opt);
  });
}

// Buffers and count (COLLPLAN_ERR_ARGUMENT, before any communication).
int check_run(const char* what, collplan_tcp_collective& c, const void* sendbuf, const void* recvbuf, size_t count) {
  return capi::guard(what, COLLPLAN_ERR_ARGUMENT, [&] {
    capi::check_buffers(c.plan->plan, c.rank, sendbuf, recvbuf, count);
    c.engine->prepare(count);  // arenas no memory can hold: the count is the caller's argument
  });
}

int run(const char* what, collplan_tcp_collective& c, const void* sendbuf, void* recvbuf, size_t count) {
  const int st = capi::guard(what, COLLPLAN_ERR_TRANSPORT, [&] {
    const auto in = capi::split_inputs(c.plan->plan, c.rank, sendbuf, count);
    const auto out = capi::split_outputs(c.plan->plan, c.rank, recvbuf, count);
    c.engine->run(*c.transport, in.data(), out.data(), count);
  });
  if (st != COLLPLAN_OK) c.broken = true;
  return st;
}

}  // namespace

extern "C" {

namespace {

int init(const char* what, const collplan_plan* plan, const char* peers, int rank, int timeout_ms,
         const char* key_file, collplan_tcp_collective** coll) {
  if (coll == nullptr)
    return capi::fail(COLLPLAN_ERR_ARGUMENT, fmt::format("{}: coll (the result pointer) is NULL", what));
  *coll = nullptr;
  std::unique_ptr<collplan_tcp_collective> c;
  int st = setup(what, plan, peers, rank, timeout_ms, key_file, c);
  if (st == COLLPLAN_OK) st = connect(what, *c);
  if (st == COLLPLAN_OK) *coll = c.release();
  return st;
}

}  // namespace

int collplan_tcp_init(const collplan_plan* plan, const char* peers, int rank, int timeout_ms,
                      collplan_tcp_collective** coll) {
  return init("collplan_tcp_init", plan, peers, rank, timeout_ms, nullptr, coll);
}

int collplan_tcp_init_keyed(const collplan_plan* plan, const char* peers, int rank, int timeout_ms,
                            const char* key_file, collplan_tcp_collective** coll) {
  return init("collplan_tcp_init_keyed", plan, peers, rank, timeout_ms, key_file, coll);
}

int collplan_tcp_run(collplan_tcp_collective* coll, const void* sendbuf, void* recvbuf, size_t count) {
  const char* what = "collplan_tcp_run";
  if (coll == nullptr)
    return capi::fail(COLLPLAN_ERR_ARGUMENT, fmt::format("{}: coll is NULL (make one with collplan_tcp_init)", what));
  if (coll->broken)
    return capi::fail(COLLPLAN_ERR_ARGUMENT,
                      fmt::format("{}: an earlier run on this handle failed and closed its connections: free it and "
                                  "set up again",
                                  what));
  int st = check_run(what, *coll, sendbuf, recvbuf, count);
  if (st == COLLPLAN_OK) st = run(what, *coll, sendbuf, recvbuf, count);
  return st;
}

void collplan_tcp_free(collplan_tcp_collective* coll) { delete coll; }

int collplan_run_tcp(const collplan_plan* plan, const char* peers, int rank, const void* sendbuf, void* recvbuf,
                     size_t count, int timeout_ms) {
  const char* what = "collplan_run_tcp";
  // Every check a rank can make alone comes before any socket.
  std::unique_ptr<collplan_tcp_collective> c;
  int st = setup(what, plan, peers, rank, timeout_ms, nullptr, c);
  if (st == COLLPLAN_OK) st = check_run(what, *c, sendbuf, recvbuf, count);
  if (st == COLLPLAN_OK) st = connect(what, *c);
  if (st == COLLPLAN_OK) st = run(what, *c, sendbuf, recvbuf, count);
  return st;
}

}  // extern "C"
