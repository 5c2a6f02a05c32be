// GF region kernels of the replay engine: an adapter from Field and the
// prepared tables (MadTable, DotTables) to the GF kernel library
// (runtime/embedded/collplan_gf*.h, the kernels emitted code compiles too),
// the GF(2^8) ISA-L path, the Field-arithmetic references (_base) and the
// dispatcher. See gf_kernels.h for the contracts.
#include "runtime/gf/gf_kernels.h"

#include <isa-l/erasure_code.h>

// Every x86 path of the library, each function with its target attribute;
// the dispatcher below picks by what the CPU reports. (Whatever -march the
// engine is built with, so that tests can force each path.)
#define COLLPLAN_EMBEDDED_ISA 5  // COLLPLAN_EMBEDDED_ISA_X86_DISPATCH
#include "runtime/embedded/collplan_gf.h"

#include <algorithm>
#include <cstring>

#include "runtime/gf/gf_detail.h"
#include "support/error.h"

namespace collplan::gf {

namespace {

// ISA-L lengths are `int`; larger regions go in chunks of this many bytes.
constexpr size_t kIsalChunk = size_t{1} << 30;
// gf_vect_mad's documented minimum length (its AVX-512 version rejects less).
constexpr size_t kIsalMadMin = 64;
// Bounce buffer for gf_vect_mul when src and dst are misaligned to each other.
constexpr size_t kBounce = 4096;
// dot() for non-ISA-L fields works on blocks of this many bytes so that each
// destination block stays in L1 while all k sources are folded into it.
constexpr size_t kDotBlockBytes = 8192;

template <class T>
inline T ld(const void* p, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(p) + i * sizeof(T), sizeof(T));
  return v;
}

template <class T>
inline void st(void* p, size_t i, T v) {
  std::memcpy(static_cast<unsigned char*>(p) + i * sizeof(T), &v, sizeof(T));
}

Elem load_elem(const Field& f, const void* p, size_t i) {
  switch (f.elem_bytes()) {
    case 1: return ld<uint8_t>(p, i);
    case 2: return ld<uint16_t>(p, i);
    default: return ld<uint32_t>(p, i);
  }
}

void store_elem(const Field& f, void* p, size_t i, Elem v) {
  switch (f.elem_bytes()) {
    case 1: st<uint8_t>(p, i, static_cast<uint8_t>(v)); break;
    case 2: st<uint16_t>(p, i, static_cast<uint16_t>(v)); break;
    default: st<uint32_t>(p, i, v); break;
  }
}

bool is_gf256(const Field& f) { return f.kind() == FieldKind::GF2m && f.m() == 8; }
bool is_gf65536(const Field& f) { return f.kind() == FieldKind::GF2m && f.m() == 16; }

void check_const(const Field& f, Elem c) {
  COLLPLAN_ASSERT(f.valid(c), fmt::format("GF kernel constant {} is not an element of {}", c, f.name()));
}

// A fixed-capacity array on the stack, spilling to the heap when larger.
template <class T, size_t N>
class SmallBuf {
 public:
  explicit SmallBuf(size_t n) {
    if (n > N) heap_.resize(n);
  }
  T* data() { return heap_.empty() ? local_ : heap_.data(); }

