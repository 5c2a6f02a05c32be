// The transport interface: how one rank's engine moves messages.
//
// An Engine (runtime/engine.h) drives one Transport endpoint per rank. The
// interface is a non-blocking post / blocking wait pair, the shape of MPI's
// Isend / Irecv / Waitall, so MPI, TCP and the in-process threads transport
// implement it without the engine knowing which one it talks to.
//
// ─── Messages ────────────────────────────────────────────────────────────────
//
// A message is identified by (from, to, port, sent_at): the sending rank, the
// receiving rank, the port (the sender's port number; the receiver uses the
// same number) and the step in which it was sent. The model allows at most one
// send per (rank, port, step), so the key is unique within a run. A message of
// m plan elements over vectors of ℓ field elements is m·ℓ·elem_bytes bytes:
// element 0's ℓ values, then element 1's, …, each value at the field's width
// in host byte order (transports between hosts of different byte order must
// convert; none does today). Sender and receiver compute the length from the
// same plan, so a length mismatch is an error (Status::size_mismatch), never
// a truncation.
//
// ─── Requests and their life ─────────────────────────────────────────────────
//
// The engine names every request by a small integer id in [0, max_requests)
// that it announced in begin(); an id is reused only after the request it
// named has completed in a wait(). Ids let an MPI transport keep an
// MPI_Request array allocated once, outside the round loop.
//
//   post_send(id, d)   starts sending d.bytes from d.data (or d.pieces).
//                      Never blocks on the peer. The engine keeps the data,
//                      and a piece list, unchanged until the request has
//                      completed in wait().
//   post_recv(id, d)   starts receiving the message (d.from → this rank,
//                      d.port, d.sent_at) into d.data. The transport may
//                      write d.data at any time until the request completes
//                      (the engine plans around this, see engine.h).
//   wait(ids, n, &i)   blocks until every listed request has completed.
//
// With postal latency λ the engine posts both sides of a message in the step
// it is sent (s) and waits for both in the step it is received (s+λ−1), so
// messages of up to λ steps are in flight at once. Every rank posts all of
// its step-t requests before it waits in step t, which is what makes the
// exchange deadlock-free on any transport whose posts do not block.
//
// ─── Pieces ──────────────────────────────────────────────────────────────────
//
// The engine receives straight into the caller's output buffers and sends
// straight from its input and output buffers (engine.h), so one message may
// span several separate pieces of memory (e.g. the end of one output buffer
// and the start of another after a rotation). A transport that can move such
// a message without an extra copy says how many pieces it takes per message
// in max_pieces(); descriptors then carry a list of (pointer, bytes) pieces
// that together form the message in order. The wire format does not change:
// the receiver sees the same bytes, and its own pieces may be cut
// differently. MPI maps a list to one hindexed datatype, the threads
// transport copies piece by piece; a transport that keeps the default
// max_pieces() = 1 only ever sees contiguous buffers.
//
// ─── Errors ──────────────────────────────────────────────────────────────────
//
// Errors at this boundary are return codes (Status), not exceptions: the
// round loop stays free of unwinding machinery, and a C or MPI transport can
// implement the interface directly. post_*() may fail at once (e.g. a closed
// connection); wait() reports the first request that failed through
// *failed_index (an index into ids) and returns its status. The engine turns
// any non-ok status into a UserError naming rank, step, peer and port, and
// appends error_detail(). After a failure the endpoint is unusable for the
// rest of the run; the engine calls abandon() and stops.
//
// A transport must not throw from post_send/post_recv/wait/abandon; begin()
// and end() run outside the loop and may throw UserError for setup problems.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/plan.h"

namespace collplan::rt {

using ReqId = uint32_t;

enum class Status : uint8_t {
  ok = 0,
  timeout,        // the peer did not show up within the transport's time limit
  size_mismatch,  // sender and receiver disagree on the message length
  aborted,        // the run was aborted (another rank failed)
  failed,         // any other transport failure (I/O, protocol, CRC, ...)
};

inline const char* status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::timeout: return "timeout";
    case Status::size_mismatch: return "size mismatch";
    case Status::aborted: return "aborted";
    case Status::failed: return "failed";
  }
  return "unknown status";
}

// One contiguous part of a message that lives in several places.
struct SendPiece {
  const void* data = nullptr;
  size_t bytes = 0;
};
struct RecvPiece {
  void* data = nullptr;
  size_t bytes = 0;
};

struct SendDesc {
  ir::Port port = 0;
  ir::Rank to = 0;
  ir::StepNo step = 0;  // the step the message is sent in (its sent_at)
  const void* data = nullptr;
  size_t bytes = 0;
  // num_pieces >= 2: the message is pieces[0], pieces[1], … in this order
  // (their sizes sum to `bytes`; data == pieces[0].data). Only for
  // transports whose max_pieces() >= num_pieces; 0 means data/bytes.
  const SendPiece* pieces = nullptr;
  uint32_t num_pieces = 0;
};

struct RecvDesc {
  ir::Port port = 0;
  ir::Rank from = 0;
  ir::StepNo sent_at = 0;
  void* data = nullptr;
  size_t bytes = 0;
  const RecvPiece* pieces = nullptr;  // as in SendDesc; pieces never overlap
  uint32_t num_pieces = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // This endpoint's rank and the number of ranks it connects.
  virtual ir::Rank rank() const = 0;
  virtual uint32_t size() const = 0;

  // Before step 1 of a run, outside the round loop (may allocate): at most
  // `max_requests` requests will be outstanding at once, with ids below it.
  virtual Status begin(uint32_t max_requests) = 0;
  virtual Status post_send(ReqId id, const SendDesc& d) = 0;
  virtual Status post_recv(ReqId id, const RecvDesc& d) = 0;
  // Blocks until requests ids[0..n) have all completed. On failure returns
  // the first failing request's status and sets *failed_index to its index
  // in ids.
  virtual Status wait(const ReqId* ids, size_t n, size_t* failed_index) = 0;
  // After the last step, when every request has completed.
  virtual Status end() = 0;
  // After a failure: cancel what is outstanding and release the buffers the
  // engine handed over. Must not block for long.
  virtual void abandon() = 0;

  // A human-readable description of the last failure (error path only).
  virtual std::string error_detail() const { return {}; }

  // The most pieces one descriptor may carry (see "Pieces" above). 1, the
  // default, means contiguous buffers only: the engine then gathers and
  // scatters split messages through its own staging. Constant over a run.
  virtual uint32_t max_pieces() const { return 1; }
};

}  // namespace collplan::rt
