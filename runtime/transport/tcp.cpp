#include "runtime/transport/tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <isa-l/crc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::rt {

using Clock = std::chrono::steady_clock;

uint32_t crc32c(const void* data, size_t len, uint32_t crc) {
  // ISA-L's crc32_iscsi works on the raw register (no final inversion) and
  // takes an int length.
  uint32_t state = ~crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (len > 0) {
    const int n = static_cast<int>(std::min<size_t>(len, size_t{1} << 30));
    state = crc32_iscsi(p, n, state);
    p += n;
    len -= static_cast<size_t>(n);
  }
  return ~state;
}

namespace {

constexpr char kHelloMagic[8] = {'C', 'P', 'L', 'N', 'T', 'C', 'P', '1'};
constexpr uint32_t kFrameMagic = 0x52465043;  // "CPFR" little-endian
constexpr size_t kHelloBytes = 8 + 4 + 4 + 16 + 4;

struct HostPort {
  std::string host, port;
};

HostPort split_host_port(const std::string& s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    user_error("peer address '{}' is not host:port", s);
  std::string host = s.substr(0, colon), port = s.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const unsigned long v = std::strtoul(port.c_str(), &end, 10);
  if (*end != '\0' || v > 65535) user_error("peer address '{}': port '{}' is not a number in 0..65535", s, port);
  return {host, port};
}

struct AddrInfo {
  addrinfo* ai = nullptr;
  ~AddrInfo() {
    if (ai) freeaddrinfo(ai);
  }
};

void resolve(const std::string& addr, int flags, AddrInfo& out) {
  const HostPort hp = split_host_port(addr);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  const int rc = getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &out.ai);
  if (rc != 0 || !out.ai) user_error("cannot resolve peer address '{}': {}", addr, gai_strerror(rc));
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, INT_MAX));
}

// Moves n bytes over a non-blocking socket by the deadline; false on timeout,
// error or (reading) end of stream, with *why set.
bool io_all(int fd, void* buf, size_t n, bool write, Clock::time_point deadline, std::string* why) {
  auto* p = static_cast<unsigned char*>(buf);
  size_t done = 0;
  while (done < n) {
    const ssize_t k = write ? ::send(fd, p + done, n - done, MSG_NOSIGNAL) : ::recv(fd, p + done, n - done, 0);
    if (k > 0) {
      done += static_cast<size_t>(k);
      continue;
    }
    if (k == 0) {
      *why = "it closed the connection";
      return false;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *why = std::strerror(errno);
      return false;
    }
    pollfd pfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    const int left = ms_left(deadline);
    if (left == 0 || ::poll(&pfd, 1, left) == 0) {
      *why = "timed out";
      return false;
    }
  }
  return true;
}

void put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint32_t header_crc(const TcpTransport::FrameHeader& h) { return crc32c(&h, offsetof(TcpTransport::FrameHeader, header_crc)); }

}  // namespace

std::vector<std::string> parse_peers(const std::string& file_or_list) {
  std::vector<std::string> peers;
  std::ifstream in(file_or_list);
  if (in) {
    std::string line;
    for (size_t no = 1; std::getline(in, line); ++no) {
      if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      std::istringstream words(line);
      std::string w, extra;
      if (!(words >> w)) continue;
      if (words >> extra) user_error("peer file '{}', line {}: '{}' has more than one address", file_or_list, no, line);
      peers.push_back(w);
    }
  } else {
    std::stringstream ss(file_or_list);
    for (std::string w; std::getline(ss, w, ',');) peers.push_back(w);
  }
  if (peers.empty()) user_error("--peers '{}' is neither a readable file nor a list host:port,host:port,...", file_or_list);
  for (const std::string& p : peers) split_host_port(p);  // UserError naming a malformed entry
  return peers;
}

int tcp_listen(const std::string& host_port, uint16_t* port) {
  AddrInfo ai;
  resolve(host_port, AI_PASSIVE, ai);
  std::string why = "no address";
  for (addrinfo* a = ai.ai; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      if (port) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
        *port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      }
      set_nonblocking(fd);
      return fd;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  user_error("cannot listen on '{}': {}", host_port, why);
}

// ─── setup ───────────────────────────────────────────────────────────────────

