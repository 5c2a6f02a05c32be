// Harness: the binary .cplan loader (docs/plan-format.md §1).
//
// Each input is tried twice: as it is (almost always stopped by the content
// hash, which is the point of that check) and resealed (reseal_binary
// recomputes every hash, as a hostile file would), so the mutations reach
// the range checks behind the hashes. For each image:
//   - decode_binary (whole plan); when it accepts, the structural checker
//     and then the full checker must accept or refuse cleanly, and
//     encode_binary -> decode_binary must give the same plan back;
//   - decode_header, decode_rank for the first, the last and the held rank,
//     verify_rank_structure on each accepted program, which must equal the
//     whole plan's program when that loaded too;
//   - extract_rank_image of that rank, read back with decode_rank;
//   - read_rank through a path (a memfd), which seeks instead of slicing a
//     buffer, must agree with decode_rank;
//   - the streaming check (MappedPlan on that path, verify_streaming) must
//     accept exactly when decode_binary, verify_structure and the
//     randomized check with the same seed all accept.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "ir/binary.h"
#include "passes/verify.h"
#include "passes/verify_stream.h"

using namespace collplan;
using collplan::fuzz::clean;

namespace {

// The input as a file, for the path-based readers.
const std::string& as_file(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("cplan", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    collplan::fuzz::finding("memfd unavailable");
  return path;
}

void check_rank(const uint8_t* data, size_t size, const ir::PlanHeader& h, ir::Rank r, const ir::Plan* plan) {
  std::optional<ir::Program> prog;
  if (!clean([&] { prog = ir::decode_rank(data, size, r); })) return;
  COLLPLAN_FUZZ_REQUIRE(prog->rank == r);
  if (plan) COLLPLAN_FUZZ_REQUIRE(*prog == plan->ranks[r]);
  const uint32_t max_ranks = h.compiled_alone ? kMaxRankLocalRanks : kMaxPlanRanks;
  clean([&] { passes::verify_rank_structure(h.spec, h.num_steps, *prog, max_ranks); });
  // The extracted single-rank image holds the same program.
  std::vector<uint8_t> one;
  if (clean([&] { one = ir::extract_rank_image(data, size, r); })) {
    std::optional<ir::Program> again;
    COLLPLAN_FUZZ_REQUIRE(clean([&] { again = ir::decode_rank(one.data(), one.size(), r); }));
    COLLPLAN_FUZZ_REQUIRE(*again == *prog);
  }
  // The seeking reader agrees with the in-memory one.
  std::optional<ir::Program> by_path;
  ir::PlanHeader h2;
  COLLPLAN_FUZZ_REQUIRE(clean([&] { by_path = ir::read_rank(as_file(data, size), r, &h2); }));
  COLLPLAN_FUZZ_REQUIRE(*by_path == *prog);
  COLLPLAN_FUZZ_REQUIRE(h2.spec == h.spec && h2.num_steps == h.num_steps && h2.content_hash == h.content_hash);
}

void check_image(const uint8_t* data, size_t size) {
  std::optional<ir::Plan> plan;
  const passes::VerifyOptions randomized{passes::VerifyMode::Randomized, 0, 5};
  bool whole_ok = false;
  if (clean([&] { plan = ir::decode_binary(data, size); })) {
    COLLPLAN_FUZZ_REQUIRE(plan->ranks.size() == num_ranks(plan->spec));
    if (clean([&] { ir::verify_structure(*plan); })) {
      clean([&] { passes::verify(*plan); });
      whole_ok = clean([&] { passes::verify(*plan, randomized); });
    }
    std::vector<uint8_t> again;
    COLLPLAN_FUZZ_REQUIRE(clean([&] { again = ir::encode_binary(*plan); }));
    std::optional<ir::Plan> back;
    COLLPLAN_FUZZ_REQUIRE(clean([&] { back = ir::decode_binary(again.data(), again.size()); }));
    COLLPLAN_FUZZ_REQUIRE(*back == *plan);
  }
  // The streaming check reads the same file without holding it.
  const bool stream_ok = clean([&] {
    const ir::MappedPlan mp(as_file(data, size));
    passes::verify_streaming(mp, randomized);
  });
  COLLPLAN_FUZZ_REQUIRE(stream_ok == whole_ok);
  ir::PlanHeader h;
  if (!clean([&] { h = ir::decode_header(data, size); })) return;
  const ir::Rank n = num_ranks(h.spec);
  COLLPLAN_FUZZ_REQUIRE(n >= 1);
  if (h.only_rank) {
    check_rank(data, size, h, *h.only_rank, nullptr);
  } else {
    check_rank(data, size, h, 0, plan ? &*plan : nullptr);
    if (n > 1) check_rank(data, size, h, n - 1, plan ? &*plan : nullptr);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_image(data, size);
  if (ir::looks_like_binary_plan(data, size)) {
    std::vector<uint8_t> sealed(data, data + size);
    ir::reseal_binary(sealed);
    if (!std::equal(sealed.begin(), sealed.end(), data)) check_image(sealed.data(), sealed.size());
  }
  return 0;
}
