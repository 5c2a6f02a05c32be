// The plan file formats: the binary .cplan codec (whole-file and per-rank
// loading, identity digest, refusal of damaged and hostile files), JSON
// export/import (round trip, the exact shape of docs/plan-format.md §2, errors naming the
// JSON path) and the text dump (exact layout, bounded lines).
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen/dissemination.h"
#include "gen/prepare_shoot.h"
#include "ir/binary.h"
#include "json/json.h"
#include "ir/text.h"
#include "matrix/matrix.h"
#include "passes/verify.h"
#include "support/error.h"
#include "test_util.h"

using namespace collplan;
using test::TempFile;
using namespace collplan::ir;
using nlohmann::json;

namespace {

// Plan::operator== compares programs only; the formats must also carry the
// spec exactly.
bool same_spec(const Spec& a, const Spec& b) {
  const MatrixSpec &x = a.matrix, &y = b.matrix;
  return a.op == b.op && a.K == b.K && a.p == b.p && a.lambda == b.lambda && a.field == b.field &&
         a.algorithm == b.algorithm && a.blocks == b.blocks && a.root == b.root && a.N == b.N &&
         a.counts == b.counts && x.family == y.family && x.rows == y.rows && x.cols == y.cols && x.seed == y.seed &&
         x.points == y.points && x.perm == y.perm && x.entries == y.entries && x.source == y.source &&
         x.digest == y.digest;
}

bool same_plan(const Plan& a, const Plan& b) { return a == b && same_spec(a.spec, b.spec); }

std::vector<Field> all_fields() { return {Field::gf256(), Field::gf65536(), Field::prime(2147483647)}; }

MatrixSpec matrix_of(const std::string& family, uint32_t K, const Field& f) {
  if (family == "random") return matrix_random(K, 0xC0FFEE, f);
  if (family == "identity") return matrix_identity(K, f);
  if (family == "vandermonde") {
    std::vector<Elem> pts;
    for (uint32_t i = 0; i < K; ++i) pts.push_back(i + 1);
    return matrix_vandermonde(pts, f);
  }
  if (family == "permutation") {
    std::vector<uint32_t> perm;
    for (uint32_t i = 0; i < K; ++i) perm.push_back((i * 2 + 1) % K);
    return matrix_permutation(perm, f);
  }
  Matrix m = Matrix::zeros(K, K);
  for (uint32_t i = 0; i < K; ++i)
    for (uint32_t j = 0; j < K; ++j) m.at(i, j) = static_cast<Elem>((i * 7 + j * 3 + 1) % f.size());
  return matrix_explicit(m, f, "m.csv");
}

const char* const kFamilies[] = {"random", "identity", "vandermonde", "permutation", "explicit"};

// A plan that exercises every construct of the IR within its ranges: runs
// and scattered term lists, empty combinations and payloads, unit and
// maximal coefficients, several ports, matrix_col. Its schedule is not
// meant to compute anything.
Plan busy_plan(const Field& f, uint32_t lambda, const std::string& family, uint64_t seed) {
  Spec s;
  s.op = OpKind::Encode;
  s.K = 5;
  s.p = 2;
  s.lambda = lambda;
  s.field = f;
  s.matrix = matrix_of(family, s.K, f);
  s.algorithm = "busy-test";
  const uint32_t steps = 3 + lambda;
  Plan plan = make_plan(s, steps);
  std::mt19937_64 rng(seed);
  auto coeff = [&]() -> Elem {
    switch (rng() % 4) {
      case 0: return 1;
      case 1: return static_cast<Elem>(f.size() - 1);
      default: return static_cast<Elem>(rng() % f.size());
    }
  };
  for (Program& prog : plan.ranks) {
    for (int i = 0; i < 6; ++i) prog.new_slot();
    prog.inputs = {0};
    prog.outputs = {5, 4};
    for (uint32_t t = 1; t <= steps; ++t) {
      if (rng() % 4 == 0) continue;  // ranks idle in some steps
      Step& st = prog.at(t);
      for (Port port = 0; port < s.p; ++port) {
        if (rng() % 3 == 0) continue;
        std::vector<Combo> payload;
        const uint32_t n = static_cast<uint32_t>(rng() % 4);
        for (uint32_t e = 0; e < n; ++e) {
          Combo c;
          const uint32_t kind = static_cast<uint32_t>(rng() % 3);
          const uint32_t len = static_cast<uint32_t>(rng() % 4);
          const SlotId base = static_cast<SlotId>(rng() % 3);
          for (uint32_t x = 0; x < len; ++x)
            c.terms.push_back(Term{kind == 0 ? base + x : static_cast<SlotId>(rng() % prog.num_slots), coeff()});
          payload.push_back(std::move(c));
        }
        const Rank to = (prog.rank + 1 + static_cast<Rank>(rng() % (s.K - 1))) % s.K;
        st.sends.push_back(make_send(plan, prog, port, to, std::move(payload)));
      }
      if (t >= lambda && rng() % 2 == 0) {
        const Rank from = (prog.rank + 1) % s.K;
        st.recvs.push_back(make_recv(plan, prog, t, static_cast<Port>(rng() % s.p), from, {1, 2, 3}));
      }
      const uint32_t nops = static_cast<uint32_t>(rng() % 3);
      for (uint32_t o = 0; o < nops; ++o) {
        std::vector<Term> terms;
        for (uint32_t x = 0; x < rng() % 5; ++x) terms.push_back(Term{static_cast<SlotId>(x), coeff()});
        const uint32_t col = rng() % 2 == 0 ? static_cast<uint32_t>(rng() % s.K) : kNoCol;
        st.ops.push_back(make_op(prog, static_cast<SlotId>(rng() % prog.num_slots), std::move(terms), col));
      }
    }
  }
  return plan;
}

// The smallest real encode: K = 2, p = 1. Each rank sends its input to the
// other and combines: y_k = A[k][k]·x_k + A[1-k][k]·x_{1-k}. With λ = 3 the
// message sent in step 1 arrives in step 3.
Plan tiny_plan(const Field& f, uint32_t lambda, const MatrixSpec& m) {
  Spec s;
  s.op = OpKind::Encode;
  s.K = 2;
  s.p = 1;
  s.lambda = lambda;
  s.field = f;
  s.matrix = m;
  s.algorithm = "hand";
  Plan plan = make_plan(s, lambda);
  Matrix a = materialize(m, f);
  for (Program& prog : plan.ranks) {
    const Rank k = prog.rank, other = 1 - prog.rank;
    const SlotId in = prog.new_slot(), got = prog.new_slot(), out = prog.new_slot();
    prog.inputs = {in};
    prog.outputs = {out};
    prog.at(1).sends.push_back(make_send(plan, prog, 0, other, {unit(in)}));
    Step& last = prog.at(lambda);
    last.recvs.push_back(make_recv(plan, prog, lambda, 0, other, {got}));
    last.ops.push_back(make_op(prog, out, {Term{in, a.at(k, k)}, Term{got, a.at(other, k)}}, k));
  }
  return plan;
}

Matrix two_by_two(Elem a, Elem b, Elem c, Elem d) { return Matrix{2, 2, {a, b, c, d}}; }

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(out.good());
}

