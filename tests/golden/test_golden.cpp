// Golden (approval) tests: the text dumps of a few small compiled plans must
// equal the approved files in tests/golden/. After an intended change, run
// scripts/approve.sh, review the diff, and commit it.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "golden_support.h"
#include "ir/text.h"
#include "matrix/codes.h"
#include "matrix/matrix.h"
#include "pipeline/pipeline.h"

using namespace collplan;

namespace {

using test::approve_or_compare;
using test::golden_path;

std::string compiled_text(const Spec& s, bool optimise, const char* algorithm = "prepare-shoot") {
  pipeline::CompileOptions opt;
  opt.algorithm = algorithm;
  if (!optimise) opt.passes.clear();
  return ir::to_text(pipeline::compile(s, opt).plan);
}

}  // namespace

TEST_CASE("golden: encode K=4 p=1 gf256 random", "[golden]") {
  approve_or_compare("encode-K4-p1-gf256.txt", compiled_text(make_encode_spec(4, 1, 1, Field::gf256(), matrix_random(4, 7, Field::gf256())), true));
}

TEST_CASE("golden: encode K=9 p=1 gf256 random, paper schedule (no passes)", "[golden]") {
  approve_or_compare("encode-K9-p1-gf256-nopass.txt",
                     compiled_text(make_encode_spec(9, 1, 1, Field::gf256(), matrix_random(9, 1, Field::gf256())), false));
}

TEST_CASE("golden: encode K=5 p=2 lambda=2 prime:65537 vandermonde", "[golden]") {
  const Field f = Field::prime(65537);
  approve_or_compare("encode-K5-p2-l2-p65537-vandermonde.txt",
                     compiled_text(make_encode_spec(5, 2, 2, f, matrix_vandermonde({1, 2, 3, 4, 5}, f)), true));
}

TEST_CASE("golden: encode K=3 p=4 gf65536 identity (ports to spare)", "[golden]") {
  approve_or_compare("encode-K3-p4-gf65536-identity.txt",
                     compiled_text(make_encode_spec(3, 4, 1, Field::gf65536(), matrix_identity(3, Field::gf65536())), true));
}

TEST_CASE("golden: encode K=7 p=1 lambda=3 gf256 random, postal prepare-and-shoot", "[golden]") {
  approve_or_compare("encode-K7-p1-l3-gf256-postal.txt",
                     compiled_text(make_encode_spec(7, 1, 3, Field::gf256(), matrix_random(7, 3, Field::gf256())), true,
                                   "postal-prepare-shoot"));
}

TEST_CASE("golden: decentralized-encode N=7 K=3 p=1 gf256 systematic RS, grid with borrowed sources", "[golden]") {
  const Field f = Field::gf256();
  approve_or_compare("decentralized-N7-K3-p1-gf256-rs.txt",
                     compiled_text(make_decentralized_spec(7, 3, 1, 1, f, code_matrix("rs", 7, 3, true, 0, f)), true,
                                   "decentralized-grid"));
}
