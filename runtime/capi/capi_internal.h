// Shared by the C API's sources (collplan.cpp, collplan_tcp.cpp,
// collplan_mpi.cpp): the plan handle, the thread-local error message, and
// the guard that turns every exception into a status code. Not installed.
#pragma once

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collplan.h"
#include "ir/plan.h"
#include "support/error.h"

struct collplan_plan {
  collplan::ir::Plan plan;
  collplan::Digest digest;
  std::string op_name, field_name;
};

namespace collplan::capi {

// Sets this thread's message and returns `code`.
int fail(int code, std::string msg);

// A bad argument: the message names it.
struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
template <typename... Args>
[[noreturn]] void arg_error(fmt::format_string<Args...> f, Args&&... args) {
  throw ArgError(fmt::format(f, std::forward<Args>(args)...));
}

// Runs f(); a UserError becomes `user_code` (what a caller's mistake means
// at that point: a bad plan, a transport failure, ...), ArgError
// COLLPLAN_ERR_ARGUMENT, bad_alloc COLLPLAN_ERR_NO_MEMORY, ResourceError
// COLLPLAN_ERR_NO_MEMORY or COLLPLAN_ERR_RESOURCE, anything else
// COLLPLAN_ERR_INTERNAL. `what` prefixes the message ("collplan_run_tcp").
template <class F>
int guard(const char* what, int user_code, F&& f) noexcept {
  try {
    f();
    return COLLPLAN_OK;
  } catch (const ArgError& e) {
    return fail(COLLPLAN_ERR_ARGUMENT, fmt::format("{}: {}", what, e.what()));
  } catch (const UserError& e) {
    return fail(user_code, fmt::format("{}: {}", what, e.what()));
  } catch (const VerifyError& e) {
    return fail(COLLPLAN_ERR_PLAN, fmt::format("{}: {}", what, e.what()));
  } catch (const ResourceError& e) {
    return fail(e.kind() == ResourceError::Kind::Memory ? COLLPLAN_ERR_NO_MEMORY : COLLPLAN_ERR_RESOURCE,
                fmt::format("{}: {}", what, e.what()));
  } catch (const std::bad_alloc&) {
    return fail(COLLPLAN_ERR_NO_MEMORY, fmt::format("{}: out of memory", what));
  } catch (const std::exception& e) {
    return fail(COLLPLAN_ERR_INTERNAL, fmt::format("{}: {}", what, e.what()));
  } catch (...) {
    return fail(COLLPLAN_ERR_INTERNAL, fmt::format("{}: an unknown exception (this is a bug in collplan)", what));
  }
}

// ArgError unless `plan` is non-NULL.
const ir::Plan& plan_of(const collplan_plan* plan);
// ArgError unless 0 <= rank < the plan's rank count.
ir::Rank rank_of(const ir::Plan& plan, int rank);
// ArgError unless count >= 1 and rank r's buffers of `count`-element vectors
// fit in size_t bytes, and unless sendbuf / recvbuf are non-NULL where rank r
// has inputs / outputs. `where` names the buffers ("sendbufs[3]").
void check_buffers(const ir::Plan& plan, ir::Rank r, const void* sendbuf, const void* recvbuf, size_t count,
                   const char* send_name = "sendbuf", const char* recv_name = "recvbuf");
// Rank r's input (output) vector pointers inside one buffer.
std::vector<const void*> split_inputs(const ir::Plan& plan, ir::Rank r, const void* sendbuf, size_t count);
std::vector<void*> split_outputs(const ir::Plan& plan, ir::Rank r, void* recvbuf, size_t count);

}  // namespace collplan::capi
