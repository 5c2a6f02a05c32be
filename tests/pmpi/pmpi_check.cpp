// An MPI program that checks MPI's collectives as the application sees them
// (MPI_*: served by libcollplan_pmpi when it is preloaded or linked) against
// the MPI library's own (PMPI_*), on the same data. It knows nothing of
// collplan: run it with and without the library.
//
//   pmpi_check ops      every predefined operation x datatype pair of MPI's
//                       reductions (Allreduce, Reduce at every root,
//                       Reduce_scatter_block, Scan, Exscan), Bcast,
//                       Allgather, Allgatherv, MPI_IN_PLACE, a split
//                       communicator and user operators, at counts that do
//                       and do not divide into blocks
//   pmpi_check repro R  MPI_Allreduce of random doubles R times: every rank
//                       and every run must give the same bits
//   pmpi_check nbc      the non-blocking calls (Iallreduce, Ireduce,
//                       Ireduce_scatter_block, Iscan, Iexscan, Ibcast,
//                       Iallgather, Iallgatherv) against PMPI_'s blocking
//                       results: completed by Wait, Test loops, Waitall in
//                       reverse order, Waitany, Request_free; many pending
//                       at once (more than the library's 64 tag slots);
//                       mixed with blocking collectives and point-to-point
//                       that needs the peer's progress; a split communicator
//
// Integers and bitwise operations must match exactly; floating point within
// a reassociation bound (the library adds in another order than MPI). A
// reduction with a direct result (integers, MPI_BYTE, MPI_C_BOOL) must
// equal it when a plan served the call; a call the library handed to MPI
// (its collplan_pmpi_counts, found with dlsym, did not move: a tuned table
// sends calls to MPI where MPI is faster) must give MPI's own result bit
// for bit — where that differs from the direct result, the MPI library is
// wrong, which is noted, not failed.
// Prints "pmpi_check: OK (<checks> checks)" on rank 0 and exits 0, or prints
// every mismatch and exits 1.
#include <mpi.h>

#include <dlfcn.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

int rank_ = 0, size_ = 0;
long checks = 0, failures = 0;

void fail(const std::string& what) {
  ++failures;
  if (failures <= 20) std::fprintf(stderr, "pmpi_check: rank %d: %s\n", rank_, what.c_str());
}

template <class T> struct Pair { T v; int i; };

enum class Kind { integer, floating, complex, boolean, byte, pair };

// A datatype under test: how to fill and compare its elements.
struct TypeCase {
  const char* name;
  MPI_Datatype type;
  Kind kind;
  size_t size;  // bytes per element (extent)
  void (*fill)(void* buf, size_t n, std::mt19937_64& rng);
  bool (*same)(const void* a, const void* b, size_t n, double tol);  // tol: relative, floating only
  double tol;
  // acc[i] = acc[i] op v[i] as the MPI standard defines op (integers,
  // MPI_BYTE, MPI_C_BOOL; null for the others): the direct result the
  // library's is compared with.
  void (*fold)(MPI_Op op, void* acc, const void* v, size_t n) = nullptr;
};

template <class T>
void fill_int(void* buf, size_t n, std::mt19937_64& rng) {
  T* p = static_cast<T*>(buf);
  // Small values most of the time (products and sums that stay meaningful),
  // the type's extremes some of the time (wrap-around).
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    if (r % 8 == 0)
      p[i] = (r & 16) ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
    else
      p[i] = static_cast<T>(static_cast<int64_t>(r % 7) - (std::is_signed_v<T> ? 3 : 0));
  }
}
template <class T>
bool same_bytes(const void* a, const void* b, size_t n, double) {
  return std::memcmp(a, b, n * sizeof(T)) == 0;
}
template <class T>
void fill_float(void* buf, size_t n, std::mt19937_64& rng) {
  T* p = static_cast<T*>(buf);
  std::uniform_real_distribution<double> d(0.5, 2.0);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>((rng() & 1 ? 1 : -1) * d(rng));
}
template <class T>
bool close(T x, T y, double tol) {
  using std::abs;
  const long double a = static_cast<long double>(x), b = static_cast<long double>(y);
  return std::fabs(a - b) <= tol * std::max<long double>(1, std::max(std::fabs(a), std::fabs(b)));
}
template <class T>
bool same_float(const void* a, const void* b, size_t n, double tol) {
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i)
    if (!close(x[i], y[i], tol)) return false;
  return true;
}
template <class T>
void fill_complex(void* buf, size_t n, std::mt19937_64& rng) {
  fill_float<T>(buf, 2 * n, rng);
}
template <class T>
bool same_complex(const void* a, const void* b, size_t n, double tol) {
  return same_float<T>(a, b, 2 * n, tol);
}
void fill_bool(void* buf, size_t n, std::mt19937_64& rng) {
  bool* p = static_cast<bool*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = rng() % 3 != 0;
}
template <class T>
void fill_pair(void* buf, size_t n, std::mt19937_64& rng) {
  auto* p = static_cast<Pair<T>*>(buf);
  for (size_t i = 0; i < n; ++i) {
    std::memset(&p[i], 0, sizeof p[i]);
    p[i].v = static_cast<T>(rng() % 4);  // ties: the smaller index must win
    p[i].i = rank_;
  }
}
template <class T>
bool same_pair(const void* a, const void* b, size_t n, double) {
  const auto* x = static_cast<const Pair<T>*>(a);
  const auto* y = static_cast<const Pair<T>*>(b);
  for (size_t i = 0; i < n; ++i)
    if (x[i].v != y[i].v || x[i].i != y[i].i) return false;
  return true;
}


