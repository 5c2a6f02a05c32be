// Harness: the JSON plan reader (docs/plan-format.md §2), ir::read_json.
//
// When the reader accepts a document, the structural checker and then the
// full checker must accept or refuse cleanly, the plan must survive the
// binary codec, and export -> import must give the same plan back.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "ir/binary.h"
#include "json/json.h"
#include "passes/verify.h"

using namespace collplan;
using collplan::fuzz::clean;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<ir::Plan> plan;
  if (!clean([&] { plan = ir::read_json(reinterpret_cast<const char*>(data), size, "fuzz.json"); })) return 0;
  COLLPLAN_FUZZ_REQUIRE(plan->ranks.size() == num_ranks(plan->spec));
  if (clean([&] { ir::verify_structure(*plan); })) clean([&] { passes::verify(*plan); });

  // Export -> import is lossless (json.h).
  std::optional<ir::Plan> back;
  std::string text;
  COLLPLAN_FUZZ_REQUIRE(clean([&] { text = ir::to_json(*plan, true).dump(); }));
  COLLPLAN_FUZZ_REQUIRE(clean([&] { back = ir::read_json(text.data(), text.size(), "export"); }));
  COLLPLAN_FUZZ_REQUIRE(back->spec == plan->spec && back->num_steps == plan->num_steps &&
                        back->ranks == plan->ranks);

  // What the JSON reader accepts, the binary codec stores and reads back;
  // a name with a control character is the one thing only the writer refuses.
  std::vector<uint8_t> bin;
  if (clean([&] { bin = ir::encode_binary(*plan); })) {
    std::optional<ir::Plan> b;
    COLLPLAN_FUZZ_REQUIRE(clean([&] { b = ir::decode_binary(bin.data(), bin.size()); }));
    COLLPLAN_FUZZ_REQUIRE(*b == *plan);
  }
  return 0;
}
