// The TCP transport's setup: listening, dialling, and the handshakes of
// every connection run at once in one poll loop (tcp.h, "Handshake"). Peer
// lists and key files are tcp_files.cpp.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "runtime/transport/tcp.h"
#include "runtime/transport/tcp_internal.h"
#include "support/error.h"

namespace collplan::rt {

using namespace tcp_detail;

namespace tcp_detail {

void out_of_descriptors(uint32_t K, int errno_value) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  const std::string limit = rl.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(rl.rlim_cur);
  resource_error(ResourceError::Kind::Descriptors,
                 "out of file descriptors{} (the limit is {}, `ulimit -n`; a {}-rank TCP job needs about {} per rank)",
                 errno_value == ENFILE ? " in the whole system" : "", limit, K, K + kSpareDescriptors);
}

void check_descriptor_limit(uint32_t K) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
  if (rl.rlim_cur < K + kSpareDescriptors) out_of_descriptors(K, EMFILE);
}

}  // namespace tcp_detail

namespace {

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

}  // namespace

void tcp_detail::check_host_port(const std::string& s) { split_host_port(s); }

namespace {

struct AddrInfo {
  addrinfo* ai = nullptr;
  AddrInfo() = default;
  AddrInfo(const AddrInfo&) = delete;
  AddrInfo& operator=(const AddrInfo&) = delete;
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

std::string address_text(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return fmt::format("{}:{}", host, ntohs(a->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return fmt::format("[{}]:{}", host, ntohs(a->sin6_port));
  }
  return "an unknown address";
}

}  // namespace

int tcp_listen(const std::string& host_port, uint16_t* port) {
  AddrInfo ai;
  resolve(host_port, AI_PASSIVE, ai);
  std::string why = "no address";
  for (addrinfo* a = ai.ai; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      if (out_of_fds(errno)) out_of_descriptors(1, errno);
      continue;
    }
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
    : peers_(std::move(peers)), rank_(rank), digest_(plan_digest), opt_(std::move(opt)) {
  struct CloseListen {  // taken over even when the arguments are refused
    int fd;
    ~CloseListen() {
      if (fd >= 0) ::close(fd);
    }
  } guard{listen_fd};
  if (peers_.size() < 2) user_error("the TCP transport needs at least 2 peers, the list has {}", peers_.size());
  if (rank_ >= peers_.size())
    user_error("--rank {} does not exist: the peer list has {} entries (valid: 0..{})", rank_, peers_.size(),
               peers_.size() - 1);
  if (opt_.timeout.count() <= 0 || opt_.connect_timeout.count() <= 0 || opt_.handshake_timeout.count() <= 0)
    user_error("TCP timeouts must be positive (got {} ms, {} ms and {} ms)", opt_.timeout.count(),
               opt_.connect_timeout.count(), opt_.handshake_timeout.count());
  if (opt_.max_pieces < 1 || opt_.max_pieces > kTcpMaxPieces)
    user_error("TCP max_pieces {} is out of range (valid: 1..{}, the iovec entries one sendmsg takes less the frame "
               "header and MAC)",
               opt_.max_pieces, kTcpMaxPieces);
  if (opt_.send_buffer_bytes < 0)
    user_error("TCP send buffer size {} is negative (valid: 0, the system's default, or a size in bytes)",
               opt_.send_buffer_bytes);
  check_descriptor_limit(size());
  conn_.resize(peers_.size());
  guard.fd = -1;
  try {
    setup(listen_fd);
  } catch (...) {
    for (Peer& c : conn_)
      if (c.fd >= 0) ::close(c.fd);
    throw;
  }
  pfds_.resize(peers_.size());
  for (size_t p = 0; p < peers_.size(); ++p) pfds_[p] = pollfd{conn_[p].fd, 0, 0};
  iov_.resize(kTcpIovMax);
  if (opt_.key) {
    send_mac_ = std::make_unique<wire::FrameMac>();
    for (Peer& c : conn_) c.rmac = std::make_unique<wire::FrameMac>();
  }
}

TcpTransport::~TcpTransport() {
  for (Peer& c : conn_)
    if (c.fd >= 0) ::close(c.fd);
}

std::string TcpTransport::who(uint32_t p) const { return fmt::format("rank {} ({})", p, peers_[p]); }

void TcpTransport::log(const std::string& line) const {
  if (opt_.log)
    opt_.log(line);
  else
    std::fprintf(stderr, "collplan: rank %u: %s\n", rank_, line.c_str());
}

// Every connection in its handshake, polled together (tcp.h, "Handshake").
struct TcpTransport::Setup {
  enum class Stage { connecting, hello, proof };
  struct Conn {
    int fd = -1;
    bool outgoing = false;
    uint32_t peer = UINT32_MAX;  // outgoing: the rank dialled; incoming: the rank its hello claims
    std::string addr;
    Clock::time_point deadline;
    Stage stage = Stage::hello;
    std::vector<unsigned char> out;  // to send before going on
    size_t out_off = 0;
    unsigned char in[wire::kHelloBytes];
    size_t need = wire::kHelloBytes, got = 0;
    wire::Hello theirs;
    bool established = false;  // handed over once `out` is sent
  };
  struct Dial {
    AddrInfo ai;
    addrinfo* next = nullptr;     // address to try next
    Clock::time_point next_try;   // no attempt before
    bool in_flight = false;
  };
  static constexpr size_t kMaxPending = 64;  // incoming handshakes at once; more wait in the backlog

  TcpTransport& t;
  const uint32_t K;
  const Clock::time_point deadline;
  wire::Hello mine;
  std::vector<Conn> conns;
  std::vector<Dial> dials;
  std::vector<std::string> last_why;  // per rank: why its last attempt failed

  Setup(TcpTransport& tr) : t(tr), K(tr.size()), deadline(Clock::now() + tr.opt_.connect_timeout), dials(K), last_why(K) {
    mine.rank = t.rank_;
    mine.ranks = K;
    mine.digest = t.digest_;
    mine.flags = t.opt_.key ? wire::kHelloKeyed : 0;
    mine.nonce = wire::random_bytes32();
  }

  Clock::time_point conn_deadline() const { return std::min(deadline, Clock::now() + t.opt_.handshake_timeout); }

  // A connection that will not complete: a stray (incoming) is logged, a
  // dialled address is tried again shortly.
  void drop(Conn& c, const std::string& why) {
    ::close(c.fd);
    c.fd = -1;
    if (c.outgoing) {
      last_why[c.peer] = why;
      dials[c.peer].in_flight = false;
      // Not listening yet: soon again; listening but refusing: less often.
      dials[c.peer].next_try = Clock::now() + std::chrono::milliseconds(c.stage == Stage::connecting ? 50 : 500);
    } else {
      if (c.peer < K) last_why[c.peer] = fmt::format("a connection claiming it, from {}, was refused: {}", c.addr, why);
      t.log(fmt::format("ignoring a connection from {}: {}", c.addr, why));
    }
  }

  [[noreturn]] void other_plan(Conn& c) {
    // Send what is queued (our hello or proof) first, so the peer can report it too.
    const auto until = std::min(deadline, Clock::now() + std::chrono::milliseconds(500));
    while (c.out_off < c.out.size() && Clock::now() < until) {
      const ssize_t k = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (k > 0) {
        c.out_off += static_cast<size_t>(k);
      } else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd pfd{c.fd, POLLOUT, 0};
        ::poll(&pfd, 1, ms_left(until));
      } else {
        break;
      }
    }
    ::close(c.fd);
    c.fd = -1;
    user_error("rank {}: refusing the TCP connection with {}: it holds plan {}, this rank holds plan {} (every rank "
               "must replay the same plan)",
               t.rank_, t.who(c.peer), c.theirs.digest.hex(), t.digest_.hex());
  }

  void queue(Conn& c, const unsigned char* p, size_t n) { c.out.insert(c.out.end(), p, p + n); }
  void queue_hello(Conn& c) {
    unsigned char h[wire::kHelloBytes];
    wire::encode_hello(mine, h);
    queue(c, h, sizeof h);
  }
  void expect_in(Conn& c, Stage s, size_t n) {
    c.stage = s;
    c.need = n;
    c.got = 0;
  }
  const wire::Hello& connector(const Conn& c) const { return c.outgoing ? mine : c.theirs; }
  const wire::Hello& acceptor(const Conn& c) const { return c.outgoing ? c.theirs : mine; }

  // Checks common to both sides; empty if the hello is acceptable.
  std::string check_hello(const Conn& c) const {
    const wire::Hello& h = c.theirs;
    if (h.ranks != K) return fmt::format("it has a peer list of {} ranks, this rank {}", h.ranks, K);
    if (c.outgoing && h.rank != c.peer) return fmt::format("the process at {} says it is rank {}", c.addr, h.rank);
    if (!c.outgoing && (h.rank <= t.rank_ || h.rank >= K))
      return fmt::format("it says it is rank {}, but only ranks {}..{} connect to rank {}", h.rank, t.rank_ + 1, K - 1,
                         t.rank_);
    if (!c.outgoing && t.conn_[h.rank].fd >= 0) return fmt::format("rank {} is already connected", h.rank);
    const bool keyed = (h.flags & wire::kHelloKeyed) != 0;
    if (keyed && !t.opt_.key) return "it holds a job key and this rank has none (give every rank the same --key-file)";
    if (!keyed && t.opt_.key) return "it holds no job key and this job has one";
    return {};
  }

  // A complete message in c.in: the next stage. False if c was dropped.
  bool advance(Conn& c) {
    if (c.stage == Stage::hello) {
      std::string why = wire::parse_hello(c.in, c.got, &c.theirs);
      if (why.empty()) {
        if (!c.outgoing) c.peer = c.theirs.rank < K ? c.theirs.rank : UINT32_MAX;
        why = check_hello(c);
      }
      if (!why.empty()) {
        if (!c.outgoing && c.peer < K && (c.peer <= t.rank_ || t.conn_[c.peer].fd >= 0)) c.peer = UINT32_MAX;
        drop(c, why);
        return false;
      }
      if (!c.outgoing) queue_hello(c);  // reply even when the digests differ, so both sides can report it
      if (!t.opt_.key) {
        if (!(c.theirs.digest == t.digest_)) other_plan(c);
        c.established = true;
        return true;
      }
      if (c.outgoing) {
        const wire::Mac m = wire::proof(*t.opt_.key, 'C', connector(c), acceptor(c));
        queue(c, m.data(), m.size());
      }
      expect_in(c, Stage::proof, sizeof(wire::Mac));
      return true;
    }
    // Stage::proof: theirs must prove the key.
    const wire::Mac want = wire::proof(*t.opt_.key, c.outgoing ? 'A' : 'C', connector(c), acceptor(c));
    if (!wire::equal(want.data(), c.in, want.size())) {
      drop(c, "it could not prove the job key (it holds another key)");
      return false;
    }
    if (!c.outgoing) {
      const wire::Mac m = wire::proof(*t.opt_.key, 'A', connector(c), acceptor(c));
      queue(c, m.data(), m.size());
    }
    if (!(c.theirs.digest == t.digest_)) other_plan(c);
    c.established = true;
    return true;
  }

  void establish(Conn& c) {
    Peer& p = t.conn_[c.peer];
    if (p.fd >= 0) {  // two keyless connections raced for one rank
      drop(c, fmt::format("rank {} is already connected", c.peer));
      return;
    }
    p.fd = c.fd;
    c.fd = -1;
    if (t.opt_.key) p.keys = wire::session_keys(*t.opt_.key, mine, c.theirs, c.outgoing);
    const int one = 1;
    ::setsockopt(p.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Not SO_RCVBUF: shrunk below the window already offered, it makes the
    // kernel drop data and retransmit.
    if (const int b = t.opt_.send_buffer_bytes; b > 0) ::setsockopt(p.fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
    last_why[c.peer].clear();
  }

  // Sends what is queued; false if c was dropped.
  bool flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t k = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (k > 0) {
        c.out_off += static_cast<size_t>(k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      drop(c, fmt::format("sending failed: {}", std::strerror(errno)));
      return false;
    }
    c.out.clear();
    c.out_off = 0;
    if (c.established) establish(c);
    return true;
  }

  void on_readable(Conn& c) {
    while (c.fd >= 0 && !c.established) {
      const ssize_t k = ::recv(c.fd, c.in + c.got, c.need - c.got, 0);
      if (k == 0) {
        drop(c, c.outgoing && c.stage == Stage::proof
                    ? "it closed the connection after this rank's key proof (it holds another key)"
                : c.got || c.stage != Stage::hello || c.outgoing
                    ? "it closed the connection in the middle of the handshake"
                    : "it closed the connection without a hello");
        return;
      }
      if (k < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) drop(c, std::strerror(errno));
        return;
      }
      c.got += static_cast<size_t>(k);
      if (c.stage == Stage::hello) {
        if (std::string why = wire::check_hello_start(c.in, c.got); !why.empty()) {
          drop(c, why);
          return;
        }
      }
      if (c.got < c.need) continue;
      if (!advance(c)) return;
      if (!flush(c)) return;
    }
  }

  void on_connected(Conn& c) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      drop(c, fmt::format("cannot connect: {}", std::strerror(err)));
      return;
    }
    queue_hello(c);
    expect_in(c, Stage::hello, wire::kHelloBytes);
    flush(c);
  }

