#include "runtime/transport/mpi.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "ir/binary.h"
#include "support/error.h"

namespace collplan::rt {

namespace {

std::string mpi_error_string(int err) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, buf, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", err);
  return std::string(buf, static_cast<size_t>(len));
}

}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm, uint32_t max_pieces, size_t chunk_bytes)
    : max_pieces_(std::max<uint32_t>(max_pieces, 1)), chunk_bytes_(chunk_bytes) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) user_error("the MPI transport needs MPI_Init to have been called");
  if (MPI_Comm_dup(comm, &comm_) != MPI_SUCCESS) user_error("MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  query_comm();
}

void MpiTransport::query_comm() {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &flag);
  if (flag && ub && *ub > 0) tag_mod_ = static_cast<uint64_t>(*ub) + 1;
}

MpiTransport::MpiTransport(Shared shared, uint32_t max_pieces, size_t chunk_bytes)
    : comm_(shared.comm), owns_comm_(false), slot_(shared.slot), slots_(std::max<uint32_t>(shared.slots, 1)),
      max_pieces_(std::max<uint32_t>(max_pieces, 1)), chunk_bytes_(chunk_bytes) {
  if (slot_ >= slots_) user_error("MPI transport slot {} out of range (there are {} slots)", slot_, slots_);
  query_comm();
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (Kept& k : kept_) release(k);
  if (owns_comm_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiTransport::release(Kept& k) {
  for (MPI_Request& r : k.reqs)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  for (MPI_Datatype& t : k.types) MPI_Type_free(&t);
  k = Kept{};
}

void MpiTransport::set_persistent(bool on) {
  if (!on)
    for (Kept& k : kept_) release(k);
  persistent_ = on;
}

template <class Piece>
Status MpiTransport::post_kept(ReqId id, bool send, void* data, size_t bytes, const Piece* pieces, uint32_t np,
                               int peer, int tg) {
  // Request ids are reused within a run (a step's ids are free again once
  // waited for), so kept requests are found by the post's place in the run.
  const size_t key = posts_++;
  if (kept_.size() <= key) kept_.resize(key + 1);
  if (key_of_.size() < reqs_.size()) key_of_.resize(reqs_.size());
  key_of_[id] = key;
  Kept& k = kept_[key];
  const uint32_t n = np < 2 ? 0 : np;
  bool same = !k.reqs.empty() && k.send == send && k.peer == peer && k.tag == tg && k.data == data &&
              k.bytes == bytes && k.pieces.size() == n;
  for (uint32_t i = 0; same && i < n; ++i)
    same = k.pieces[i].first == pieces[i].data && k.pieces[i].second == pieces[i].bytes;
  if (same) {
    reqs_[id] = k.reqs;
    ++starts_;
  } else {
    release(k);
    const Status st = post_chunks(
        id, data, bytes, pieces, np,
        [&](void* buf, int count, MPI_Datatype type, MPI_Request* req) {
          return send ? MPI_Send_init(buf, count, type, peer, tg, comm_, req)
                      : MPI_Recv_init(buf, count, type, peer, tg, comm_, req);
        },
        &k.types);
    k.reqs = reqs_[id];  // what was made, freed with k if this post failed
    if (st != Status::ok) {
      reqs_[id].clear();
      release(k);
      return st;
    }
    k.send = send, k.peer = peer, k.tag = tg, k.data = data, k.bytes = bytes;
    for (uint32_t i = 0; i < n; ++i) k.pieces.emplace_back(pieces[i].data, pieces[i].bytes);
  }
  if (const int err = MPI_Startall(static_cast<int>(k.reqs.size()), k.reqs.data()); err != MPI_SUCCESS) {
    reqs_[id].clear();
    release(k);
    return mpi_failed(err, "MPI_Startall");
  }
  return Status::ok;
}

int MpiTransport::tag(ir::StepNo step, ir::Port port) const {
  return static_cast<int>(((static_cast<uint64_t>(step) * 4096 + port) * slots_ + slot_) % tag_mod_);
}

Status MpiTransport::mpi_failed(int err, const char* what) {
  detail_ = fmt::format("{}: {}", what, mpi_error_string(err));
  return Status::failed;
}

Status MpiTransport::check_post(ReqId id, size_t bytes) {
  if (id >= reqs_.size() || !reqs_[id].empty()) {
    detail_ = fmt::format("request id {} is out of range or still in use", id);
    return Status::failed;
  }
  if (bytes > static_cast<size_t>(INT_MAX)) {
    detail_ = fmt::format("a message of {} bytes exceeds MPI's count limit of {} bytes", bytes, INT_MAX);
    return Status::failed;
  }
  return Status::ok;
}

Status MpiTransport::begin(uint32_t max_requests) {
  // Vectors keep the capacity of earlier runs: repeated runs allocate nothing.
  reqs_.resize(max_requests);
  for (auto& r : reqs_) r.clear();
  posts_ = 0;
  expect_.assign(max_requests, -1);
  detail_.clear();
  return Status::ok;
}

template <class Piece>
Status MpiTransport::pieces_type(const Piece* pieces, uint32_t n, MPI_Datatype* type) {
  if (n > max_pieces()) {
    detail_ = fmt::format("a message in {} pieces exceeds the {} pieces this transport takes", n, max_pieces());
    return Status::failed;
  }
  piece_len_.resize(n);
  piece_disp_.resize(n);
  const auto base = reinterpret_cast<uintptr_t>(pieces[0].data);
  for (uint32_t i = 0; i < n; ++i) {
    // The total was checked against INT_MAX, so every piece fits an int.
    piece_len_[i] = static_cast<int>(pieces[i].bytes);
    piece_disp_[i] = static_cast<MPI_Aint>(reinterpret_cast<uintptr_t>(pieces[i].data) - base);
  }
  int err = MPI_Type_create_hindexed(static_cast<int>(n), piece_len_.data(), piece_disp_.data(), MPI_BYTE, type);
  if (err == MPI_SUCCESS) err = MPI_Type_commit(type);
  if (err != MPI_SUCCESS) return mpi_failed(err, "MPI_Type_create_hindexed");
  return Status::ok;
}

// Posts one message as chunks of at most chunk_bytes_ at the same byte
// offsets on both sides (see "Messages" in mpi.h); each chunk is contiguous
// unless a piece boundary falls inside it.
template <class Piece, class Post>
Status MpiTransport::post_chunks(ReqId id, void* data, size_t bytes, const Piece* pieces, uint32_t np, Post post,
                                 std::vector<MPI_Datatype>* keep_types) {
  const Piece one{data, bytes};
  if (np < 2) pieces = &one, np = 1;
  std::vector<MPI_Request>& parts = reqs_[id];
  uint32_t pi = 0;
  size_t po = 0;  // offset into piece pi
  const size_t chunk = chunk_bytes_ ? chunk_bytes_ : std::max<size_t>(bytes, 1);
  for (size_t off = 0; off < bytes || (bytes == 0 && off == 0); off += chunk) {
    const size_t c = std::min(chunk, bytes - off);
    chunk_.clear();
    for (size_t left = c; left > 0;) {
      const size_t k = std::min(left, pieces[pi].bytes - po);
      chunk_.push_back(SendPiece{static_cast<const unsigned char*>(pieces[pi].data) + po, k});
      left -= k;
      po += k;
      if (po == pieces[pi].bytes) ++pi, po = 0;
    }
    parts.push_back(MPI_REQUEST_NULL);
    int err = MPI_SUCCESS;
    if (chunk_.size() <= 1) {
      err = post(c ? const_cast<void*>(chunk_[0].data) : data, static_cast<int>(c), MPI_BYTE, &parts.back());
    } else {
      MPI_Datatype type = MPI_DATATYPE_NULL;
      if (const Status st = pieces_type(chunk_.data(), static_cast<uint32_t>(chunk_.size()), &type); st != Status::ok)
        return st;
      err = post(const_cast<void*>(chunk_[0].data), 1, type, &parts.back());
      if (keep_types)
        keep_types->push_back(type);
      else
        MPI_Type_free(&type);  // released when the request completes
    }
    if (err != MPI_SUCCESS) return mpi_failed(err, "posting");
    if (bytes == 0) break;
  }
  return Status::ok;
}

Status MpiTransport::post_send(ReqId id, const SendDesc& d) {
  if (const Status st = check_post(id, d.bytes); st != Status::ok) return st;
  expect_[id] = -1;
  if (persistent_)
    return post_kept(id, true, const_cast<void*>(d.data), d.bytes, d.pieces, d.num_pieces, static_cast<int>(d.to),
                     tag(d.step, d.port));
  // MPI_Isend takes a non-const buffer in MPI-2 headers; it does not write it.
  return post_chunks(id, const_cast<void*>(d.data), d.bytes, d.pieces, d.num_pieces,
                     [&](void* buf, int count, MPI_Datatype type, MPI_Request* req) {
                       return MPI_Isend(buf, count, type, static_cast<int>(d.to), tag(d.step, d.port), comm_, req);
                     });
}

Status MpiTransport::post_recv(ReqId id, const RecvDesc& d) {
  if (const Status st = check_post(id, d.bytes); st != Status::ok) return st;
  // Exactly the plan's length: a longer chunk is MPI_ERR_TRUNCATE, a shorter
  // one a count mismatch, both reported as size_mismatch in wait().
  expect_[id] = static_cast<int64_t>(d.bytes);
  if (persistent_)
    return post_kept(id, false, d.data, d.bytes, d.pieces, d.num_pieces, static_cast<int>(d.from),
                     tag(d.sent_at, d.port));
  return post_chunks(id, d.data, d.bytes, d.pieces, d.num_pieces,
                     [&](void* buf, int count, MPI_Datatype type, MPI_Request* req) {
                       return MPI_Irecv(buf, count, type, static_cast<int>(d.from), tag(d.sent_at, d.port), comm_, req);
                     });
}

Status MpiTransport::gather(const ReqId* ids, size_t n, size_t* failed_index) {
  batch_.clear();
  owner_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= reqs_.size() || reqs_[ids[i]].empty()) {
      detail_ = fmt::format("wait on request id {} that is not outstanding", ids[i]);
      *failed_index = i;
      return Status::failed;
    }
    for (MPI_Request r : reqs_[ids[i]]) {
      batch_.push_back(r);
      owner_.push_back(i);
    }
  }
  statuses_.resize(batch_.size());
  return Status::ok;
}

