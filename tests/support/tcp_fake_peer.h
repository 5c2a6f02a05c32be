// A fake TCP rank for transport tests: real sockets, the wire functions of
// runtime/transport/tcp_wire.h, and frames written by hand, so a test sees
// and controls the bytes on the wire.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>

#include "ir/spec.h"
#include "runtime/transport/tcp_wire.h"

namespace collplan::test {

// Accepts one connection on `listen_fd` (a keyless rank dialling this one)
// and completes the handshake as rank `rank` of `ranks` holding `digest`.
// Returns the connected socket (blocking).
inline int fake_handshake(int listen_fd, const Digest& digest, uint32_t rank, uint32_t ranks) {
  pollfd pfd{listen_fd, POLLIN, 0};
  REQUIRE(::poll(&pfd, 1, 5000) == 1);
  const int s = ::accept(listen_fd, nullptr, nullptr);
  REQUIRE(s >= 0);
  unsigned char theirs[rt::wire::kHelloBytes];
  REQUIRE(::recv(s, theirs, sizeof theirs, MSG_WAITALL) == sizeof theirs);
  rt::wire::Hello them;
  REQUIRE(rt::wire::parse_hello(theirs, sizeof theirs, &them) == "");
  CHECK(them.rank > rank);
  rt::wire::Hello me;
  me.rank = rank;
  me.ranks = ranks;
  me.digest = digest;
  me.nonce = rt::wire::random_bytes32();
  unsigned char mine[rt::wire::kHelloBytes];
  rt::wire::encode_hello(me, mine);
  REQUIRE(::send(s, mine, sizeof mine, MSG_NOSIGNAL) == sizeof mine);
  return s;
}

}  // namespace collplan::test