uint32_t get32(const std::vector<uint8_t>& b, size_t at) {
  return b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (static_cast<uint32_t>(b[at + 3]) << 24);
}
uint64_t get64(const std::vector<uint8_t>& b, size_t at) {
  return get32(b, at) | (static_cast<uint64_t>(get32(b, at + 4)) << 32);
}
void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// Layout facts of version 1 that the hostile-file tests poke at.
constexpr size_t kHeaderAt = 48;  // spec starts after the 48-byte preamble
size_t head_size(const std::vector<uint8_t>& b) { return 48 + get32(b, 40) + 24 * size_t{get32(b, 44)}; }
size_t blob_at(const std::vector<uint8_t>& b, uint32_t r) { return get64(b, 48 + get32(b, 40) + 24 * size_t{r}); }
size_t blob_len(const std::vector<uint8_t>& b, uint32_t r) {
  return get64(b, 48 + get32(b, 40) + 24 * size_t{r} + 8);
}

// Runs fn, requires it to refuse its input, and returns the message: a
// UserError, or the structural VerifyError of a readable but wrong plan.
template <typename Fn>
std::string refusal_of(Fn&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  } catch (const VerifyError& e) {
    // A readable plan with a port, rank, slot or step out of range: the
    // loader refuses it as a wrong plan (exit status 1), naming the place.
    CHECK(e.kind() == PlanFault::Structure);
    return e.what();
  }
  FAIL("expected a UserError or a structural VerifyError");
  return {};
}

}  // namespace

// ─── Binary ─────────────────────────────────────────────────────────────────

TEST_CASE("binary: round trip over fields, latencies and matrix families", "[formats][binary]") {
  for (const Field& f : all_fields())
    for (uint32_t lambda : {1u, 3u})
      for (const char* family : kFamilies) {
        INFO(f.name() << " lambda=" << lambda << " family=" << family);
        const Plan plan = busy_plan(f, lambda, family, lambda * 1000 + f.elem_bytes());
        const std::vector<uint8_t> bytes = encode_binary(plan);
        REQUIRE(looks_like_binary_plan(bytes.data(), bytes.size()));
        const Plan back = decode_binary(bytes.data(), bytes.size());
        CHECK(same_plan(plan, back));
        // The encoding is a function of the plan: re-encoding reproduces it
        // byte for byte, and the digest is the hash the file carries.
        CHECK(encode_binary(back) == bytes);
        const Digest d = plan_digest(plan);
        CHECK(std::equal(d.bytes.begin(), d.bytes.end(), bytes.begin() + 16));
        CHECK(plan_digest(back) == d);
      }
}

TEST_CASE("binary: the digest changes with any part of the plan", "[formats][binary]") {
  const Plan plan = busy_plan(Field::gf256(), 1, "random", 7);
  const Digest d = plan_digest(plan);
  std::set<std::string> seen{d.hex()};
  auto differs = [&](const Plan& changed) { return seen.insert(plan_digest(changed).hex()).second; };

  Plan a = plan;
  a.spec.algorithm = "other";
  CHECK(differs(a));
  Plan b = plan;
  b.spec.matrix = matrix_random(5, 0xC0FFEF, b.spec.field);
  CHECK(differs(b));
  Plan c = plan;
  c.num_steps += 1;
  CHECK(differs(c));
  Plan e = plan;
  e.ranks[4].num_slots += 1;
  CHECK(differs(e));
  Plan g = plan;
  g.spec.lambda = 2;
  CHECK(differs(g));
  // One coefficient somewhere in the last rank.
  Plan h = plan;
  bool changed = false;
  for (Step& st : h.ranks[4].steps)
    for (Op& o : st.ops)
      if (!changed && !o.terms.empty()) {
        o.terms[0].coeff ^= 1;
        changed = true;
      }
  REQUIRE(changed);
  CHECK(differs(h));
}