 private:
  T local_[N];
  std::vector<T> heap_;
};

// ── GF(2^8) through ISA-L ──────────────────────────────────────────────────

// c*x from a gf_vect_mul_init table: {c*0..c*15}, {c*0x00, c*0x10, .., c*0xf0}.
inline uint8_t mul8(const unsigned char* tbl, uint8_t x) {
  return static_cast<uint8_t>(tbl[x & 15] ^ tbl[16 + (x >> 4)]);
}

void mad8_isal(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  auto* s = static_cast<unsigned char*>(const_cast<void*>(src));  // ISA-L takes non-const; it only reads
  auto* d = static_cast<unsigned char*>(dst);
  auto* tbl = const_cast<unsigned char*>(t.mad_tbl);
  while (n >= kIsalMadMin) {
    const size_t len = std::min(n, kIsalChunk);
    gf_vect_mad(static_cast<int>(len), 1, 0, tbl, s, d);
    s += len;
    d += len;
    n -= len;
  }
  for (size_t i = 0; i < n; ++i) d[i] ^= mul8(t.mul_tbl, s[i]);
}

void mul8_isal(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  auto* tbl = const_cast<unsigned char*>(t.mul_tbl);
  const auto as = reinterpret_cast<uintptr_t>(s);
  const auto ad = reinterpret_cast<uintptr_t>(d);
  if (((as ^ ad) & 31) == 0) {
    // Same offset mod 32: scalar up to the boundary, ISA-L on whole aligned
    // 32-byte blocks, scalar tail.
    const size_t head = std::min(n, (32 - (as & 31)) & 31);
    size_t i = 0;
    for (; i < head; ++i) d[i] = mul8(t.mul_tbl, s[i]);
    while (n - i >= 32) {
      const size_t len = std::min((n - i) & ~size_t{31}, kIsalChunk);
      const int rc = gf_vect_mul(static_cast<int>(len), tbl, const_cast<unsigned char*>(s + i), d + i);
      COLLPLAN_ASSERT(rc == 0, "gf_vect_mul rejected an aligned multiple-of-32 region");
      i += len;
    }
    for (; i < n; ++i) d[i] = mul8(t.mul_tbl, s[i]);
    return;
  }
  // Misaligned to each other: stage through an aligned buffer (in place).
  alignas(32) unsigned char buf[kBounce];
  for (size_t off = 0; off < n; off += kBounce) {
    const size_t len = std::min(kBounce, n - off);
    std::memcpy(buf, s + off, len);
    const size_t len32 = len & ~size_t{31};
    if (len32) {
      const int rc = gf_vect_mul(static_cast<int>(len32), tbl, buf, buf);
      COLLPLAN_ASSERT(rc == 0, "gf_vect_mul rejected an aligned multiple-of-32 region");
    }
    for (size_t i = len32; i < len; ++i) buf[i] = mul8(t.mul_tbl, buf[i]);
    std::memcpy(d + off, buf, len);
  }
}

void dot8_isal(size_t k, size_t m, const unsigned char* gftbls, const void* const* src, void* const* dst, size_t n) {
  SmallBuf<unsigned char*, 64> sp(k), dp(m);
  unsigned char** s = sp.data();
  unsigned char** d = dp.data();
  for (size_t off = 0; off < n; off += kIsalChunk) {
    const size_t len = std::min(kIsalChunk, n - off);
    for (size_t i = 0; i < k; ++i) s[i] = static_cast<unsigned char*>(const_cast<void*>(src[i])) + off;
    for (size_t j = 0; j < m; ++j) d[j] = static_cast<unsigned char*>(dst[j]) + off;
    ec_encode_data(static_cast<int>(len), static_cast<int>(k), static_cast<int>(m),
                   const_cast<unsigned char*>(gftbls), s, d);
  }
}

// Prepared tables for all 256 constants, built on first use (thread-safe
// static init; 16 KiB), so the unprepared gf256 kernels and prepare_mad cost
// no table construction per call.
const MadTable& gf256_table(Elem c) {
  struct All {
    MadTable t[256];
    All() {
      for (unsigned c = 0; c < 256; ++c) {
        unsigned char cc = static_cast<unsigned char>(c);
        t[c].c = c;
        ec_init_tables(1, 1, &cc, t[c].mad_tbl);
        gf_vect_mul_init(cc, t[c].mul_tbl);
        t[c].gfni = collplan_gf::gfni8(cc, 0x11D);  // gf256's (and ISA-L's) polynomial
      }
    }
  };
  static const All all;
  return all.t[c];
}

// GF(2^16) on a GFNI CPU: what the dispatched kernels read -- the bit
// matrices, and log(c) for the AVX2 version's scalar tail -- without the
// split tables, which cost more to build than a 1 KiB GFNI multiply. For the
// unprepared entry points, which prepare their constant on every call.
MadTable gfni16_table(const Field& f, Elem c) {
  MadTable t;
  t.c = c;
  t.log_c = c ? f.log_table()[c] : 0;
  detail::gfni16_matrices(static_cast<uint16_t>(c), f.poly(), t.gfni16);
  return t;
}

// ── Dispatch ───────────────────────────────────────────────────────────────

// Binary-field add is XOR of the bytes whatever the element width.
detail::AddFn pick_xor() { return detail::cpu_has_avx2() ? detail::xor_avx2 : detail::xor_scalar; }

// GF(2^8): GFNI where the CPU has it (one affine instruction per 64 or 32
// bytes; bench_gf compares it with ISA-L), ISA-L otherwise.
const detail::Impl& impl_gf256() {
  static const detail::Impl impl =
      detail::cpu_has_gfni512() ? detail::Impl{"gfni-avx512", detail::mad8_gfni512, detail::mul8_gfni512, pick_xor()}
      : detail::cpu_has_gfni()  ? detail::Impl{"gfni-avx2", detail::mad8_gfni, detail::mul8_gfni, pick_xor()}
                                : detail::Impl{"isa-l", mad8_isal, mul8_isal, pick_xor()};
  return impl;
}
// GF(2^16): GFNI (four affine instructions per two vectors of elements)
// before the split tables (eight PSHUFB lookups per vector); bench_gf
// measures both.
const detail::Impl& impl_gf65536() {
  static const detail::Impl impl =
      detail::cpu_has_gfni512() ? detail::Impl{"gfni-avx512", detail::mad16_gfni512, detail::mul16_gfni512, pick_xor()}
      : detail::cpu_has_gfni()  ? detail::Impl{"gfni-avx2", detail::mad16_gfni, detail::mul16_gfni, pick_xor()}
      : detail::cpu_has_avx2()
          ? detail::Impl{"avx2-split-table", detail::mad16_avx2, detail::mul16_avx2, detail::xor_avx2}
          : detail::Impl{"scalar-log-exp", detail::mad16_scalar, detail::mul16_scalar, detail::xor_scalar};
  return impl;
}
const detail::Impl& impl_prime() {
  static const detail::Impl impl =
      detail::cpu_has_avx2() ? detail::Impl{"avx2-shoup", detail::madp_avx2, detail::mulp_avx2, detail::addp_avx2}
                             : detail::Impl{"scalar-shoup", detail::madp_scalar, detail::mulp_scalar, detail::addp_scalar};
  return impl;
}
// GF(65537) has its own reduction (2^16 ≡ −1), cheaper than Shoup's.
const detail::Impl& impl_65537() {
  static const detail::Impl impl =
      detail::cpu_has_avx2()
          ? detail::Impl{"avx2-65537", detail::mad65537_avx2, detail::mul65537_avx2, detail::addp_avx2}
          : detail::Impl{"scalar-65537", detail::mad65537_scalar, detail::mul65537_scalar, detail::addp_scalar};
  return impl;
}

bool is_65537(const Field& f) { return f.kind() == FieldKind::Prime && f.size() == 65537; }

void dot_impl(const Field& f, size_t k, size_t m, const MadTable* coef, const unsigned char* gftbls,
              const uint64_t* gfni, const void* const* src, void* const* dst, size_t n) {
  if (m == 0 || n == 0) return;
  const size_t eb = f.elem_bytes();
  if (k == 0) {
    for (size_t j = 0; j < m; ++j) std::memset(dst[j], 0, n * eb);
    return;
  }
  if (is_gf256(f)) {
    if (gfni)
      detail::dot8_gfni512(k, m, gfni, src, dst, n);
    else
      dot8_isal(k, m, gftbls, src, dst, n);
    return;
  }
  if (is_gf65536(f) && detail::cpu_has_gfni512()) {
    detail::dot16_gfni512(k, m, coef, src, dst, n);
    return;
  }
  if (is_gf65536(f) && detail::cpu_has_gfni()) {
    detail::dot16_gfni(f, k, m, coef, src, dst, n);
    return;
  }
  if (is_gf65536(f) && detail::cpu_has_avx2()) {
    detail::dot16_avx2(k, m, coef, src, dst, n);
    return;
  }
  if (f.kind() == FieldKind::Prime && detail::cpu_has_avx2()) {
    // collplan_gf::dot_prime_avx2 picks the reduction by q: delayed below
    // 2^30, the Mersenne fold for 2^31 − 1, Shoup per term otherwise.
    detail::dot_prime_avx2(f, k, m, coef, src, dst, n);
    return;
  }
  const size_t block = kDotBlockBytes / eb;
  for (size_t off = 0; off < n; off += block) {
    const size_t len = std::min(block, n - off);
    for (size_t j = 0; j < m; ++j) {
      auto* d = static_cast<unsigned char*>(dst[j]) + off * eb;
      for (size_t s = 0; s < k; ++s) {
        const auto* sp = static_cast<const unsigned char*>(src[s]) + off * eb;
        if (s == 0)
          mul_prepared(f, coef[j * k], sp, d, len);
        else
          mad_prepared(f, coef[j * k + s], sp, d, len);
      }
    }
  }
}

}  // namespace