template <class T>
void fold_int(MPI_Op op, void* accp, const void* vp, size_t n) {
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  T* acc = static_cast<T*>(accp);
  const T* v = static_cast<const T*>(vp);
  for (size_t i = 0; i < n; ++i) {
    const T a = acc[i], b = v[i];
    T r = a;
    if (op == MPI_SUM) r = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    else if (op == MPI_PROD) r = static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    else if (op == MPI_MIN) r = b < a ? b : a;
    else if (op == MPI_MAX) r = b > a ? b : a;
    else if (op == MPI_LAND) r = static_cast<T>((a != 0) && (b != 0));
    else if (op == MPI_LOR) r = static_cast<T>((a != 0) || (b != 0));
    else if (op == MPI_LXOR) r = static_cast<T>((a != 0) != (b != 0));
    else if (op == MPI_BAND) r = static_cast<T>(a & b);
    else if (op == MPI_BOR) r = static_cast<T>(a | b);
    else if (op == MPI_BXOR) r = static_cast<T>(a ^ b);
    acc[i] = r;
  }
}

void fold_bool(MPI_Op op, void* accp, const void* vp, size_t n) {
  bool* acc = static_cast<bool*>(accp);
  const bool* v = static_cast<const bool*>(vp);
  for (size_t i = 0; i < n; ++i)
    acc[i] = op == MPI_LAND ? (acc[i] && v[i]) : op == MPI_LOR ? (acc[i] || v[i]) : (acc[i] != v[i]);
}

#define INT_CASE(T, M) TypeCase{#M, M, Kind::integer, sizeof(T), fill_int<T>, same_bytes<T>, 0, fold_int<T>}
std::vector<TypeCase> type_cases() {
  std::vector<TypeCase> t = {
      INT_CASE(signed char, MPI_SIGNED_CHAR), INT_CASE(unsigned char, MPI_UNSIGNED_CHAR),
      INT_CASE(short, MPI_SHORT), INT_CASE(unsigned short, MPI_UNSIGNED_SHORT), INT_CASE(int, MPI_INT),
      INT_CASE(unsigned, MPI_UNSIGNED), INT_CASE(long, MPI_LONG), INT_CASE(unsigned long, MPI_UNSIGNED_LONG),
      INT_CASE(long long, MPI_LONG_LONG), INT_CASE(unsigned long long, MPI_UNSIGNED_LONG_LONG),
      INT_CASE(int8_t, MPI_INT8_T), INT_CASE(uint8_t, MPI_UINT8_T), INT_CASE(int16_t, MPI_INT16_T),
      INT_CASE(uint16_t, MPI_UINT16_T), INT_CASE(int32_t, MPI_INT32_T), INT_CASE(uint32_t, MPI_UINT32_T),
      INT_CASE(int64_t, MPI_INT64_T), INT_CASE(uint64_t, MPI_UINT64_T),
      TypeCase{"MPI_BYTE", MPI_BYTE, Kind::byte, 1, fill_int<uint8_t>, same_bytes<uint8_t>, 0, fold_int<uint8_t>},
      TypeCase{"MPI_FLOAT", MPI_FLOAT, Kind::floating, sizeof(float), fill_float<float>, same_float<float>, 1e-4},
      TypeCase{"MPI_DOUBLE", MPI_DOUBLE, Kind::floating, sizeof(double), fill_float<double>, same_float<double>,
               1e-12},
      TypeCase{"MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, Kind::floating, sizeof(long double), fill_float<long double>,
               same_float<long double>, 1e-15},
      TypeCase{"MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, Kind::complex, 2 * sizeof(float), fill_complex<float>,
               same_complex<float>, 1e-4},
      TypeCase{"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, Kind::complex, 2 * sizeof(double),
               fill_complex<double>, same_complex<double>, 1e-12},
      TypeCase{"MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, Kind::complex, 2 * sizeof(long double),
               fill_complex<long double>, same_complex<long double>, 1e-15},
      TypeCase{"MPI_C_BOOL", MPI_C_BOOL, Kind::boolean, sizeof(bool), fill_bool, same_bytes<bool>, 0, fold_bool},
      TypeCase{"MPI_FLOAT_INT", MPI_FLOAT_INT, Kind::pair, sizeof(Pair<float>), fill_pair<float>, same_pair<float>,
               0},
      TypeCase{"MPI_DOUBLE_INT", MPI_DOUBLE_INT, Kind::pair, sizeof(Pair<double>), fill_pair<double>,
               same_pair<double>, 0},
      TypeCase{"MPI_LONG_INT", MPI_LONG_INT, Kind::pair, sizeof(Pair<long>), fill_pair<long>, same_pair<long>, 0},
      TypeCase{"MPI_2INT", MPI_2INT, Kind::pair, sizeof(Pair<int>), fill_pair<int>, same_pair<int>, 0},
      TypeCase{"MPI_SHORT_INT", MPI_SHORT_INT, Kind::pair, sizeof(Pair<short>), fill_pair<short>, same_pair<short>,
               0},
      TypeCase{"MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, Kind::pair, sizeof(Pair<long double>),
               fill_pair<long double>, same_pair<long double>, 0},
  };
  return t;
}

