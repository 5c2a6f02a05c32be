// GF region kernels: the _base references against Field's scalar arithmetic,
// then every fast implementation (dispatched entry points, prepared forms and
// each CPU-specific variant) against the references, over all GF(2^8)
// constants, many lengths and misaligned pointers, with guard bytes around
// every destination to catch out-of-bounds writes. The GF(2^16) GFNI bit
// matrices are also checked bit by bit, and the dot kernels of each GFNI
// width directly (the dispatched dot runs only the widest).
#include <catch2/catch.hpp>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "field/field.h"
#include "runtime/gf/gf_detail.h"
#include "runtime/gf/gf_kernels.h"
#include "support/error.h"

using namespace collplan;

namespace {

constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0xA5;

// A byte buffer holding n elements at a chosen offset from a 64-byte
// boundary, with guard bytes on both sides.
class Region {
 public:
  Region(const Field& f, size_t n, size_t offset)
      : eb_(f.elem_bytes()), n_(n), store_(2 * kGuard + 64 + n * eb_ + 64, kGuardByte) {
    auto base = reinterpret_cast<uintptr_t>(store_.data()) + kGuard;
    base = (base + 63) & ~uintptr_t{63};
    ptr_ = reinterpret_cast<unsigned char*>(base + offset);
  }
  unsigned char* data() { return ptr_; }
  size_t bytes() const { return n_ * eb_; }
  void fill_from(const std::vector<unsigned char>& v) {
    if (bytes()) std::memcpy(ptr_, v.data(), bytes());
  }
  std::vector<unsigned char> contents() const { return {ptr_, ptr_ + bytes()}; }
  bool guards_intact() const {
    for (const unsigned char* p = store_.data(); p < ptr_; ++p)
      if (*p != kGuardByte) return false;
    for (const unsigned char* p = ptr_ + bytes(); p < store_.data() + store_.size(); ++p)
      if (*p != kGuardByte) return false;
    return true;
  }

 private:
  size_t eb_, n_;
  std::vector<unsigned char> store_;
  unsigned char* ptr_;
};

// n canonical random elements of f, as bytes in the buffer format. Values
// 0 and q-1 are over-represented to exercise reductions at the edges.
std::vector<unsigned char> random_elems(const Field& f, size_t n, std::mt19937_64& rng) {
  std::vector<unsigned char> out(n * f.elem_bytes());
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    Elem v = static_cast<Elem>(r % f.size());
    if ((r >> 60) == 0) v = 0;
    if ((r >> 60) == 1) v = static_cast<Elem>(f.size() - 1);
    std::memcpy(out.data() + i * f.elem_bytes(), &v, f.elem_bytes());  // little-endian low bytes
  }
  return out;
}

const std::vector<size_t> kLengths = {0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4099, 65536 + 5};
// (src offset, dst offset) from a 64-byte boundary.
const std::vector<std::pair<size_t, size_t>> kAlign = {{0, 0}, {1, 1}, {0, 3}, {5, 17}, {31, 0}, {32, 32}};

// Runs one kernel application on copies of (src, dst) placed at the given
// offsets and returns the destination afterwards; checks guards and that
// the source is unchanged.
template <class Fn>
std::vector<unsigned char> run(const Field& f, const std::vector<unsigned char>& src,
                               const std::vector<unsigned char>& dst, size_t n, std::pair<size_t, size_t> al,
                               Fn&& fn) {
  Region s(f, n, al.first), d(f, n, al.second);
  s.fill_from(src);
  d.fill_from(dst);
  fn(static_cast<const void*>(s.data()), static_cast<void*>(d.data()));
  REQUIRE(d.guards_intact());
  REQUIRE(s.guards_intact());
  REQUIRE(s.contents() == src);
  return d.contents();
}

// In-place multiply on one buffer at the given offset.
template <class Fn>
std::vector<unsigned char> run_inplace(const Field& f, const std::vector<unsigned char>& buf, size_t n, size_t off,
                                       Fn&& fn) {
  Region d(f, n, off);
  d.fill_from(buf);
  fn(d.data());
  REQUIRE(d.guards_intact());
  return d.contents();
}