namespace detail {

bool cpu_has_avx2() { return collplan_gf::x86_level() >= 2; }
bool cpu_has_gfni() { return collplan_gf::x86_level() >= 3; }
bool cpu_has_gfni512() { return collplan_gf::x86_level() >= 4; }

const Impl& dispatched(const Field& f) {
  if (is_gf256(f)) return impl_gf256();
  if (is_gf65536(f)) return impl_gf65536();
  if (is_65537(f)) return impl_65537();
  return impl_prime();
}

std::vector<Impl> implementations(const Field& f) {
  std::vector<Impl> out{dispatched(f)};
  if (is_gf256(f)) {
    if (cpu_has_gfni512()) out.push_back({"gfni-avx2", mad8_gfni, mul8_gfni, pick_xor()});
    if (cpu_has_gfni()) out.push_back({"isa-l", mad8_isal, mul8_isal, pick_xor()});
    if (cpu_has_avx2()) out.push_back({"isa-l+scalar-xor", mad8_isal, mul8_isal, xor_scalar});
  } else if (is_gf65536(f)) {
    if (cpu_has_gfni512()) out.push_back({"gfni-avx2", mad16_gfni, mul16_gfni, pick_xor()});
    if (cpu_has_gfni()) out.push_back({"avx2-split-table", mad16_avx2, mul16_avx2, xor_avx2});
    if (cpu_has_avx2()) out.push_back({"scalar-log-exp", mad16_scalar, mul16_scalar, xor_scalar});
  } else {
    if (is_65537(f)) {
      if (cpu_has_avx2()) out.push_back({"scalar-65537", mad65537_scalar, mul65537_scalar, addp_scalar});
      out.push_back({cpu_has_avx2() ? "avx2-shoup" : "scalar-shoup", cpu_has_avx2() ? madp_avx2 : madp_scalar,
                     cpu_has_avx2() ? mulp_avx2 : mulp_scalar, cpu_has_avx2() ? addp_avx2 : addp_scalar});
    }
    if (cpu_has_avx2()) out.push_back({"scalar-shoup", madp_scalar, mulp_scalar, addp_scalar});
  }
  return out;
}

void mad16_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  if (t.c == 0) return;
  const uint32_t* lg = f.log_table();
  const uint32_t* ex = f.exp_table() + t.log_c;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t x = ld<uint16_t>(src, i);
    // log[0] is 0, so ex[lg[0]] is a valid read; the mask zeroes it.
    const uint16_t p = static_cast<uint16_t>(ex[lg[x]] & (x ? 0xFFFFu : 0u));
    st<uint16_t>(dst, i, static_cast<uint16_t>(ld<uint16_t>(dst, i) ^ p));
  }
}