  void dial(uint32_t p) {
    Dial& d = dials[p];
    if (!d.next) d.next = d.ai.ai;
    addrinfo* a = d.next;
    d.next = a->ai_next;
    const int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (s < 0) {
      if (out_of_fds(errno)) out_of_descriptors(K, errno);
      last_why[p] = std::strerror(errno);
      d.next_try = Clock::now() + std::chrono::milliseconds(50);
      return;
    }
    Conn c;
    c.fd = s;
    c.outgoing = true;
    c.peer = p;
    c.addr = t.peers_[p];
    c.stage = Stage::connecting;
    d.in_flight = true;
    const int rc = ::connect(s, a->ai_addr, a->ai_addrlen);
    if (rc < 0 && errno != EINPROGRESS) {
      if (out_of_fds(errno)) out_of_descriptors(K, errno);
      drop(c, fmt::format("cannot connect: {}", std::strerror(errno)));
      return;
    }
    c.deadline = conn_deadline();
    conns.push_back(std::move(c));
    if (rc == 0) on_connected(conns.back());
  }

  void accept_all(int listen_fd) {
    while (pending_incoming() < kMaxPending) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (out_of_fds(errno)) out_of_descriptors(K, errno);
        return;  // EAGAIN, or an error of that one connection
      }
      Conn c;
      c.fd = fd;
      c.addr = address_text(ss);
      c.deadline = conn_deadline();
      conns.push_back(std::move(c));
    }
  }

  size_t pending_incoming() const {
    return static_cast<size_t>(std::count_if(conns.begin(), conns.end(), [](const Conn& c) { return !c.outgoing; }));
  }

  std::vector<uint32_t> missing() const {
    std::vector<uint32_t> m;
    for (uint32_t p = 0; p < K; ++p)
      if (p != t.rank_ && t.conn_[p].fd < 0) m.push_back(p);
    return m;
  }

  [[noreturn]] void fail_missing(const std::vector<uint32_t>& m) {
    std::string list, why;
    for (uint32_t p : m) {
      list += fmt::format("{}{}", list.empty() ? "" : ", ", p);
      why += fmt::format("; {}: {}", t.who(p),
                         !last_why[p].empty() ? last_why[p]
                         : p < t.rank_        ? std::string("it never answered")
                                              : std::string("it never connected"));
    }
    user_error("rank {} (listening on {}): rank{} {} never joined{} within {} ms{}", t.rank_, t.peers_[t.rank_],
               m.size() > 1 ? "s" : "", list, t.opt_.key ? " with the job key" : "", t.opt_.connect_timeout.count(),
               why);
  }

  void run(int listen_fd) {
    for (uint32_t p = 0; p < t.rank_; ++p) resolve(t.peers_[p], 0, dials[p].ai);
    std::vector<pollfd> pfds;
    for (;;) {
      const std::vector<uint32_t> m = missing();
      if (m.empty()) break;
      const auto now = Clock::now();
      if (now >= deadline) fail_missing(m);
      for (uint32_t p = 0; p < t.rank_; ++p)
        if (t.conn_[p].fd < 0 && !dials[p].in_flight && now >= dials[p].next_try) dial(p);
      // Connections past their own deadline.
      for (Conn& c : conns)
        if (c.fd >= 0 && Clock::now() >= c.deadline)
          drop(c, c.stage == Stage::connecting ? "connecting timed out"
                  : c.stage == Stage::hello && c.got == 0
                      ? fmt::format("it sent no hello within {} ms", t.opt_.handshake_timeout.count())
                      : fmt::format("it did not complete the handshake within {} ms",
                                    t.opt_.handshake_timeout.count()));
      std::erase_if(conns, [](const Conn& c) { return c.fd < 0; });
      if (missing().empty()) break;

      auto wake = deadline;
      for (const Conn& c : conns) wake = std::min(wake, c.deadline);
      for (uint32_t p = 0; p < t.rank_; ++p)
        if (t.conn_[p].fd < 0 && !dials[p].in_flight) wake = std::min(wake, dials[p].next_try);
      pfds.clear();
      const bool listening = pending_incoming() < kMaxPending;
      pfds.push_back(pollfd{listening ? listen_fd : -1, POLLIN, 0});
      for (const Conn& c : conns)
        pfds.push_back(pollfd{c.fd,
                              static_cast<short>(c.stage == Stage::connecting || c.out_off < c.out.size() ? POLLOUT
                                                                                                          : POLLIN),
                              0});
      const int ready = ::poll(pfds.data(), pfds.size(), std::max(ms_left(wake), wake > Clock::now() ? 1 : 0));
      if (ready < 0 && errno != EINTR) user_error("rank {}: poll failed: {}", t.rank_, std::strerror(errno));
      if (ready <= 0) continue;
      const size_t n = conns.size();  // accept_all appends
      for (size_t i = 0; i < n; ++i) {
        Conn& c = conns[i];
        const short ev = pfds[i + 1].revents;
        if (!ev || c.fd < 0) continue;
        if (c.stage == Stage::connecting) {
          c.stage = Stage::hello;
          on_connected(c);
          continue;
        }
        if (c.out_off < c.out.size() && !flush(c)) continue;
        if (c.fd >= 0 && !c.established && (ev & (POLLIN | POLLHUP | POLLERR))) on_readable(c);
      }
      if (pfds[0].revents) accept_all(listen_fd);
      // Connections handed over (establish) or dropped leave the list.
      std::erase_if(conns, [](const Conn& c) { return c.fd < 0; });
    }
    for (Conn& c : conns)
      if (c.fd >= 0) {
        t.log(fmt::format("closing a connection from {} still in its handshake: every rank has joined", c.addr));
        ::close(c.fd);
      }
    conns.clear();
  }
};

void TcpTransport::setup(int listen_fd) {
  if (listen_fd < 0) listen_fd = tcp_listen(peers_[rank_]);
  struct CloseListen {
    int fd;
    ~CloseListen() { ::close(fd); }
  } guard{listen_fd};
  Setup s(*this);
  try {
    s.run(listen_fd);
  } catch (...) {
    for (Setup::Conn& c : s.conns)
      if (c.fd >= 0) ::close(c.fd);
    throw;
  }
}

}  // namespace collplan::rt
