// GF region kernel throughput, with baselines measured in the same run.
//
// For each region size (1 KiB, 64 KiB, 1 MiB) and field it times
//   gf256:   gf::mad (the dispatched kernel), ISA-L gf_vect_mad called
//            directly, and XOR of the same buffers (the floor: what any
//            multiply-accumulate costs at least);
//   gf65536, prime:65537, prime:2147483647: gf::mad, gf::mad_prepared and
//            every other implementation the CPU supports, against the same
//            XOR floor;
//   dot products of 8 sources (gf256, gf65536, both primes):
//            gf::dot_prepared against 8 single-source kernel calls and
//            against XOR of the sources.
// The last lines restate the 1 MiB multiply-accumulate / XOR ratios of
// GF(2^8) and GF(2^16) (target for GF(2^16) where the CPU has GFNI: >= 0.9)
// and, per prime field and size, the dot's speed over the per-term calls'
// (target: >= 1, the dot never slower than the terms it replaces).
// Each figure is the median of 21 timings; a timing repeats the kernel until
// it lasts >= 5 ms. The candidates of one size are timed interleaved (one
// timing of each per round) so that frequency drift and load from other
// processes hit all of them alike.
// Throughput counts the region's bytes once per call.
//
// Target: GF(2^8) multiply-accumulate >= 80 % of ISA-L gf_vect_mad at 1 MiB.
#include <isa-l/erasure_code.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "field/field.h"
#include "runtime/gf/gf_detail.h"
#include "runtime/gf/gf_kernels.h"

using namespace collplan;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kReps = 21;
constexpr double kMinTiming = 5e-3;  // seconds

struct Candidate {
  Candidate(std::string l, std::function<void()> r) : label(std::move(l)), run(std::move(r)) {}
  std::string label;
  std::function<void()> run;  // one kernel call over the region
  long iters = 1;
  std::vector<double> times;  // seconds per call
};

