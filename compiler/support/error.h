// User errors vs internal errors.
//
// A UserError is the caller's fault: a bad spec (K = 1, a non-prime q, a
// matrix file of the wrong size), a damaged plan file, a plan that fails
// verification. Its message names the bad value and what would be valid. The
// CLI prints it and exits with status 2 (bad input) or 1 (plan rejected).
//
// An InternalError is collplan's fault: a broken invariant inside the
// compiler. It is raised through COLLPLAN_ASSERT, which names the file and
// line, and the CLI reports it as a bug (exit status 3).
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace collplan {

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A plan that fails the checker. Separate from UserError so that `collplan
// check` can exit 1 ("plan is wrong") rather than 2 ("your input is wrong").
class VerifyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

template <typename... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void verify_error(fmt::format_string<Args...> f, Args&&... args) {
  throw VerifyError(fmt::format(f, std::forward<Args>(args)...));
}

[[noreturn]] inline void internal_error(const char* file, int line, const std::string& what) {
  throw InternalError(fmt::format("internal error at {}:{}: {} (this is a bug in collplan)", file, line, what));
}

}  // namespace collplan

#define COLLPLAN_ASSERT(cond, msg)                                        \
  do {                                                                    \
    if (!(cond)) ::collplan::internal_error(__FILE__, __LINE__, (msg));   \
  } while (0)