struct OpCase {
  const char* name;
  MPI_Op op;
};

// The operations MPI defines on a kind of datatype (MPI 4.0, 6.9.2).
std::vector<OpCase> ops_for(Kind k) {
  switch (k) {
    case Kind::integer:
      return {{"SUM", MPI_SUM}, {"PROD", MPI_PROD}, {"MIN", MPI_MIN},   {"MAX", MPI_MAX},   {"LAND", MPI_LAND},
              {"LOR", MPI_LOR}, {"LXOR", MPI_LXOR}, {"BAND", MPI_BAND}, {"BOR", MPI_BOR}, {"BXOR", MPI_BXOR}};
    case Kind::floating: return {{"SUM", MPI_SUM}, {"PROD", MPI_PROD}, {"MIN", MPI_MIN}, {"MAX", MPI_MAX}};
    case Kind::complex: return {{"SUM", MPI_SUM}, {"PROD", MPI_PROD}};
    case Kind::boolean: return {{"LAND", MPI_LAND}, {"LOR", MPI_LOR}, {"LXOR", MPI_LXOR}};
    case Kind::byte: return {{"BAND", MPI_BAND}, {"BOR", MPI_BOR}, {"BXOR", MPI_BXOR}};
    case Kind::pair: return {{"MINLOC", MPI_MINLOC}, {"MAXLOC", MPI_MAXLOC}};
  }
  return {};
}

std::string label(const char* call, const TypeCase& t, const OpCase& o, int count, const char* extra = "") {
  return std::string(call) + " " + t.name + " " + o.name + " count " + std::to_string(count) + extra;
}

long mpi_wrong = 0;  // results of the MPI library itself that differ from the direct result

// The direct result over ranks [lo, hi) of `all` (every rank's input, `stride`
// bytes each) at byte offset `off`, for datatypes with a fold; empty otherwise.
std::vector<unsigned char> direct(const TypeCase& t, const OpCase& o, const std::vector<unsigned char>& all,
                                  size_t stride, size_t off, size_t n, int lo, int hi) {
  if (!t.fold || lo >= hi) return {};
  std::vector<unsigned char> acc(all.begin() + lo * stride + off, all.begin() + lo * stride + off + n * t.size);
  for (int r = lo + 1; r < hi; ++r) t.fold(o.op, acc.data(), all.data() + r * stride + off, n);
  return acc;
}

void compare(const std::string& what, const TypeCase& t, const void* got, const void* want, size_t n);

// The library's count of calls a plan served, when it is loaded; a Served
// taken before a call tells whether a plan served it.
using CountsFn = void (*)(unsigned long long*, unsigned long long*);
CountsFn counts_fn() {
  static const auto fn = reinterpret_cast<CountsFn>(dlsym(RTLD_DEFAULT, "collplan_pmpi_counts"));
  return fn;
}
unsigned long long served_so_far() {
  unsigned long long served = 0;
  if (counts_fn()) counts_fn()(&served, nullptr);
  return served;
}
struct Served {
  unsigned long long before = served_so_far();
  // The call since construction went to MPI, with the library loaded.
  bool fell_back() const { return counts_fn() && served_so_far() == before; }
};

// Where a direct result exists (integers, MPI_BYTE, MPI_C_BOOL), the
// library's result must equal it, and the MPI library's own is checked
// against it too (a difference there is the MPI library's, counted and
// shown, not a failure of the library under test); elsewhere the library's
// result is compared with the MPI library's. A call the library handed to
// MPI (fell_back) is compared with MPI's own result instead, bit for bit.
void compare3(const std::string& what, const TypeCase& t, const void* got, const void* mpi,
              const std::vector<unsigned char>& ref, size_t n, bool fell_back) {
  if (ref.empty()) return compare(what, t, got, mpi, n);
  if (fell_back)
    compare(what + " (sent to MPI: against PMPI)", t, got, mpi, n);
  else
    compare(what + " (against the direct result)", t, got, ref.data(), n);
  if (!t.same(mpi, ref.data(), n, 0)) {
    if (mpi_wrong < 5) std::fprintf(stderr, "pmpi_check: rank %d: note: %s: the MPI library's own result differs from the direct result\n", rank_, what.c_str());
    ++mpi_wrong;
  }
}

void compare(const std::string& what, const TypeCase& t, const void* got, const void* want, size_t n) {
  ++checks;
  if (t.same(got, want, n, t.tol)) return;
  // Name the first element that differs (its bytes), to tell a wrong block
  // from a wrong kernel.
  size_t at = 0;
  while (at + 1 < n && t.same(static_cast<const char*>(got) + at * t.size,
                              static_cast<const char*>(want) + at * t.size, 1, t.tol))
    ++at;
  std::string bytes;
  for (size_t b = 0; b < t.size && b < 16; ++b) {
    char h[8];
    std::snprintf(h, sizeof h, "%02x/%02x ", static_cast<const unsigned char*>(got)[at * t.size + b],
                  static_cast<const unsigned char*>(want)[at * t.size + b]);
    bytes += h;
  }
  fail(what + ": differs from PMPI, first at element " + std::to_string(at) + " of " + std::to_string(n) +
       " (got/want bytes " + bytes + ")");
}

