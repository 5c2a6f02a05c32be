// The MPI transport and the MPI-style API: replay a plan on a communicator.
//
// Built only when CMake finds MPI (COLLPLAN_HAVE_MPI); the library is
// collplan_mpi. Works with any MPI-3 implementation (Open MPI, MPICH).
//
// ─── Mapping ─────────────────────────────────────────────────────────────────
//
// Plan rank r runs on the process of rank r in the communicator, whose size
// must equal the plan's rank count: every rank checks this before any
// communication, so a wrong size is the same clear UserError on every rank.
// The transport works on its own duplicate of the communicator (so the plan's
// messages never match the application's) with MPI_ERRORS_RETURN on it.
//
// ─── Messages ────────────────────────────────────────────────────────────────
//
// One MPI_Isend / MPI_Irecv of MPI_BYTE per plan message, or a persistent
// request started again (set_persistent) (a message in
// pieces, transport.h: of one hindexed datatype over MPI_BYTE, built when it
// is posted and freed at once; MPI keeps it alive until the request
// completes, and the other side may use pieces or not; a message in more
// pieces than the constructor's max_pieces is staged by the engine).
// A message longer than chunk_bytes travels as consecutive MPI messages of
// chunk_bytes (the last shorter) with the same tag: both sides cut at the
// same byte offsets, MPI's non-overtaking order matches the chunks, and a
// chunk is contiguous unless a piece boundary falls inside it. The reason:
// Open MPI moves a contiguous message with one single copy (CMA), a
// non-contiguous one through pipelined shared-memory fragments, which on an
// oversubscribed machine need the peer scheduled for every fragment; with
// 1 MiB chunks a rotated allgather of 1 MiB blocks is all single copies
// (measured: circulant-allgather / MPI_Allgather at 1 MiB 1.12 -> 1.00 for
// K = 8, 1.10 -> 0.95 for K = 16; but allgatherv, whose long messages are
// mostly contiguous and now pay one rendezvous per chunk, 0.81 -> 0.98 and
// 1.01 -> 1.17). Posted in the step
// the message is sent; the engine waits for it (MPI_Waitall over the step's
// due requests) in the step it is received, s+λ−1, so with postal latency λ
// up to λ steps of messages are in flight, as the plan says. The tag is
// (sent_at · 4096 + port) mod (MPI_TAG_UB + 1): messages that can be in
// flight between two ranks at once have distinct tags as long as
// λ · 4096 ≤ MPI_TAG_UB + 1 and ports < 4096 (transports sharing a
// communicator multiply it by their number of slots and add their own, see
// MpiTransport::Shared); beyond that two messages may
// share a tag, and MPI's non-overtaking rule (both sides post in step order)
// still matches them correctly. (Chunks: a length mismatch shows as a
// shorter or truncated chunk only when both sides cut the same number of
// chunks; otherwise a receiver waits for a chunk that never comes, which
// plans with equal digests, checked by Collective, cannot cause.)
// A received length different from the plan's
// is Status::size_mismatch. Messages are limited to INT_MAX bytes (MPI's
// count); a longer one fails with a clear error.
//
// ─── Failure ─────────────────────────────────────────────────────────────────
//
// MPI has no timeouts: a rank that fails (an exception in its engine) leaves
// its peers blocked in MPI_Waitall. An application that catches the error
// must end the job (MPI_Abort), as with any MPI error; `collplan run
// --transport mpi` does so. Setup errors (communicator size, plans that
// differ between ranks) are detected collectively and raised on every rank.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/plan.h"
#include "runtime/engine.h"
#include "runtime/transport.h"

namespace collplan::rt {

class MpiTransport final : public Transport {
 public:
  // Duplicates `comm` (collective over comm). `max_pieces`, `chunk_bytes`:
  // see "Messages" (chunk_bytes = 0: every message is one MPI message).
  explicit MpiTransport(MPI_Comm comm, uint32_t max_pieces = kDefaultMaxPieces,
                        size_t chunk_bytes = kDefaultChunkBytes);
  // Several transports on one private communicator the caller made (and
  // frees after them), e.g. one per outstanding non-blocking collective:
  // transport `slot` of `slots` tags its messages
  // ((step · 4096 + port) · slots + slot) mod (MPI_TAG_UB + 1), so messages
  // of transports with different slots never match while the tags do not
  // wrap (step · 4096 · slots ≤ MPI_TAG_UB). Not collective.
  struct Shared {
    MPI_Comm comm;
    uint32_t slot, slots;
  };
  explicit MpiTransport(Shared shared, uint32_t max_pieces = kDefaultMaxPieces,
                        size_t chunk_bytes = kDefaultChunkBytes);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  ir::Rank rank() const override { return static_cast<ir::Rank>(rank_); }
  uint32_t size() const override { return static_cast<uint32_t>(size_); }
  Status begin(uint32_t max_requests) override;
  Status post_send(ReqId id, const SendDesc& d) override;
  Status post_recv(ReqId id, const RecvDesc& d) override;
  Status wait(const ReqId* ids, size_t n, size_t* failed_index) override;
  Status test(const ReqId* ids, size_t n, bool* done, size_t* failed_index) override;
  Status end() override;
  void abandon() override;
  std::string error_detail() const override { return detail_; }
  uint32_t max_pieces() const override { return max_pieces_; }
  // Measured under Open MPI 4.1 (vader): one hindexed message beat staging
  // the split message and sending it contiguously (allgatherv 1 MiB, K = 8:
  // 0.80 vs 1.54 of MPI_Allgatherv); 1 makes the engine stage instead.
  static constexpr uint32_t kDefaultMaxPieces = 4096;
  static constexpr size_t kDefaultChunkBytes = size_t{1} << 20;

