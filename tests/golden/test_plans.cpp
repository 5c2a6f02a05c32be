// plans/: the example plans the build compiles and checks
// (plans/CMakeLists.txt, collplan_add_plan). Their text dumps must equal the
// approved copies in plans/; after an intended change run scripts/approve.sh
// and review `git diff plans`.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "golden_support.h"
#include "test_util.h"

TEST_CASE("plans/: the build's plan dumps equal the approved ones", "[plans][golden]") {
  for (const char* name : {"encode_k16_gf256_vandermonde", "encode_k16_p65537_vandermonde", "broadcast_k8_b4_l2",
                           "rs_16_12_gf256_decentralized", "dft_k16_p65537", "broadcast_k12_b4_circulant",
                           "repair_rs_6_4_gf256"}) {
    const std::string built = std::string(COLLPLAN_PLANS_BUILD_DIR) + "/" + name + "/" + name + ".txt";
    INFO("reading " << built);
    REQUIRE(std::filesystem::exists(built));
    const std::string text = collplan::test::read_file(built);
    CHECK(text.rfind("collplan plan\n", 0) == 0);
    collplan::test::approve_or_compare_file(std::string(COLLPLAN_SOURCE_DIR) + "/plans/" + name + ".txt", text);
  }
}