void mul16_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  if (t.c == 0) {
    std::memset(dst, 0, n * 2);
    return;
  }
  const uint32_t* lg = f.log_table();
  const uint32_t* ex = f.exp_table() + t.log_c;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t x = ld<uint16_t>(src, i);
    st<uint16_t>(dst, i, static_cast<uint16_t>(ex[lg[x]] & (x ? 0xFFFFu : 0u)));
  }
}


// ── The library's kernels behind the engine's signatures ─────────────────

namespace {
uint32_t modulus(const Field& f) { return static_cast<uint32_t>(f.size()); }
collplan_gf::PrimeCoef prime_of(const MadTable& t) { return {t.c, t.shoup}; }
// The accessors the library's dots take, over m x k row-major tables.
struct Mats8 {
  const uint64_t* a;
  size_t k;
  uint64_t operator()(size_t j, size_t s) const { return a[j * k + s]; }
};
struct Mats16 {
  const MadTable* t;
  size_t k;
  const uint64_t* operator()(size_t j, size_t s) const { return t[j * k + s].gfni16; }
};
struct Split {
  const MadTable* t;
  size_t k;
  const uint8_t (*operator()(size_t j, size_t s) const)[16] { return t[j * k + s].split; }
};
struct Primes {
  const MadTable* t;
  size_t k;
  collplan_gf::PrimeCoef operator()(size_t j, size_t s) const { return prime_of(t[j * k + s]); }
};
}  // namespace


