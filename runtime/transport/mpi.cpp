#include "runtime/transport/mpi.h"

#include <algorithm>
#include <climits>
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

MpiTransport::MpiTransport(MPI_Comm comm, uint32_t max_pieces) : max_pieces_(std::max<uint32_t>(max_pieces, 1)) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) user_error("the MPI transport needs MPI_Init to have been called");
  if (MPI_Comm_dup(comm, &comm_) != MPI_SUCCESS) user_error("MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &flag);
  if (flag && ub && *ub > 0) tag_mod_ = static_cast<uint64_t>(*ub) + 1;
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

int MpiTransport::tag(ir::StepNo step, ir::Port port) const {
  return static_cast<int>((static_cast<uint64_t>(step) * 4096 + port) % tag_mod_);
}

Status MpiTransport::mpi_failed(int err, const char* what) {
  detail_ = fmt::format("{}: {}", what, mpi_error_string(err));
  return Status::failed;
}

Status MpiTransport::check_post(ReqId id, size_t bytes) {
  if (id >= reqs_.size() || reqs_[id] != MPI_REQUEST_NULL) {
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
  // assign() keeps the capacity of earlier runs: repeated runs allocate nothing.
  reqs_.assign(max_requests, MPI_REQUEST_NULL);
  expect_.assign(max_requests, -1);
  batch_.resize(max_requests);
  statuses_.resize(max_requests);
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

Status MpiTransport::post_send(ReqId id, const SendDesc& d) {
  if (const Status st = check_post(id, d.bytes); st != Status::ok) return st;
  int err = MPI_SUCCESS;
  if (d.num_pieces >= 2) {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    if (const Status st = pieces_type(d.pieces, d.num_pieces, &type); st != Status::ok) return st;
    err = MPI_Isend(const_cast<void*>(d.pieces[0].data), 1, type, static_cast<int>(d.to), tag(d.step, d.port), comm_,
                    &reqs_[id]);
    MPI_Type_free(&type);  // released when the request completes
  } else {
    // MPI_Isend takes a non-const buffer in MPI-2 headers; it does not write it.
    err = MPI_Isend(const_cast<void*>(d.data), static_cast<int>(d.bytes), MPI_BYTE, static_cast<int>(d.to),
                    tag(d.step, d.port), comm_, &reqs_[id]);
  }
  if (err != MPI_SUCCESS) return mpi_failed(err, "MPI_Isend");
  expect_[id] = -1;
  return Status::ok;
}

Status MpiTransport::post_recv(ReqId id, const RecvDesc& d) {
  if (const Status st = check_post(id, d.bytes); st != Status::ok) return st;
  // Exactly the plan's length: a longer message is MPI_ERR_TRUNCATE, a
  // shorter one a count mismatch, both reported as size_mismatch in wait().
  int err = MPI_SUCCESS;
  if (d.num_pieces >= 2) {
    // The received byte count (MPI_Get_count over MPI_BYTE in wait()) is the
    // same as for a contiguous receive.
    MPI_Datatype type = MPI_DATATYPE_NULL;
    if (const Status st = pieces_type(d.pieces, d.num_pieces, &type); st != Status::ok) return st;
    err = MPI_Irecv(d.pieces[0].data, 1, type, static_cast<int>(d.from), tag(d.sent_at, d.port), comm_, &reqs_[id]);
    MPI_Type_free(&type);
  } else {
    err = MPI_Irecv(d.data, static_cast<int>(d.bytes), MPI_BYTE, static_cast<int>(d.from), tag(d.sent_at, d.port),
                    comm_, &reqs_[id]);
  }
  if (err != MPI_SUCCESS) return mpi_failed(err, "MPI_Irecv");
  expect_[id] = static_cast<int64_t>(d.bytes);
  return Status::ok;
}

Status MpiTransport::wait(const ReqId* ids, size_t n, size_t* failed_index) {
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= reqs_.size()) {
      detail_ = fmt::format("wait on request id {} that is not outstanding", ids[i]);
      *failed_index = i;
      return Status::failed;
    }
    batch_[i] = reqs_[ids[i]];
  }
  const int err = MPI_Waitall(static_cast<int>(n), batch_.data(), statuses_.data());
  for (size_t i = 0; i < n; ++i) reqs_[ids[i]] = batch_[i];
  for (size_t i = 0; i < n; ++i) {
    const MPI_Status& s = statuses_[i];
    if (err == MPI_ERR_IN_STATUS && s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) {
      *failed_index = i;
      if (s.MPI_ERROR == MPI_ERR_TRUNCATE) {
        detail_ = fmt::format("the message is longer than the {} bytes the plan expects", expect_[ids[i]]);
        return Status::size_mismatch;
      }
      return mpi_failed(s.MPI_ERROR, "MPI_Waitall");
    }
    if (expect_[ids[i]] >= 0) {
      int count = 0;
      MPI_Get_count(&s, MPI_BYTE, &count);
      if (count != expect_[ids[i]]) {
        *failed_index = i;
        detail_ = fmt::format("the sender sent {} bytes, the plan expects {}", count, expect_[ids[i]]);
        return Status::size_mismatch;
      }
    }
  }
  if (err != MPI_SUCCESS && err != MPI_ERR_IN_STATUS) {
    *failed_index = 0;
    return mpi_failed(err, "MPI_Waitall");
  }
  return Status::ok;
}

Status MpiTransport::end() {
  for (MPI_Request r : reqs_)
    if (r != MPI_REQUEST_NULL) {
      detail_ = "the run ended with requests outstanding";
      return Status::failed;
    }
  return Status::ok;
}

void MpiTransport::abandon() {
  // Receives are cancelled (cancelling a receive completes locally); sends
  // are released and complete in the background if their peer ever receives.
  for (size_t i = 0; i < reqs_.size(); ++i) {
    if (reqs_[i] == MPI_REQUEST_NULL) continue;
    if (expect_[i] >= 0) {
      MPI_Cancel(&reqs_[i]);
      MPI_Wait(&reqs_[i], MPI_STATUS_IGNORE);
    } else {
      MPI_Request_free(&reqs_[i]);
    }
    reqs_[i] = MPI_REQUEST_NULL;
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
