#include "runtime/transport/threads.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::rt {

// ─── ThreadsWorld ────────────────────────────────────────────────────────────

ThreadsWorld::ThreadsWorld(uint32_t size, ThreadsOptions opt) : opt_(opt) {
  if (size == 0) user_error("a threads world needs at least one rank");
  if (opt_.timeout.count() <= 0) user_error("transport timeout = {} ms must be positive", opt_.timeout.count());
  boxes_.reserve(size);
  endpoints_.reserve(size);
  for (uint32_t r = 0; r < size; ++r) {
    boxes_.push_back(std::make_unique<Mailbox>());
    endpoints_.push_back(std::unique_ptr<ThreadsTransport>(new ThreadsTransport(this, r)));
  }
}

ThreadsWorld::~ThreadsWorld() = default;

ThreadsTransport& ThreadsWorld::endpoint(ir::Rank r) {
  COLLPLAN_ASSERT(r < endpoints_.size(), fmt::format("endpoint {} of a world of {}", r, endpoints_.size()));
  return *endpoints_[r];
}

void ThreadsWorld::reserve(ir::Rank r, size_t entries) {
  COLLPLAN_ASSERT(r < boxes_.size(), "reserve: rank out of range");
  std::lock_guard lk(boxes_[r]->mu);
  boxes_[r]->entries.reserve(entries);
}

void ThreadsWorld::abort() {
  aborted_.store(true, std::memory_order_release);
  // Take each lock so that a waiter between its check and its sleep cannot
  // miss the notification.
  for (auto& b : boxes_) {
    std::lock_guard lk(b->mu);
    b->cv.notify_all();
  }
}

void ThreadsWorld::reset() {
  for (auto& b : boxes_) {
    std::lock_guard lk(b->mu);
    for (Entry& e : b->entries) e = Entry{};
  }
  aborted_.store(false, std::memory_order_release);
}

size_t ThreadsWorld::pending() const {
  size_t n = 0;
  for (const auto& b : boxes_) {
    std::lock_guard lk(b->mu);
    for (const Entry& e : b->entries) n += e.used;
  }
  return n;
}

size_t mailbox_capacity(const ir::Plan& plan, ir::Rank r) {
  size_t messages = 0;
  for (const ir::Step& st : plan.ranks.at(r).steps) messages += st.recvs.size();
  return messages;
}

// ─── ThreadsTransport ────────────────────────────────────────────────────────

uint32_t ThreadsTransport::size() const { return world_->size(); }

Status ThreadsTransport::begin(uint32_t max_requests) {
  // assign() reuses the capacity of earlier runs: repeated runs allocate nothing.
  reqs_.assign(max_requests, Request{});
  detail_.clear();
  return world_->aborted() ? Status::aborted : Status::ok;
}

uint32_t ThreadsTransport::max_pieces() const { return world_->options().max_pieces; }

Status ThreadsTransport::post_send(ReqId id, const SendDesc& d) {
  if (d.to >= world_->size()) {
    detail_ = fmt::format("destination rank {} is not in a world of {}", d.to, world_->size());
    return Status::failed;
  }
  return post(id, true, d.to, rank_, d.port, d.step, d.data, nullptr, d.bytes, d.pieces, nullptr, d.num_pieces);
}

Status ThreadsTransport::post_recv(ReqId id, const RecvDesc& d) {
  if (d.from >= world_->size()) {
    detail_ = fmt::format("source rank {} is not in a world of {}", d.from, world_->size());
    return Status::failed;
  }
  return post(id, false, rank_, d.from, d.port, d.sent_at, nullptr, d.data, d.bytes, nullptr, d.pieces, d.num_pieces);
}