TEST_CASE("binary: files, header and per-rank loading", "[formats][binary]") {
  for (const Field& f : all_fields()) {
    INFO(f.name());
    const Plan plan = busy_plan(f, 3, "vandermonde", 99);
    TempFile file("plan.cplan");
    write_binary(plan, file.path);
    CHECK(same_plan(read_binary(file.path), plan));

    const PlanHeader h = read_header(file.path);
    CHECK(same_spec(h.spec, plan.spec));
    CHECK(h.num_steps == plan.num_steps);
    CHECK(h.version == kBinaryVersion);
    CHECK(h.content_hash == plan_digest(plan));
    CHECK(h.index.size() == plan.spec.K);
    CHECK(h.file_size == std::filesystem::file_size(file.path));

    for (Rank r = 0; r < plan.spec.K; ++r) {
      PlanHeader hr;
      CHECK(read_rank(file.path, r, &hr) == plan.ranks[r]);
      CHECK(hr.content_hash == h.content_hash);
      CHECK(same_spec(hr.spec, plan.spec));
    }
    const std::string msg = refusal_of([&] { read_rank(file.path, 5, nullptr); });
    CHECK_THAT(msg, Catch::Contains("rank 5 is not in this plan") && Catch::Contains("0..4"));
  }
}

// write_binary puts the blobs in the file as they are encoded, in batches of
// a few MiB, and the head last; into a FIFO it writes in order. Either way
// the file is encode_binary's image and the digest it returns plan_digest.
TEST_CASE("binary: a file written in batches or through a FIFO is the encoded image", "[formats][binary]") {
  // 4.6 MiB: more than one batch.
  const Plan plan = gen::dissemination_reduce_scatter(test::plain_spec(OpKind::ReduceScatter, 384, 1, 1, 1, Field::gf256()));
  const std::vector<uint8_t> image = encode_binary(plan);
  REQUIRE(image.size() > (size_t{4} << 20));
  const std::string bytes(image.begin(), image.end());
  TempFile file("batched.cplan");
  CHECK(write_binary(plan, file.path) == plan_digest(plan));
  CHECK(test::read_file(file.path) == bytes);

  const Plan small = busy_plan(Field::gf256(), 3, "vandermonde", 7);
  TempFile fifo("plan.fifo");
  REQUIRE(::mkfifo(fifo.path.c_str(), 0600) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      ::_exit(write_binary(small, fifo.path) == plan_digest(small) ? 0 : 2);
    } catch (...) {
      ::_exit(1);
    }
  }
  const std::vector<uint8_t> small_image = encode_binary(small);
  CHECK(test::read_file(fifo.path) == std::string(small_image.begin(), small_image.end()));
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("binary: file errors name the path", "[formats][binary]") {
  TempFile missing("does-not-exist.cplan");
  CHECK_THAT(refusal_of([&] { read_binary(missing.path); }), Catch::Contains(missing.path));
  CHECK_THAT(refusal_of([&] { read_rank(missing.path, 0); }), Catch::Contains(missing.path));
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THAT(refusal_of([&] { read_header(dir); }), Catch::Contains("directory"));
  const Plan plan = tiny_plan(Field::gf256(), 1, matrix_random(2, 1, Field::gf256()));
  CHECK_THAT(refusal_of([&] { write_binary(plan, missing.path + "/no/such/dir/x.cplan"); }),
             Catch::Contains("cannot write plan file"));
  // Names are stored printable only.
  Plan named = plan;
  named.spec.matrix.source = "a\nb.csv";
  CHECK_THAT(refusal_of([&] { encode_binary(named); }), Catch::Contains("matrix source"));
  // A JSON file is not a binary plan.
  TempFile js("plan.json");
  write_json_file(plan, js.path, false);
  CHECK_THAT(refusal_of([&] { read_binary(js.path); }), Catch::Contains("bad magic") && Catch::Contains(js.path));
}

TEST_CASE("binary: consecutive combinations cost one coefficient per term", "[formats][binary]") {
  for (const Field& f : all_fields()) {
    auto size_with = [&](uint32_t n, bool scattered) {
      Plan plan = tiny_plan(f, 1, matrix_identity(2, f));
      Program& prog = plan.ranks[0];
      const SlotId base = prog.num_slots;
      for (uint32_t i = 0; i < 2 * n; ++i) prog.new_slot();
      std::vector<Term> terms;
      for (uint32_t i = 0; i < n; ++i) terms.push_back(Term{base + (scattered ? 2 * i : i), 3});
      prog.at(1).ops.push_back(make_op(prog, base, std::move(terms)));
      return encode_binary(plan).size();
    };
    INFO(f.name());
    const uint32_t eb = f.elem_bytes();
    CHECK(size_with(2000, false) - size_with(1000, false) == 1000 * eb);
    CHECK(size_with(2000, true) - size_with(1000, true) == 1000 * (4 + eb));
  }
}

TEST_CASE("binary: every truncation is refused", "[formats][binary][corruption]") {
  for (const Field& f : all_fields()) {
    const Plan plan = busy_plan(f, 1, "explicit", 3);
    const std::vector<uint8_t> bytes = encode_binary(plan);
    INFO(f.name() << ", " << bytes.size() << " bytes");
    for (size_t len = 0; len < bytes.size(); ++len) {
      INFO("truncated to " << len);
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(len));
      CHECK_THROWS_AS(decode_binary(cut.data(), cut.size()), UserError);
    }
    // A truncated file is also refused when one rank is read alone.
    TempFile file("cut.cplan");
    write_bytes(file.path, std::vector<uint8_t>(bytes.begin(), bytes.end() - 1));
    for (Rank r = 0; r < plan.spec.K; ++r) CHECK_THROWS_AS(read_rank(file.path, r), UserError);
    CHECK_THROWS_AS(read_header(file.path), UserError);
  }
}

