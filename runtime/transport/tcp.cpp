// The TCP transport's data path: frames, buffering and the progress loop
// (tcp.h, "Frames" and "Progress and timeouts"). Setup is tcp_connect.cpp,
// the wire format tcp_wire.cpp.
#include "runtime/transport/tcp.h"

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "runtime/transport/tcp_internal.h"
#include "support/error.h"

namespace collplan::rt {

using namespace tcp_detail;

namespace {

// Fills iov[0..room) with a payload's bytes from `at` on, one entry per
// piece (empty ones skipped); returns the entries used and adds their bytes
// to *bytes. (Pieces and Cursor: TcpTransport's, tcp.h.)
template <class Pieces, class Cursor>
int fill_iov(const Pieces& ps, const Cursor& at, iovec* iov, int room, size_t* bytes) {
  int n = 0;
  for (uint32_t i = at.i; i < ps.count() && n < room; ++i) {
    const size_t off = i == at.i ? at.off : 0;
    if (ps[i].bytes == off) continue;
    iov[n++] = {static_cast<unsigned char*>(const_cast<void*>(ps[i].data)) + off, ps[i].bytes - off};
    *bytes += ps[i].bytes - off;
  }
  return n;
}

// Moves `at` on by k payload bytes, calling f(data, n) for each run of them
// within one piece, in order.
template <class Pieces, class Cursor, class F>
void advance(const Pieces& ps, Cursor& at, size_t k, F&& f) {
  while (k > 0 && at.i < ps.count()) {
    const auto& piece = ps[at.i];
    const size_t m = std::min(k, piece.bytes - at.off);
    if (m) f(static_cast<const unsigned char*>(piece.data) + at.off, m);
    at.off += m;
    k -= m;
    if (at.off == piece.bytes) {
      ++at.i;
      at.off = 0;
    }
  }
}

}  // namespace

// ─── data path ───────────────────────────────────────────────────────────────

Status TcpTransport::begin(uint32_t max_requests) {
  detail_.clear();
  if (broken_) {
    detail_ = "the connections were closed after an earlier failure";
    return Status::failed;
  }
  reqs_.assign(max_requests, Request{});
  // Until expect(), this run's messages are unknown (a caller other than the
  // engine may never say): a frame is then read only into a posted receive.
  expected_ = false;
  return Status::ok;
}

Status TcpTransport::expect(const RecvDesc* recvs, size_t n) {
  std::vector<wire::Expected> e(n);
  for (size_t i = 0; i < n; ++i) e[i] = wire::Expected{recvs[i].from, recvs[i].sent_at, recvs[i].port, recvs[i].bytes};
  limits_ = wire::FrameLimits(std::move(e));
  arrived_.assign(limits_.size(), false);
  remaining_.assign(conn_.size(), 0);
  for (size_t i = 0; i < limits_.size(); ++i)
    if (limits_[i].from < remaining_.size()) ++remaining_[limits_[i].from];
  expected_ = true;
  // Headers of this run's frames that arrived during the last one.
  for (uint32_t p = 0; p < conn_.size(); ++p)
    if (conn_[p].held) {
      conn_[p].held = false;
      pfds_[p].fd = conn_[p].fd;
      if (const Status st = accept_header(p); st != Status::ok) return st;
      complete_if_empty(p);
    }
  return Status::ok;
}

Status TcpTransport::protocol_error(std::string why) {
  detail_ = std::move(why);
  broken_ = true;  // the stream cannot be resynchronised
  return Status::failed;
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

template <class Piece, class Desc>
bool TcpTransport::pieces_of(const Desc& d, Pieces<Piece>* out) {
  *out = Pieces<Piece>{};
  if (d.num_pieces == 0) {
    out->one = Piece{d.data, d.bytes};
    return true;
  }
  if (!d.pieces || d.num_pieces > opt_.max_pieces) {
    detail_ = fmt::format("a message in {} pieces{}: this TCP transport takes 1..{} (max_pieces())", d.num_pieces,
                          d.pieces ? "" : " with no piece list", opt_.max_pieces);
    return false;
  }
  size_t sum = 0;
  for (uint32_t i = 0; i < d.num_pieces; ++i) {
    if (d.pieces[i].bytes > d.bytes - sum) {
      sum = d.bytes + 1;
      break;
    }
    sum += d.pieces[i].bytes;
  }
  if (sum != d.bytes) {
    detail_ = fmt::format("a message of {} bytes whose {} pieces do not sum to it", d.bytes, d.num_pieces);
    return false;
  }
  out->list = d.pieces;
  out->n = d.num_pieces;
  return true;
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
  Pieces<SendPiece> src;
  if (!pieces_of(d, &src)) return Status::failed;
  reqs_[id] = Request{true, true, false, Status::ok, d.to, d.port, d.step, {}, d.bytes, {}};
  // The CRC or MAC over the pieces in order: the contiguous message's.
  uint32_t crc = 0;
  if (!opt_.key)
    for (uint32_t i = 0; i < src.count(); ++i) crc = crc32c(src[i].data, src[i].bytes, crc);
  FrameHeader h{0, d.port, d.step, 0, d.bytes, crc, 0};
  const bool corrupt = opt_.corrupt_step != 0 && d.step == opt_.corrupt_step && !corrupted_;
  if (corrupt && !opt_.key) h.payload_crc ^= 1;  // as if one payload bit had flipped on the way
  corrupted_ |= corrupt;
  wire::seal_header(h);
  OutFrame f{id, h, src, d.bytes, 0, {}, {}};
  if (opt_.key) {
    send_mac_->start(c.keys.send, c.send_seq++, h);
    for (uint32_t i = 0; i < src.count(); ++i)
      if (src[i].bytes) send_mac_->update(src[i].data, src[i].bytes);
    send_mac_->finish(f.mac);
    if (corrupt) f.mac[0] ^= 1;
  }
  c.out.push_back(f);
  return progress_write(d.to);
}

Status TcpTransport::post_recv(ReqId id, const RecvDesc& d) {
  if (id >= reqs_.size() || reqs_[id].active || d.from >= size() || d.from == rank_) {
    detail_ = fmt::format("bad receive request (id {}, source rank {})", id, d.from);
    return Status::failed;
  }
  Pieces<RecvPiece> dst;
  if (!pieces_of(d, &dst)) return Status::failed;
  Request& r = reqs_[id];
  r = Request{true, false, false, Status::ok, d.from, d.port, d.sent_at, dst, d.bytes, {}};
  Peer& c = conn_[d.from];
  for (size_t i = 0; i < c.buffered.size(); ++i)
    if (c.buffered[i].port == d.port && c.buffered[i].step == d.sent_at) {
      take_buffered(d.from, i, r);
      return Status::ok;
    }
  if (c.held && !expected_ && c.hdr.port == d.port && c.hdr.step == d.sent_at) {
    // The frame waiting at the head of the connection is this receive's.
    c.held = false;
    pfds_[d.from].fd = c.fd;
    if (const Status st = accept_header(d.from); st != Status::ok) {
      r.active = false;
      return st;
    }
    complete_if_empty(d.from);
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
  } else if (!b.ok) {
    r.status = Status::failed;
    r.why = fmt::format("the frame from {} (step {}, port {}) failed its payload {} check ({})", who(p), b.step, b.port,
                        opt_.key ? "MAC" : "CRC32C", opt_.key ? "corrupted or forged" : "corrupted");
  } else {
    size_t off = 0;
    for (uint32_t k = 0; k < r.dst.count(); ++k) {
      const RecvPiece& piece = r.dst[k];
      if (piece.bytes) std::memcpy(piece.data, b.data.data() + off, piece.bytes);
      off += piece.bytes;
    }
  }
  c.spare.push_back(std::move(b.data));
  c.buffered.erase(c.buffered.begin() + static_cast<std::ptrdiff_t>(i));
}

Status TcpTransport::progress_write(uint32_t p) {
  Peer& c = conn_[p];
  const size_t hdr_bytes = sizeof(FrameHeader), mac_bytes = opt_.key ? wire::kFrameMacBytes : 0;
  while (c.out_head < c.out.size()) {
    OutFrame& f = c.out[c.out_head];
    const size_t total = hdr_bytes + f.bytes + mac_bytes;
    // The rest of [header, piece 0, piece 1, …, MAC] from where the socket
    // stopped; the MAC only once every piece fits.
    const size_t payload_sent = f.sent < hdr_bytes ? 0 : std::min(f.sent - hdr_bytes, f.bytes);
    int n = 0;
    size_t offered = 0, payload = 0;
    if (f.sent < hdr_bytes) {
      iov_[n++] = {reinterpret_cast<unsigned char*>(&f.hdr) + f.sent, hdr_bytes - f.sent};
      offered += hdr_bytes - f.sent;
    }
    if (payload_sent < f.bytes)
      n += fill_iov(f.src, f.at, iov_.data() + n, static_cast<int>(kTcpIovMax) - 1 - n, &payload);
    offered += payload;
    if (mac_bytes && payload_sent + payload == f.bytes) {
      const size_t mac_sent = f.sent - std::min(f.sent, hdr_bytes + f.bytes);
      iov_[n++] = {f.mac + mac_sent, mac_bytes - mac_sent};
      offered += mac_bytes - mac_sent;
    }
    msghdr msg{};
    msg.msg_iov = iov_.data();
    msg.msg_iovlen = static_cast<size_t>(n);
    const ssize_t k = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok;
      return peer_lost(p, fmt::format("could not be sent to ({}): the connection is gone", std::strerror(errno)));
    }
    const size_t took = static_cast<size_t>(k);
    if (took < offered) ++short_writes_;
    const size_t hdr_took = f.sent < hdr_bytes ? std::min(took, hdr_bytes - f.sent) : 0;
    advance(f.src, f.at, std::min(took - hdr_took, payload), [](const unsigned char*, size_t) {});
    f.sent += took;
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
  bool ok;
  if (opt_.key) {
    unsigned char want[wire::kFrameMacBytes];
    c.rmac->finish(want);
    ok = wire::equal(want, c.mac, sizeof want);
  } else {
    ok = c.crc == c.hdr.payload_crc;
  }
  const char* check = opt_.key ? "MAC" : "CRC32C";
  if (c.target >= 0) {
    Request& r = reqs_[static_cast<size_t>(c.target)];
    r.done = true;
    if (!ok) {
      r.status = Status::failed;
      r.why = fmt::format("the frame from {} (step {}, port {}) failed its payload {} check ({})", who(p), c.hdr.step,
                          c.hdr.port, check, opt_.key ? "corrupted or forged" : "corrupted");
    }
  } else {
    c.buffered.push_back(Buffered{c.hdr.port, c.hdr.step, ok, std::move(c.incoming)});
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
  c.mac_got = 0;
}

Status TcpTransport::accept_header(uint32_t p) {
  Peer& c = conn_[p];
  auto hold = [&] {
    c.held = true;
    pfds_[p].fd = -1;  // not polled: POLLHUP would wake every wait
    return Status::ok;
  };
  if (std::string why = wire::check_header_integrity(c.hdr, who(p)); !why.empty())
    return protocol_error(std::move(why));
  if (!expected_) {
    // No plan for this phase (before the first run's expect(), or a caller
    // that does not say): only into a posted receive, else it waits unread.
    bool posted = false;
    for (const Request& r : reqs_)
      posted |= r.active && !r.done && !r.is_send && r.peer == p && r.port == c.hdr.port && r.step == c.hdr.step;
    if (!posted) return hold();
  } else if (remaining_[p] == 0) {
    // Every message of this run from p is in: the frame belongs to what
    // follows the run, and waits for it unread.
    return hold();
  } else {
    int64_t index = -1;
    if (std::string why = wire::check_header(c.hdr, limits_, p, who(p), &index); !why.empty())
      return protocol_error(std::move(why));
    if (arrived_[static_cast<size_t>(index)])
      return protocol_error(fmt::format("protocol error: {} sent the frame of step {}, port {} twice in one run", who(p),
                                        c.hdr.step, c.hdr.port));
    arrived_[static_cast<size_t>(index)] = true;
    --remaining_[p];
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
    c.dst = r.dst;
  } else {
    // The length is the plan's (check_header), so this allocation is bounded
    // by what the run receives anyway.
    if (!c.spare.empty()) {
      c.incoming = std::move(c.spare.back());
      c.spare.pop_back();
    }
    c.incoming.resize(c.hdr.length);
    c.dst = Pieces<RecvPiece>{};
    c.dst.one = RecvPiece{c.incoming.data(), c.incoming.size()};
  }
  c.in_payload = true;
  c.at = Cursor{};
  c.got = 0;
  c.crc = 0;
  c.mac_got = 0;
  if (opt_.key) c.rmac->start(c.keys.recv, c.recv_seq++, c.hdr);
  return Status::ok;
}

void TcpTransport::complete_if_empty(uint32_t p) {
  const Peer& c = conn_[p];
  if (c.in_payload && c.hdr.length == 0 && !opt_.key) frame_done(p);
}

Status TcpTransport::progress_read(uint32_t p) {
  Peer& c = conn_[p];
  const size_t mac_bytes = opt_.key ? wire::kFrameMacBytes : 0;
  for (;;) {
    if (c.fd < 0 || c.held) return Status::ok;
    if (c.in_payload && c.got == c.hdr.length && c.mac_got == mac_bytes) {  // an empty frame
      frame_done(p);
      continue;
    }
    // The header alone (it says where the payload goes); then the rest of
    // the payload's pieces and the MAC, never past the frame.
    int n = 0;
    size_t payload = 0;
    if (!c.in_payload) {
      iov_[n++] = {reinterpret_cast<unsigned char*>(&c.hdr) + c.hdr_got, sizeof(FrameHeader) - c.hdr_got};
    } else {
      if (c.got < c.hdr.length) n = fill_iov(c.dst, c.at, iov_.data(), static_cast<int>(kTcpIovMax) - 1, &payload);
      if (mac_bytes && c.got + payload == c.hdr.length) iov_[n++] = {c.mac + c.mac_got, mac_bytes - c.mac_got};
    }
    msghdr msg{};
    msg.msg_iov = iov_.data();
    msg.msg_iovlen = static_cast<size_t>(n);
    const ssize_t k = ::recvmsg(c.fd, &msg, 0);
    if (k == 0)
      return peer_lost(p, c.in_payload ? "closed the connection in the middle of a frame"
                                       : "closed the connection (its process ended or gave up)");
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok;
      return peer_lost(p, fmt::format("broke the connection ({})", std::strerror(errno)));
    }
    const size_t got = static_cast<size_t>(k);
    if (!c.in_payload) {
      c.hdr_got += got;
      if (c.hdr_got < sizeof(FrameHeader)) continue;
      if (const Status st = accept_header(p); st != Status::ok) return st;
      continue;
    }
    const size_t into_payload = std::min(got, payload);
    advance(c.dst, c.at, into_payload, [&](const unsigned char* b, size_t m) {
      if (opt_.key)
        c.rmac->update(b, m);
      else
        c.crc = crc32c(b, m, c.crc);
    });
    c.got += into_payload;
    c.mac_got += got - into_payload;
    if (c.got == c.hdr.length && c.mac_got == mac_bytes) frame_done(p);
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
