// The TCP part of the C API (collplan_tcp.h).
#include "collplan_tcp.h"

#include <chrono>
#include <memory>

#include "capi_internal.h"
#include "runtime/engine.h"
#include "runtime/transport/tcp.h"

using namespace collplan;

extern "C" int collplan_run_tcp(const collplan_plan* plan, const char* peers, int rank, const void* sendbuf,
                                void* recvbuf, size_t count, int timeout_ms) {
  const char* what = "collplan_run_tcp";
  std::vector<std::string> list;
  std::unique_ptr<rt::Engine> engine;
  ir::Rank r = 0;
  // Arguments: a peer list that does not parse is the caller's argument too.
  int st = capi::guard(what, COLLPLAN_ERR_ARGUMENT, [&] {
    const ir::Plan& p = capi::plan_of(plan);
    if (peers == nullptr) capi::arg_error("peers is NULL (a host:port list or a file of them)");
    r = capi::rank_of(p, rank);
    if (timeout_ms < 0) capi::arg_error("timeout_ms = {} is negative (0: the default, 10000 ms)", timeout_ms);
    capi::check_buffers(p, r, sendbuf, recvbuf, count);
    list = rt::parse_peers(peers);
    if (list.size() != p.ranks.size())
      capi::arg_error("the peer list '{}' has {} entries but the plan has {} ranks (one host:port per rank)", peers,
                      list.size(), p.ranks.size());
  });
  if (st != COLLPLAN_OK) return st;
  st = capi::guard(what, COLLPLAN_ERR_PLAN, [&] { engine = std::make_unique<rt::Engine>(plan->plan, r); });
  if (st != COLLPLAN_OK) return st;
  // Arenas no memory can hold: the count is the caller's argument.
  st = capi::guard(what, COLLPLAN_ERR_ARGUMENT, [&] { engine->prepare(count); });
  if (st != COLLPLAN_OK) return st;
  return capi::guard(what, COLLPLAN_ERR_TRANSPORT, [&] {
    rt::TcpOptions opt;
    if (timeout_ms > 0) opt.connect_timeout = opt.timeout = std::chrono::milliseconds(timeout_ms);
    rt::TcpTransport tr(list, r, plan->digest, opt);
    const auto in = capi::split_inputs(plan->plan, r, sendbuf, count);
    const auto out = capi::split_outputs(plan->plan, r, recvbuf, count);
    engine->run(tr, in.data(), out.data(), count);
  });
}