TEST_CASE("binary: random corruptions are refused", "[formats][binary][corruption]") {
  const Plan plan = busy_plan(Field::gf65536(), 3, "vandermonde", 11);
  const std::vector<uint8_t> bytes = encode_binary(plan);
  std::mt19937_64 rng(0x5EED);
  int refused = 0;
  for (int trial = 0; trial < 2500; ++trial) {
    std::vector<uint8_t> bad = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      const size_t at = rng() % bad.size();
      bad[at] = static_cast<uint8_t>(bad[at] ^ (1 + rng() % 255));  // always a change
    }
    if (bad == bytes) continue;  // two flips of one byte cancelled out
    INFO("trial " << trial);
    CHECK_THROWS_AS(decode_binary(bad.data(), bad.size()), UserError);
    ++refused;
  }
  CHECK(refused > 2400);
}

TEST_CASE("binary: a rank read alone is checked, other ranks' damage does not matter", "[formats][binary][corruption]") {
  const Plan plan = busy_plan(Field::gf256(), 1, "random", 12);
  const std::vector<uint8_t> bytes = encode_binary(plan);
  const size_t head = head_size(bytes);
  std::mt19937_64 rng(77);
  TempFile file("rank.cplan");
  int loaded = 0, refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> bad = bytes;
    const size_t at = rng() % bad.size();
    bad[at] = static_cast<uint8_t>(bad[at] ^ (1 + rng() % 255));
    write_bytes(file.path, bad);
    const Rank r = static_cast<Rank>(rng() % plan.spec.K);
    const bool hits = at < head || (at >= blob_at(bytes, r) && at < blob_at(bytes, r) + blob_len(bytes, r));
    INFO("trial " << trial << ": byte " << at << ", rank " << r);
    if (hits) {
      CHECK_THROWS_AS(read_rank(file.path, r), UserError);
      ++refused;
    } else {
      CHECK(read_rank(file.path, r) == plan.ranks[r]);
      ++loaded;
    }
  }
  CHECK(loaded > 0);
  CHECK(refused > 0);
}