// MPI's calls as the application makes them: blocking, or (nb) the
// non-blocking form completed at once by MPI_Wait.
struct Calls {
  bool nb;
  std::string name(const char* call) const { return nb ? std::string("I") + call : std::string(call); }
  void done(MPI_Request* r) const { MPI_Wait(r, MPI_STATUS_IGNORE); }
  void allreduce(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m) const {
    if (!nb) return void(MPI_Allreduce(s, r, c, t, o, m));
    MPI_Request q;
    MPI_Iallreduce(s, r, c, t, o, m, &q);
    done(&q);
  }
  void reduce(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, int root, MPI_Comm m) const {
    if (!nb) return void(MPI_Reduce(s, r, c, t, o, root, m));
    MPI_Request q;
    MPI_Ireduce(s, r, c, t, o, root, m, &q);
    done(&q);
  }
  void reduce_scatter_block(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m) const {
    if (!nb) return void(MPI_Reduce_scatter_block(s, r, c, t, o, m));
    MPI_Request q;
    MPI_Ireduce_scatter_block(s, r, c, t, o, m, &q);
    done(&q);
  }
  void scan(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m) const {
    if (!nb) return void(MPI_Scan(s, r, c, t, o, m));
    MPI_Request q;
    MPI_Iscan(s, r, c, t, o, m, &q);
    done(&q);
  }
  void exscan(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m) const {
    if (!nb) return void(MPI_Exscan(s, r, c, t, o, m));
    MPI_Request q;
    MPI_Iexscan(s, r, c, t, o, m, &q);
    done(&q);
  }
  void bcast(void* b, int c, MPI_Datatype t, int root, MPI_Comm m) const {
    if (!nb) return void(MPI_Bcast(b, c, t, root, m));
    MPI_Request q;
    MPI_Ibcast(b, c, t, root, m, &q);
    done(&q);
  }
  void allgather(const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, MPI_Comm m) const {
    if (!nb) return void(MPI_Allgather(s, sc, st, r, rc, rt, m));
    MPI_Request q;
    MPI_Iallgather(s, sc, st, r, rc, rt, m, &q);
    done(&q);
  }
  void allgatherv(const void* s, int sc, MPI_Datatype st, void* r, const int* rc, const int* d, MPI_Datatype rt,
                  MPI_Comm m) const {
    if (!nb) return void(MPI_Allgatherv(s, sc, st, r, rc, d, rt, m));
    MPI_Request q;
    MPI_Iallgatherv(s, sc, st, r, rc, d, rt, m, &q);
    done(&q);
  }
};

// The reductions of one (type, op, count) on comm.
void check_reductions(const TypeCase& t, const OpCase& o, int count, MPI_Comm comm, std::mt19937_64& rng,
                      Calls call = {false}) {
  int me = 0, K = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &K);
  const size_t n = static_cast<size_t>(count), bytes = n * t.size;
  std::vector<unsigned char> in(bytes * K), a(bytes * K), b(bytes * K);
  t.fill(in.data(), n * K, rng);
  std::vector<unsigned char> all(bytes * K * K);
  PMPI_Allgather(in.data(), static_cast<int>(bytes * K), MPI_BYTE, all.data(), static_cast<int>(bytes * K), MPI_BYTE,
                 comm);
  const size_t stride = bytes * K;
  const std::vector<unsigned char> whole = direct(t, o, all, stride, 0, n, 0, K);

  Served s0;
  call.allreduce(in.data(), a.data(), count, t.type, o.op, comm);
  const bool fb0 = s0.fell_back();
  PMPI_Allreduce(in.data(), b.data(), count, t.type, o.op, comm);
  compare3(label(call.name("Allreduce").c_str(), t, o, count), t, a.data(), b.data(), whole, n, fb0);
  std::memcpy(a.data(), in.data(), bytes);
  Served s1;
  call.allreduce(MPI_IN_PLACE, a.data(), count, t.type, o.op, comm);
  compare3(label(call.name("Allreduce").c_str(), t, o, count, " in place"), t, a.data(), b.data(), whole, n,
           s1.fell_back());

  for (int root = 0; root < K; root += (K > 3 ? K / 3 : 1)) {
    std::memset(a.data(), 0, bytes);
    std::memset(b.data(), 0, bytes);
    Served s;
    call.reduce(in.data(), a.data(), count, t.type, o.op, root, comm);
    const bool fb = s.fell_back();
    PMPI_Reduce(in.data(), b.data(), count, t.type, o.op, root, comm);
    if (me == root)
      compare3(label(call.name("Reduce").c_str(), t, o, count, (" root " + std::to_string(root)).c_str()), t,
               a.data(), b.data(), whole, n, fb);
  }

  Served s2;
  call.reduce_scatter_block(in.data(), a.data(), count, t.type, o.op, comm);
  const bool fb2 = s2.fell_back();
  PMPI_Reduce_scatter_block(in.data(), b.data(), count, t.type, o.op, comm);
  compare3(label(call.name("Reduce_scatter_block").c_str(), t, o, count), t, a.data(), b.data(),
           direct(t, o, all, stride, me * bytes, n, 0, K), n, fb2);

  Served s3;
  call.scan(in.data(), a.data(), count, t.type, o.op, comm);
  const bool fb3 = s3.fell_back();
  PMPI_Scan(in.data(), b.data(), count, t.type, o.op, comm);
  compare3(label(call.name("Scan").c_str(), t, o, count), t, a.data(), b.data(),
           direct(t, o, all, stride, 0, n, 0, me + 1), n, fb3);

  Served s4;
  call.exscan(in.data(), a.data(), count, t.type, o.op, comm);
  const bool fb4 = s4.fell_back();
  PMPI_Exscan(in.data(), b.data(), count, t.type, o.op, comm);
  if (me > 0)
    compare3(label(call.name("Exscan").c_str(), t, o, count), t, a.data(), b.data(),
             direct(t, o, all, stride, 0, n, 0, me), n, fb4);
}