TcpTransport::TcpTransport(std::vector<std::string> peers, ir::Rank rank, const Digest& plan_digest, TcpOptions opt,
                           int listen_fd)
    : peers_(std::move(peers)), rank_(rank), digest_(plan_digest), opt_(opt) {
  if (peers_.size() < 2) user_error("the TCP transport needs at least 2 peers, the list has {}", peers_.size());
  if (rank_ >= peers_.size())
    user_error("--rank {} does not exist: the peer list has {} entries (valid: 0..{})", rank_, peers_.size(),
               peers_.size() - 1);
  if (opt_.timeout.count() <= 0 || opt_.connect_timeout.count() <= 0)
    user_error("TCP timeouts must be positive (got {} ms and {} ms)", opt_.timeout.count(),
               opt_.connect_timeout.count());
  conn_.resize(peers_.size());
  try {
    setup(listen_fd);
  } catch (...) {
    for (Peer& c : conn_)
      if (c.fd >= 0) ::close(c.fd);
    throw;
  }
  pfds_.resize(peers_.size());
  for (size_t p = 0; p < peers_.size(); ++p) pfds_[p] = pollfd{conn_[p].fd, 0, 0};
}

TcpTransport::~TcpTransport() {
  for (Peer& c : conn_)
    if (c.fd >= 0) ::close(c.fd);
}

std::string TcpTransport::who(uint32_t p) const { return fmt::format("rank {} ({})", p, peers_[p]); }