TEST_CASE("binary: hostile files with valid hashes are refused by the parser", "[formats][binary][corruption]") {
  // Each case edits one field of a valid file and reseals the hashes, so the
  // edit gets past the integrity check and must be caught by a range check.
  const Field f = Field::prime(65537);
  const Plan plan = tiny_plan(f, 1, matrix_random(2, 5, f));
  const std::vector<uint8_t> good = encode_binary(plan);
  const size_t b0 = blob_at(good, 0);
  // Rank 0's blob: rank, num_slots = 3, inputs [0], outputs [2], 1 step
  // record: t = 1, 1 send, 1 recv, 1 op. Send: port 0, to 1, 1 element, a
  // unit combination (tag 3, slot 0). Recv: port, from, sent_at, 1 slot.
  // Op: flags = 1, dst, matrix_col, a run (tag 1, base 0, 2 coefficients).
  const size_t step = b0 + 28, send = step + 16, recv = send + 12 + 5, op = recv + 20;
  REQUIRE(get32(good, b0 + 4) == 3);
  REQUIRE(get32(good, step) == 1);
  REQUIRE(good[send + 12] == 3);        // unit tag
  REQUIRE(get32(good, recv + 8) == 1);  // sent_at
  REQUIRE(good[op] == 1);               // has matrix_col
  REQUIRE(good[op + 9] == 1);           // run tag
  REQUIRE(op + 9 + 1 + 8 + 8 == b0 + blob_len(good, 0));

  struct Case {
    const char* name;
    std::function<void(std::vector<uint8_t>&)> edit;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"huge step record count", [&](auto& b) { put32(b, b0 + 24, 0xFFFFFFFF); }, "step record count = 4294967295"},
      {"huge send count", [&](auto& b) { put32(b, step + 4, 0xFFFFFFFF); }, "send count"},
      {"huge payload", [&](auto& b) { put32(b, send + 8, 0xFFFFFFFF); }, "payload size"},
      {"huge term list", [&](auto& b) { b[send + 12] = 2, put32(b, send + 13, 0xFFFFFFFF); }, "term count"},
      {"huge run", [&](auto& b) { put32(b, op + 14, 0xFFFFFFFF); }, "run length"},
      {"huge input list", [&](auto& b) { put32(b, b0 + 8, 0xFFFFFFFF); }, "inputs"},
      {"huge algorithm name", [&](auto& b) { put32(b, kHeaderAt + 32, 0xFFFFFFFF); }, "algorithm name"},
      {"rank mismatch", [&](auto& b) { put32(b, b0, 1); }, "holds rank 1"},
      {"step 0", [&](auto& b) { put32(b, step, 0); }, "step number 0"},
      {"step past num_steps", [&](auto& b) { put32(b, step, 2); }, "step number 2"},
      {"port >= p", [&](auto& b) { put32(b, send, 1); }, "send port 1"},
      {"destination >= K", [&](auto& b) { put32(b, send + 4, 2); }, "send destination 2"},
      {"unknown combo tag", [&](auto& b) { b[send + 12] = 7; }, "unknown combination tag 7"},
      {"slot >= num_slots", [&](auto& b) { put32(b, send + 13, 3); }, "slot 3"},
      {"coefficient >= q", [&](auto& b) { put32(b, op + 18, 65537); }, "coefficient = 65537"},
      {"receive source >= K", [&](auto& b) { put32(b, recv + 4, 9); }, "receive source 9"},
      {"sent after received", [&](auto& b) { put32(b, recv + 8, 2); }, "sent at step 2"},
      {"receive slot", [&](auto& b) { put32(b, recv + 16, 3); }, "receive slots[0] = 3"},
      {"op flags", [&](auto& b) { b[op] = 2; }, "op flags 0x02"},
      {"op destination", [&](auto& b) { put32(b, op + 1, 3); }, "op writes slot 3"},
      {"matrix column", [&](auto& b) { put32(b, op + 5, 2); }, "matrix column 2"},
      {"run past slots", [&](auto& b) { put32(b, op + 10, 2); }, "run of 2 slots from slot 2"},
      {"trailing bytes in blob", [&](auto& b) { b[op + 9] = 3; }, "12 unread bytes"},
      {"unknown op", [&](auto& b) { b[kHeaderAt] = 12; }, "unknown operation code 12 (valid: 1..11)"},
      {"repair lists on another op", [&](auto& b) { b[kHeaderAt + 2] = 2; },
       "spec flag bit 1 (repair or decode lists) is set for operation"},
      {"a repair op without its lists", [&](auto& b) { b[kHeaderAt] = 10; },
       "spec flag bit 1 (repair or decode lists) is clear for operation repair"},
      {"unknown field kind", [&](auto& b) { b[kHeaderAt + 1] = 3; }, "unknown field kind 3"},
      {"composite q", [&](auto& b) { put64(b, kHeaderAt + 24, 65536); }, "65536"},
      {"K = 1", [&](auto& b) { put32(b, kHeaderAt + 4, 1); }, "K = 1"},
      {"p = 0", [&](auto& b) { put32(b, kHeaderAt + 8, 0); }, "p = 0"},
      {"lambda = 0", [&](auto& b) { put32(b, kHeaderAt + 12, 0); }, "lambda = 0"},
      {"rank count", [&](auto& b) { put32(b, 44, 3); }, "rank count 3"},
      {"header size", [&](auto& b) { put32(b, 40, 0xFFFFFF00); }, "header"},
      {"version", [&](auto& b) { put32(b, 8, 2); }, "unsupported format version 2"},
      {"flags", [&](auto& b) { put32(b, 12, 2); }, "flags = 0x2"},
      {"single-rank flag on a whole plan", [&](auto& b) { put32(b, 12, 1); }, "single-rank blob"},
      {"file size", [&](auto& b) { put64(b, 32, 1); }, "preamble says 1"},
      {"blob gap", [&](auto& b) { put64(b, kHeaderAt + get32(b, 40) + 24, b0 + 1); }, "expected"},
      {"blob overrun", [&](auto& b) { put64(b, kHeaderAt + get32(b, 40) + 24 + 8, 1u << 30); }, "past the end"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<uint8_t> bad = good;
    c.edit(bad);
    reseal_binary(bad);
    const auto start = std::chrono::steady_clock::now();
    const std::string msg = refusal_of([&] { decode_binary(bad.data(), bad.size()); });
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // "damaged plan file at byte N" for the encoding, "plan file at byte N"
    // for a range a plan must keep (a VerifyError: the plan is wrong).
    CHECK_THAT(msg, Catch::Contains(c.expect) && Catch::Contains("plan file at byte"));
    CHECK(secs < 1.0);
  }
  // Without resealing, the same edits are caught by the hashes.
  std::vector<uint8_t> bad = good;
  put32(bad, op + 18, 2);
  CHECK_THAT(refusal_of([&] { decode_binary(bad.data(), bad.size()); }),
             Catch::Contains("rank 0") && Catch::Contains("does not match its hash"));
  bad = good;
  bad[kHeaderAt + 20] ^= 1;  // field polynomial
  CHECK_THAT(refusal_of([&] { decode_binary(bad.data(), bad.size()); }), Catch::Contains("content hash"));
}

TEST_CASE("binary: resealed random damage never crashes the parser", "[formats][binary][corruption]") {
  // Random edits behind valid hashes: each must decode or be refused with a
  // UserError (never crash, hang or over-allocate: run under sanitizers).
  const Plan plan = busy_plan(Field::gf256(), 3, "explicit", 21);
  const std::vector<uint8_t> bytes = encode_binary(plan);
  const size_t head = head_size(bytes);
  std::mt19937_64 rng(4242);
  int refused = 0, decoded = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bad = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < flips; ++i) {
      // Mostly the header and the blobs; bytes 16..31 are the hash itself.
      size_t at = kHeaderAt + rng() % (bad.size() - kHeaderAt);
      if (at >= head - 24 * plan.spec.K && at < head && rng() % 2) at = rng() % 48;
      const uint8_t choices[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, static_cast<uint8_t>(rng())};
      bad[at] = choices[rng() % 6];
    }
    reseal_binary(bad);
    INFO("trial " << trial);
    try {
      // What decodes is a plan like any other: it encodes and decodes again.
      const Plan p = decode_binary(bad.data(), bad.size());
      const std::vector<uint8_t> again = encode_binary(p);
      CHECK(same_plan(decode_binary(again.data(), again.size()), p));
      ++decoded;
    } catch (const UserError&) {
      ++refused;
    } catch (const VerifyError&) {  // intact encoding, out-of-range content
      ++refused;
    }
  }
  CHECK(refused > 0);
  CHECK(decoded > 0);
}

// ─── JSON ───────────────────────────────────────────────────────────────────