void check_copies(int bytes, MPI_Comm comm, std::mt19937_64& rng, Calls call = {false}) {
  int me = 0, K = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &K);
  const TypeCase bytecase{"MPI_BYTE", MPI_BYTE, Kind::byte, 1, fill_int<uint8_t>, same_bytes<uint8_t>, 0};
  const size_t n = static_cast<size_t>(bytes);
  std::vector<unsigned char> in(n), a(n * K), b(n * K);
  fill_int<uint8_t>(in.data(), n, rng);
  for (int root = 0; root < K; root += (K > 3 ? K / 3 : 1)) {
    std::vector<unsigned char> buf = in;
    std::vector<unsigned char> want(n);
    // Everyone learns the root's data through PMPI first.
    if (me == root) want = in;
    PMPI_Bcast(want.data(), bytes, MPI_BYTE, root, comm);
    if (me != root) std::fill(buf.begin(), buf.end(), 0xEE);
    call.bcast(buf.data(), bytes, MPI_BYTE, root, comm);
    compare(call.name("Bcast ") + std::to_string(bytes) + " B root " + std::to_string(root), bytecase, buf.data(), want.data(),
            n);
  }
  // As ints where the count allows: the same bytes through another type.
  if (bytes % 4 == 0) {
    std::vector<unsigned char> buf = in, want = in;
    PMPI_Bcast(want.data(), bytes / 4, MPI_INT, 0, comm);
    call.bcast(buf.data(), bytes / 4, MPI_INT, 0, comm);
    compare(call.name("Bcast ") + std::to_string(bytes / 4) + " MPI_INT", bytecase, buf.data(), want.data(), n);
  }
  // The same bytes described differently: the root (and, in the allgather,
  // every even rank) uses a strided datatype, the others plain bytes.
  {
    MPI_Datatype strided;
    MPI_Type_vector(bytes, 1, 2, MPI_BYTE, &strided);
    MPI_Type_commit(&strided);
    std::vector<unsigned char> spread(2 * n, 0x77), want(n), got(n, 0xEE);
    for (size_t i = 0; i < n; ++i) spread[2 * i] = in[i];
    const int root = K - 1;
    want = in;
    PMPI_Bcast(want.data(), bytes, MPI_BYTE, root, comm);
    if (me == root)
      call.bcast(spread.data(), 1, strided, root, comm);
    else
      call.bcast(got.data(), bytes, MPI_BYTE, root, comm);
    if (me != root) compare(call.name("Bcast ") + std::to_string(bytes) + " B, strided at the root", bytecase, got.data(), want.data(), n);
    // Strided at a receiver: unpacked when the replay ends, the gaps untouched.
    std::vector<unsigned char> recv(2 * n, 0x77);
    if (me == 0) recv = spread;
    call.bcast(recv.data(), 1, strided, 0, comm);
    std::vector<unsigned char> from0(n), want0 = in;
    PMPI_Bcast(want0.data(), bytes, MPI_BYTE, 0, comm);
    for (size_t i = 0; i < n; ++i) from0[i] = recv[2 * i];
    compare(call.name("Bcast ") + std::to_string(bytes) + " B, strided everywhere", bytecase, from0.data(),
            want0.data(), n);
    for (size_t i = 0; i < n; ++i)
      if (recv[2 * i + 1] != 0x77) {
        fail(call.name("Bcast ") + " strided: a gap byte was written");
        break;
      }
    std::vector<unsigned char> ga(2 * n * K, 0x77), gb(n * K);
    PMPI_Allgather(in.data(), bytes, MPI_BYTE, gb.data(), bytes, MPI_BYTE, comm);
    MPI_Datatype strided_all;
    MPI_Type_create_resized(strided, 0, 2 * bytes, &strided_all);
    MPI_Type_commit(&strided_all);
    if (me % 2 == 0) {
      call.allgather(spread.data(), 1, strided, ga.data(), 1, strided_all, comm);
      std::vector<unsigned char> dense(n * K);
      for (size_t i = 0; i < n * K; ++i) dense[i] = ga[2 * i];
      compare(call.name("Allgather ") + std::to_string(bytes) + " B, strided", bytecase, dense.data(), gb.data(), n * K);
    } else {
      call.allgather(in.data(), bytes, MPI_BYTE, ga.data(), bytes, MPI_BYTE, comm);
      compare(call.name("Allgather ") + std::to_string(bytes) + " B, strided elsewhere", bytecase, ga.data(), gb.data(), n * K);
    }
    MPI_Type_free(&strided_all);
    MPI_Type_free(&strided);
  }
  call.allgather(in.data(), bytes, MPI_BYTE, a.data(), bytes, MPI_BYTE, comm);
  PMPI_Allgather(in.data(), bytes, MPI_BYTE, b.data(), bytes, MPI_BYTE, comm);
  compare(call.name("Allgather ") + std::to_string(bytes) + " B", bytecase, a.data(), b.data(), n * K);
  std::fill(a.begin(), a.end(), 0);
  std::memcpy(a.data() + n * me, in.data(), n);
  call.allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a.data(), bytes, MPI_BYTE, comm);
  compare(call.name("Allgather ") + std::to_string(bytes) + " B in place", bytecase, a.data(), b.data(), n * K);

  // Allgatherv: rank r sends bytes - r (at least 1), blocks in reverse order
  // with gaps.
  std::vector<int> counts(K), displs(K);
  int total = 0;
  for (int r = K - 1; r >= 0; --r) {
    counts[r] = std::max(1, bytes - r);
    displs[r] = total + 3;
    total += counts[r] + 3;
  }
  std::vector<unsigned char> va(total + 3, 0x11), vb(total + 3, 0x11);
  call.allgatherv(in.data(), counts[me], MPI_BYTE, va.data(), counts.data(), displs.data(), MPI_BYTE, comm);
  PMPI_Allgatherv(in.data(), counts[me], MPI_BYTE, vb.data(), counts.data(), displs.data(), MPI_BYTE, comm);
  compare(call.name("Allgatherv around ") + std::to_string(bytes) + " B", bytecase, va.data(), vb.data(), va.size());
}