// Checks every fast form of mad/mul/add against the references for one
// constant, one length, all alignments.
void check_all_forms(const Field& f, Elem c, size_t n, std::mt19937_64& rng, bool with_add) {
  INFO(f.name() << " c = " << c << " n = " << n);
  const auto src = random_elems(f, n, rng);
  const auto dst = random_elems(f, n, rng);
  const size_t eb = f.elem_bytes();

  auto want_mad = dst;
  gf::mad_base(f, c, src.data(), want_mad.data(), n);
  std::vector<unsigned char> want_mul(n * eb);
  gf::mul_base(f, c, src.data(), want_mul.data(), n);
  auto want_add = dst;
  if (with_add) gf::add_base(f, src.data(), want_add.data(), n);

  const gf::MadTable t = gf::prepare_mad(f, c);
  REQUIRE(t.c == c);
  const auto impls = gf::detail::implementations(f);
  for (const auto& al : kAlign) {
    INFO("align " << al.first << "," << al.second);
    REQUIRE(run(f, src, dst, n, al, [&](const void* s, void* d) { gf::mad(f, c, s, d, n); }) == want_mad);
    REQUIRE(run(f, src, dst, n, al, [&](const void* s, void* d) { gf::mad_prepared(f, t, s, d, n); }) == want_mad);
    REQUIRE(run(f, src, dst, n, al, [&](const void* s, void* d) { gf::mul(f, c, s, d, n); }) == want_mul);
    REQUIRE(run(f, src, dst, n, al, [&](const void* s, void* d) { gf::mul_prepared(f, t, s, d, n); }) == want_mul);
    REQUIRE(run_inplace(f, src, n, al.second, [&](void* d) { gf::mul(f, c, d, d, n); }) == want_mul);
    REQUIRE(run_inplace(f, src, n, al.first, [&](void* d) { gf::mul_prepared(f, t, d, d, n); }) == want_mul);
    for (const auto& impl : impls) {
      INFO("implementation " << impl.name);
      REQUIRE(run(f, src, dst, n, al, [&](const void* s, void* d) { impl.mad(f, t, s, d, n); }) == want_mad);
      REQUIRE(run(f, src, dst, n, al, [&](const void* s, void* d) { impl.mul(f, t, s, d, n); }) == want_mul);
      REQUIRE(run_inplace(f, src, n, al.second, [&](void* d) { impl.mul(f, t, d, d, n); }) == want_mul);
      if (with_add)
        REQUIRE(run(f, src, dst, n, al, [&](const void* s, void* d) { impl.add(f, s, d, n); }) == want_add);
    }
    if (with_add) REQUIRE(run(f, src, dst, n, al, [&](const void* s, void* d) { gf::add(f, s, d, n); }) == want_add);
  }
}

