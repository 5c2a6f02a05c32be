// ir::caller_homes (ir/slot_layout.h): which slots the engine's zero copy
// and emitted C++ keep in the caller's buffers — one rule for both.
#include <catch2/catch.hpp>

#include "ir/slot_layout.h"

using namespace collplan;
using ir::kNoHome;

TEST_CASE("caller homes: outputs at their first listing, inputs only when never written, no output, listed once",
          "[slot_layout]") {
  ir::Program p;
  p.num_slots = 6;
  // s0: input 0 and output 2; s1: inputs 1 and 2 (listed twice); s2: output
  // 0 and 1; s3: input 3, written by a receive; s4: input 4, read only;
  // s5: a temporary.
  p.inputs = {0, 1, 1, 3, 4};
  p.outputs = {2, 2, 0};
  ir::Step& st = p.at(1);
  st.recvs.push_back(ir::Recv{0, 1, 1, {3}});
  st.ops.push_back(ir::Op(5, {{0, 1}, {1, 1}, {4, 1}}));
  st.ops.push_back(ir::Op(2, {{5, 1}, {3, 1}}));
  const std::vector<uint32_t> home = ir::caller_homes(p);
  const uint32_t n_in = 5;
  REQUIRE(home.size() == 6);
  CHECK(home[2] == n_in + 0);  // the first listing of a repeated output
  CHECK(home[0] == n_in + 2);  // an input that is also an output: the output's buffer
  CHECK(home[1] == kNoHome);   // listed twice: the later input wins, so both are copied
  CHECK(home[3] == kNoHome);   // written by a receive
  CHECK(home[4] == 4);         // read in place
  CHECK(home[5] == kNoHome);
}
