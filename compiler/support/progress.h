// Progress of long compiles and checks on stderr: one line, redrawn in
// place, naming the stage under way, the fraction done, the time spent and
// an estimate of the time left:
//   collplan: verify after drop-zeros  62% (3.1 s, about 1.9 s left)
// It appears only once a stage has run for two seconds, only when the driver
// has enabled it (stderr a terminal, no -q), and is erased when the stage
// ends, so pipes, logs and quick runs never see it.
//
// Use: the pipeline opens a Stage per generator, pass and verification; the
// loops inside call report(done, total) once per rank or step (it reads the
// clock every 64th call). One process-wide state: the compiler is
// single-threaded where it reports (the generators and passes).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace collplan::progress {

namespace detail {
struct State {
  bool enabled = false;
  bool drawn = false;
  std::string stage;
  std::chrono::steady_clock::time_point start{}, last_draw{};
  uint32_t calls = 0;
};
inline State& state() {
  static State s;
  return s;
}
}  // namespace detail

// The driver's switch (default off: library users and tests see nothing).
inline void set_enabled(bool on) { detail::state().enabled = on; }
inline bool enabled() { return detail::state().enabled; }

// Names the work under way until it goes out of scope; nested stages keep
// the outer name (a verification inside a stage is part of it).
class Stage {
 public:
  explicit Stage(std::string name) {
    auto& s = detail::state();
    if (!s.stage.empty()) return;
    owner_ = true;
    s.stage = std::move(name);
    s.start = std::chrono::steady_clock::now();
    s.last_draw = s.start;
    s.calls = 0;
  }
  ~Stage() {
    if (!owner_) return;
    auto& s = detail::state();
    if (s.drawn) std::fputs("\r\x1b[K", stderr);
    s.drawn = false;
    s.stage.clear();
  }
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

 private:
  bool owner_ = false;
};

// `done` of `total` units of the current stage are finished.
inline void report(uint64_t done, uint64_t total) {
  auto& s = detail::state();
  if (!s.enabled || s.stage.empty() || (++s.calls & 63u) != 0 || total == 0) return;
  using namespace std::chrono;
  const auto now = steady_clock::now();
  const double spent = duration<double>(now - s.start).count();
  if (spent < 2.0 || duration<double>(now - s.last_draw).count() < 0.5) return;
  s.last_draw = now;
  s.drawn = true;
  const double frac = static_cast<double>(done) / static_cast<double>(total);
  if (frac > 0.01)
    std::fprintf(stderr, "\rcollplan: %s %3.0f%% (%.1f s, about %.1f s left)\x1b[K", s.stage.c_str(), 100 * frac,
                 spent, spent * (1 - frac) / frac);
  else
    std::fprintf(stderr, "\rcollplan: %s %3.0f%% (%.1f s)\x1b[K", s.stage.c_str(), 100 * frac, spent);
  std::fflush(stderr);
}

}  // namespace collplan::progress