std::vector<Elem> sampled_constants(const Field& f, std::mt19937_64& rng, int random_count) {
  const Elem q1 = static_cast<Elem>(f.size() - 1);
  std::vector<Elem> cs = {0, 1, 2, 3, q1, q1 - 1, q1 / 2, static_cast<Elem>(f.generator())};
  if (f.size() > 0x8000) cs.insert(cs.end(), {0x100, 0x1234, 0x8000});
  for (int i = 0; i < random_count; ++i) cs.push_back(static_cast<Elem>(rng() % f.size()));
  // Small fields: drop what is not an element, and duplicates.
  std::vector<Elem> out;
  for (Elem c : cs)
    if (f.valid(c) && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

}  // namespace

TEST_CASE("gf _base kernels agree with scalar Field arithmetic", "[gf]") {
  std::mt19937_64 rng(1);
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(2), Field::prime(257), Field::prime(65537),
                         Field::prime(2147483647)}) {
    INFO(f.name());
    const size_t n = 1000;
    // Typed copies: the reference here reads elements as integers of the
    // field's width, independently of the kernels' byte handling.
    std::vector<uint64_t> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = rng() % f.size();
      b[i] = rng() % f.size();
    }
    auto pack = [&](const std::vector<uint64_t>& v) {
      std::vector<unsigned char> out;
      for (uint64_t x : v)
        for (uint32_t k = 0; k < f.elem_bytes(); ++k) out.push_back(static_cast<unsigned char>(x >> (8 * k)));
      return out;
    };
    auto unpack = [&](const std::vector<unsigned char>& v) {
      std::vector<uint64_t> out(n);
      for (size_t i = 0; i < n; ++i)
        for (uint32_t k = 0; k < f.elem_bytes(); ++k) out[i] |= uint64_t{v[i * f.elem_bytes() + k]} << (8 * k);
      return out;
    };
    for (Elem c : sampled_constants(f, rng, 5)) {
      auto d = pack(b);
      gf::mad_base(f, c, pack(a).data(), d.data(), n);
      auto got = unpack(d);
      for (size_t i = 0; i < n; ++i) REQUIRE(got[i] == f.add(b[i], f.mul(c, a[i])));
      d = pack(b);
      gf::mul_base(f, c, pack(a).data(), d.data(), n);
      got = unpack(d);
      for (size_t i = 0; i < n; ++i) REQUIRE(got[i] == f.mul(c, a[i]));
    }
    auto d = pack(b);
    gf::add_base(f, pack(a).data(), d.data(), n);
    auto got = unpack(d);
    for (size_t i = 0; i < n; ++i) REQUIRE(got[i] == f.add(a[i], b[i]));

    // dot_base: 3 sources -> 2 outputs.
    const std::vector<Elem> co = {static_cast<Elem>(rng() % f.size()), 1, 0, static_cast<Elem>(rng() % f.size()),
                                  static_cast<Elem>(rng() % f.size()), static_cast<Elem>(f.size() - 1)};
    std::vector<uint64_t> c3(n);
    for (auto& x : c3) x = rng() % f.size();
    const auto pa = pack(a), pb = pack(b), pc = pack(c3);
    std::vector<unsigned char> o0(n * f.elem_bytes(), 0xEE), o1(n * f.elem_bytes(), 0xEE);
    const void* srcs[] = {pa.data(), pb.data(), pc.data()};
    void* dsts[] = {o0.data(), o1.data()};
    gf::dot_base(f, 3, 2, co.data(), srcs, dsts, n);
    const auto g0 = unpack(o0), g1 = unpack(o1);
    for (size_t i = 0; i < n; ++i) {
      REQUIRE(g0[i] == f.add(f.add(f.mul(co[0], a[i]), f.mul(co[1], b[i])), f.mul(co[2], c3[i])));
      REQUIRE(g1[i] == f.add(f.add(f.mul(co[3], a[i]), f.mul(co[4], b[i])), f.mul(co[5], c3[i])));
    }
  }
}

TEST_CASE("gf256 kernels: all 256 constants, all lengths, misaligned", "[gf]") {
  const Field f = Field::gf256();
  REQUIRE(std::string(gf::kernel_name(f)) ==
          (gf::detail::cpu_has_gfni512() ? "gfni-avx512" : gf::detail::cpu_has_gfni() ? "gfni-avx2" : "isa-l"));
  std::mt19937_64 rng(256);
  for (size_t n : kLengths)
    for (Elem c = 0; c < 256; ++c) check_all_forms(f, c, n, rng, c == 0);
}

TEST_CASE("gf65536 kernels: sampled constants", "[gf]") {
  const Field f = Field::gf65536();
  REQUIRE(std::string(gf::kernel_name(f)) == (gf::detail::cpu_has_gfni512() ? "gfni-avx512"
                                              : gf::detail::cpu_has_gfni() ? "gfni-avx2"
                                              : gf::detail::cpu_has_avx2() ? "avx2-split-table"
                                                                           : "scalar-log-exp"));
  std::mt19937_64 rng(65536);
  auto cs = sampled_constants(f, rng, 12);
  // Powers of the generator: constants whose products reduce on every input
  // bit, and g^(q-2) = 1/g.
  for (uint64_t e : {2u, 8u, 15u, 16u, 17u, 255u, 256u, 4097u, 65534u}) cs.push_back(f.pow(f.generator(), e));
  for (size_t n : kLengths)
    for (size_t i = 0; i < cs.size(); ++i) check_all_forms(f, cs[i], n, rng, i == 0);
}