void gfni16_matrices(uint16_t c, uint32_t poly, uint64_t out[4]) {
  if (poly != 0x1100B) {
    collplan_gf::gfni16(c, poly, out);
    return;
  }
  // The matrix of c is linear in c too: the XOR of the matrices of the x^b
  // for the set bits b of c. From 16 basis matrices built once this costs a
  // few dozen independent ANDs and XORs instead of building the blocks bit
  // by bit -- it matters to the unprepared gf::mad(), which prepares its
  // constant on every call.
  struct Basis {
    uint64_t m[16][4];
  };
  static const Basis basis = [] {
    Basis b{};
    for (int i = 0; i < 16; ++i) collplan_gf::gfni16(1u << i, 0x1100B, b.m[i]);
    return b;
  }();
  // Four scalars, not an array: GCC kept an array on the stack and chained
  // every iteration through a store and a reload.
  uint64_t r0 = 0, r1 = 0, r2 = 0, r3 = 0;
  for (int i = 0; i < 16; ++i) {
    const uint64_t mask = 0 - static_cast<uint64_t>((c >> i) & 1);
    r0 ^= basis.m[i][0] & mask;
    r1 ^= basis.m[i][1] & mask;
    r2 ^= basis.m[i][2] & mask;
    r3 ^= basis.m[i][3] & mask;
  }
  out[0] = r0;
  out[1] = r1;
  out[2] = r2;
  out[3] = r3;
}

void mad8_gfni(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mad8_gfni(t.gfni, src, dst, n);
}
void mul8_gfni(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mul8_gfni(t.gfni, src, dst, n);
}
void mad8_gfni512(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mad8_gfni512(t.gfni, src, dst, n);
}
void mul8_gfni512(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mul8_gfni512(t.gfni, src, dst, n);
}
void dot8_gfni512(size_t k, size_t m, const uint64_t* mats, const void* const* src, void* const* dst, size_t n) {
  collplan_gf::dot8_gfni512(k, m, Mats8{mats, k}, src, dst, n, false);
}
void mad16_gfni(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mad16_gfni(t.gfni16, src, dst, n);
}
void mul16_gfni(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mul16_gfni(t.gfni16, src, dst, n);
}
void mad16_gfni512(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mad16_gfni512(t.gfni16, src, dst, n);
}
void mul16_gfni512(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mul16_gfni512(t.gfni16, src, dst, n);
}
void dot16_gfni512(size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst, size_t n) {
  collplan_gf::dot16_gfni512(k, m, Mats16{coef, k}, src, dst, n, false);
}
void dot16_gfni(const Field&, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
                size_t n) {
  collplan_gf::dot16_gfni(k, m, Mats16{coef, k}, src, dst, n, false);
}
void dot16_avx2(size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst, size_t n) {
  collplan_gf::dot16_avx2(k, m, Split{coef, k}, src, dst, n, false);
}

void mad65537_scalar(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mad65537_base(t.c, src, dst, n);
}
void mul65537_scalar(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mul65537_base(t.c, src, dst, n);
}
void mad65537_avx2(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mad65537_avx2(t.c, src, dst, n);
}
void mul65537_avx2(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mul65537_avx2(t.c, src, dst, n);
}
void dotp_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
               size_t n) {
  collplan_gf::dotp_avx2(modulus(f), k, m, Primes{coef, k}, src, dst, n, false);
}
void dot65537_avx2(const Field&, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
                   size_t n) {
  collplan_gf::dot65537_avx2(k, m, Primes{coef, k}, src, dst, n, false);
}
void dotm31_avx2(const Field&, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
                 size_t n) {
  collplan_gf::dotm31_avx2(k, m, Primes{coef, k}, src, dst, n, false);
}
void dots_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
               size_t n) {
  collplan_gf::dots_avx2(modulus(f), k, m, Primes{coef, k}, src, dst, n, false);
}
void dot_prime_avx2(const Field& f, size_t k, size_t m, const MadTable* coef, const void* const* src, void* const* dst,
                    size_t n) {
  collplan_gf::dot_prime_avx2(modulus(f), k, m, Primes{coef, k}, src, dst, n, false);
}

