// Golden emitted sources: what `collplan emit-cpp` writes for two small plans
// must equal the approved files in tests/golden/emit/ (the generator's
// formatting is fixed, docs/emit-cpp.md). The C++ backend's other checks:
// tests/emit/test_emit_cpp.cpp.
#include <catch2/catch.hpp>

#include <string>

#include "backend/emit_cpp.h"
#include "golden_support.h"
#include "matrix/matrix.h"
#include "test_util.h"

using namespace collplan;
using test::approve_or_compare;
using test::compiled;

TEST_CASE("emit-cpp: golden emitted sources (K=4 encode, K=5 lambda=2 broadcast)", "[emit][golden]") {
  const auto check = [](const ir::Plan& plan, const std::string& name) {
    backend::EmitCppOptions o;
    o.name = name;
    for (const auto& f : backend::emit_cpp(backend::view_of(plan), o)) approve_or_compare("emit/" + f.name, f.text);
  };
  check(compiled(make_encode_spec(4, 1, 1, Field::gf256(), matrix_random(4, 7, Field::gf256())), "prepare-shoot"),
        "encode_k4");
  Spec b;
  b.op = OpKind::Broadcast;
  b.K = 5;
  b.p = 1;
  b.lambda = 2;
  b.field = Field::prime(65537);
  b.algorithm = "postal-broadcast";
  b.blocks = 2;
  b.root = 1;
  check(compiled(b, "postal-broadcast"), "bcast_k5");
}