TEST_CASE("gf65536 GFNI matrices: every bit against Field::mul, and a wrong one is caught", "[gf]") {
  const Field f = Field::gf65536();
  std::mt19937_64 rng(16);
  std::vector<Elem> cs = {0, 1, 2, 0xFFFF, 0x8000, static_cast<Elem>(f.generator())};
  for (int i = 0; i < 20; ++i) cs.push_back(static_cast<Elem>(rng() % f.size()));
  for (Elem c : cs) {
    INFO("c = " << c);
    const gf::MadTable t = gf::prepare_mad(f, c);
    uint64_t direct[4];
    gf::detail::gfni16_matrices(static_cast<uint16_t>(c), f.poly(), direct);
    // Block (o, in), row i (byte 7 - i), bit j = bit 8o + i of c * x^(8in + j).
    for (uint32_t o = 0; o < 2; ++o)
      for (uint32_t in = 0; in < 2; ++in)
        for (uint32_t i = 0; i < 8; ++i)
          for (uint32_t j = 0; j < 8; ++j) {
            const uint64_t want = (f.mul(c, Elem{1} << (8 * in + j)) >> (8 * o + i)) & 1;
            REQUIRE(((t.gfni16[2 * o + in] >> (8 * (7 - i) + j)) & 1) == want);
            REQUIRE(((direct[2 * o + in] >> (8 * (7 - i) + j)) & 1) == want);
          }
  }

  // Each GFNI kernel reads all four blocks: one flipped bit in any block
  // changes its output, so the comparisons above would see a wrong matrix.
  const size_t n = 200;  // vector blocks and a tail
  const auto src = random_elems(f, n, rng);
  const gf::MadTable good = gf::prepare_mad(f, 0x1234);
  std::vector<unsigned char> want(2 * n);
  gf::mul_base(f, 0x1234, src.data(), want.data(), n);
  for (const auto& impl : gf::detail::implementations(f)) {
    if (std::string(impl.name).rfind("gfni", 0) != 0) continue;
    INFO("implementation " << impl.name);
    std::vector<unsigned char> got(2 * n);
    impl.mul(f, good, src.data(), got.data(), n);
    REQUIRE(got == want);
    for (int b = 0; b < 4; ++b) {
      gf::MadTable bad = good;
      bad.gfni16[b] ^= uint64_t{1} << (8 * (b + 1) + b);
      impl.mul(f, bad, src.data(), got.data(), n);
      REQUIRE(got != want);
      std::vector<unsigned char> acc(2 * n, 0);
      impl.mad(f, bad, src.data(), acc.data(), n);
      REQUIRE(acc != want);
    }
  }
}

