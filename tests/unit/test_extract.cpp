// Single-rank files (`collplan extract`, ir/binary.h): they keep the plan's
// header and digest, load alone, refuse damage, and check as far as one rank
// can be checked (passes::verify_rank_structure, passes::rank_cost). The
// command itself: tests/cli/test_cli_extract.cpp.
#include <catch2/catch.hpp>

#include <algorithm>

#include "backend/emit_cpp.h"
#include "ir/binary.h"
#include "matrix/matrix.h"
#include "passes/cost.h"
#include "pipeline/pipeline.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;

namespace {

ir::Plan plan_k9() { return test::compiled(test::random_encode_spec(9, 2, Field::gf65536(), 3), "prepare-shoot"); }

ir::Plan plan_postal() {
  return test::compiled(test::random_encode_spec(7, 1, Field::gf256(), 2, 3), "postal-prepare-shoot");
}

}  // namespace

TEST_CASE("extract: a single-rank file keeps the digest and loads that rank alone", "[extract]") {
  for (const ir::Plan& plan : {plan_k9(), plan_postal()}) {
    const auto full = ir::encode_binary(plan);
    const auto dir = test::scratch_dir("extract");
    for (uint32_t r = 0; r < plan.spec.K; ++r) {
      const auto one = ir::extract_rank_image(full.data(), full.size(), r);
      CHECK(one.size() < full.size());
      const std::string path = (dir / "one.cplan").string();
      {
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(one.data()), one.size());
      }
      const auto hdr = ir::read_header(path);
      REQUIRE(hdr.only_rank == r);
      CHECK(hdr.content_hash == ir::plan_digest(plan));
      CHECK(hdr.spec == plan.spec);
      ir::PlanHeader h2;
      CHECK(ir::read_rank(path, r, &h2) == plan.ranks[r]);
      CHECK_THROWS_WITH(ir::read_rank(path, (r + 1) % plan.spec.K),
                        Catch::Contains(fmt::format("it holds only rank {}", r)));
      CHECK_THROWS_WITH(ir::decode_binary(one.data(), one.size()),
                        Catch::Contains(fmt::format("holds only rank {}'s program", r)));
      // Extracting again from the single-rank file gives the same bytes.
      CHECK(ir::extract_rank_image(one.data(), one.size(), r) == one);
      CHECK_NOTHROW(passes::verify_rank_structure(hdr.spec, hdr.num_steps, plan.ranks[r]));
    }
    CHECK(ir::read_header([&] {
            const std::string p = (dir / "full.cplan").string();
            ir::write_binary(plan, p);
            return p;
          }()).only_rank == std::nullopt);
    CHECK_THROWS_WITH(ir::extract_rank_image(full.data(), full.size(), plan.spec.K),
                      Catch::Contains(fmt::format("rank {} is not in this plan", plan.spec.K)));
  }
}

TEST_CASE("extract: damaged single-rank files are refused with the byte and the reason", "[extract]") {
  const ir::Plan plan = plan_k9();
  const auto full = ir::encode_binary(plan);
  const auto one = ir::extract_rank_image(full.data(), full.size(), 5);
  const auto refuse = [](std::vector<uint8_t> bytes, const std::string& needle) {
    INFO(needle);
    CHECK_THROWS_WITH(ir::extract_rank_image(bytes.data(), bytes.size(), 5), Catch::Contains(needle));
  };
  auto b = one;
  b.back() ^= 1;  // the blob no longer matches its index hash
  refuse(b, "does not match its hash");
  b = one;
  b.push_back(0);
  refuse(b, "blob of");
  b = one;
  b.resize(b.size() - 3);
  refuse(b, "blob of");
  b = one;
  b[12] = 5;  // an unknown flag
  refuse(b, "flags = 0x5");
  b = one;
  b[12] = 3;  // claimed compiled alone: then its file size and index are its own, and they are not
  refuse(b, "truncated or extended");
  b = one;
  b[12] = 0;  // a whole-plan file of the wrong size
  refuse(b, "truncated or extended");
  b = one;
  b[100] ^= 0xff;  // header damage
  refuse(b, "content hash");
  // The blob claims another rank: that rank's index entry does not fit it.
  const auto path = (test::scratch_dir("extract-damage") / "full.cplan").string();
  ir::write_binary(plan, path);
  b = one;
  b[one.size() - ir::read_header(path).index[5].length] = 4;
  CHECK_THROWS_AS(ir::extract_rank_image(b.data(), b.size(), 5), UserError);
  CHECK_THROWS_AS(ir::extract_rank_image(b.data(), b.size(), 4), UserError);
}

TEST_CASE("extract: one rank's structure check rejects what one rank can get wrong", "[extract]") {
  const ir::Plan plan = plan_postal();
  const Spec& s = plan.spec;
  for (const auto& prog : plan.ranks) CHECK_NOTHROW(passes::verify_rank_structure(s, plan.num_steps, prog));
  // Find a rank with a receive and a send.
  const auto with = [&](auto pred) {
    for (const auto& prog : plan.ranks)
      for (size_t i = 0; i < prog.steps.size(); ++i)
        if (pred(prog.steps[i])) return std::pair{prog, i};
    FAIL("no such step");
    return std::pair{ir::Program{}, size_t{0}};
  };
  auto [p1, i1] = with([](const ir::Step& st) { return !st.recvs.empty(); });
  p1.steps[i1].recvs[0].sent_at += 1;
  CHECK_THROWS_WITH(passes::verify_rank_structure(s, plan.num_steps, p1), Catch::Contains("latency violated"));
  auto [p2, i2] = with([](const ir::Step& st) { return !st.sends.empty(); });
  p2.steps[i2].sends[0].to = p2.rank;
  CHECK_THROWS_WITH(passes::verify_rank_structure(s, plan.num_steps, p2), Catch::Contains("sends to itself"));
  auto [p3, i3] = with([](const ir::Step& st) { return !st.sends.empty(); });
  CHECK_THROWS_WITH(passes::verify_rank_structure(s, p3.steps[i3].t + s.lambda - 2, p3),
                    Catch::Contains("still in flight"));
  auto [p4, i4] = with([](const ir::Step& st) { return !st.ops.empty(); });
  p4.steps[i4].ops[0].terms.push_back({p4.num_slots, 1});
  ++p4.num_slots;
  CHECK_THROWS_WITH(passes::verify_rank_structure(s, plan.num_steps, p4), Catch::Contains("before it holds a value"));
  auto p5 = plan.ranks[0];
  p5.outputs.push_back(p5.outputs[0]);
  CHECK_THROWS_WITH(passes::verify_rank_structure(s, plan.num_steps, p5), Catch::Contains("output slots"));
}

TEST_CASE("extract: the ranks' parts of the cost make up the plan's cost", "[extract]") {
  for (const ir::Plan& plan : {plan_k9(), plan_postal()}) {
    const auto whole = passes::cost(plan);
    std::vector<uint64_t> sizes(plan.num_steps, 0);
    uint64_t messages = 0, received = 0;
    for (const auto& prog : plan.ranks) {
      const auto c = passes::rank_cost(plan.num_steps, prog);
      CHECK(c.C1 == whole.C1);
      CHECK(c.C2_part <= whole.C2);
      for (size_t t = 0; t < sizes.size(); ++t) sizes[t] = std::max(sizes[t], c.step_sizes[t]);
      messages += c.messages_sent;
      received += c.messages_received;
    }
    CHECK(sizes == whole.step_sizes);
    CHECK(messages == whole.messages);
    CHECK(received == whole.messages);
  }
}