TEST_CASE("json: round trip over fields, latencies and matrix families", "[formats][json]") {
  for (const Field& f : all_fields())
    for (uint32_t lambda : {1u, 3u})
      for (const char* family : kFamilies)
        for (bool with_matrix : {false, true}) {
          INFO(f.name() << " lambda=" << lambda << " family=" << family << " with_matrix=" << with_matrix);
          const Plan plan = busy_plan(f, lambda, family, 5 + lambda);
          const json j = to_json(plan, with_matrix, json{{"C1", plan.num_steps}});
          CHECK(j["spec"]["matrix"].contains("entries") == (with_matrix || std::string(family) == "explicit"));
          const Plan back = from_json(json::parse(j.dump()));
          CHECK(same_plan(plan, back));
          CHECK(plan_digest(back) == plan_digest(plan));
        }
}

TEST_CASE("json: files are streamed and equal to_json", "[formats][json]") {
  const Plan plan = busy_plan(Field::gf65536(), 1, "permutation", 8);
  const json cost{{"C1", 4}, {"C2", 9}, {"step_sizes", {3, 2, 2, 2}}};
  TempFile file("plan.json");
  write_json_file(plan, file.path, true, cost);
  std::ifstream in(file.path);
  const json parsed = json::parse(in);
  CHECK(parsed == to_json(plan, true, cost));
  CHECK(same_plan(read_json_file(file.path), plan));
  // Non-coded operations carry no matrix; block operations keep their root.
  Spec s;
  s.op = OpKind::Broadcast;
  s.K = 3;
  s.root = 0;
  s.blocks = 4;
  s.algorithm = "none";
  const Plan bc = make_plan(s, 2);
  const json jb = to_json(bc, true);
  CHECK_FALSE(jb["spec"].contains("matrix"));
  CHECK(jb["spec"]["root"] == 0);
  CHECK(same_plan(from_json(jb), bc));
}

TEST_CASE("json: a tiny plan has exactly the documented shape", "[formats][json]") {
  const Field f = Field::gf256();
  const Plan plan = tiny_plan(f, 1, matrix_explicit(two_by_two(1, 2, 3, 4), f, "tiny.csv"));
  const json expected = json::parse(R"({
    "format": "collplan-plan", "version": 1, "num_steps": 1,
    "spec": { "op": "encode", "K": 2, "p": 1, "lambda": 1,
              "field": {"kind": "gf2m", "m": 8, "poly": 285},
              "matrix": {"family": "explicit", "rows": 2, "cols": 2, "source": "tiny.csv",
                         "digest": "DIGEST", "entries": [[1, 2], [3, 4]]},
              "algorithm": "hand", "blocks": 1 },
    "cost": {"C1": 1, "C2": 1},
    "ranks": [
      { "rank": 0, "slots": 3, "inputs": [0], "outputs": [2],
        "steps": [ { "t": 1,
                     "sends": [ {"port": 0, "to": 1, "payload": [[[0, 1]]]} ],
                     "recvs": [ {"port": 0, "from": 1, "sent_at": 1, "into": [1]} ],
                     "ops":   [ {"dst": 2, "terms": [[0, 1], [1, 3]], "matrix_col": 0} ] } ] },
      { "rank": 1, "slots": 3, "inputs": [0], "outputs": [2],
        "steps": [ { "t": 1,
                     "sends": [ {"port": 0, "to": 0, "payload": [[[0, 1]]]} ],
                     "recvs": [ {"port": 0, "from": 0, "sent_at": 1, "into": [1]} ],
                     "ops":   [ {"dst": 2, "terms": [[0, 4], [1, 2]], "matrix_col": 1} ] } ] } ] })");
  json want = expected;
  want["spec"]["matrix"]["digest"] = plan.spec.matrix.digest.hex();
  const json got = to_json(plan, false, json{{"C1", 1}, {"C2", 1}});
  INFO(got.dump(2));
  CHECK(got == want);
  // The tiny plan is a correct encode, and stays one after the round trip.
  passes::verify(from_json(got));
}