TEST_CASE("gf65536 dot: every GFNI width and the AVX2 split tables against the reference", "[gf]") {
  const Field f = Field::gf65536();
  using Dot = std::function<void(size_t, size_t, const gf::MadTable*, const void* const*, void* const*, size_t)>;
  std::vector<std::pair<std::string, Dot>> paths;
  if (gf::detail::cpu_has_gfni512())
    paths.push_back({"gfni-avx512", [](size_t k, size_t m, const gf::MadTable* co, const void* const* s,
                                       void* const* d, size_t n) { gf::detail::dot16_gfni512(k, m, co, s, d, n); }});
  if (gf::detail::cpu_has_gfni())
    paths.push_back({"gfni-avx2", [&f](size_t k, size_t m, const gf::MadTable* co, const void* const* s,
                                       void* const* d, size_t n) { gf::detail::dot16_gfni(f, k, m, co, s, d, n); }});
  if (gf::detail::cpu_has_avx2())
    paths.push_back({"avx2-split-table", [](size_t k, size_t m, const gf::MadTable* co, const void* const* s,
                                            void* const* d, size_t n) { gf::detail::dot16_avx2(k, m, co, s, d, n); }});
  if (paths.empty()) SUCCEED("no GFNI or AVX2 on this CPU");
  std::mt19937_64 rng(1616);
  for (const auto& [name, dot] : paths)
    for (size_t k : {1u, 2u, 3u, 8u})
      for (size_t m : {1u, 3u})
        for (size_t n : {1u, 7u, 31u, 32u, 33u, 63u, 64u, 65u, 127u, 1000u, 4099u}) {
          INFO(name << " k = " << k << " m = " << m << " n = " << n);
          std::vector<Elem> co(k * m);
          for (size_t i = 0; i < co.size(); ++i)
            co[i] = i % 4 == 1 ? 0 : i % 4 == 2 ? 1 : i % 4 == 3 ? 0xFFFF : static_cast<Elem>(rng() % f.size());
          std::vector<gf::MadTable> mt;
          for (Elem c : co) mt.push_back(gf::prepare_mad(f, c));
          std::vector<std::unique_ptr<Region>> srcs;
          std::vector<const void*> sp;
          for (size_t s = 0; s < k; ++s) {
            srcs.push_back(std::make_unique<Region>(f, n, (7 * s + 1) % 64));  // odd offsets: not even 2-aligned
            srcs.back()->fill_from(random_elems(f, n, rng));
            sp.push_back(srcs.back()->data());
          }
          std::vector<std::vector<unsigned char>> want(m, std::vector<unsigned char>(2 * n));
          std::vector<void*> wp;
          for (auto& w : want) wp.push_back(w.data());
          gf::dot_base(f, k, m, co.data(), sp.data(), wp.data(), n);
          std::vector<std::unique_ptr<Region>> out;
          std::vector<void*> op;
          for (size_t j = 0; j < m; ++j) {
            out.push_back(std::make_unique<Region>(f, n, (5 * j + 3) % 64));
            std::memset(out.back()->data(), 0xC3, 2 * n);  // garbage to be overwritten
            op.push_back(out.back()->data());
          }
          dot(k, m, mt.data(), sp.data(), op.data(), n);
          for (size_t j = 0; j < m; ++j) {
            REQUIRE(out[j]->guards_intact());
            REQUIRE(out[j]->contents() == want[j]);
          }
          for (const auto& r : srcs) REQUIRE(r->guards_intact());
        }
}

TEST_CASE("prime field kernels: sampled constants", "[gf]") {
  for (uint64_t q : {65537ull, 2147483647ull, 257ull, 2ull}) {
    const Field f = Field::prime(q);
    std::mt19937_64 rng(q);
    const auto cs = sampled_constants(f, rng, q > 257 ? 8 : 2);
    for (size_t n : kLengths)
      for (size_t i = 0; i < cs.size(); ++i) check_all_forms(f, cs[i], n, rng, i == 0);
  }
}