double seconds_for(const std::function<void()>& fn, long iters) {
  const auto t0 = Clock::now();
  for (long i = 0; i < iters; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Times all candidates interleaved; returns median seconds per call.
std::vector<double> measure(std::vector<Candidate>& cs) {
  for (auto& c : cs) {
    c.run();  // warm caches and tables
    long iters = 1;
    double t = seconds_for(c.run, iters);
    while (t < kMinTiming) {
      iters = std::max(iters * 2, static_cast<long>(iters * kMinTiming / std::max(t, 1e-9) * 1.1));
      t = seconds_for(c.run, iters);
    }
    c.iters = iters;
  }
  // The starting candidate rotates from round to round so that no kernel is
  // always the one timed right after another's run.
  for (int r = 0; r < kReps; ++r)
    for (size_t i = 0; i < cs.size(); ++i) {
      Candidate& c = cs[(i + static_cast<size_t>(r)) % cs.size()];
      c.times.push_back(seconds_for(c.run, c.iters) / static_cast<double>(c.iters));
    }
  std::vector<double> med;
  for (auto& c : cs) {
    std::sort(c.times.begin(), c.times.end());
    med.push_back(c.times[c.times.size() / 2]);
  }
  return med;
}

struct Buffers {
  std::vector<unsigned char> store_src, store_dst;
  unsigned char* src;
  unsigned char* dst;
  explicit Buffers(const Field& f, size_t bytes) : store_src(bytes + 64), store_dst(bytes + 64) {
    src = align64(store_src.data());
    dst = align64(store_dst.data());
    std::mt19937_64 rng(bytes);
    const size_t eb = f.elem_bytes();
    for (size_t i = 0; i < bytes / eb; ++i) {
      const Elem a = static_cast<Elem>(rng() % f.size()), b = static_cast<Elem>(rng() % f.size());
      std::memcpy(src + i * eb, &a, eb);
      std::memcpy(dst + i * eb, &b, eb);
    }
  }
  static unsigned char* align64(unsigned char* p) {
    return reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
  }
};

std::string size_name(size_t bytes) {
  if (bytes >= (1u << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

void print_row(const char* field, const std::string& kernel, size_t bytes, double sec, const char* vs_isal,
               double vs_xor) {
  std::printf("%-13s %-30s %8s %9.2f %9s %8.2f\n", field, kernel.c_str(), size_name(bytes).c_str(),
              static_cast<double>(bytes) / sec / 1e9, vs_isal, vs_xor);
}

}  // namespace

int main() {
  const std::vector<size_t> sizes = {1u << 10, 1u << 16, 1u << 20};
  const Field g8 = Field::gf256();
  std::printf("GF region kernels: median of %d timings, each >= %.0f ms; GB/s of region bytes per call\n", kReps,
              kMinTiming * 1e3);
  std::printf("%-13s %-30s %8s %9s %9s %8s\n", "field", "kernel", "size", "GB/s", "mad/isal", "mad/xor");

  double ratio_1mib = 0, g8_xor_1mib = 0, g16_xor_1mib = 0;
  for (size_t bytes : sizes) {
    Buffers b(g8, bytes);
    const Elem c = 0x53;
    const gf::MadTable t = gf::prepare_mad(g8, c);
    alignas(32) unsigned char isal_tbl[32];
    unsigned char cc = static_cast<unsigned char>(c);
    ec_init_tables(1, 1, &cc, isal_tbl);
    std::vector<Candidate> cs;
    cs.push_back({std::string("gf::mad (") + gf::kernel_name(g8) + ")",
                  [&] { gf::mad(g8, c, b.src, b.dst, bytes); }});
    cs.push_back({"gf::mad_prepared", [&] { gf::mad_prepared(g8, t, b.src, b.dst, bytes); }});
    cs.push_back({"isa-l gf_vect_mad (direct)",
                  [&] { gf_vect_mad(static_cast<int>(bytes), 1, 0, isal_tbl, b.src, b.dst); }});
    cs.push_back({"xor (gf::add)", [&] { gf::add(g8, b.src, b.dst, bytes); }});
    const auto med = measure(cs);
    const double isal = med[2], xr = med[3];
    for (size_t i = 0; i < cs.size(); ++i) {
      char r[32] = "";
      if (i != 3) std::snprintf(r, sizeof r, "%.3f", isal / med[i]);
      print_row("gf256", cs[i].label, bytes, med[i], r, xr / med[i]);
    }
    if (bytes == (1u << 20)) {
      ratio_1mib = isal / med[0];
      g8_xor_1mib = xr / med[0];
    }
  }

  for (const Field& f : {Field::gf65536(), Field::prime(65537), Field::prime(2147483647)}) {
    const std::string fname = f.name();
    for (size_t bytes : sizes) {
      Buffers b(f, bytes);
      const size_t n = bytes / f.elem_bytes();
      const Elem c = f.kind() == FieldKind::GF2m ? 0x1234 : 12345;
      const gf::MadTable t = gf::prepare_mad(f, c);
      std::vector<Candidate> cs;
      cs.push_back({std::string("gf::mad (") + gf::kernel_name(f) + ")", [&] { gf::mad(f, c, b.src, b.dst, n); }});
      cs.push_back({"gf::mad_prepared", [&] { gf::mad_prepared(f, t, b.src, b.dst, n); }});
      for (const auto& impl : gf::detail::implementations(f)) {
        if (std::string(impl.name) == gf::kernel_name(f)) continue;
        const auto fn = impl.mad;
        cs.push_back({std::string(impl.name) + " mad", [&, fn] { fn(f, t, b.src, b.dst, n); }});
      }
      cs.push_back({"xor (gf::add on gf256)", [&] { gf::add(g8, b.src, b.dst, bytes); }});
      const auto med = measure(cs);
      const double xr = med.back();
      for (size_t i = 0; i < cs.size(); ++i) print_row(fname.c_str(), cs[i].label, bytes, med[i], "", xr / med[i]);
      if (f.kind() == FieldKind::GF2m && bytes == (1u << 20)) g16_xor_1mib = xr / med[0];
    }
  }

  // Dot products (the shoot phase's combine): k = 8 sources into one output.
  // gf::dot_prepared (ec_encode_data for gf256; delayed reduction for prime
  // fields) against the same sum as k single-source kernel calls (one
  // reduction per term) and against XOR of the k sources.
  std::vector<std::pair<std::string, double>> prime_dots;  // gf::dot_prepared speed / per-term speed
  std::printf("\ndot products, k = 8 sources -> 1 output; GB/s of source bytes per call\n");
  std::printf("%-13s %-30s %8s %9s %9s %8s\n", "field", "kernel", "size", "GB/s", "vs terms", "vs xor");
  for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537), Field::prime(2147483647)}) {
    const std::string fname = f.name();
    const size_t k = 8;
    for (size_t bytes : sizes) {
      const size_t n = bytes / f.elem_bytes();
      std::vector<Buffers> srcs;
      for (size_t s = 0; s < k; ++s) srcs.emplace_back(f, bytes + s * 64);
      std::vector<const void*> sp;
      for (auto& b : srcs) sp.push_back(b.src);
      Buffers out(f, bytes);
      void* dp = out.dst;
      std::vector<Elem> co(k);
      for (size_t s = 0; s < k; ++s) co[s] = static_cast<Elem>((12345 + 977 * s) % f.size());
      const gf::DotTables dt = gf::prepare_dot(f, k, 1, co.data());
      std::vector<gf::MadTable> mt;
      for (Elem c : co) mt.push_back(gf::prepare_mad(f, c));
      std::vector<Candidate> cs;
      cs.push_back({"gf::dot_prepared", [&] { gf::dot_prepared(f, dt, sp.data(), &dp, n); }});
      cs.push_back({"per-term mul + mad", [&] {
                      gf::mul_prepared(f, mt[0], sp[0], dp, n);
                      for (size_t s = 1; s < k; ++s) gf::mad_prepared(f, mt[s], sp[s], dp, n);
                    }});
      // gf::dot runs the Mersenne-fold kernel for 2^31 − 1; the other
      // kernels valid for every q < 2^31 (Shoup-fold delayed reduction,
      // Shoup per term with register sums) are timed beside it, so the
      // dispatch rests on a measurement.
      const bool delayed = f.kind() == FieldKind::Prime && f.size() != 65537 && gf::detail::cpu_has_avx2();
      if (delayed) {
        cs.push_back({"delayed-reduction dot (avx2)",
                      [&] { gf::detail::dotp_avx2(f, k, 1, mt.data(), sp.data(), &dp, n); }});
        cs.push_back({"shoup-per-term dot (avx2)",
                      [&] { gf::detail::dots_avx2(f, k, 1, mt.data(), sp.data(), &dp, n); }});
      }
      cs.push_back({"xor of the k sources", [&] {
                      std::memcpy(dp, sp[0], bytes);
                      for (size_t s = 1; s < k; ++s) gf::add(g8, sp[s], dp, bytes);
                    }});
      const auto med = measure(cs);
      if (f.kind() == FieldKind::Prime)
        prime_dots.push_back({"GF(" + std::to_string(f.size()) + ") dot / per-term at " + size_name(k * bytes),
                              med[1] / med[0]});
      const size_t xor_i = cs.size() - 1;
      for (size_t i = 0; i < cs.size(); ++i) {
        char r[32] = "";
        if (i != xor_i) std::snprintf(r, sizeof r, "%.3f", med[1] / med[i]);
        print_row(fname.c_str(), cs[i].label, k * bytes, med[i], r, med[xor_i] / med[i]);
      }
    }
  }

  std::printf("\ntarget: gf::mad >= 80%% of ISA-L gf_vect_mad at 1 MiB: %.1f%% -> %s\n", ratio_1mib * 100,
              ratio_1mib >= 0.8 ? "met" : "NOT met");
  std::printf("GF(2^8) gf::mad (%s) / xor at 1 MiB: %.2f\n", gf::kernel_name(g8), g8_xor_1mib);
  const bool gfni = gf::detail::cpu_has_gfni();
  std::printf("GF(2^16) gf::mad (%s) / xor at 1 MiB: %.2f (target >= 0.90 with GFNI: %s)\n",
              gf::kernel_name(Field::gf65536()), g16_xor_1mib,
              !gfni ? "no GFNI here" : g16_xor_1mib >= 0.9 ? "met" : "NOT met");
  for (const auto& [what, r] : prime_dots)
    std::printf("%s: %.3f (target >= 1: %s)\n", what.c_str(), r, r >= 1 ? "met" : "NOT met");
  return 0;
}