namespace {

// Copies a message of `n` bytes between two piece lists (a list of zero
// pieces stands for the single buffer src / dst): one memcpy per overlap.
void copy_pieces(const SendPiece* sp, uint32_t ns, const void* src, const RecvPiece* rp, uint32_t nr, void* dst,
                 size_t n) {
  const SendPiece one_s{src, n};
  const RecvPiece one_r{dst, n};
  if (ns == 0) sp = &one_s, ns = 1;
  if (nr == 0) rp = &one_r, nr = 1;
  uint32_t i = 0, j = 0;
  size_t oi = 0, oj = 0;  // bytes consumed of piece i / j
  while (i < ns && j < nr) {
    const size_t k = std::min(sp[i].bytes - oi, rp[j].bytes - oj);
    if (k)
      std::memcpy(static_cast<unsigned char*>(rp[j].data) + oj, static_cast<const unsigned char*>(sp[i].data) + oi, k);
    oi += k;
    oj += k;
    if (oi == sp[i].bytes) ++i, oi = 0;
    if (oj == rp[j].bytes) ++j, oj = 0;
  }
}

}  // namespace

Status ThreadsTransport::post(ReqId id, bool is_send, uint32_t to, ir::Rank from, ir::Port port,
                              ir::StepNo sent_at, const void* src, void* dst, size_t bytes, const SendPiece* sp,
                              const RecvPiece* rp, uint32_t np) {
  if (id >= reqs_.size() || reqs_[id].active) {
    detail_ = fmt::format("request id {} is out of range or still in use", id);
    return Status::failed;
  }
  ThreadsWorld::Mailbox& mb = *world_->boxes_[to];
  std::unique_lock lk(mb.mu);
  if (world_->aborted()) return Status::aborted;
  auto& entries = mb.entries;
  size_t idx = entries.size(), free_idx = entries.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ThreadsWorld::Entry& e = entries[i];
    if (!e.used) {
      if (free_idx == entries.size()) free_idx = i;
    } else if (e.from == from && e.port == port && e.sent_at == sent_at) {
      idx = i;
      break;
    }
  }
  reqs_[id] = Request{to, 0, true, is_send};
  // Records this side (the sender's source or the receiver's destination).
  auto attach = [&](ThreadsWorld::Entry& e) {
    if (is_send) {
      e.has_send = true;
      e.src = src;
      e.send_bytes = bytes;
      e.src_pieces = np >= 2 ? sp : nullptr;
      e.num_src = np >= 2 ? np : 0;
    } else {
      e.has_recv = true;
      e.dst = dst;
      e.recv_bytes = bytes;
      e.dst_pieces = np >= 2 ? rp : nullptr;
      e.num_dst = np >= 2 ? np : 0;
    }
  };
  if (idx == entries.size()) {
    // First side of this message: leave our buffer for the other side.
    if (free_idx == entries.size()) entries.emplace_back();  // only if mailbox_capacity() was exceeded
    ThreadsWorld::Entry& e = entries[free_idx];
    e = ThreadsWorld::Entry{};
    e.from = from;
    e.port = port;
    e.sent_at = sent_at;
    e.used = true;
    e.watchers = 1;
    attach(e);
    reqs_[id].entry = static_cast<uint32_t>(free_idx);
    return Status::ok;
  }
  ThreadsWorld::Entry& e = entries[idx];
  if ((is_send && e.has_send) || (!is_send && e.has_recv)) {
    reqs_[id].active = false;
    detail_ = fmt::format("message rank {} -> rank {}, port {}, sent at step {} was posted twice by the {}", from, to,
                          port, sent_at, is_send ? "sender" : "receiver");
    return Status::failed;
  }
  reqs_[id].entry = static_cast<uint32_t>(idx);
  e.watchers = 2;
  attach(e);
  if (e.send_bytes != e.recv_bytes) {
    e.status = Status::size_mismatch;
    e.state = ThreadsWorld::Entry::done;
    mb.cv.notify_all();
    return Status::ok;  // both sides learn of it in wait()
  }
  // Second side: copy outside the lock so other senders to this mailbox are
  // not held up by a large payload. The entry cannot be recycled meanwhile:
  // both watchers wait for `done`.
  e.state = ThreadsWorld::Entry::copying;
  const ThreadsWorld::Entry copy = e;
  lk.unlock();
  if (copy.send_bytes)
    copy_pieces(copy.src_pieces, copy.num_src, copy.src, copy.dst_pieces, copy.num_dst, copy.dst, copy.send_bytes);
  lk.lock();
  entries[idx].state = ThreadsWorld::Entry::done;
  mb.cv.notify_all();
  return Status::ok;
}

