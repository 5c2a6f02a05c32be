// Peer lists for TCP tests on one machine.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/transport/tcp.h"

namespace collplan::test {

// "127.0.0.1:a,127.0.0.1:b,...": K distinct ports the system handed out a
// moment ago (all listened on at once, then closed, for the ranks to bind
// again).
inline std::string loopback_peers(uint32_t K) {
  std::string list;
  std::vector<int> fds;
  for (uint32_t r = 0; r < K; ++r) {
    uint16_t port = 0;
    fds.push_back(rt::tcp_listen("127.0.0.1:0", &port));
    list += (r ? "," : "") + std::string("127.0.0.1:") + std::to_string(port);
  }
  for (int fd : fds) ::close(fd);
  return list;
}

}  // namespace collplan::test
