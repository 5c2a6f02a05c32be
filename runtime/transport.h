// The transport interface: how one rank's Engine (runtime/engine.h) moves
// messages, in the shape of MPI's Isend / Irecv / Waitall; the threads, MPI
// and TCP transports implement it.
//
// A message is keyed by (from, to, port, sent_at), unique within a run; its
// bytes are its elements in order, each ℓ values at the field's width in
// host byte order. Both sides take the length from the same plan, so a
// mismatch is Status::size_mismatch, never a truncation. Request ids are
// below the max_requests given to begin() and reused only after wait()
// completed them. Posts never block on the peer. The engine owns every
// buffer and piece list: it keeps them valid, and a send's bytes unchanged,
// until the request completes in wait(); until then the transport may write
// a receive's buffer at any time. Errors are Status codes: post_send,
// post_recv, wait and abandon must not throw (begin and end may throw
// UserError for setup problems); after a failure the endpoint is unusable
// for the rest of the run, and the engine calls abandon(). Calls on one
// endpoint come from one thread at a time.
//
// Why this shape, pieces, and how the engine uses it: docs/runtime.md,
// "Engine internals".
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
  // Right after begin(): every receive of the run, as post_recv will get
  // them (only their keys and lengths are for use now), so a transport can
  // refuse, before it allocates anything, a message the plan does not have.
  // Default: ignored.
  virtual Status expect(const RecvDesc* recvs, size_t n) {
    (void)recvs;
    (void)n;
    return Status::ok;
  }
  virtual Status post_send(ReqId id, const SendDesc& d) = 0;
  virtual Status post_recv(ReqId id, const RecvDesc& d) = 0;
  // Blocks until requests ids[0..n) have all completed. On failure returns
  // the first failing request's status and sets *failed_index to its index
  // in ids.
  virtual Status wait(const ReqId* ids, size_t n, size_t* failed_index) = 0;
  // Never blocks: *done = true when requests ids[0..n) have all completed
  // (they are then consumed, as by wait(), with the same statuses and
  // *failed_index); *done = false leaves every one of them outstanding,
  // to be tested or waited for again. For non-blocking replays
  // (OpProgram::start). Default: wait() (blocks), for transports that
  // cannot test.
  virtual Status test(const ReqId* ids, size_t n, bool* done, size_t* failed_index) {
    *done = true;
    return wait(ids, n, failed_index);
  }
  // After the last step, when every request has completed.
  virtual Status end() = 0;
  // After a failure: cancel what is outstanding and release the buffers the
  // engine handed over. Must not block for long.
  virtual void abandon() = 0;

  // A human-readable description of the last failure (error path only).
  virtual std::string error_detail() const { return {}; }

  // The most pieces one descriptor may carry (SendDesc::pieces; the bytes on
  // the wire are the same however either side cuts them). 1, the default,
  // means contiguous buffers only: the engine then gathers and scatters
  // split messages through its own staging. Constant over a run.
  virtual uint32_t max_pieces() const { return 1; }
};

}  // namespace collplan::rt