TEST_CASE("json: bad documents are refused naming the JSON path", "[formats][json]") {
  const Field f = Field::gf256();
  const Plan plan = tiny_plan(f, 1, matrix_random(2, 9, f));
  const json good = to_json(plan, false);
  REQUIRE_NOTHROW(from_json(good));
  const Matrix a = materialize(plan.spec.matrix, f);
  json wrong_entries = json::array({json::array({a.at(0, 0) ^ 1, a.at(0, 1)}), json::array({a.at(1, 0), a.at(1, 1)})});
  const std::string wrong_entry = fmt::format("spec.matrix.entries[0][0]: {} differs", a.at(0, 0) ^ 1);
  struct Case {
    const char* name;
    std::function<void(json&)> edit;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"missing destination", [](json& j) { j["ranks"][1]["steps"][0]["sends"][0].erase("to"); },
       "ranks[1].steps[0].sends[0].to: missing"},
      {"missing ranks", [](json& j) { j.erase("ranks"); }, "ranks: missing"},
      {"missing field", [](json& j) { j["spec"].erase("field"); }, "spec.field: missing"},
      {"K as a string", [](json& j) { j["spec"]["K"] = "2"; }, "spec.K: expected a non-negative integer, got string"},
      {"negative port", [](json& j) { j["ranks"][0]["steps"][0]["sends"][0]["port"] = -1; },
       "ranks[0].steps[0].sends[0].port: -1 is negative"},
      {"fractional slot", [](json& j) { j["ranks"][0]["inputs"][0] = 0.5; }, "ranks[0].inputs[0]: expected"},
      {"port out of range", [](json& j) { j["ranks"][0]["steps"][0]["sends"][0]["port"] = 1; },
       "ranks[0].steps[0].sends[0].port: 1 is not a port (valid: 0..0, p = 1)"},
      {"rank out of range", [](json& j) { j["ranks"][0]["steps"][0]["recvs"][0]["from"] = 2; },
       "ranks[0].steps[0].recvs[0].from: 2 is not a rank (valid: 0..1, K = 2)"},
      {"slot out of range", [](json& j) { j["ranks"][1]["steps"][0]["sends"][0]["payload"][0][0][0] = 3; },
       "ranks[1].steps[0].sends[0].payload[0][0][0]: 3 is not a slot (valid: 0..2"},
      {"coefficient out of range", [](json& j) { j["ranks"][1]["steps"][0]["ops"][0]["terms"][1][1] = 256; },
       "ranks[1].steps[0].ops[0].terms[1][1]: 256 is not an element of gf256"},
      {"term not a pair", [](json& j) { j["ranks"][1]["steps"][0]["ops"][0]["terms"][1] = json::array({1}); },
       "ranks[1].steps[0].ops[0].terms[1]: a term is [slot, coeff]"},
      {"matrix column", [](json& j) { j["ranks"][1]["steps"][0]["ops"][0]["matrix_col"] = 2; },
       "ranks[1].steps[0].ops[0].matrix_col: 2 is not a matrix column"},
      {"receive slot", [](json& j) { j["ranks"][0]["steps"][0]["recvs"][0]["into"][0] = 7; },
       "ranks[0].steps[0].recvs[0].into[0]: 7 is not a slot"},
      {"sent later", [](json& j) { j["ranks"][0]["steps"][0]["recvs"][0]["sent_at"] = 2; },
       "ranks[0].steps[0].recvs[0].sent_at"},
      {"step beyond num_steps", [](json& j) { j["ranks"][0]["steps"][0]["t"] = 2; }, "ranks[0].steps[0].t: step 2"},
      {"ranks out of order", [](json& j) { std::swap(j["ranks"][0], j["ranks"][1]); }, "ranks[0].rank: 1 found"},
      {"too few ranks", [](json& j) { j["ranks"].erase(1); }, "ranks: 1 programs listed"},
      {"unknown field kind", [](json& j) { j["spec"]["field"] = json{{"kind", "gf3"}}; },
       "spec.field.kind: unknown field kind 'gf3'"},
      {"unsupported polynomial", [](json& j) { j["spec"]["field"]["poly"] = 283; }, "spec.field: "},
      {"composite q", [](json& j) { j["spec"]["field"] = json{{"kind", "prime"}, {"q", 65535}}; }, "spec.field: "},
      {"unknown op", [](json& j) { j["spec"]["op"] = "scatter"; }, "spec.op: unknown operation 'scatter'"},
      {"K too small", [](json& j) { j["spec"]["K"] = 1; }, "spec: K = 1"},
      {"wrong digest", [](json& j) { j["spec"]["matrix"]["digest"] = std::string(32, '0'); },
       "spec.matrix.digest: 00000000000000000000000000000000 does not match"},
      {"malformed digest", [](json& j) { j["spec"]["matrix"]["digest"] = "xyz"; }, "spec.matrix.digest: 'xyz'"},
      {"entries differ from family", [&](json& j) { j["spec"]["matrix"]["entries"] = wrong_entries; },
       wrong_entry.c_str()},
      {"explicit without entries", [](json& j) { j["spec"]["matrix"]["family"] = "explicit"; },
       "spec.matrix.entries: missing"},
      {"unknown family", [](json& j) { j["spec"]["matrix"]["family"] = "hilbert"; }, "spec.matrix: unknown matrix family"},
      {"misspelt key", [](json& j) { j["ranks"][0]["steps"][0]["sends"][0]["prot"] = 0; },
       "ranks[0].steps[0].sends[0].prot: unknown member"},
      {"wrong format", [](json& j) { j["format"] = "other"; }, "format: 'other' is not a collplan plan"},
      {"wrong version", [](json& j) { j["version"] = 2; }, "version: unsupported version 2"},
      {"steps not an array", [](json& j) { j["ranks"][0]["steps"] = json::object(); },
       "ranks[0].steps: expected an array, got object"},
      {"document not an object", [](json& j) { j = json::array(); }, "(document): expected an object"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    json bad = good;
    c.edit(bad);
    CHECK_THAT(refusal_of([&] { from_json(bad); }), Catch::Contains(c.expect) && Catch::StartsWith("plan JSON: "));
  }
}

TEST_CASE("json: files that are not JSON plans", "[formats][json]") {
  TempFile file("bad.json");
  {
    std::ofstream out(file.path);
    out << "{\"format\": \"collplan-plan\",\n \"version\": 1,,}";
  }
  const std::string msg = refusal_of([&] { read_json_file(file.path); });
  CHECK_THAT(msg, Catch::Contains(file.path) && Catch::Contains("invalid JSON") && Catch::Contains("line 2"));
  TempFile missing("missing.json");
  CHECK_THAT(refusal_of([&] { read_json_file(missing.path); }), Catch::Contains(missing.path));
  {
    std::ofstream out(file.path);
    out << R"({"format": "collplan-plan", "version": 1})";
  }
  CHECK_THAT(refusal_of([&] { read_json_file(file.path); }), Catch::Contains("spec: missing"));
}

// ─── Text ───────────────────────────────────────────────────────────────────