void madp_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::madp_base(modulus(f), prime_of(t), src, dst, n);
}
void mulp_scalar(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mulp_base(modulus(f), prime_of(t), src, dst, n);
}
void xor_scalar(const Field& f, const void* src, void* dst, size_t n) { collplan_gf::xor_base(src, dst, n * f.elem_bytes()); }
void addp_scalar(const Field& f, const void* src, void* dst, size_t n) { collplan_gf::addp_base(modulus(f), src, dst, n); }

void mad16_avx2(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mad16_avx2(t.split, src, dst, n);
}
void mul16_avx2(const Field&, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mul16_avx2(t.split, src, dst, n);
}
void madp_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::madp_avx2(modulus(f), prime_of(t), src, dst, n);
}
void mulp_avx2(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  collplan_gf::mulp_avx2(modulus(f), prime_of(t), src, dst, n);
}
void xor_avx2(const Field& f, const void* src, void* dst, size_t n) { collplan_gf::xor_avx2(src, dst, n * f.elem_bytes()); }
void addp_avx2(const Field& f, const void* src, void* dst, size_t n) { collplan_gf::addp_avx2(modulus(f), src, dst, n); }

}  // namespace detail

// ── References ─────────────────────────────────────────────────────────────

void mad_base(const Field& f, Elem c, const void* src, void* dst, size_t n) {
  check_const(f, c);
  for (size_t i = 0; i < n; ++i) store_elem(f, dst, i, f.add(load_elem(f, dst, i), f.mul(c, load_elem(f, src, i))));
}

void mul_base(const Field& f, Elem c, const void* src, void* dst, size_t n) {
  check_const(f, c);
  for (size_t i = 0; i < n; ++i) store_elem(f, dst, i, f.mul(c, load_elem(f, src, i)));
}

void add_base(const Field& f, const void* src, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_elem(f, dst, i, f.add(load_elem(f, dst, i), load_elem(f, src, i)));
}

void dot_base(const Field& f, size_t k, size_t m, const Elem* coeffs, const void* const* src, void* const* dst,
              size_t n) {
  for (size_t j = 0; j < m * k; ++j) check_const(f, coeffs[j]);
  for (size_t j = 0; j < m; ++j) {
    for (size_t i = 0; i < n; ++i) {
      Elem acc = 0;
      for (size_t s = 0; s < k; ++s) acc = f.add(acc, f.mul(coeffs[j * k + s], load_elem(f, src[s], i)));
      store_elem(f, dst[j], i, acc);
    }
  }
}

// ── Dispatched kernels ─────────────────────────────────────────────────────

MadTable prepare_mad(const Field& f, Elem c) {
  check_const(f, c);
  if (is_gf256(f)) return gf256_table(c);
  MadTable t;
  t.c = c;
  if (is_gf65536(f)) {
    t.log_c = c ? f.log_table()[c] : 0;
    collplan_gf::split_tables(c, 16, f.poly(), t.split);
    detail::gfni16_matrices(static_cast<uint16_t>(c), f.poly(), t.gfni16);
  } else {
    t.shoup = (static_cast<uint64_t>(c) << 32) / f.size();
  }
  return t;
}

void mad_prepared(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  if (n == 0 || t.c == 0) return;
  if (t.c == 1) {
    detail::dispatched(f).add(f, src, dst, n);
  } else if (is_gf256(f)) {
    impl_gf256().mad(f, t, src, dst, n);  // no generic dispatch: this is the replay engine's hot path
  } else {
    detail::dispatched(f).mad(f, t, src, dst, n);
  }
}

void mul_prepared(const Field& f, const MadTable& t, const void* src, void* dst, size_t n) {
  if (n == 0) return;
  if (t.c == 0) {
    std::memset(dst, 0, n * f.elem_bytes());
  } else if (t.c == 1) {
    if (src != dst) std::memmove(dst, src, n * f.elem_bytes());
  } else {
    detail::dispatched(f).mul(f, t, src, dst, n);
  }
}