// 2x2 integer matrices mod 65521: associative, not commutative.
constexpr int64_t kMod = 65521;
void matmul(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* x = static_cast<int*>(in);
  auto* y = static_cast<int*>(inout);
  for (int i = 0; i < *len; ++i, x += 4, y += 4) {
    const int64_t r0 = (int64_t{x[0]} * y[0] + int64_t{x[1]} * y[2]) % kMod;
    const int64_t r1 = (int64_t{x[0]} * y[1] + int64_t{x[1]} * y[3]) % kMod;
    const int64_t r2 = (int64_t{x[2]} * y[0] + int64_t{x[3]} * y[2]) % kMod;
    const int64_t r3 = (int64_t{x[2]} * y[1] + int64_t{x[3]} * y[3]) % kMod;
    y[0] = static_cast<int>(r0), y[1] = static_cast<int>(r1), y[2] = static_cast<int>(r2), y[3] = static_cast<int>(r3);
  }
}
void addmod(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* x = static_cast<int*>(in);
  auto* y = static_cast<int*>(inout);
  for (int i = 0; i < *len; ++i) y[i] = static_cast<int>((int64_t{x[i]} + y[i]) % kMod);
}

void check_user_ops(MPI_Comm comm, std::mt19937_64& rng) {
  MPI_Datatype quad;
  MPI_Type_contiguous(4, MPI_INT, &quad);
  MPI_Type_commit(&quad);
  MPI_Op mm, add;
  MPI_Op_create(matmul, 0, &mm);
  MPI_Op_create(addmod, 1, &add);
  const TypeCase ints{"4 x MPI_INT", MPI_INT, Kind::integer, sizeof(int), fill_int<int>, same_bytes<int>, 0};
  for (int count : {1, 5, 300}) {
    std::vector<int> in(4 * count), a(4 * count), b(4 * count);
    for (int& v : in) v = static_cast<int>(rng() % kMod);
    const OpCase m{"matmul (non-commutative)", mm}, s{"addmod (commutative)", add};
    MPI_Scan(in.data(), a.data(), count, quad, mm, comm);
    PMPI_Scan(in.data(), b.data(), count, quad, mm, comm);
    compare(label("Scan", ints, m, count), ints, a.data(), b.data(), 4 * count);
    MPI_Allreduce(in.data(), a.data(), count, quad, mm, comm);
    PMPI_Allreduce(in.data(), b.data(), count, quad, mm, comm);
    compare(label("Allreduce", ints, m, count), ints, a.data(), b.data(), 4 * count);
    MPI_Allreduce(in.data(), a.data(), 4 * count, MPI_INT, add, comm);
    PMPI_Allreduce(in.data(), b.data(), 4 * count, MPI_INT, add, comm);
    compare(label("Allreduce", ints, s, 4 * count), ints, a.data(), b.data(), 4 * count);
    MPI_Exscan(in.data(), a.data(), 4 * count, MPI_INT, add, comm);
    PMPI_Exscan(in.data(), b.data(), 4 * count, MPI_INT, add, comm);
    int me = 0;
    MPI_Comm_rank(comm, &me);
    if (me > 0) compare(label("Exscan", ints, s, 4 * count), ints, a.data(), b.data(), 4 * count);
  }
  MPI_Op_free(&mm);
  MPI_Op_free(&add);
  MPI_Type_free(&quad);
}

