// Files collplan writes and reads, the one way every layer does it
// (docs/cli.md, "Files").
//
// Writing (OutputFile, write_file):
//   - a path that does not exist, or names a regular file, is written to a
//     new temporary file beside it, `<name>.<random>.tmp`, created with
//     O_CREAT | O_EXCL | O_NOFOLLOW (never an existing file or a link that
//     someone planted there) and mode 0666 less the umask; the data is
//     written, fsync'd, the temporary is renamed over the target and the
//     directory fsync'd. A reader sees the old file or the new one, never a
//     part; two writers to one path each finish, the last rename wins.
//   - a symbolic link at the target is followed: the file it names is
//     replaced (the same rules again), the link stays.
//   - a character device or a FIFO (/dev/null, /dev/stdout on a terminal or
//     a pipe) is opened and written directly: no temporary, no rename.
//   - anything else (a directory, a socket, a block device) is refused.
//   - on any failure the temporary is removed and the target is as it was;
//     a temporary alive when SIGINT, SIGTERM or SIGHUP arrives is removed by
//     a handler put in place with the first temporary (and again with a
//     later one if the program has replaced it since), which then lets the
//     signal take its usual course (the previous handler, or the default).
//   Every failure names the path and the system's reason: a UserError (exit
//     status 2: "No space left on device", "Permission denied"), or a
//     ResourceError (exit 4) when descriptors or kernel memory ran out.
//
// Reading (read_regular_file): a regular file only (a directory, device,
// FIFO or socket is refused by name), at most `limit` bytes (limits.h):
// /dev/zero is refused at once instead of being read until memory runs out.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "support/error.h"

namespace collplan::files {

// ─── temporaries removed on a signal ──────────────────────────────────────────
//
// A fixed table of the paths of the live temporaries: the signal handler
// reads it without allocating or locking (async-signal-safe: atomics on
// int, unlink, sigaction, raise).
namespace detail {

inline constexpr int kSlots = 64;
inline constexpr size_t kPathMax = 4096;

struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 live
  char path[kPathMax];
};

inline Slot g_slots[kSlots];
inline struct sigaction g_previous[3];
inline constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

inline void on_signal(int sig, siginfo_t* info, void* context) {
  const int saved = errno;
  for (Slot& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
  for (int i = 0; i < 3; ++i) {
    if (kSignals[i] != sig) continue;
    const struct sigaction& prev = g_previous[i];
    if (prev.sa_flags & SA_SIGINFO) {  // someone else's handler: it decides
      prev.sa_sigaction(sig, info, context);
      errno = saved;
      return;
    }
    if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
      prev.sa_handler(sig);
      errno = saved;
      return;
    }
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // delivered when this handler returns: the default action
  errno = saved;
}

// Puts on_signal in place for SIGINT, SIGTERM and SIGHUP, unless it is
// there already: the first temporary installs it, and a later one again if
// the program has set a handler of its own since (which on_signal then
// calls). A signal the process ignores stays ignored.
inline void ensure_handler() {
  for (int i = 0; i < 3; ++i) {
    struct sigaction cur {};
    if (::sigaction(kSignals[i], nullptr, &cur) != 0) continue;
    if (cur.sa_flags & SA_SIGINFO ? cur.sa_sigaction == on_signal : cur.sa_handler == SIG_IGN) continue;
    g_previous[i] = cur;
    struct sigaction act {};
    act.sa_sigaction = on_signal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESTART | SA_SIGINFO;
    ::sigaction(kSignals[i], &act, nullptr);
  }
}

}  // namespace detail

// Registers `path` as a live temporary; returns its slot, or -1 when the
// table is full or the path too long (the file is then not removed on a
// signal, only on the failure paths).
inline int register_temp(const std::string& path) {
  detail::ensure_handler();
  if (path.size() + 1 > detail::kPathMax) return -1;
  for (int i = 0; i < detail::kSlots; ++i) {
    int expect = 0;
    detail::Slot& s = detail::g_slots[i];
    if (!s.state.compare_exchange_strong(expect, 1, std::memory_order_acq_rel)) continue;
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    s.state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

inline void unregister_temp(int slot) {
  if (slot >= 0) detail::g_slots[slot].state.store(0, std::memory_order_release);
}

// Removes every registered temporary, as the signal handler does (for a
// process that ends some other way, and for the tests).
inline void remove_registered_temps() {
  for (detail::Slot& s : detail::g_slots)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
}

// The paths of the registered temporaries (tests).
inline std::vector<std::string> registered_temps() {
  std::vector<std::string> v;
  for (detail::Slot& s : detail::g_slots)
    if (s.state.load(std::memory_order_acquire) == 2) v.emplace_back(s.path);
  return v;
}

// ─── writing ──────────────────────────────────────────────────────────────────

namespace detail {

// A failed system call on a file: the environment's (ResourceError, exit 4)
// when it ran out of descriptors or kernel memory, else the caller's
// (UserError, exit 2: missing, not permitted, disk full, ...). `verb` is
// "write", "read" or "open".
[[noreturn]] inline void io_error(int err, const char* verb, const std::string& what, const std::string& path) {
  const std::string msg = fmt::format("cannot {} {} '{}': {}", verb, what, path, std::strerror(err));
  if (err == EMFILE || err == ENFILE)
    throw ResourceError(msg + " (raise `ulimit -n`)", ResourceError::Kind::Descriptors);
  if (err == ENOMEM) throw ResourceError(msg, ResourceError::Kind::Memory);
  throw UserError(msg);
}

inline std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// `path` with its symbolic links at the last component followed (at most 40,
// as the kernel does), so that the file the link names is replaced and the
// link kept. A dangling link resolves to the path it names.
inline std::string follow_links(std::string path, const std::string& what) {
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    if (hops == 40) user_error("cannot write {} '{}': too many levels of symbolic links", what, path);
    std::string target(kPathMax, '\0');
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) io_error(errno, "write", what, path);
    target.resize(static_cast<size_t>(n));
    path = (target.starts_with('/') || path.find('/') == std::string::npos) ? target : dir_of(path) + "/" + target;
  }
}

inline const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISFIFO(m)) return "a FIFO";
  return "not a regular file";
}

