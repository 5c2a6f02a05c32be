// The transport-free part of the C API (collplan.h): plans, queries and the
// in-process threads run.
#include "collplan.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include "capi_internal.h"
#include "ir/binary.h"
#include "support/limits.h"
#include "support/safe_file.h"
#include "runtime/transport/threads.h"

namespace collplan::capi {

namespace {
thread_local std::string last_error;
}

int fail(int code, std::string msg) {
  try {
    last_error = std::move(msg);
  } catch (...) {
    // No memory for the message: keep the old one rather than throw.
  }
  return code;
}

const ir::Plan& plan_of(const collplan_plan* plan) {
  if (plan == nullptr) arg_error("plan is NULL (open one with collplan_open_file or collplan_open_bytes)");
  return plan->plan;
}

ir::Rank rank_of(const ir::Plan& plan, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= plan.ranks.size())
    arg_error("rank {} does not exist: the plan has ranks 0..{}", rank, plan.ranks.size() - 1);
  return static_cast<ir::Rank>(rank);
}

void check_buffers(const ir::Plan& plan, ir::Rank r, const void* sendbuf, const void* recvbuf, size_t count,
                   const char* send_name, const char* recv_name) {
  if (count == 0) arg_error("count = 0: vectors need at least one element");
  const ir::Program& p = plan.ranks[r];
  const size_t eb = plan.spec.field.elem_bytes();
  const size_t vectors = std::max(p.inputs.size(), p.outputs.size());
  if (vectors > 0 && count > std::numeric_limits<size_t>::max() / eb / vectors)
    arg_error("count = {} is too large: rank {}'s {} vectors of {}-byte elements overflow size_t", count, r, vectors,
              eb);
  if (!p.inputs.empty() && sendbuf == nullptr)
    arg_error("{} is NULL but rank {} has {} input vector(s) of count = {} elements", send_name, r, p.inputs.size(),
              count);
  if (!p.outputs.empty() && recvbuf == nullptr)
    arg_error("{} is NULL but rank {} has {} output vector(s) of count = {} elements", recv_name, r, p.outputs.size(),
              count);
}

std::vector<const void*> split_inputs(const ir::Plan& plan, ir::Rank r, const void* sendbuf, size_t count) {
  const size_t row = count * plan.spec.field.elem_bytes();
  std::vector<const void*> v(plan.ranks[r].inputs.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<const unsigned char*>(sendbuf) + i * row;
  return v;
}

std::vector<void*> split_outputs(const ir::Plan& plan, ir::Rank r, void* recvbuf, size_t count) {
  const size_t row = count * plan.spec.field.elem_bytes();
  std::vector<void*> v(plan.ranks[r].outputs.size());
  for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<unsigned char*>(recvbuf) + j * row;
  return v;
}

namespace {

int open_image(const char* what, const uint8_t* data, size_t size, collplan_plan** out) {
  return guard(what, COLLPLAN_ERR_PLAN, [&] {
    auto h = std::make_unique<collplan_plan>();
    h->plan = ir::decode_binary(data, size);
    h->digest = ir::plan_digest(h->plan);
    h->op_name = op_name(h->plan.spec.op);
    h->field_name = h->plan.spec.field.name();
    *out = h.release();
  });
}

}  // namespace

}  // namespace collplan::capi

using namespace collplan;
using capi::arg_error;
using capi::guard;