void mad(const Field& f, Elem c, const void* src, void* dst, size_t n) {
  check_const(f, c);
  if (n == 0 || c == 0) return;
  if (c == 1) {
    detail::dispatched(f).add(f, src, dst, n);
    return;
  }
  if (is_gf256(f)) {
    impl_gf256().mad(f, gf256_table(c), src, dst, n);
    return;
  }
  if (is_gf65536(f) && detail::cpu_has_gfni()) {
    impl_gf65536().mad(f, gfni16_table(f, c), src, dst, n);
    return;
  }
  mad_prepared(f, prepare_mad(f, c), src, dst, n);
}

void mul(const Field& f, Elem c, const void* src, void* dst, size_t n) {
  check_const(f, c);
  if (n == 0) return;
  if (c <= 1) {
    MadTable t;
    t.c = c;
    mul_prepared(f, t, src, dst, n);
    return;
  }
  if (is_gf256(f)) {
    impl_gf256().mul(f, gf256_table(c), src, dst, n);
    return;
  }
  if (is_gf65536(f) && detail::cpu_has_gfni()) {
    impl_gf65536().mul(f, gfni16_table(f, c), src, dst, n);
    return;
  }
  mul_prepared(f, prepare_mad(f, c), src, dst, n);
}

void add(const Field& f, const void* src, void* dst, size_t n) {
  if (n == 0) return;
  detail::dispatched(f).add(f, src, dst, n);
}

DotTables prepare_dot(const Field& f, size_t k, size_t m, const Elem* coeffs) {
  for (size_t j = 0; j < m * k; ++j) check_const(f, coeffs[j]);
  DotTables t;
  t.k = k;
  t.m = m;
  if (is_gf256(f)) {
    std::vector<unsigned char> a(coeffs, coeffs + k * m);  // Elem -> byte; all < 256
    t.gftbls.resize(32 * k * m);
    if (k * m != 0) ec_init_tables(static_cast<int>(k), static_cast<int>(m), a.data(), t.gftbls.data());
    if (detail::cpu_has_gfni512())
      for (size_t j = 0; j < k * m; ++j) t.gfni.push_back(gf256_table(coeffs[j]).gfni);
  } else {
    t.coef.reserve(k * m);
    for (size_t j = 0; j < k * m; ++j) t.coef.push_back(prepare_mad(f, coeffs[j]));
  }
  return t;
}

void dot_prepared(const Field& f, const DotTables& t, const void* const* src, void* const* dst, size_t n) {
  dot_impl(f, t.k, t.m, t.coef.data(), t.gftbls.data(), t.gfni.empty() ? nullptr : t.gfni.data(), src, dst, n);
}

void dot(const Field& f, size_t k, size_t m, const Elem* coeffs, const void* const* src, void* const* dst,
         size_t n) {
  for (size_t j = 0; j < m * k; ++j) check_const(f, coeffs[j]);
  if (m == 0 || n == 0) return;
  if (is_gf256(f) && detail::cpu_has_gfni512()) {
    SmallBuf<uint64_t, 64> mats(k * m);
    for (size_t j = 0; j < k * m; ++j) mats.data()[j] = gf256_table(coeffs[j]).gfni;
    dot_impl(f, k, m, nullptr, nullptr, mats.data(), src, dst, n);
    return;
  }
  if (is_gf256(f)) {
    SmallBuf<unsigned char, 64> a(k * m);
    SmallBuf<unsigned char, 32 * 64> tbls(32 * k * m);
    for (size_t j = 0; j < k * m; ++j) a.data()[j] = static_cast<unsigned char>(coeffs[j]);
    if (k * m != 0) ec_init_tables(static_cast<int>(k), static_cast<int>(m), a.data(), tbls.data());
    dot_impl(f, k, m, nullptr, tbls.data(), nullptr, src, dst, n);
    return;
  }
  SmallBuf<MadTable, 64> coef(k * m);
  const bool lean16 = is_gf65536(f) && detail::cpu_has_gfni();  // dot_impl takes a GFNI dot
  for (size_t j = 0; j < k * m; ++j) coef.data()[j] = lean16 ? gfni16_table(f, coeffs[j]) : prepare_mad(f, coeffs[j]);
  dot_impl(f, k, m, coef.data(), nullptr, nullptr, src, dst, n);
}

const char* kernel_name(const Field& f) { return detail::dispatched(f).name; }

}  // namespace collplan::gf