void run_ops(MPI_Comm comm, std::mt19937_64& rng, bool all_types) {
  for (const TypeCase& t : type_cases())
    for (const OpCase& o : ops_for(t.kind))
      for (int count : {1, 7, 1000}) {
        if (!all_types && count != 7) continue;
        check_reductions(t, o, count, comm, rng);
      }
  // Larger vectors, where plans cut into many blocks.
  const TypeCase dbl = type_cases()[20];
  const OpCase sum{"SUM", MPI_SUM};
  for (int count : {4099, 65536 + 3, 262144}) check_reductions(dbl, sum, count, comm, rng);
  for (int bytes : {1, 3, 64, 1000, 65536, 65539, 1 << 20}) check_copies(bytes, comm, rng);
  check_user_ops(comm, rng);
}

// ─── Non-blocking ────────────────────────────────────────────────────────────

void wait1(MPI_Request* r) { MPI_Wait(r, MPI_STATUS_IGNORE); }

// Many pending at once, completed in other orders and by other calls.
void check_nbc_pending(MPI_Comm comm, std::mt19937_64& rng) {
  int me = 0, K = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &K);
  const TypeCase ints{"MPI_INT", MPI_INT, Kind::integer, sizeof(int), fill_int<int>, same_bytes<int>, 0};
  const OpCase sum{"SUM", MPI_SUM};
  // 70 Iallreduce of different data and lengths, waited for in reverse
  // order by one Waitall (more than the 64 tag slots per communicator).
  const int many = 70;
  std::vector<std::vector<int>> in(many), out(many), want(many);
  std::vector<MPI_Request> reqs(many);
  for (int i = 0; i < many; ++i) {
    const int count = 1 + 37 * i;
    in[i].resize(count);
    out[i].assign(count, -1);
    want[i].resize(count);
    fill_int<int>(in[i].data(), count, rng);
    PMPI_Allreduce(in[i].data(), want[i].data(), count, MPI_INT, MPI_SUM, comm);
  }
  for (int i = 0; i < many; ++i)
    MPI_Iallreduce(in[i].data(), out[i].data(), static_cast<int>(in[i].size()), MPI_INT, MPI_SUM, comm, &reqs[i]);
  std::vector<MPI_Request> rev(reqs.rbegin(), reqs.rend());
  MPI_Waitall(many, rev.data(), MPI_STATUSES_IGNORE);
  for (int i = 0; i < many; ++i)
    compare(label("Iallreduce pending", ints, sum, static_cast<int>(in[i].size())), ints, out[i].data(),
            want[i].data(), in[i].size());
  for (MPI_Request r : rev)
    if (r != MPI_REQUEST_NULL) fail("Waitall left a request not null");

  // Test loops, Waitany, Request_free; a blocking collective in between.
  const int n = 5000;
  std::vector<int> x(n), y1(n, -1), y2(n, -1), y3(n, -1), w(n), bc(n), bcw(n);
  fill_int<int>(x.data(), n, rng);
  fill_int<int>(bcw.data(), n, rng);
  PMPI_Allreduce(x.data(), w.data(), n, MPI_INT, MPI_SUM, comm);
  PMPI_Bcast(bcw.data(), n, MPI_INT, 0, comm);
  if (me == 0) bc = bcw;
  MPI_Request r[3];
  MPI_Iallreduce(x.data(), y1.data(), n, MPI_INT, MPI_SUM, comm, &r[0]);
  MPI_Iallreduce(x.data(), y2.data(), n, MPI_INT, MPI_SUM, comm, &r[1]);
  MPI_Iallreduce(x.data(), y3.data(), n, MPI_INT, MPI_SUM, comm, &r[2]);
  MPI_Bcast(bc.data(), n, MPI_INT, 0, comm);  // blocking, with three pending
  compare("Bcast with three Iallreduce pending", ints, bc.data(), bcw.data(), n);
  int flag = 0;
  while (!flag) MPI_Test(&r[1], &flag, MPI_STATUS_IGNORE);
  if (r[1] != MPI_REQUEST_NULL) fail("a completed Test left the request not null");
  compare("Iallreduce by Test loop", ints, y2.data(), w.data(), n);
  int idx = -1;
  MPI_Waitany(3, r, &idx, MPI_STATUS_IGNORE);
  if (idx != 0 && idx != 2) fail("Waitany gave index " + std::to_string(idx));
  MPI_Request_free(&r[2 - idx]);  // the other one: freed before it ends
  MPI_Barrier(comm);              // completes it
  compare("Iallreduce by Waitany", ints, idx == 0 ? y1.data() : y3.data(), w.data(), n);
  compare("Iallreduce freed", ints, idx == 0 ? y3.data() : y1.data(), w.data(), n);
  ++checks;

  // Point-to-point that needs the peer's progress: rank 1 waits for the
  // Iallreduce before it sends to rank 0, which receives before it waits.
  std::fill(y1.begin(), y1.end(), -1);
  MPI_Request q;
  MPI_Iallreduce(x.data(), y1.data(), n, MPI_INT, MPI_SUM, comm, &q);
  int token = 0;
  if (me == 0) {
    MPI_Recv(&token, 1, MPI_INT, 1, 99, comm, MPI_STATUS_IGNORE);
    wait1(&q);
  } else if (me == 1) {
    wait1(&q);
    token = 42;
    MPI_Send(&token, 1, MPI_INT, 0, 99, comm);
  } else {
    wait1(&q);
  }
  if (me == 0 && token != 42) fail("Recv with an Iallreduce pending got " + std::to_string(token));
  compare("Iallreduce across a Recv", ints, y1.data(), w.data(), n);
}