void ThreadsTransport::release(Request& rq) {
  // Caller holds the mailbox lock.
  ThreadsWorld::Entry& e = world_->boxes_[rq.mailbox]->entries[rq.entry];
  if (--e.watchers == 0) e = ThreadsWorld::Entry{};
  rq.active = false;
}

Status ThreadsTransport::wait(const ReqId* ids, size_t n, size_t* failed_index) {
  const auto deadline = std::chrono::steady_clock::now() + world_->opt_.timeout;
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= reqs_.size() || !reqs_[ids[i]].active) {
      detail_ = fmt::format("wait on request id {} that is not outstanding", ids[i]);
      *failed_index = i;
      return Status::failed;
    }
    Request& rq = reqs_[ids[i]];
    ThreadsWorld::Mailbox& mb = *world_->boxes_[rq.mailbox];
    std::unique_lock lk(mb.mu);
    unsigned spins = 0;
    for (;;) {
      const ThreadsWorld::Entry& e = mb.entries[rq.entry];
      if (e.state == ThreadsWorld::Entry::done) break;
      if (world_->aborted()) {
        detail_ = "another rank failed and the run was aborted";
        *failed_index = i;
        return Status::aborted;
      }
      if (spins < world_->opt_.spin_yields) {
        // Yield before sleeping: with more ranks than cores the peer we wait
        // for is usually runnable on this core, and a futex sleep + wake-up
        // costs far more than letting it run now.
        ++spins;
        lk.unlock();
        std::this_thread::yield();
        lk.lock();
        continue;
      }
      if (mb.cv.wait_until(lk, deadline) == std::cv_status::timeout &&
          mb.entries[rq.entry].state != ThreadsWorld::Entry::done && !world_->aborted()) {
        const ThreadsWorld::Entry& t = mb.entries[rq.entry];
        detail_ = fmt::format("rank {} did not post the matching {} within {} ms", rq.is_send ? rq.mailbox : t.from,
                              rq.is_send ? "receive" : "send", world_->opt_.timeout.count());
        *failed_index = i;
        return Status::timeout;
      }
    }
    ThreadsWorld::Entry& e = mb.entries[rq.entry];
    const Status st = e.status;
    if (st == Status::size_mismatch)
      detail_ = fmt::format("the sender posted {} bytes, the receiver expects {}", e.send_bytes, e.recv_bytes);
    release(rq);
    if (st != Status::ok) {
      *failed_index = i;
      return st;
    }
  }
  return Status::ok;
}

Status ThreadsTransport::end() {
  for (const Request& rq : reqs_)
    if (rq.active) {
      detail_ = "the run ended with requests outstanding";
      return Status::failed;
    }
  return Status::ok;
}

void ThreadsTransport::abandon() {
  // Withdraw our side of every outstanding message, so no peer copies into or
  // out of our buffers after we return. An entry already being copied is
  // waited for (the copy is a bounded memcpy).
  for (Request& rq : reqs_) {
    if (!rq.active) continue;
    ThreadsWorld::Mailbox& mb = *world_->boxes_[rq.mailbox];
    std::unique_lock lk(mb.mu);
    while (mb.entries[rq.entry].state == ThreadsWorld::Entry::copying) mb.cv.wait(lk);
    ThreadsWorld::Entry& e = mb.entries[rq.entry];  // after the wait: the table may have grown meanwhile
    if (e.state == ThreadsWorld::Entry::open) {
      e = ThreadsWorld::Entry{};  // the other side never came: forget the message
      rq.active = false;
    } else {
      release(rq);
    }
  }
}

