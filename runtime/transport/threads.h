// The in-process transport: all ranks of a plan as threads of one process.
//
// This is the embedded default (no MPI, no sockets) and the reference every
// other transport is compared against in the differential tests.
//
// ─── How a message moves ─────────────────────────────────────────────────────
//
// Each rank owns a mailbox: a small table of entries keyed by (from, port,
// sent_at), guarded by a mutex and a condition variable. Whichever side of a
// message is posted first creates the entry and leaves its buffer pointer
// there; the side posted second finds it, checks the lengths, and copies the
// payload straight from the sender's buffer into the receiver's (one memcpy,
// or one per overlap of the two sides' pieces for a split message; done
// outside the lock), then marks the entry done and wakes the waiters.
// Both sides' wait() return when the entry is done; the entry is recycled when
// both have seen it. So a send never blocks on its receiver, and the engine's
// rule "keep a send's buffer unchanged until it completes" is exactly what
// makes the copy safe. Entry storage is reserved up front (see
// mailbox_capacity()); the round loop allocates only if that estimate was
// exceeded, which a verified plan never does.
//
// ─── Failure ─────────────────────────────────────────────────────────────────
//
// A wait that has not completed `timeout` after it began returns
// Status::timeout, and error_detail() says which side of the message never
// arrived — a missing or mismatched send turns into a clear error instead of
// a hang. A length mismatch is Status::size_mismatch. ThreadsWorld::abort()
// (called when any rank fails) wakes every waiting rank with Status::aborted
// so that one failure ends the whole run promptly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <atomic>
#include <functional>

#include "runtime/engine.h"
#include "runtime/transport.h"

namespace collplan::rt {

struct ThreadsOptions {
  // How long one wait() may block before it fails with Status::timeout.
  std::chrono::milliseconds timeout{60'000};
  // Times a wait yields the processor before it sleeps on the condition
  // variable (0: sleep at once).
  unsigned spin_yields = 64;
  // ThreadsRunner only: when set, rank r's engine runs on wrap(r, endpoint)
  // instead of the endpoint itself — a decorator such as TracingTransport
  // (runtime/trace.h). Called once per rank when the runner is built; the
  // transport it returns must forward to the endpoint and outlive the runner.
  std::function<Transport*(ir::Rank, Transport&)> wrap;
  // Pieces per message an endpoint takes (Transport::max_pieces). Any number
  // costs one memcpy per piece; tests lower it to drive the engine's
  // gather / scatter fallback.
  uint32_t max_pieces = 1u << 16;
};

class ThreadsWorld;

// One rank's endpoint into a ThreadsWorld. Obtained from
// ThreadsWorld::endpoint(); used by one thread at a time.
class ThreadsTransport final : public Transport {
 public:
  ir::Rank rank() const override { return rank_; }
  uint32_t size() const override;
  Status begin(uint32_t max_requests) override;
  Status post_send(ReqId id, const SendDesc& d) override;
  Status post_recv(ReqId id, const RecvDesc& d) override;
  Status wait(const ReqId* ids, size_t n, size_t* failed_index) override;
  Status end() override;
  void abandon() override;
  std::string error_detail() const override { return detail_; }
  // Split messages are copied piece by piece: no staging in the engine.
  uint32_t max_pieces() const override;

 private:
  friend class ThreadsWorld;
  struct Request {
    uint32_t mailbox = 0;  // the receiving rank
    uint32_t entry = 0;
    bool active = false;
    bool is_send = false;
  };
  ThreadsTransport(ThreadsWorld* w, ir::Rank r) : world_(w), rank_(r) {}
  Status post(ReqId id, bool is_send, uint32_t to, ir::Rank from, ir::Port port, ir::StepNo sent_at,
              const void* src, void* dst, size_t bytes, const SendPiece* sp, const RecvPiece* rp, uint32_t np);
  void release(Request& rq);

  ThreadsWorld* world_;
  ir::Rank rank_;
  std::vector<Request> reqs_;
  std::string detail_;
};

// The shared state of one in-process run: K mailboxes and K endpoints.
class ThreadsWorld {
 public:
  explicit ThreadsWorld(uint32_t size, ThreadsOptions opt = {});
  ~ThreadsWorld();
  ThreadsWorld(const ThreadsWorld&) = delete;
  ThreadsWorld& operator=(const ThreadsWorld&) = delete;