TEST_CASE("gf dot: k x m grids, lengths, prepared form", "[gf]") {
  const std::vector<size_t> lengths = {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4099, 8192 + 3};
  for (const Field& f :
       {Field::gf256(), Field::gf65536(), Field::prime(65537), Field::prime(2147483647)}) {
    std::mt19937_64 rng(f.size() + 11);
    const size_t eb = f.elem_bytes();
    auto grid = [&](size_t k, size_t m, size_t n) {
      INFO(f.name() << " k = " << k << " m = " << m << " n = " << n);
      std::vector<Elem> co(k * m);
      for (auto& c : co) {
        const uint64_t r = rng();
        c = (r % 5 == 0) ? 0 : (r % 5 == 1) ? 1 : static_cast<Elem>(r % f.size());
      }
      std::vector<std::vector<unsigned char>> srcs;
      std::vector<const void*> sp;
      for (size_t s = 0; s < k; ++s) srcs.push_back(random_elems(f, n, rng));
      // Misaligned views of the sources (offset s bytes).
      std::vector<std::vector<unsigned char>> shifted(k);
      for (size_t s = 0; s < k; ++s) {
        shifted[s].assign(s + 1, 0);
        shifted[s].insert(shifted[s].end(), srcs[s].begin(), srcs[s].end());
        sp.push_back(shifted[s].data() + s + 1);
      }
      std::vector<std::vector<unsigned char>> want(m, std::vector<unsigned char>(n * eb, 0x5A));
      std::vector<void*> wp;
      for (auto& w : want) wp.push_back(w.data());
      gf::dot_base(f, k, m, co.data(), sp.data(), wp.data(), n);

      std::vector<std::unique_ptr<Region>> out;
      std::vector<void*> op;
      for (size_t j = 0; j < m; ++j) {
        out.push_back(std::make_unique<Region>(f, n, (3 * j) % 64));
        std::memset(out.back()->data(), 0xC3, n * eb);  // garbage to be overwritten
        op.push_back(out.back()->data());
      }
      gf::dot(f, k, m, co.data(), sp.data(), op.data(), n);
      for (size_t j = 0; j < m; ++j) {
        REQUIRE(out[j]->guards_intact());
        REQUIRE(out[j]->contents() == want[j]);
        std::memset(out[j]->data(), 0x3C, n * eb);
      }
      const gf::DotTables t = gf::prepare_dot(f, k, m, co.data());
      gf::dot_prepared(f, t, sp.data(), op.data(), n);
      for (size_t j = 0; j < m; ++j) {
        REQUIRE(out[j]->guards_intact());
        REQUIRE(out[j]->contents() == want[j]);
      }
      for (size_t s = 0; s < k; ++s)
        REQUIRE((n == 0 || std::memcmp(sp[s], srcs[s].data(), n * eb) == 0));  // sources untouched
    };
    for (size_t k = 1; k <= 6; ++k)
      for (size_t m = 1; m <= 4; ++m)
        for (size_t n : lengths) grid(k, m, n);
    // Beyond the grid: k = 0 (zeroes), no outputs, ISA-L's 6-row batching
    // (m = 7, 13) and the heap-allocated table path (k * m > 64).
    for (size_t n : {1ul, 100ul, 4099ul}) {
      grid(0, 3, n);
      grid(3, 0, n);
      grid(2, 7, n);
      grid(5, 13, n);
      grid(70, 2, n);
    }
  }
}

TEST_CASE("gf kernels: dispatch names and constant checks", "[gf]") {
  const bool avx2 = gf::detail::cpu_has_avx2();
  const bool gfni = gf::detail::cpu_has_gfni(), gfni512 = gf::detail::cpu_has_gfni512();
  REQUIRE(std::string(gf::kernel_name(Field::gf256())) == (gfni512 ? "gfni-avx512" : gfni ? "gfni-avx2" : "isa-l"));
  REQUIRE(std::string(gf::kernel_name(Field::gf65536())) ==
          (gfni512 ? "gfni-avx512" : gfni ? "gfni-avx2" : avx2 ? "avx2-split-table" : "scalar-log-exp"));
  REQUIRE(std::string(gf::kernel_name(Field::prime(65537))) == (avx2 ? "avx2-65537" : "scalar-65537"));
  REQUIRE(std::string(gf::kernel_name(Field::prime(257))) == (avx2 ? "avx2-shoup" : "scalar-shoup"));
  // Every implementation the CPU supports is listed (and so tested above).
  const std::vector<std::pair<Field, size_t>> counts = {{Field::gf256(), 1u + avx2 + gfni + gfni512},
                                                        {Field::gf65536(), 1u + avx2 + gfni + gfni512},
                                                        {Field::prime(65537), avx2 ? 4u : 2u},
                                                        {Field::prime(257), avx2 ? 2u : 1u}};
  for (const auto& [f, count] : counts) {
    const auto impls = gf::detail::implementations(f);
    REQUIRE(std::string(impls.front().name) == gf::kernel_name(f));
    REQUIRE(impls.size() == count);
  }

  // A constant outside the field is a caller bug, caught before any write.
  const Field f = Field::gf256();
  unsigned char s[4] = {1, 2, 3, 4}, d[4] = {5, 6, 7, 8};
  REQUIRE_THROWS_AS(gf::mad(f, 256, s, d, 4), InternalError);
  REQUIRE_THROWS_AS(gf::mul(f, 300, s, d, 4), InternalError);
  REQUIRE_THROWS_AS(gf::prepare_mad(Field::prime(7), 7), InternalError);
  const Elem bad[2] = {1, 65537};
  const void* sp[2] = {s, s};
  void* dp[1] = {d};
  REQUIRE_THROWS_AS(gf::dot(Field::prime(65537), 2, 1, bad, sp, dp, 1), InternalError);
  REQUIRE(d[0] == 5);
}