Status MpiTransport::wait(const ReqId* ids, size_t n, size_t* failed_index) {
  if (const Status st = gather(ids, n, failed_index); st != Status::ok) return st;
  const int err = MPI_Waitall(static_cast<int>(batch_.size()), batch_.data(), statuses_.data());
  return complete(ids, n, err, "MPI_Waitall", failed_index);
}

Status MpiTransport::test(const ReqId* ids, size_t n, bool* done, size_t* failed_index) {
  *done = false;
  if (const Status st = gather(ids, n, failed_index); st != Status::ok) return st;
  int flag = 0;
  const int err = MPI_Testall(static_cast<int>(batch_.size()), batch_.data(), &flag, statuses_.data());
  if (!flag && (err == MPI_SUCCESS || err == MPI_ERR_PENDING)) return Status::ok;  // all still outstanding
  if (!flag && err != MPI_ERR_IN_STATUS) {
    *failed_index = 0;
    return mpi_failed(err, "MPI_Testall");
  }
  *done = true;
  return complete(ids, n, err, "MPI_Testall", failed_index);
}

Status MpiTransport::complete(const ReqId* ids, size_t n, int err, const char* what, size_t* failed_index) {
  // batch_ holds what MPI left of the requests: MPI_REQUEST_NULL for the
  // completed ones, an active request only after an error.
  for (size_t i = 0; i < n; ++i) reqs_[ids[i]].clear();
  // A receive's chunks must add up to the plan's length, each chunk exactly
  // as long as the sender's (both cut at the same offsets).
  size_t b = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t want = expect_[ids[i]];
    int64_t got = 0;
    for (; b < batch_.size() && owner_[b] == i; ++b) {
      const MPI_Status& s = statuses_[b];
      if (err == MPI_ERR_IN_STATUS && s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) {
        *failed_index = i;
        if (s.MPI_ERROR == MPI_ERR_TRUNCATE) {
          detail_ = fmt::format("the message is longer than the {} bytes the plan expects", want);
          return Status::size_mismatch;
        }
        return mpi_failed(s.MPI_ERROR, what);
      }
      if (want >= 0) {
        int count = 0;
        MPI_Get_count(&s, MPI_BYTE, &count);
        got += count;
      }
    }
    if (want >= 0 && got != want) {
      *failed_index = i;
      detail_ = fmt::format("the sender sent {} bytes, the plan expects {}", got, want);
      return Status::size_mismatch;
    }
  }
  if (err != MPI_SUCCESS && err != MPI_ERR_IN_STATUS) {
    *failed_index = 0;
    return mpi_failed(err, what);
  }
  return Status::ok;
}