  // The private duplicate the messages travel on.
  MPI_Comm comm() const { return comm_; }

  // Persistent requests, for a plan run many times (mpi::Collective turns
  // them on): the n-th post of a run keeps the MPI requests it made, by
  // MPI_Send_init / MPI_Recv_init, and its hindexed datatypes. The n-th post
  // of a later run with the same direction, peer, tag, buffer, length and
  // pieces starts them again (MPI_Startall) instead of building a request
  // and a datatype per message; anything different frees them and makes new
  // ones. The engine posts a plan's messages in the same order every run,
  // and its staging rows do not move, so a run on the same user buffers
  // starts every request again. Off by default: a
  // one-shot run would only pay for the extra frees.
  void set_persistent(bool on);
  // Posts that started kept requests again (instead of making new ones).
  uint64_t persistent_starts() const { return starts_; }

 private:
  int tag(ir::StepNo step, ir::Port port) const;
  void query_comm();  // rank, size and tag bound of comm_
  Status mpi_failed(int err, const char* what);
  // wait() and test(): gather the requests of ids into batch_.
  Status gather(const ReqId* ids, size_t n, size_t* failed_index);
  // After MPI_Waitall / a successful MPI_Testall over batch_: release ids
  // and check every status and length.
  Status complete(const ReqId* ids, size_t n, int err, const char* what, size_t* failed_index);
  // A free request id and a length MPI can carry, or Status::failed.
  Status check_post(ReqId id, size_t bytes);
  // One hindexed datatype of MPI_BYTE over the pieces, displacements
  // relative to the first piece.
  template <class Piece>
  Status pieces_type(const Piece* pieces, uint32_t n, MPI_Datatype* type);
  // keep_types: the hindexed datatypes go there instead of being freed
  // once posted (persistent requests are started again).
  template <class Piece, class Post>
  Status post_chunks(ReqId id, void* data, size_t bytes, const Piece* pieces, uint32_t np, Post post,
                     std::vector<MPI_Datatype>* keep_types = nullptr);
  // A request id's persistent requests and what they were made for.
  struct Kept {
    bool send = false;
    int peer = -1, tag = -1;
    const void* data = nullptr;
    size_t bytes = 0;
    std::vector<std::pair<const void*, size_t>> pieces;
    std::vector<MPI_Request> reqs;  // inactive between runs
    std::vector<MPI_Datatype> types;
  };
  template <class Piece>
  Status post_kept(ReqId id, bool send, void* data, size_t bytes, const Piece* pieces, uint32_t np, int peer, int tg);
  static void release(Kept& k);  // frees its inactive requests and its datatypes

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_comm_ = true;
  uint32_t slot_ = 0, slots_ = 1;
  int rank_ = 0, size_ = 0;
  uint64_t tag_mod_ = 32768;
  uint32_t max_pieces_ = kDefaultMaxPieces;
  size_t chunk_bytes_ = kDefaultChunkBytes;
  std::vector<std::vector<MPI_Request>> reqs_;  // per id: its chunks' requests
  std::vector<int64_t> expect_;  // receives: the plan's length; sends: −1
  std::vector<MPI_Request> batch_;
  std::vector<size_t> owner_;    // batch_[b] belongs to ids[owner_[b]]
  std::vector<MPI_Status> statuses_;
  std::vector<SendPiece> chunk_;
  std::vector<int> piece_len_;
  std::vector<MPI_Aint> piece_disp_;
  std::string detail_;
  bool persistent_ = false;
  std::vector<Kept> kept_;      // by the post's place in the run, when persistent_
  std::vector<size_t> key_of_;  // request id → its place in kept_
  size_t posts_ = 0;            // posts so far in this run
  uint64_t starts_ = 0;
};

}  // namespace collplan::rt

namespace collplan::mpi {

// A plan bound to a communicator, ready to run many times (like a persistent
// MPI collective): the engine is built and the transport's communicator
// duplicated once. Construction is collective over `comm`: it checks the
// communicator size and that every rank holds the same plan (by digest),
// raising the same UserError on every rank otherwise.
class Collective {
 public:
  Collective(const ir::Plan& plan, MPI_Comm comm, rt::EngineOptions eopt = {});
  ~Collective();
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  // sendbuf: this rank's inputs one after another, `count` elements each
  // (num_inputs() · count · elem_size() bytes); recvbuf: its outputs
  // likewise. Elements are canonical field elements at the field's width,
  // little-endian. Collective: every rank calls it with the same count.
  void run(const void* sendbuf, void* recvbuf, size_t count);

  size_t num_inputs() const;
  size_t num_outputs() const;
  size_t elem_size() const;
  const rt::Engine& engine() const { return *engine_; }
  rt::MpiTransport& transport() { return *transport_; }

 private:
  std::unique_ptr<rt::MpiTransport> transport_;
  std::unique_ptr<rt::Engine> engine_;
  std::vector<const void*> in_;
  std::vector<void*> out_;
};

// One-shot form, in the shape of an MPI collective: `elem_size` is the size
// of one element in bytes and must equal the plan field's width (1 for
// gf256, 2 for gf65536, 4 for prime fields).
void run(const ir::Plan& plan, const void* sendbuf, void* recvbuf, size_t count, size_t elem_size, MPI_Comm comm);

// UserError on every rank unless comm has exactly plan.ranks.size() ranks.
// Not collective (each rank decides from MPI_Comm_size alone).
void check_comm_size(const ir::Plan& plan, MPI_Comm comm);

}  // namespace collplan::mpi