inline std::string random_suffix() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32)};
  std::string s(10, 'x');
  for (char& c : s) c = kChars[rng() % (sizeof kChars - 1)];
  return s;
}

// Where a write to `path` goes: the path with its links followed, and
// whether it is written directly (a character device, a FIFO). UserError for
// what cannot be written.
struct Target {
  std::string path;
  bool direct = false;
};

inline Target resolve_target(const std::string& path, const std::string& what) {
  if (path.empty()) user_error("cannot write {}: the path is empty", what);
  Target t{follow_links(path, what)};
  struct stat st {};
  if (::stat(t.path.c_str(), &st) == 0) {
    t.direct = S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode);
    if (!t.direct && !S_ISREG(st.st_mode))
      user_error("cannot write {} '{}': it is {} (only a regular file, a character device or a FIFO can be written)",
                 what, path, kind_of(st.st_mode));
  } else if (errno != ENOENT) {
    io_error(errno, "write", what, path);
  }
  return t;
}

}  // namespace detail

// Refuses, before any work, a path that OutputFile would refuse or whose
// directory this process cannot create files in; creates nothing.
inline void check_writable(const std::string& path, const std::string& what) {
  const detail::Target t = detail::resolve_target(path, what);
  if (t.direct) return;
  const std::string dir = detail::dir_of(t.path);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    user_error("cannot write {} '{}': {} (the folder '{}')", what, path, std::strerror(errno), dir);
}