TEST_CASE("gf dot: delayed reduction at its overflow limits", "[gf]") {
  // The largest terms the delayed-reduction dots can meet, over enough
  // sources to cross their fold points: every 4 terms for q = 2^31 − 1
  // (products (q−1)^2; both the Mersenne and the Shoup fold), every 16 for
  // 2^30 − 35, every 2^14 for 65537 (lazy terms up to 2^17).
  // gf::dot takes the delayed path below 2^30, for 65537 and (Mersenne fold)
  // for 2^31 − 1; there the other AVX2 kernels, whose contracts cover every
  // q < 2^31, run too.
  for (const auto& [q, k] : {std::pair<uint64_t, size_t>{2147483647, 13}, {2147483647, 70}, {1073741789, 70},
                             {65537, (size_t{1} << 14) + 5}}) {
    const Field f = Field::prime(q);
    INFO(f.name() << " k = " << k);
    const size_t n = 43;  // a tile of 32 (65537) or two of 16 (Shoup), a single vector of 8, a scalar tail
    std::mt19937_64 rng(q);
    std::vector<Elem> co(k);
    std::vector<std::vector<unsigned char>> srcs(k, std::vector<unsigned char>(4 * n));
    std::vector<const void*> sp;
    for (size_t s = 0; s < k; ++s) {
      // Mostly the largest constants: q − 1 (for 65537 the negation path)
      // and q − 2 (for 65537 the largest high halves, 65535 · 65536).
      co[s] = s % 3 == 2 ? static_cast<Elem>(rng() % q) : static_cast<Elem>(q - 1 - s % 3);
      for (size_t i = 0; i < n; ++i) {
        const uint32_t x = i % 2 ? static_cast<uint32_t>(q - 1) : static_cast<uint32_t>(i % 4 ? 0 : rng() % q);
        std::memcpy(srcs[s].data() + 4 * i, &x, 4);
      }
      sp.push_back(srcs[s].data());
    }
    std::vector<unsigned char> want(4 * n), got(4 * n, 0xEE);
    void* wp = want.data();
    void* gp = got.data();
    gf::dot_base(f, k, 1, co.data(), sp.data(), &wp, n);
    gf::dot(f, k, 1, co.data(), sp.data(), &gp, n);
    REQUIRE(got == want);
    if (q == 2147483647 && gf::detail::cpu_has_avx2()) {
      std::vector<gf::MadTable> mt;
      for (Elem c : co) mt.push_back(gf::prepare_mad(f, c));
      for (const auto& [name, dot] : {std::pair{"dotm31_avx2", &gf::detail::dotm31_avx2},
                                      std::pair{"dotp_avx2", &gf::detail::dotp_avx2},
                                      std::pair{"dots_avx2", &gf::detail::dots_avx2}}) {
        INFO(name);
        std::fill(got.begin(), got.end(), 0xEE);
        dot(f, k, 1, mt.data(), sp.data(), &gp, n);
        REQUIRE(got == want);
      }
    }
  }
}