Status MpiTransport::end() {
  for (const auto& r : reqs_)
    if (!r.empty()) {
      detail_ = "the run ended with requests outstanding";
      return Status::failed;
    }
  return Status::ok;
}

void MpiTransport::abandon() {
  // Receives are cancelled (cancelling a receive completes locally); sends
  // are released and complete in the background if their peer ever receives.
  // Kept persistent requests: the active ones (in reqs_) are ended below,
  // the inactive ones freed here.
  if (persistent_)
    for (size_t i = 0; i < reqs_.size() && i < key_of_.size(); ++i)
      if (!reqs_[i].empty()) kept_[key_of_[i]].reqs.clear();
  for (Kept& k : kept_) release(k);
  for (size_t i = 0; i < reqs_.size(); ++i) {
    for (MPI_Request& r : reqs_[i]) {
      if (r == MPI_REQUEST_NULL) continue;
      if (expect_[i] >= 0) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);  // a persistent request stays, inactive
      } else {
        MPI_Request_free(&r);
      }
    }
    reqs_[i].clear();
  }
}

}  // namespace collplan::rt

namespace collplan::mpi {

void check_comm_size(const ir::Plan& plan, MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  const size_t K = plan.ranks.size();
  if (static_cast<size_t>(size) != K)
    user_error("the communicator has {} ranks but the plan has {} (start it with mpirun -np {})", size, K, K);
}

Collective::Collective(const ir::Plan& plan, MPI_Comm comm, rt::EngineOptions eopt) {
  check_comm_size(plan, comm);
  transport_ = std::make_unique<rt::MpiTransport>(comm);
  // Every rank must replay the same plan: compare digests (collective), so a
  // mismatch is reported on every rank instead of as a hang or wrong data.
  const Digest mine = ir::plan_digest(plan);
  std::vector<uint8_t> all(16 * plan.ranks.size());
  MPI_Allgather(mine.bytes.data(), 16, MPI_BYTE, all.data(), 16, MPI_BYTE, transport_->comm());
  for (size_t r = 0; r < plan.ranks.size(); ++r)
    if (std::memcmp(all.data() + 16 * r, all.data(), 16) != 0) {
      Digest other;
      std::memcpy(other.bytes.data(), all.data() + 16 * r, 16);
      Digest first;
      std::memcpy(first.bytes.data(), all.data(), 16);
      user_error("MPI rank {} holds plan {} but rank 0 holds plan {}: every rank must replay the same plan", r,
                 other.hex(), first.hex());
    }
  engine_ = std::make_unique<rt::Engine>(plan, transport_->rank(), eopt);
  // run() is called again and again; COLLPLAN_MPI_PERSISTENT=0 turns the
  // persistent requests off (to compare).
  const char* persist = std::getenv("COLLPLAN_MPI_PERSISTENT");
  transport_->set_persistent(!persist || std::strcmp(persist, "0") != 0);
  in_.resize(engine_->num_inputs());
  out_.resize(engine_->num_outputs());
}

Collective::~Collective() = default;

size_t Collective::num_inputs() const { return engine_->num_inputs(); }
size_t Collective::num_outputs() const { return engine_->num_outputs(); }
size_t Collective::elem_size() const { return engine_->elem_bytes(); }

void Collective::run(const void* sendbuf, void* recvbuf, size_t count) {
  if (count == 0) user_error("collplan::mpi: count = 0; vectors need at least one element");
  const size_t row = count * engine_->elem_bytes();
  for (size_t i = 0; i < in_.size(); ++i) in_[i] = static_cast<const unsigned char*>(sendbuf) + i * row;
  for (size_t j = 0; j < out_.size(); ++j) out_[j] = static_cast<unsigned char*>(recvbuf) + j * row;
  engine_->run(*transport_, in_.data(), out_.data(), count);
}

void run(const ir::Plan& plan, const void* sendbuf, void* recvbuf, size_t count, size_t elem_size, MPI_Comm comm) {
  if (elem_size != plan.spec.field.elem_bytes())
    user_error("collplan::mpi::run: element size {} does not match the plan's field {} ({} bytes per element)",
               elem_size, plan.spec.field.name(), plan.spec.field.elem_bytes());
  Collective c(plan, comm);
  c.run(sendbuf, recvbuf, count);
}

}  // namespace collplan::mpi
