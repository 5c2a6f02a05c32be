// Routes the combinations of an emitted GF(2^8) plan (dispatch header
// collplan_plan.h) through ISA-L with collplan_embedded's kernel hook, as an
// application with ISA-L would: linked into the test harness, it installs
// the hook before main() and prints, at exit, how many combinations ISA-L
// did. Regions under 64 bytes are left to the built-in kernels (the hook
// returns false), as ISA-L's AVX-512 multiply-add needs 64.
#include <isa-l/erasure_code.h>
#include <stdio.h>

#include <atomic>

#include "collplan_plan.h"

namespace {

std::atomic<long> calls{0}, declined{0};

bool isal_dot(void*, uint8_t* dst, const uint8_t* const* src, const uint8_t* coef, uint32_t k, size_t n,
              bool accumulate) {
  if (n < 64 || k > 32) {
    ++declined;
    return false;
  }
  unsigned char tbls[32 * 32];
  unsigned char c[32];
  for (uint32_t s = 0; s < k; ++s) c[s] = coef[s];
  ec_init_tables(static_cast<int>(k), 1, c, tbls);
  unsigned char* srcs[32];
  for (uint32_t s = 0; s < k; ++s) srcs[s] = const_cast<unsigned char*>(src[s]);
  if (accumulate) {
    for (uint32_t s = 0; s < k; ++s) gf_vect_mad(static_cast<int>(n), static_cast<int>(k), static_cast<int>(s), tbls, srcs[s], dst);
  } else {
    unsigned char* out[1] = {dst};
    ec_encode_data(static_cast<int>(n), static_cast<int>(k), 1, tbls, srcs, out);
  }
  ++calls;
  return true;
}

struct Install {
  Install() { collplan_embedded::set_kernel_hook<collplan_plan::Field>(&isal_dot); }
  ~Install() { fprintf(stderr, "isal hook: %ld combinations, %ld declined\n", calls.load(), declined.load()); }
} install;

}  // namespace