TEST_CASE("text: a tiny plan dumps exactly", "[formats][text]") {
  const Field f = Field::prime(65537);
  Plan plan = tiny_plan(f, 3, matrix_vandermonde({2, 3}, f));
  // Add an op with an empty combination and a payload with two elements, so
  // every printing rule shows.
  Program& r1 = plan.ranks[1];
  const SlotId z = r1.new_slot();
  r1.at(3).ops.push_back(make_op(r1, z, {}));
  plan.ranks[0].steps[0].sends[0].payload.push_back(Combo{{Term{0, 5}, Term{2, 1}}});
  const std::string expected = fmt::format(R"(collplan plan
  op         encode
  K          2
  p          1
  lambda     3
  field      prime:65537 = GF(65537)
  matrix     vandermonde 2x2
  points     [2, 3]
  digest     {}
  algorithm  hand
  blocks     1
  steps      3
  terms      8

rank 0: 3 slots, inputs [s0], outputs [s2]
  step 1
    send port 0 -> 1 [s0, 5*s0 + s2]
  step 3
    recv port 0 <- 1 (sent 1) -> s1
    s2 := s0 + 2*s1  (matrix col 0)

rank 1: 4 slots, inputs [s0], outputs [s2]
  step 1
    send port 0 -> 0 [s0]
  step 3
    recv port 0 <- 0 (sent 1) -> s1
    s2 := 3*s0 + s1  (matrix col 1)
    s3 := 0
)",
                                           plan.spec.matrix.digest.hex());
  CHECK(to_text(plan) == expected);
  const std::string only1 = to_text(plan, 1);
  CHECK(only1.find("rank 0:") == std::string::npos);
  CHECK(only1.find("rank 1: 4 slots") != std::string::npos);
  CHECK(only1.starts_with("collplan plan\n  op         encode\n"));
  CHECK(only1.find("  terms      3 in rank 1\n") != std::string::npos);
  // A plan holding only rank 1's program (as read_rank loads it) dumps the same.
  Plan partial = make_plan(plan.spec, plan.num_steps);
  partial.ranks[1] = plan.ranks[1];
  CHECK(to_text(partial, 1) == only1);
  CHECK_THAT(refusal_of([&] { to_text(plan, 2); }), Catch::Contains("rank 2 is not in this plan"));
}

TEST_CASE("text: long payloads and term lists wrap within the width", "[formats][text]") {
  const Field f = Field::gf65536();
  Plan plan = tiny_plan(f, 1, matrix_random(2, 3, f));
  Program& prog = plan.ranks[0];
  std::vector<Combo> payload;
  std::vector<Term> terms;
  std::vector<SlotId> into;
  for (uint32_t i = 0; i < 300; ++i) {
    const SlotId s = prog.new_slot();
    terms.push_back(Term{s, 65535 - i});
    payload.push_back(Combo{{Term{s, 1}, Term{0, 40000 + i}}});
    into.push_back(s);
  }
  prog.at(1).ops.push_back(make_op(prog, 3, terms, 1));
  prog.at(1).sends.push_back(Send{0, 1, payload});
  prog.at(1).recvs.push_back(Recv{0, 1, 1, into});
  const std::string text = to_text(plan);
  std::istringstream in(text);
  std::string line, joined;
  size_t lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    CHECK(line.size() <= kTextWidth);
    joined += line + "\n";
  }
  CHECK(lines > 30);
  // Nothing is lost by wrapping: every term and slot is printed.
  CHECK(joined.find("65236*s302") != std::string::npos);  // last op term
  CHECK(joined.find("40299*s0]") != std::string::npos);   // last payload element
  CHECK(joined.find(" s302\n") != std::string::npos);      // last receive slot
  CHECK(joined.find("(matrix col 1)") != std::string::npos);
}

// ─── Generated plans ────────────────────────────────────────────────────────

TEST_CASE("formats: a generated prepare-and-shoot plan round-trips and still verifies", "[formats]") {
  for (const Field& f : {Field::gf256(), Field::prime(65537)}) {
    INFO(f.name());
    const Plan plan = gen::prepare_shoot(test::random_encode_spec(64, 2, f, 2024));
    const std::vector<uint8_t> bytes = encode_binary(plan);
    const Plan back = decode_binary(bytes.data(), bytes.size());
    REQUIRE(same_plan(back, plan));
    passes::verify(back);
    TempFile file("ps.cplan");
    write_binary(plan, file.path);
    for (Rank r = 0; r < plan.spec.K; r += 7) CHECK(read_rank(file.path, r) == plan.ranks[r]);
    CHECK(same_plan(from_json(json::parse(to_json(plan, false).dump())), plan));
  }
}

TEST_CASE("formats: bytes per term of large plans", "[.bench][formats]") {
  for (uint32_t K : {1024u, 4096u})
    for (const Field& f : {Field::gf256(), Field::gf65536(), Field::prime(65537)}) {
      const auto t0 = std::chrono::steady_clock::now();
      const Plan plan = gen::prepare_shoot(test::random_encode_spec(K, 2, f, 2024));
      const auto t1 = std::chrono::steady_clock::now();
      const std::vector<uint8_t> bytes = encode_binary(plan);
      const auto t2 = std::chrono::steady_clock::now();
      const Plan back = decode_binary(bytes.data(), bytes.size());
      const auto t3 = std::chrono::steady_clock::now();
      REQUIRE(back == plan);
      const uint64_t terms = count_terms(plan);
      auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
      fmt::print(stdout, "K={} p=2 {}: {} terms, {} bytes, {:.3f} bytes/term (elem {} B); generate {:.0f} ms, "
                       "encode {:.0f} ms, decode {:.0f} ms\n",
                       K, f.name(), terms, bytes.size(), static_cast<double>(bytes.size()) / terms, f.elem_bytes(),
                       ms(t0, t1), ms(t1, t2), ms(t2, t3));
    }
}
