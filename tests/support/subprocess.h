// Runs a shell command and captures what it writes: the one way the tests
// start a process (the collplan CLI through cli_runner.h, the C++ compiler
// and the programs it builds through tests/emit/host_tools.h). No Catch2
// here: the benchmarks use it too.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace collplan::test {

[[noreturn]] inline void throw_errno(const char* what) {
  throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

struct CommandResult {
  int status = -1;   // the exit status; -1 when a signal ended the process
  int signal = 0;    // the signal that ended it, 0 when it exited
  std::string out;   // what it wrote to stdout
  std::string err;   // what it wrote to stderr
  // stdout, then stderr: for a search in either.
  std::string output() const { return out + err; }
};

// Runs `command` with /bin/sh -c, so quoting, redirections, pipes and `&`
// work as typed, in the folder `cwd` (this process's when empty), and waits
// for it. stdout and stderr are captured apart; stdin is inherited.
inline CommandResult run_command(const std::string& command, const std::filesystem::path& cwd = {}) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
  const std::string dir = cwd.string();
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    if (!dir.empty() && ::chdir(dir.c_str()) != 0) {
      static const char msg[] = "run_command: cannot change to the folder\n";
      [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
      ::_exit(127);
    }
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CommandResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sink[2] = {&r.out, &r.err};
  char buf[4096];
  for (int open = 2; open > 0;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll");
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sink[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {  // end of file (or a broken pipe)
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) throw_errno("waitpid");
  if (WIFEXITED(st)) r.status = WEXITSTATUS(st);
  else if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
  return r;
}

}  // namespace collplan::test