// A file being written; commit() puts it in place. Destroyed without
// commit() (an exception on the way), it removes its temporary and leaves
// the target as it was.
class OutputFile {
 public:
  // `what` names the file in messages ("plan file", "--trace file").
  OutputFile(const std::string& path, std::string what) : path_(path), what_(std::move(what)) {
    const detail::Target t = detail::resolve_target(path, what_);
    target_ = t.path;
    if (t.direct) {
      fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (fd_ < 0) fail(errno);
      direct_ = true;
      return;
    }
    for (int attempt = 0;; ++attempt) {
      const std::string temp = target_ + "." + detail::random_suffix() + ".tmp";
      fd_ = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        temp_ = temp;
        slot_ = register_temp(temp_);  // after the open: a signal never removes a file that is not ours
        break;
      }
      if (errno != EEXIST || attempt == 100) fail(errno);
    }
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() { abandon(); }

  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail_and_abandon(errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  void write(std::string_view s) { write(s.data(), s.size()); }

  // Whether write_at can be used: a temporary (a regular file) can be
  // written at any offset; a character device or a FIFO only in order.
  bool seekable() const { return !direct_; }
  // Writes at `offset` of the file (seekable() only), leaving the rest as
  // it is: a writer can fill a part whose content it learns last (a plan
  // file's index) after the parts that follow it.
  void write_at(uint64_t offset, const void* data, size_t n) {
    COLLPLAN_ASSERT(!direct_, "OutputFile::write_at on a file written in order");
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR) continue;
        fail_and_abandon(errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
  }

  // Flushes, renames into place, syncs the directory. After it, the file is
  // the target's content.
  void commit() {
    if (direct_) {
      const int fd = fd_;
      fd_ = -1;
      if (::close(fd) != 0 && errno != EINTR) fail(errno);
      return;
    }
    if (::fsync(fd_) != 0 && errno != EINVAL) fail_and_abandon(errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && errno != EINTR) fail_and_abandon(errno);
    if (::rename(temp_.c_str(), target_.c_str()) != 0) fail_and_abandon(errno);
    unregister_temp(slot_);
    slot_ = -1;
    temp_.clear();
    const int dfd = ::open(detail::dir_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);  // best effort: some file systems refuse it, and the data is already in place
      ::close(dfd);
    }
  }

  // The temporary's path while one is open (tests), else empty.
  const std::string& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(int err) const { detail::io_error(err, "write", what_, path_); }
  [[noreturn]] void fail_and_abandon(int err) {
    abandon();
    fail(err);
  }
  void abandon() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
    unregister_temp(slot_);
    slot_ = -1;
  }

  std::string path_, what_, target_, temp_;
  int fd_ = -1, slot_ = -1;
  bool direct_ = false;
};

// Writes `data` to `path` by the rules above.
inline void write_file(const std::string& path, const std::string& what, std::string_view data) {
  OutputFile f(path, what);
  f.write(data);
  f.commit();
}

// ─── reading ──────────────────────────────────────────────────────────────────

// An open regular file of at most `limit` bytes; UserError naming the path
// otherwise. Closed by the destructor.
class InputFile {
 public:
  InputFile(const std::string& path, const std::string& what, uint64_t limit) : path_(path), what_(what) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);  // a FIFO must not block the open
    if (fd_ < 0) detail::io_error(errno, "open", what, path);
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      detail::io_error(err, "read", what, path);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      user_error("cannot read {} '{}': it is {}, not a regular file", what, path, detail::kind_of(st.st_mode));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    if (size_ > limit) {
      ::close(fd_);
      user_error("cannot read {} '{}': it is {} bytes, over the limit of {} bytes for a {}", what, path, size_, limit,
                 what);
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { ::close(fd_); }

  uint64_t size() const { return size_; }
  int fd() const { return fd_; }

  // Exactly n bytes at `offset`; a UserError naming the file when they are
  // not there (a file cut short since it was opened).
  void read_at(uint64_t offset, void* out, size_t n) const {
    char* p = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) detail::io_error(errno, "read", what_, path_);
      if (r == 0)
        user_error("cannot read {} '{}': {} bytes at offset {} could not be read (the file is shorter)", what_,
                   path_, n, offset);
      p += r;
      offset += static_cast<uint64_t>(r);
      n -= static_cast<size_t>(r);
    }
  }

  // The whole file (its size when opened).
  std::string read_all() const {
    std::string s(static_cast<size_t>(size_), '\0');
    read_at(0, s.data(), s.size());
    return s;
  }

 private:
  std::string path_, what_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole of a regular file of at most `limit` bytes.
inline std::string read_regular_file(const std::string& path, const std::string& what, uint64_t limit) {
  return InputFile(path, what, limit).read_all();
}

}  // namespace collplan::files