void run_nbc(MPI_Comm comm, std::mt19937_64& rng, bool all) {
  const std::vector<TypeCase> types = type_cases();
  for (const TypeCase& t : types) {
    // Types whose every operation Open MPI 4.1 itself gets right (its int8
    // and int16 SUM saturate in the non-blocking forms too, ompi#8045), so
    // the run with the library off passes as well.
    const bool pick = t.type == MPI_INT || t.type == MPI_LONG_LONG || t.type == MPI_DOUBLE || t.type == MPI_BYTE ||
                      t.type == MPI_2INT || t.type == MPI_C_BOOL;
    if (!pick) continue;
    for (const OpCase& o : ops_for(t.kind))
      for (int count : {1, 7, 1000, 65539}) {
        if ((!all && count != 1000) || (count == 65539 && o.op != MPI_SUM && o.op != MPI_MAXLOC)) continue;
        check_reductions(t, o, count, comm, rng, Calls{true});
      }
  }
  for (int bytes : {1, 64, 65539, 1 << 20}) check_copies(bytes, comm, rng, Calls{true});
  check_nbc_pending(comm, rng);
}

int run_repro(int runs) {
  // Values over many magnitudes: any change of the order of the additions
  // shows in the low bits.
  const int n = 100003;
  std::mt19937_64 rng(12345 + rank_);
  std::vector<double> in(n), first(n), out(n);
  for (double& v : in) v = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), static_cast<int>(rng() % 60) - 30);
  for (int run = 0; run < runs; ++run) {
    MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (run == 0) first = out;
    ++checks;
    if (std::memcmp(first.data(), out.data(), n * sizeof(double)) != 0)
      fail("run " + std::to_string(run) + " gave other bits than run 0");
    // Rank 0's bits to everyone, through MPI itself.
    std::vector<double> zero = out;
    PMPI_Bcast(zero.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    ++checks;
    if (std::memcmp(zero.data(), out.data(), n * sizeof(double)) != 0)
      fail("run " + std::to_string(run) + ": this rank's bits differ from rank 0's");
  }
  return 0;
}

// MPI_Allreduce(BXOR) of each listed number of bytes on MPI_COMM_WORLD,
// against PMPI_: the sizes a test's table sends to plans or to MPI.
int run_sizes(int argc, char** argv) {
  std::mt19937_64 rng(99 + rank_);
  for (int i = 2; i < argc; ++i) {
    const int n = std::atoi(argv[i]);
    std::vector<unsigned char> in(static_cast<size_t>(n)), out(in.size()), want(in.size());
    for (auto& b : in) b = static_cast<unsigned char>(rng());
    MPI_Allreduce(in.data(), out.data(), n, MPI_UNSIGNED_CHAR, MPI_BXOR, MPI_COMM_WORLD);
    PMPI_Allreduce(in.data(), want.data(), n, MPI_UNSIGNED_CHAR, MPI_BXOR, MPI_COMM_WORLD);
    ++checks;
    if (out != want) fail("allreduce of " + std::to_string(n) + " bytes differs from PMPI_Allreduce's");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  const std::string mode = argc > 1 ? argv[1] : "ops";
  if (mode == "ops") {
    std::mt19937_64 rng(777 + rank_);
    run_ops(MPI_COMM_WORLD, rng, true);
    // A split communicator: halves, ranks interleaved.
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank_ % 2, size_ - rank_, &half);
    int hs = 0;
    MPI_Comm_size(half, &hs);
    if (hs >= 2) run_ops(half, rng, false);
    MPI_Comm_free(&half);
  } else if (mode == "nbc") {
    std::mt19937_64 rng(4242 + rank_);
    run_nbc(MPI_COMM_WORLD, rng, true);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank_ % 2, size_ - rank_, &half);
    int hs = 0;
    MPI_Comm_size(half, &hs);
    if (hs >= 2) run_nbc(half, rng, false);
    MPI_Comm_free(&half);
  } else if (mode == "repro") {
    run_repro(argc > 2 ? std::atoi(argv[2]) : 20);
  } else if (mode == "sizes") {
    run_sizes(argc, argv);
  } else {
    if (rank_ == 0) std::fprintf(stderr, "usage: pmpi_check ops | nbc | repro [RUNS] | sizes BYTES...\n");
    MPI_Finalize();
    return 2;
  }
  long all_fail = 0, all_checks = 0, all_mpi_wrong = 0;
  PMPI_Allreduce(&mpi_wrong, &all_mpi_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Allreduce(&failures, &all_fail, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Allreduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) {
    if (all_fail)
      std::printf("pmpi_check: %ld of %ld checks FAILED\n", all_fail, all_checks);
    else
      std::printf("pmpi_check: OK (%ld checks)\n", all_checks);
    if (all_mpi_wrong)
      std::printf("pmpi_check: note: %ld results of the MPI library itself differ from the direct result\n",
                  all_mpi_wrong);
  }
  MPI_Finalize();
  return all_fail ? 1 : 0;
}
