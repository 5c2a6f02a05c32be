// plans/: the example plans the build compiles and checks
// (plans/CMakeLists.txt, collplan_add_plan). Their text dumps must equal the
// approved copies in plans/; after an intended change run scripts/approve.sh
// and review `git diff plans`.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("plans/: the build's plan dumps equal the approved ones", "[plans][golden]") {
  for (const char* name : {"encode_k16_gf256_vandermonde", "encode_k16_p65537_vandermonde", "broadcast_k8_b4_l2",
                           "rs_16_12_gf256_decentralized", "dft_k16_p65537", "broadcast_k12_b4_circulant"}) {
    const std::string built = std::string(COLLPLAN_PLANS_BUILD_DIR) + "/" + name + "/" + name + ".txt";
    const std::string approved = std::string(COLLPLAN_SOURCE_DIR) + "/plans/" + name + ".txt";
    const std::string text = slurp(built);
    CHECK(text.rfind("collplan plan\n", 0) == 0);
    if (const char* a = std::getenv("COLLPLAN_APPROVE"); a && std::string(a) == "1") {
      std::ofstream(approved, std::ios::binary) << text;
      WARN("approved " << approved);
      continue;
    }
    INFO("approved dump " << approved << " (run scripts/approve.sh after an intended change)");
    CHECK(slurp(approved) == text);
  }
}
