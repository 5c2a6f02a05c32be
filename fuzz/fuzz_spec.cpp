// Harness: the spec-file reader (pipeline/spec_flags.h), as `collplan
// compile --spec` uses it: the input is written to a memfd,
// apply_spec_file fills SpecFlags from it (no flag given on the command
// line), build_spec validates it and
// builds the matrix. When build_spec accepts, the spec's matrix must rebuild
// from its parameters with the same digest, its postcondition must build,
// and an (empty) plan of it must survive the binary codec.
//
// Bounds: K and N above 64 are skipped (a large K is a legitimately large
// matrix: K = 16384 asks for 2^28 entries, which takes that memory and time
// by design), and matrix_file / generator are cleared so the fuzzer cannot
// make the reader open arbitrary paths (the matrix files have their own
// harness, fuzz_matrix).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "ir/binary.h"
#include "matrix/matrix.h"
#include "matrix/postcondition.h"
#include "pipeline/spec_flags.h"

using namespace collplan;
using collplan::fuzz::clean;

namespace {

constexpr uint32_t kMaxFuzzRanks = 64;

const std::string& as_file(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("spec", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    collplan::fuzz::finding("memfd unavailable");
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // No flag given on the command line: the file decides everything.
  pipeline::SpecFlags sf;
  sf.spec_file = as_file(data, size);
  if (!clean([&] { pipeline::apply_spec_file(sf); })) return 0;
  if (sf.K > kMaxFuzzRanks || sf.N > kMaxFuzzRanks) return 0;
  sf.matrix_file.clear();
  sf.generator_file.clear();
  std::optional<Spec> s;
  if (!clean([&] { s = pipeline::build_spec(sf); })) return 0;

  COLLPLAN_FUZZ_REQUIRE(clean([&] { validate_spec_basics(*s); }));
  if (s->op == OpKind::Encode || s->op == OpKind::DecentralizedEncode) {
    std::optional<Matrix> m;
    COLLPLAN_FUZZ_REQUIRE(clean([&] { m = materialize(s->matrix, s->field); }));
    COLLPLAN_FUZZ_REQUIRE(matrix_digest(*m, s->field) == s->matrix.digest);
  }
  // The spec builds its postcondition (or refuses cleanly: a shape the
  // operation cannot have), and a plan file can hold it.
  clean([&] { (void)postcondition(*s); });
  std::vector<uint8_t> bin;
  COLLPLAN_FUZZ_REQUIRE(clean([&] { bin = ir::encode_binary(ir::make_plan(*s, 1)); }));
  std::optional<ir::Plan> back;
  COLLPLAN_FUZZ_REQUIRE(clean([&] { back = ir::decode_binary(bin.data(), bin.size()); }));
  COLLPLAN_FUZZ_REQUIRE(back->spec == *s);
  return 0;
}
