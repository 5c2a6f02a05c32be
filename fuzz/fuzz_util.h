// Shared by the libFuzzer harnesses: what counts as a clean rejection.
//
// A harness may see collplan refuse its input only through UserError ("bad
// input", exit status 2) or VerifyError ("the plan is wrong", exit status
// 1). Any other exception -- an InternalError, std::bad_alloc, a
// nlohmann::json or std::out_of_range escaping a reader -- is a finding: it
// is printed and the process aborts, so libFuzzer saves the input. Crashes,
// sanitizer reports, leaks, timeouts and the RSS limit are findings by
// libFuzzer's own rules.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "support/error.h"

namespace collplan::fuzz {

[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "\n==collplan-fuzz== FINDING: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

// Runs fn(); true when it returned, false when it refused the input cleanly.
template <typename Fn>
bool clean(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const UserError&) {
    return false;
  } catch (const VerifyError&) {
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\n==collplan-fuzz== unexpected exception %s: %s\n", typeid(e).name(), e.what());
    finding("an exception other than UserError / VerifyError");
  } catch (...) {
    finding("a non-standard exception");
  }
}

// A property the harness checks on accepted input.
#define COLLPLAN_FUZZ_REQUIRE(cond)                                                             \
  do {                                                                                         \
    if (!(cond)) ::collplan::fuzz::finding("property failed: " #cond " (" __FILE__ ")"); \
  } while (0)

}  // namespace collplan::fuzz