// ─── ThreadsRunner ───────────────────────────────────────────────────────────

ThreadsRunner::ThreadsRunner(const ir::Plan& plan, ThreadsOptions opt, EngineOptions eopt)
    : world_(static_cast<uint32_t>(plan.ranks.size()), opt) {
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  engines_.reserve(K);
  for (ir::Rank r = 0; r < K; ++r) {
    engines_.push_back(std::make_unique<Engine>(plan, r, eopt));
    world_.reserve(r, mailbox_capacity(plan, r));
    transports_.push_back(opt.wrap ? opt.wrap(r, world_.endpoint(r)) : &world_.endpoint(r));
  }
  threads_.reserve(K);
  try {
    for (ir::Rank r = 0; r < K; ++r) threads_.emplace_back([this, r] { worker(r); });
  } catch (...) {
    {
      std::lock_guard lk(mu_);
      quit_ = true;
    }
    start_cv_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

ThreadsRunner::~ThreadsRunner() {
  {
    std::lock_guard lk(mu_);
    quit_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadsRunner::prepare(size_t len) {
  for (auto& e : engines_) e->prepare(len);
}

void ThreadsRunner::worker(ir::Rank r) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lk(mu_);
      start_cv_.wait(lk, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
    }
    std::exception_ptr err;
    bool is_abort = false;
    try {
      engines_[r]->run(*transports_[r], (*inputs_)[r].data(), (*outputs_)[r].data(), len_);
    } catch (const RunAborted&) {
      err = std::current_exception();
      is_abort = true;
    } catch (...) {
      err = std::current_exception();
    }
    if (err && !is_abort) world_.abort();
    std::lock_guard lk(mu_);
    // Keep the root cause: a real failure outranks the aborts it caused.
    if (err && (!first_error_ || (first_is_abort_ && !is_abort))) {
      first_error_ = err;
      first_is_abort_ = is_abort;
    }
    if (--running_ == 0) done_cv_.notify_all();
  }
}

double ThreadsRunner::run(size_t len, const std::vector<std::vector<const void*>>& inputs,
                          const std::vector<std::vector<void*>>& outputs) {
  const uint32_t K = size();
  if (inputs.size() != K || outputs.size() != K)
    user_error("threads run: {} input lists and {} output lists given, the plan has {} ranks", inputs.size(),
               outputs.size(), K);
  for (ir::Rank r = 0; r < K; ++r) {
    if (inputs[r].size() != engines_[r]->num_inputs())
      user_error("threads run: rank {} has {} inputs in the plan, {} given", r, engines_[r]->num_inputs(),
                 inputs[r].size());
    if (outputs[r].size() != engines_[r]->num_outputs())
      user_error("threads run: rank {} has {} outputs in the plan, {} given", r, engines_[r]->num_outputs(),
                 outputs[r].size());
  }
  prepare(len);
  world_.reset();
  std::chrono::steady_clock::time_point t0;
  {
    std::lock_guard lk(mu_);
    len_ = len;
    inputs_ = &inputs;
    outputs_ = &outputs;
    first_error_ = nullptr;
    first_is_abort_ = false;
    running_ = K;
    ++generation_;
    t0 = std::chrono::steady_clock::now();
  }
  start_cv_.notify_all();
  std::exception_ptr err;
  {
    std::unique_lock lk(mu_);
    done_cv_.wait(lk, [&] { return running_ == 0; });
    err = first_error_;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (err) {
    world_.reset();
    std::rethrow_exception(err);
  }
  COLLPLAN_ASSERT(world_.pending() == 0, "threads run finished with messages left in mailboxes");
  return secs;
}

void run_threads(const ir::Plan& plan, size_t len, const std::vector<std::vector<const void*>>& inputs,
                 const std::vector<std::vector<void*>>& outputs, ThreadsOptions opt) {
  ThreadsRunner runner(plan, opt);
  runner.run(len, inputs, outputs);
}

}  // namespace collplan::rt
