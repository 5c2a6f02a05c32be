// Starts one process per device and connects them with pipes, one per
// (sender, receiver, port):
//   launcher [--len N] RANK0_EXE RANK1_EXE ... (DEVICES of them)
// Exit 0 when every device exits 0.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
constexpr int kPorts = 1;  // the plan's p (CMakeLists.txt: P 1)
}

int main(int argc, char** argv) {
  std::string len = "1000";
  int first = 1;
  if (argc > 2 && std::strcmp(argv[1], "--len") == 0) {
    len = argv[2];
    first = 3;
  }
  const int K = argc - first;
  if (K != DEVICES) {
    std::fprintf(stderr, "usage: launcher [--len N] RANK0_EXE ... RANK%d_EXE\n", DEVICES - 1);
    return 2;
  }
  // pipes[(from * K + to) * kPorts + port] = {read end, write end}
  std::vector<std::array<int, 2>> pipes(static_cast<size_t>(K) * K * kPorts, {-1, -1});
  for (int from = 0; from < K; ++from)
    for (int to = 0; to < K; ++to)
      for (int t = 0; t < kPorts && from != to; ++t)
        if (::pipe(pipes[(from * K + to) * kPorts + t].data()) != 0) {
          std::perror("pipe");
          return 2;
        }
  std::vector<pid_t> pids;
  for (int r = 0; r < K; ++r) {
    std::vector<std::string> args = {argv[first + r], len};
    for (int q = 0; q < K; ++q)
      for (int t = 0; t < kPorts && q != r; ++t) {
        args.push_back(std::to_string(pipes[(q * K + r) * kPorts + t][0]));  // read q -> r
        args.push_back(std::to_string(pipes[(r * K + q) * kPorts + t][1]));  // write r -> q
      }
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    if (pid == 0) {
      std::vector<char*> cargs;
      for (auto& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      ::execv(cargs[0], cargs.data());
      std::perror("execv");
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (int r = 0; r < K; ++r) {
    int st = 0;
    ::waitpid(pids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::fprintf(stderr, "device %d failed (status %d)\n", r, st);
      ++failed;
    }
  }
  std::printf(failed ? "%d of %d devices failed\n" : "all %d devices computed their symbol correctly\n", failed ? failed : K, K);
  return failed ? 1 : 0;
}
