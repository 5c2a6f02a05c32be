// User errors vs internal errors.
//
// A UserError is the caller's fault: a bad spec (K = 1, a non-prime q, a
// matrix file of the wrong size, a size over a limit of support/limits.h), a
// damaged or truncated plan file, a bad flag. Its message names the bad value
// and what would be valid. The CLI prints it and exits with status 2.
//
// A VerifyError is a plan that could be read but is wrong: its structure
// (ports, matching, timing, read-before-write), its algebra (an output is not
// the postcondition's) or its operand order (prefix plans). The CLI exits
// with status 1, whichever the kind (docs/cli.md).
//
// A ResourceError is the environment's: memory or file descriptors ran out
// (ulimit -v, ulimit -n, a full machine) while collplan was doing something
// the limits allowed. Its message says what was being allocated and how much
// and which limit to raise. The CLI exits with status 4; the C API returns
// COLLPLAN_ERR_NO_MEMORY or COLLPLAN_ERR_RESOURCE. A std::bad_alloc that
// reaches the CLI without that context is reported the same way.
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

// What a rejected plan gets wrong (`check --json` reports it as "kind").
enum class PlanFault {
  Structure,  // the rules of ir/plan.h: bounds, ports, matching, postal timing, read before write
  Algebra,    // an output is not what the postcondition says
  Order,      // a prefix plan combines operands out of order
  Replay,     // a replay's outputs differ from the direct computation
};

inline const char* fault_name(PlanFault k) {
  switch (k) {
    case PlanFault::Structure: return "structure";
    case PlanFault::Algebra: return "algebra";
    case PlanFault::Order: return "order";
    case PlanFault::Replay: return "replay";
  }
  return "structure";
}

// A plan that fails the checker. Separate from UserError so that `collplan
// check` can exit 1 ("plan is wrong") rather than 2 ("your input is wrong").
class VerifyError : public std::runtime_error {
 public:
  explicit VerifyError(const std::string& what, PlanFault kind = PlanFault::Structure)
      : std::runtime_error(what), kind_(kind) {}
  PlanFault kind() const { return kind_; }

 private:
  PlanFault kind_;
};

class ResourceError : public std::runtime_error {
 public:
  enum class Kind { Memory, Descriptors };
  ResourceError(const std::string& what, Kind kind) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

template <typename... Args>
[[noreturn]] void resource_error(ResourceError::Kind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw ResourceError(fmt::format(f, std::forward<Args>(args)...), kind);
}

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

template <typename... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format(f, std::forward<Args>(args)...));
}

// A structural error (PlanFault::Structure).
template <typename... Args>
[[noreturn]] void verify_error(fmt::format_string<Args...> f, Args&&... args) {
  throw VerifyError(fmt::format(f, std::forward<Args>(args)...), PlanFault::Structure);
}

template <typename... Args>
[[noreturn]] void algebra_error(fmt::format_string<Args...> f, Args&&... args) {
  throw VerifyError(fmt::format(f, std::forward<Args>(args)...), PlanFault::Algebra);
}

template <typename... Args>
[[noreturn]] void order_error(fmt::format_string<Args...> f, Args&&... args) {
  throw VerifyError(fmt::format(f, std::forward<Args>(args)...), PlanFault::Order);
}

[[noreturn]] inline void internal_error(const char* file, int line, const std::string& what) {
  throw InternalError(fmt::format("internal error at {}:{}: {} (this is a bug in collplan)", file, line, what));
}

}  // namespace collplan

#define COLLPLAN_ASSERT(cond, msg)                                        \
  do {                                                                    \
    if (!(cond)) ::collplan::internal_error(__FILE__, __LINE__, (msg));   \
  } while (0)