void TcpTransport::setup(int listen_fd) {
  const uint32_t K = size();
  const auto deadline = Clock::now() + opt_.connect_timeout;
  if (listen_fd < 0) listen_fd = tcp_listen(peers_[rank_]);
  struct CloseListen {
    int fd;
    ~CloseListen() { ::close(fd); }
  } guard{listen_fd};

  // Connect to every lower rank, retrying while it is not listening yet.
  for (uint32_t p = 0; p < rank_; ++p) {
    AddrInfo ai;
    resolve(peers_[p], 0, ai);
    std::string why;
    int fd = -1;
    while (fd < 0) {
      for (addrinfo* a = ai.ai; a && fd < 0; a = a->ai_next) {
        const int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (s < 0) continue;
        set_nonblocking(s);
        int rc = ::connect(s, a->ai_addr, a->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
          pollfd pfd{s, POLLOUT, 0};
          if (::poll(&pfd, 1, std::max(ms_left(deadline), 1)) == 1) {
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
            rc = err == 0 ? 0 : -1;
            errno = err;
          } else {
            errno = ETIMEDOUT;
          }
        }
        if (rc == 0) {
          fd = s;
        } else {
          why = std::strerror(errno);
          ::close(s);
        }
      }
      if (fd >= 0) break;
      if (ms_left(deadline) == 0)
        user_error("rank {} could not connect to {} within {} ms: {}", rank_, who(p), opt_.connect_timeout.count(),
                   why);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    conn_[p].fd = fd;
    handshake(p, fd, true, deadline);
  }

  // Accept every higher rank, in whatever order they come.
  uint32_t missing = K - 1 - rank_;
  while (missing > 0) {
    pollfd pfd{listen_fd, POLLIN, 0};
    const int left = ms_left(deadline);
    if (left == 0 || ::poll(&pfd, 1, left) == 0) {
      std::string list;
      for (uint32_t p = rank_ + 1; p < K; ++p)
        if (conn_[p].fd < 0) list += fmt::format("{}{}", list.empty() ? "" : ", ", who(p));
      user_error("rank {} (listening on {}): no connection from {} within {} ms", rank_, peers_[rank_], list,
                 opt_.connect_timeout.count());
    }
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    handshake(UINT32_MAX, fd, false, deadline);
    --missing;
  }
  const int one = 1;
  for (Peer& c : conn_)
    if (c.fd >= 0) ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void TcpTransport::handshake(uint32_t peer, int fd, bool connecting, Clock::time_point deadline) {
  const uint32_t K = size();
  unsigned char mine[kHelloBytes], theirs[kHelloBytes];
  std::memcpy(mine, kHelloMagic, 8);
  put32(mine + 8, rank_);
  put32(mine + 12, K);
  std::memcpy(mine + 16, digest_.bytes.data(), 16);
  put32(mine + 32, crc32c(mine, 32));
  std::string why;
  const std::string them = connecting ? who(peer) : std::string("a connecting peer");
  auto fail_io = [&](const char* doing) {
    if (!connecting) ::close(fd);
    user_error("rank {}: TCP handshake with {} failed while {}: {} (connect timeout {} ms)", rank_, them, doing, why,
               opt_.connect_timeout.count());
  };
  if (connecting && !io_all(fd, mine, kHelloBytes, true, deadline, &why)) fail_io("sending the hello");
  if (!io_all(fd, theirs, kHelloBytes, false, deadline, &why)) fail_io("reading the hello");
  auto refuse = [&](const std::string& what) {
    if (!connecting) ::close(fd);
    user_error("rank {}: refusing the TCP connection from {}: {}", rank_, them, what);
  };
  if (std::memcmp(theirs, kHelloMagic, 8) != 0 || get32(theirs + 32) != crc32c(theirs, 32))
    refuse("its hello is not a collplan TCP hello (wrong magic or CRC)");
  const uint32_t their_rank = get32(theirs + 8), their_k = get32(theirs + 12);
  if (their_k != K) refuse(fmt::format("it has a peer list of {} ranks, this rank {}", their_k, K));
  if (connecting) {
    if (their_rank != peer) refuse(fmt::format("the process at {} says it is rank {}", peers_[peer], their_rank));
  } else {
    if (their_rank <= rank_ || their_rank >= K)
      refuse(fmt::format("it says it is rank {}, but only ranks {}..{} connect to rank {}", their_rank, rank_ + 1,
                         K - 1, rank_));
    if (conn_[their_rank].fd >= 0) refuse(fmt::format("rank {} is already connected", their_rank));
    peer = their_rank;
    conn_[peer].fd = fd;
    // Reply even when the digests differ, so both sides can report it.
    if (!io_all(fd, mine, kHelloBytes, true, deadline, &why)) fail_io("sending the hello");
  }
  Digest d;
  std::memcpy(d.bytes.data(), theirs + 16, 16);
  if (!(d == digest_))
    user_error("rank {}: refusing the TCP connection with {}: it holds plan {}, this rank holds plan {} (every rank "
               "must replay the same plan)",
               rank_, who(peer), d.hex(), digest_.hex());
}

// ─── data path ───────────────────────────────────────────────────────────────

Status TcpTransport::begin(uint32_t max_requests) {
  detail_.clear();
  if (broken_) {
    detail_ = "the connections were closed after an earlier failure";
    return Status::failed;
  }
  reqs_.assign(max_requests, Request{});
  return Status::ok;
}

Status TcpTransport::peer_lost(uint32_t p, const std::string& why) {
  Peer& c = conn_[p];
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
  c.closed = true;
  pfds_[p].fd = -1;
  for (Request& r : reqs_)
    if (r.active && !r.done && r.peer == p) {
      r.done = true;
      r.status = Status::failed;
      r.why = fmt::format("{} {}", who(p), why);
    }
  return Status::ok;  // the requests that needed the peer fail in wait()
}

Status TcpTransport::post_send(ReqId id, const SendDesc& d) {
  if (id >= reqs_.size() || reqs_[id].active || d.to >= size() || d.to == rank_) {
    detail_ = fmt::format("bad send request (id {}, destination rank {})", id, d.to);
    return Status::failed;
  }
  Peer& c = conn_[d.to];
  if (c.closed) {
    detail_ = fmt::format("{} closed the connection earlier", who(d.to));
    return Status::failed;
  }
  reqs_[id] = Request{true, true, false, Status::ok, d.to, d.port, d.step,
                      static_cast<unsigned char*>(const_cast<void*>(d.data)), d.bytes, {}};
  FrameHeader h{kFrameMagic, d.port, d.step, 0, d.bytes, crc32c(d.data, d.bytes), 0};
  if (opt_.corrupt_step != 0 && d.step == opt_.corrupt_step && !corrupted_) {
    h.payload_crc ^= 1;  // as if one payload bit had flipped on the way
    corrupted_ = true;
  }
  h.header_crc = header_crc(h);
  c.out.push_back(OutFrame{id, h, static_cast<const unsigned char*>(d.data), d.bytes, 0});
  return progress_write(d.to);
}

Status TcpTransport::post_recv(ReqId id, const RecvDesc& d) {
  if (id >= reqs_.size() || reqs_[id].active || d.from >= size() || d.from == rank_) {
    detail_ = fmt::format("bad receive request (id {}, source rank {})", id, d.from);
    return Status::failed;
  }
  Request& r = reqs_[id];
  r = Request{true, false, false, Status::ok, d.from, d.port, d.sent_at, static_cast<unsigned char*>(d.data),
              d.bytes, {}};
  Peer& c = conn_[d.from];
  for (size_t i = 0; i < c.buffered.size(); ++i)
    if (c.buffered[i].port == d.port && c.buffered[i].step == d.sent_at) {
      take_buffered(d.from, i, r);
      return Status::ok;
    }
  if (c.closed) {
    r.done = true;
    r.status = Status::failed;
    r.why = fmt::format("{} closed the connection before sending this message", who(d.from));
  }
  return Status::ok;
}

void TcpTransport::take_buffered(uint32_t p, size_t i, Request& r) {
  Peer& c = conn_[p];
  Buffered& b = c.buffered[i];
  r.done = true;
  if (b.data.size() != r.bytes) {
    r.status = Status::size_mismatch;
    r.why = fmt::format("{} sent {} bytes, the plan expects {}", who(p), b.data.size(), r.bytes);
  } else if (!b.crc_ok) {
    r.status = Status::failed;
    r.why = fmt::format("the frame from {} (step {}, port {}) failed its payload CRC32C check (corrupted)", who(p),
                        b.step, b.port);
  } else if (r.bytes) {
    std::memcpy(r.data, b.data.data(), r.bytes);
  }
  c.spare.push_back(std::move(b.data));
  c.buffered.erase(c.buffered.begin() + static_cast<std::ptrdiff_t>(i));
}

Status TcpTransport::progress_write(uint32_t p) {
  Peer& c = conn_[p];
  while (c.out_head < c.out.size()) {
    OutFrame& f = c.out[c.out_head];
    const size_t total = sizeof(FrameHeader) + f.bytes;
    iovec iov[2];
    int n = 0;
    if (f.sent < sizeof(FrameHeader)) {
      iov[n++] = {reinterpret_cast<unsigned char*>(&f.hdr) + f.sent, sizeof(FrameHeader) - f.sent};
      if (f.bytes) iov[n++] = {const_cast<unsigned char*>(f.data), f.bytes};
    } else {
      const size_t off = f.sent - sizeof(FrameHeader);
      iov[n++] = {const_cast<unsigned char*>(f.data) + off, f.bytes - off};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    const ssize_t k = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok;
      return peer_lost(p, fmt::format("could not be sent to ({}): the connection is gone", std::strerror(errno)));
    }
    f.sent += static_cast<size_t>(k);
    if (f.sent == total) {
      reqs_[f.id].done = true;
      ++c.out_head;
    }
  }
  c.out.clear();  // keeps its capacity
  c.out_head = 0;
  return Status::ok;
}

void TcpTransport::frame_done(uint32_t p) {
  Peer& c = conn_[p];
  const bool crc_ok = ~c.crc == c.hdr.payload_crc;
  if (c.target >= 0) {
    Request& r = reqs_[static_cast<size_t>(c.target)];
    r.done = true;
    if (!crc_ok) {
      r.status = Status::failed;
      r.why = fmt::format("the frame from {} (step {}, port {}) failed its payload CRC32C check (corrupted)", who(p),
                          c.hdr.step, c.hdr.port);
    }
  } else {
    c.buffered.push_back(Buffered{c.hdr.port, c.hdr.step, crc_ok, std::move(c.incoming)});
    c.incoming = {};
    // Its receive may have been posted while the payload was arriving.
    for (Request& r : reqs_)
      if (r.active && !r.done && !r.is_send && r.peer == p && r.port == c.hdr.port && r.step == c.hdr.step) {
        take_buffered(p, c.buffered.size() - 1, r);
        break;
      }
  }
  c.hdr_got = 0;
  c.in_payload = false;
  c.target = -1;
}

Status TcpTransport::progress_read(uint32_t p) {
  Peer& c = conn_[p];
  for (;;) {
    if (c.fd < 0) return Status::ok;
    if (!c.in_payload) {
      const ssize_t k = ::recv(c.fd, reinterpret_cast<unsigned char*>(&c.hdr) + c.hdr_got,
                               sizeof(FrameHeader) - c.hdr_got, 0);
      if (k == 0) return peer_lost(p, "closed the connection (its process ended or gave up)");
      if (k < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok;
        return peer_lost(p, fmt::format("broke the connection ({})", std::strerror(errno)));
      }
      c.hdr_got += static_cast<size_t>(k);
      if (c.hdr_got < sizeof(FrameHeader)) continue;
      if (c.hdr.magic != kFrameMagic || c.hdr.header_crc != header_crc(c.hdr)) {
        detail_ = fmt::format("a frame header from {} failed its CRC32C check (corrupted)", who(p));
        broken_ = true;
        return Status::failed;
      }
      c.target = -1;
      for (size_t i = 0; i < reqs_.size(); ++i) {
        const Request& r = reqs_[i];
        if (r.active && !r.done && !r.is_send && r.peer == p && r.port == c.hdr.port && r.step == c.hdr.step) {
          c.target = static_cast<int64_t>(i);
          break;
        }
      }
      if (c.target >= 0) {
        Request& r = reqs_[static_cast<size_t>(c.target)];
        if (r.bytes != c.hdr.length) {
          r.done = true;
          r.status = Status::size_mismatch;
          r.why = fmt::format("{} sent {} bytes, the plan expects {}", who(p), c.hdr.length, r.bytes);
          broken_ = true;  // the stream cannot be resynchronised
          detail_ = r.why;
          return Status::size_mismatch;
        }
        c.dst = r.data;
      } else {
        if (!c.spare.empty()) {
          c.incoming = std::move(c.spare.back());
          c.spare.pop_back();
        }
        c.incoming.resize(c.hdr.length);
        c.dst = c.incoming.data();
      }
      c.in_payload = true;
      c.got = 0;
      c.crc = ~uint32_t{0};
      if (c.hdr.length == 0) frame_done(p);
      continue;
    }
    const ssize_t k = ::recv(c.fd, c.dst + c.got, c.hdr.length - c.got, 0);
    if (k == 0) return peer_lost(p, "closed the connection in the middle of a frame");
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok;
      return peer_lost(p, fmt::format("broke the connection ({})", std::strerror(errno)));
    }
    c.crc = crc32_iscsi(c.dst + c.got, static_cast<int>(k), c.crc);
    c.got += static_cast<size_t>(k);
    if (c.got == c.hdr.length) frame_done(p);
  }
}

Status TcpTransport::wait(const ReqId* ids, size_t n, size_t* failed_index) {
  const auto deadline = Clock::now() + opt_.timeout;
  for (size_t i = 0; i < n; ++i)
    if (ids[i] >= reqs_.size() || !reqs_[ids[i]].active) {
      detail_ = fmt::format("wait on request id {} that is not outstanding", ids[i]);
      *failed_index = i;
      return Status::failed;
    }
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < n; ++i) {
      Request& r = reqs_[ids[i]];
      if (!r.done) {
        all = false;
      } else if (r.status != Status::ok) {
        detail_ = r.why;
        *failed_index = i;
        return r.status;
      }
    }
    if (all) {
      for (size_t i = 0; i < n; ++i) reqs_[ids[i]].active = false;
      return Status::ok;
    }
    const int left = ms_left(deadline);
    for (size_t p = 0; p < conn_.size(); ++p)
      pfds_[p].events = static_cast<short>(conn_[p].fd < 0 ? 0 : POLLIN | (conn_[p].out.empty() ? 0 : POLLOUT));
    const int ready = left == 0 ? 0 : ::poll(pfds_.data(), pfds_.size(), left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      for (size_t i = 0; i < n; ++i) {
        const Request& r = reqs_[ids[i]];
        if (r.done) continue;
        *failed_index = i;
        detail_ = r.is_send ? fmt::format("{} did not take the message of step {} on port {} within {} ms (it stopped "
                                          "reading)",
                                          who(r.peer), r.step, r.port, opt_.timeout.count())
                            : fmt::format("{} sent nothing for its message of step {} on port {} within {} ms (the "
                                          "peer is dead or silent)",
                                          who(r.peer), r.step, r.port, opt_.timeout.count());
        return Status::timeout;
      }
    }
    for (uint32_t p = 0; p < conn_.size(); ++p) {
      const short ev = pfds_[p].revents;
      if (!ev || conn_[p].fd < 0) continue;
      Status st = Status::ok;
      if (ev & POLLOUT) st = progress_write(p);
      if (st == Status::ok && (ev & (POLLIN | POLLHUP | POLLERR))) st = progress_read(p);
      if (st != Status::ok) {
        *failed_index = 0;
        for (size_t i = 0; i < n; ++i)
          if (reqs_[ids[i]].peer == p && !reqs_[ids[i]].is_send) {
            *failed_index = i;
            break;
          }
        return st;
      }
    }
  }
}

Status TcpTransport::end() {
  for (const Request& r : reqs_)
    if (r.active) {
      detail_ = "the run ended with requests outstanding";
      return Status::failed;
    }
  return Status::ok;
}

void TcpTransport::abandon() {
  // Close every connection: peers waiting on this rank fail at once instead
  // of at their timeout, and no buffer of the engine is used after return.
  for (uint32_t p = 0; p < conn_.size(); ++p) {
    Peer& c = conn_[p];
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
    c.closed = true;
    c.out.clear();
    c.out_head = 0;
    pfds_[p].fd = -1;
  }
  for (Request& r : reqs_) r.active = false;
  broken_ = true;
}

size_t TcpTransport::buffered_frames() const {
  size_t n = 0;
  for (const Peer& c : conn_) n += c.buffered.size();
  return n;
}

}  // namespace collplan::rt