extern "C" {

const char* collplan_last_error(void) { return capi::last_error.c_str(); }

const char* collplan_status_name(int status) {
  switch (status) {
    case COLLPLAN_OK: return "ok";
    case COLLPLAN_ERR_ARGUMENT: return "bad argument";
    case COLLPLAN_ERR_IO: return "I/O error";
    case COLLPLAN_ERR_PLAN: return "bad plan";
    case COLLPLAN_ERR_TRANSPORT: return "transport error";
    case COLLPLAN_ERR_NO_MEMORY: return "out of memory";
    case COLLPLAN_ERR_INTERNAL: return "internal error";
    case COLLPLAN_ERR_RESOURCE: return "out of a resource";
  }
  return "unknown status";
}

int collplan_open_file(const char* path, collplan_plan** plan) {
  const char* what = "collplan_open_file";
  if (plan == nullptr) return capi::fail(COLLPLAN_ERR_ARGUMENT, fmt::format("{}: plan (the result pointer) is NULL", what));
  *plan = nullptr;
  if (path == nullptr) return capi::fail(COLLPLAN_ERR_ARGUMENT, fmt::format("{}: path is NULL", what));
  std::vector<uint8_t> bytes;
  const int st = guard(what, COLLPLAN_ERR_IO, [&] {
    // A regular file of at most kMaxPlanFileBytes: a directory, a device
    // or a FIFO is COLLPLAN_ERR_IO, not a read until memory runs out.
    const files::InputFile in(path, "plan file", kMaxPlanFileBytes);
    bytes.resize(static_cast<size_t>(in.size()));
    in.read_at(0, bytes.data(), bytes.size());
  });
  if (st != COLLPLAN_OK) return st;
  const std::string ctx = fmt::format("{}: '{}'", what, path);
  return capi::open_image(ctx.c_str(), bytes.data(), bytes.size(), plan);
}

int collplan_open_bytes(const void* data, size_t size, collplan_plan** plan) {
  const char* what = "collplan_open_bytes";
  if (plan == nullptr) return capi::fail(COLLPLAN_ERR_ARGUMENT, fmt::format("{}: plan (the result pointer) is NULL", what));
  *plan = nullptr;
  if (data == nullptr) return capi::fail(COLLPLAN_ERR_ARGUMENT, fmt::format("{}: data is NULL (size {})", what, size));
  return capi::open_image(what, static_cast<const uint8_t*>(data), size, plan);
}

void collplan_close(collplan_plan* plan) { delete plan; }

int collplan_num_ranks(const collplan_plan* plan) {
  int v = -1;
  guard("collplan_num_ranks", COLLPLAN_ERR_ARGUMENT,
        [&] { v = static_cast<int>(capi::plan_of(plan).ranks.size()); });
  return v;
}

int collplan_operation(const collplan_plan* plan) {
  int v = -1;
  guard("collplan_operation", COLLPLAN_ERR_ARGUMENT, [&] { v = static_cast<int>(capi::plan_of(plan).spec.op); });
  return v;
}

const char* collplan_operation_name(const collplan_plan* plan) {
  const char* v = nullptr;
  guard("collplan_operation_name", COLLPLAN_ERR_ARGUMENT, [&] {
    capi::plan_of(plan);
    v = plan->op_name.c_str();
  });
  return v;
}

const char* collplan_field_name(const collplan_plan* plan) {
  const char* v = nullptr;
  guard("collplan_field_name", COLLPLAN_ERR_ARGUMENT, [&] {
    capi::plan_of(plan);
    v = plan->field_name.c_str();
  });
  return v;
}

size_t collplan_elem_size(const collplan_plan* plan) {
  size_t v = 0;
  guard("collplan_elem_size", COLLPLAN_ERR_ARGUMENT, [&] { v = capi::plan_of(plan).spec.field.elem_bytes(); });
  return v;
}

int collplan_num_inputs(const collplan_plan* plan, int rank) {
  int v = -1;
  guard("collplan_num_inputs", COLLPLAN_ERR_ARGUMENT, [&] {
    const ir::Plan& p = capi::plan_of(plan);
    v = static_cast<int>(p.ranks[capi::rank_of(p, rank)].inputs.size());
  });
  return v;
}

int collplan_num_outputs(const collplan_plan* plan, int rank) {
  int v = -1;
  guard("collplan_num_outputs", COLLPLAN_ERR_ARGUMENT, [&] {
    const ir::Plan& p = capi::plan_of(plan);
    v = static_cast<int>(p.ranks[capi::rank_of(p, rank)].outputs.size());
  });
  return v;
}

namespace {
size_t vector_elems(const char* what, const collplan_plan* plan, int rank, size_t count, bool inputs) {
  size_t v = 0;
  guard(what, COLLPLAN_ERR_ARGUMENT, [&] {
    const ir::Plan& p = capi::plan_of(plan);
    const ir::Program& prog = p.ranks[capi::rank_of(p, rank)];
    const size_t n = inputs ? prog.inputs.size() : prog.outputs.size();
    if (n > 0 && count > std::numeric_limits<size_t>::max() / p.spec.field.elem_bytes() / n)
      arg_error("count = {} is too large: {} vectors of it overflow size_t bytes", count, n);
    v = n * count;
  });
  return v;
}
}  // namespace

size_t collplan_input_count(const collplan_plan* plan, int rank, size_t count) {
  return vector_elems("collplan_input_count", plan, rank, count, true);
}

size_t collplan_output_count(const collplan_plan* plan, int rank, size_t count) {
  return vector_elems("collplan_output_count", plan, rank, count, false);
}

int collplan_digest(const collplan_plan* plan, char out[33]) {
  return guard("collplan_digest", COLLPLAN_ERR_ARGUMENT, [&] {
    capi::plan_of(plan);
    if (out == nullptr) arg_error("out is NULL (it needs 33 bytes)");
    const std::string hex = plan->digest.hex();
    std::memcpy(out, hex.c_str(), hex.size() + 1);
  });
}

int collplan_run_threads(const collplan_plan* plan, const void* const* sendbufs, void* const* recvbufs,
                         size_t count) {
  const char* what = "collplan_run_threads";
  std::vector<std::vector<const void*>> in;
  std::vector<std::vector<void*>> out;
  std::unique_ptr<rt::ThreadsRunner> runner;
  int st = guard(what, COLLPLAN_ERR_PLAN, [&] {
    const ir::Plan& p = capi::plan_of(plan);
    if (sendbufs == nullptr) arg_error("sendbufs is NULL (it needs one pointer per rank, {} ranks)", p.ranks.size());
    if (recvbufs == nullptr) arg_error("recvbufs is NULL (it needs one pointer per rank, {} ranks)", p.ranks.size());
    for (ir::Rank r = 0; r < p.ranks.size(); ++r) {
      const std::string sn = fmt::format("sendbufs[{}]", r), rn = fmt::format("recvbufs[{}]", r);
      capi::check_buffers(p, r, sendbufs[r], recvbufs[r], count, sn.c_str(), rn.c_str());
      in.push_back(capi::split_inputs(p, r, sendbufs[r], count));
      out.push_back(capi::split_outputs(p, r, recvbufs[r], count));
    }
    runner = std::make_unique<rt::ThreadsRunner>(p);  // a program the engine refuses: a bad plan
  });
  if (st != COLLPLAN_OK) return st;
  // Arenas no memory can hold: the count is the caller's argument.
  st = guard(what, COLLPLAN_ERR_ARGUMENT, [&] { runner->prepare(count); });
  if (st != COLLPLAN_OK) return st;
  return guard(what, COLLPLAN_ERR_TRANSPORT, [&] { runner->run(count, in, out); });
}

}  // extern "C"