  uint32_t size() const { return static_cast<uint32_t>(endpoints_.size()); }
  ThreadsTransport& endpoint(ir::Rank r);
  const ThreadsOptions& options() const { return opt_; }

  // Reserve `entries` mailbox entries for rank r (messages to r that may be
  // outstanding at once). Outside any run.
  void reserve(ir::Rank r, size_t entries);
  // Wake every waiting rank with Status::aborted; later posts and waits fail
  // the same way until reset().
  void abort();
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // Forget every message and clear the abort flag. Only between runs, when
  // no endpoint is in use.
  void reset();
  // Messages still held in mailboxes (0 after a complete, successful run).
  size_t pending() const;

 private:
  friend class ThreadsTransport;
  struct Entry {
    ir::Rank from = 0;
    ir::Port port = 0;
    ir::StepNo sent_at = 0;
    bool used = false;
    bool has_send = false, has_recv = false;
    enum State : uint8_t { open, copying, done } state = open;
    uint8_t watchers = 0;  // sides that have not yet seen `done`
    Status status = Status::ok;
    const void* src = nullptr;
    void* dst = nullptr;
    size_t send_bytes = 0, recv_bytes = 0;
    // Split messages (SendDesc::pieces, transport.h): the posting side's lists.
    const SendPiece* src_pieces = nullptr;
    const RecvPiece* dst_pieces = nullptr;
    uint32_t num_src = 0, num_dst = 0;
  };
  struct Mailbox {
    mutable std::mutex mu;
    std::condition_variable cv;
    std::vector<Entry> entries;
  };
  ThreadsOptions opt_;
  std::vector<std::unique_ptr<Mailbox>> boxes_;
  std::vector<std::unique_ptr<ThreadsTransport>> endpoints_;
  std::atomic<bool> aborted_{false};
};

// Mailbox entries rank r may need at once under `plan`: one per message r
// receives in a run. An entry lives from its first post to the later of
// the two waits, and the engine completes a send late (docs/runtime.md,
// "Sends completed late"): a sender may post a whole run of messages to r
// before r takes the first (a chain's head sends its n blocks at once), so
// no bound per sender tighter than its messages holds.
size_t mailbox_capacity(const ir::Plan& plan, ir::Rank r);

// Runs every rank of a plan on its own persistent thread, repeatedly.
// Engines are built (and their arenas sized) once; run() starts all ranks
// together, waits for all of them and rethrows the first failure (a
// UserError naming rank, step, peer and port).
class ThreadsRunner {
 public:
  explicit ThreadsRunner(const ir::Plan& plan, ThreadsOptions opt = {}, EngineOptions eopt = {});
  ~ThreadsRunner();
  ThreadsRunner(const ThreadsRunner&) = delete;
  ThreadsRunner& operator=(const ThreadsRunner&) = delete;

  uint32_t size() const { return world_.size(); }
  const Engine& engine(ir::Rank r) const { return *engines_[r]; }
  ThreadsWorld& world() { return world_; }

  // Sizes every engine's arena for vectors of `len` elements.
  void prepare(size_t len);
  // inputs[r][i]: rank r's i-th input vector (len elements at the field's
  // width); outputs[r][j] likewise. Returns the wall time in seconds from
  // releasing the ranks to the last one finishing.
  double run(size_t len, const std::vector<std::vector<const void*>>& inputs,
             const std::vector<std::vector<void*>>& outputs);

 private:
  void worker(ir::Rank r);

  ThreadsWorld world_;
  std::vector<std::unique_ptr<Engine>> engines_;
  std::vector<Transport*> transports_;  // each rank's (the endpoint or its wrapper)
  std::vector<std::thread> threads_;

  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  uint64_t generation_ = 0;
  uint32_t running_ = 0;
  bool quit_ = false;
  size_t len_ = 0;
  const std::vector<std::vector<const void*>>* inputs_ = nullptr;
  const std::vector<std::vector<void*>>* outputs_ = nullptr;
  std::exception_ptr first_error_;
  bool first_is_abort_ = false;
};

// One-shot convenience: builds the engines, runs all ranks concurrently,
// joins, and rethrows the first error.
void run_threads(const ir::Plan& plan, size_t len, const std::vector<std::vector<const void*>>& inputs,
                 const std::vector<std::vector<void*>>& outputs, ThreadsOptions opt = {});

}  // namespace collplan::rt
