// Spec building: the flags (from the command line or a spec file) into a
// validated Spec, with the matrix built from its family and parameters.
#include "pipeline/spec_flags.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "gen/circulant_plans.h"
#include "gen/decentralized.h"
#include "gen/dissemination.h"
#include "gen/registry.h"
#include "gen/vandermonde_plans.h"
#include "json/json.h"
#include "matrix/codes.h"
#include "matrix/repair.h"
#include "matrix/structured.h"
#include "support/error.h"
#include "support/limits.h"

namespace collplan::pipeline {

// ---- spec from flags or a spec file ----------------------------------------

std::vector<uint64_t> parse_list(const std::string& text, const char* what) {
  std::vector<uint64_t> v;
  std::stringstream ss(text);
  for (std::string tok; std::getline(ss, tok, ',');) {
    size_t pos = 0;
    uint64_t x = 0;
    try {
      x = std::stoull(tok, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos == 0 || pos != tok.size() || tok.find('-') != std::string::npos)
      user_error("--{}: '{}' is not a non-negative integer (expected a comma-separated list)", what, tok);
    v.push_back(x);
  }
  return v;
}

namespace {

const char* const kStructuredFamilies =
    "dft, inverse-dft, draw-loose, inverse-draw-loose, lagrange, cauchy, rs-systematic";

bool is_structured(const std::string& family) {
  return family == "dft" || family == "inverse-dft" || family == "draw-loose" || family == "inverse-draw-loose" ||
         family == "lagrange" || family == "cauchy" || family == "rs-systematic";
}



// One spec option: its flag, its spec-file key, and whether it holds its
// default value.
struct SpecOption {
  const char* flag;
  const char* key;
  bool (*is_default)(const SpecFlags&);
};

const SpecFlags& defaults() {
  static const SpecFlags d;
  return d;
}

const SpecOption kRoot{"--root", "root", [](const SpecFlags& s) { return s.root == defaults().root; }};
const SpecOption kCounts{"--counts", "counts", [](const SpecFlags& s) { return s.counts.empty(); }};
const SpecOption kExclusive{"--exclusive", "exclusive", [](const SpecFlags& s) { return !s.exclusive; }};
const SpecOption kN{"--N", "N", [](const SpecFlags& s) { return s.N == 0; }};
const SpecOption kCode{"--code", "code", [](const SpecFlags& s) { return s.code == defaults().code; }};
const SpecOption kGenerator{"--generator", "generator", [](const SpecFlags& s) { return s.generator_file.empty(); }};
const SpecOption kSystematic{"--systematic", "systematic", [](const SpecFlags& s) { return s.systematic; }};
const SpecOption kLost{"--lost", "lost", [](const SpecFlags& s) { return s.lost.empty(); }};
const SpecOption kHelpers{"--helpers", "helpers", [](const SpecFlags& s) { return s.helpers.empty(); }};
const SpecOption kTo{"--to", "to", [](const SpecFlags& s) { return s.to.empty(); }};
const SpecOption kMatrix{"--matrix", "matrix", [](const SpecFlags& s) { return s.matrix == defaults().matrix; }};
const SpecOption kMatrixObject{"", "matrix", [](const SpecFlags& s) { return !s.matrix_object.has_value(); }};
const SpecOption kMatrixFile{"--matrix-file", "matrix_file", [](const SpecFlags& s) { return s.matrix_file.empty(); }};
const SpecOption kSeed{"--seed", "seed", [](const SpecFlags& s) { return s.seed == defaults().seed; }};
const SpecOption kPoints{"--points", "points", [](const SpecFlags& s) { return s.points.empty(); }};
const SpecOption kPerm{"--perm", "perm", [](const SpecFlags& s) { return s.perm.empty(); }};
const SpecOption kRadix{"--radix", "radix", [](const SpecFlags& s) { return s.radix == 0; }};
const SpecOption kPhi{"--phi", "phi", [](const SpecFlags& s) { return s.phi.empty(); }};

// Given on the command line, or holding a value other than its default (from
// a spec file or set by a caller). A default value in a spec file is not an
// option given: a plan's own spec object may carry them.
bool is_set(const SpecFlags& sf, const SpecOption& o) {
  return (*o.flag && on_command_line(sf, o.flag)) || !o.is_default(sf);
}

// How to name the option in a message: the flag, and the spec-file key when
// the value came from there.
std::string name_of(const SpecFlags& sf, const SpecOption& o) {
  if (&o == &kMatrixObject) return fmt::format("the matrix object of spec file '{}'", sf.spec_file);
  if (!on_command_line(sf, o.flag) && sf.from_file.count(o.key))
    return fmt::format("{} (key \"{}\" of spec file '{}')", o.flag, o.key, sf.spec_file);
  return o.flag;
}

// Refuses an option `op` does not use (docs/spec-files.md).
void refuse_unused_for_op(const SpecFlags& sf, const SpecOption& o, OpKind op, const char* users) {
  if (is_set(sf, o))
    user_error("{} is not used by --op {} (it is used by: {})", name_of(sf, o), op_name(op), users);
}

// Refuses an option matrix family `family` does not use.
void refuse_unused_for_matrix(const SpecFlags& sf, const SpecOption& o, const std::string& family, const char* users,
                              const char* hint = "") {
  if (is_set(sf, o))
    user_error("{} is not used by --matrix {} (it is used by --matrix {}){}", name_of(sf, o), family, users, hint);
}

// The structured families (matrix/structured.h). collplan chooses the points unless
// --points gives them (layout in ir/spec.h); --radix and --phi choose among
// the structured point sets.
MatrixSpec build_structured_matrix(const SpecFlags& sf, const std::string& family, uint32_t K, const Field& f) {
  const bool dft = family == "dft" || family == "inverse-dft";
  const bool inverse = family.rfind("inverse-", 0) == 0;
  if (is_set(sf, kPhi) && family != "draw-loose" && family != "inverse-draw-loose")
    user_error("{} applies to --matrix draw-loose or inverse-draw-loose, not {}", name_of(sf, kPhi), family);
  const uint32_t lists = family == "lagrange" ? 2 : (family == "cauchy" || family == "rs-systematic") ? 4 : 1;
  if (!sf.points.empty()) {
    if (is_set(sf, kRadix)) user_error("--radix chooses points; it cannot be combined with --points");
    if (is_set(sf, kPhi)) user_error("--phi chooses points; it cannot be combined with --points");
    std::vector<Elem> pts;
    for (uint64_t x : parse_list(sf.points, "points")) {
      f.check(x, "--points entry");
      pts.push_back(static_cast<Elem>(x));
    }
    if (pts.size() != static_cast<size_t>(lists) * K)
      user_error("--points has {} entries, --matrix {} with K = {} needs {}", pts.size(), family, K, lists * K);
    return matrix_with_points(family, K, std::move(pts), f);
  }
  if (sf.radix == 1) user_error("--radix 1 is invalid (valid: a radix P >= 2, or 0 for collplan's choice)");
  const uint32_t P = sf.radix != 0 ? sf.radix : gen::default_radix(f, K, sf.p, dft);
  if (dft) return matrix_dft(K, P, f, inverse);
  if (lists == 1) {
    std::vector<uint64_t> phi;
    if (!sf.phi.empty()) phi = parse_list(sf.phi, "phi");
    return matrix_draw_loose(K, P, phi, f, inverse);
  }
  // Lagrange: omega, alpha; Cauchy: x, y (c = d = 1); GRS: x, y (v = v' = 1).
  const std::vector<Elem> sets = disjoint_point_sets(f, K, P, 2);
  const std::vector<Elem> a(sets.begin(), sets.begin() + K), b(sets.begin() + K, sets.end());
  if (lists == 2) return matrix_lagrange(a, b, f);
  return matrix_four_lists(family, {a, b, std::vector<Elem>(K, 1), std::vector<Elem>(K, 1)}, f);
}

// The family the flags name: --matrix, or "file" when only --matrix-file
// was given (no --matrix on the command line or in the spec file).
std::string matrix_family(const SpecFlags& sf) {
  if (!sf.matrix_file.empty() && !on_command_line(sf, "--matrix") && !sf.from_file.count("matrix") &&
      sf.matrix == defaults().matrix)
    return "file";
  return sf.matrix;
}

MatrixSpec build_matrix_of(const SpecFlags& sf, const std::string& family, uint32_t K, const Field& f) {
  // Every parameter the family does not use is refused, not ignored.
  if (family != "file")
    refuse_unused_for_matrix(sf, kMatrixFile, family, "file", " (give --matrix file, or leave --matrix out)");
  if (family != "explicit" && sf.matrix_object)
    user_error("{} gives a matrix by its entries (family explicit), but --matrix is {}", name_of(sf, kMatrixObject),
               family);
  const bool seeded = family == "random" || (family == "permutation" && sf.perm.empty());
  if (!seeded)
    refuse_unused_for_matrix(sf, kSeed, family,
                             family == "permutation" ? "random, or permutation without --perm" : "random, permutation",
                             family == "permutation" ? " (--perm gives the permutation)" : "");
  if (family != "permutation") refuse_unused_for_matrix(sf, kPerm, family, "permutation");
  if (family != "vandermonde" && !is_structured(family))
    refuse_unused_for_matrix(sf, kPoints, family, "vandermonde, dft, inverse-dft, draw-loose, inverse-draw-loose, "
                                                  "lagrange, cauchy, rs-systematic");
  if (is_structured(family)) return build_structured_matrix(sf, family, K, f);
  if (is_set(sf, kRadix) || is_set(sf, kPhi))
    user_error("--radix and --phi choose structured points; --matrix {} has none (use {}){}", family,
               kStructuredFamilies,
               is_set(sf, kRadix) ? fmt::format(" [{}]", name_of(sf, kRadix)) : fmt::format(" [{}]", name_of(sf, kPhi)));
  if (family == "random") return matrix_random(K, sf.seed, f);
  if (family == "identity") return matrix_identity(K, f);
  if (family == "permutation") {
    std::vector<uint32_t> perm;
    if (sf.perm.empty()) {  // a seeded random permutation
      perm.resize(K);
      for (uint32_t i = 0; i < K; ++i) perm[i] = i;
      SplitMix64 rng(sf.seed);
      for (uint32_t i = K; i > 1; --i) std::swap(perm[i - 1], perm[rng.next() % i]);
    } else {
      for (uint64_t x : parse_list(sf.perm, "perm")) perm.push_back(static_cast<uint32_t>(std::min<uint64_t>(x, UINT32_MAX)));
      if (perm.size() != K) user_error("--perm has {} entries, K = {} needs {}", perm.size(), K, K);
    }
    return matrix_permutation(std::move(perm), f);
  }
  if (family == "vandermonde") {
    std::vector<Elem> pts;
    if (sf.points.empty()) {  // 1, g, g^2, ...: distinct while K <= q-1
      if (K > f.size() - 1)
        user_error("a Vandermonde matrix with default points needs K <= q-1 = {}, got K = {} (give --points)", f.size() - 1, K);
      Elem x = 1;
      for (uint32_t i = 0; i < K; ++i, x = f.mul(x, f.generator())) pts.push_back(x);
    } else {
      for (uint64_t x : parse_list(sf.points, "points")) {
        f.check(x, "--points entry");
        pts.push_back(static_cast<Elem>(x));
      }
      if (pts.size() != K) user_error("--points has {} entries, K = {} needs {}", pts.size(), K, K);
    }
    return matrix_vandermonde(std::move(pts), f);
  }
  if (family == "file") {
    if (sf.matrix_file.empty()) user_error("--matrix file needs --matrix-file PATH (Matrix Market or CSV)");
    return matrix_from_file(sf.matrix_file, K, K, f);
  }
  if (family == "explicit") {
    if (!sf.matrix_object)
      user_error("--matrix explicit is a matrix given by its entries: in a spec file, as a matrix object with "
                 "\"entries\" (docs/spec-files.md); on the command line, use --matrix file --matrix-file PATH");
    const MatrixSpec& ms = *sf.matrix_object;
    if (ms.rows != K || ms.cols != K)
      user_error("{} is {} x {}, but K = {} needs a {} x {} matrix", name_of(sf, kMatrixObject), ms.rows, ms.cols, K, K,
                 K);
    MatrixSpec out = ms;
    out.digest = matrix_digest(materialize(out, f), f);  // in the spec's field (--field may override the file's)
    return out;
  }
  user_error("unknown matrix '{}' (valid: {})", family, kMatrixChoices);
}

}  // namespace

MatrixSpec build_matrix(const SpecFlags& sf, uint32_t K, const Field& f) {
  return build_matrix_of(sf, matrix_family(sf), K, f);
}

void apply_compile_options(const SpecFlags& sf, std::string& algorithm, std::string& passes_csv, passes::CostModel& cm) {
  if (sf.algorithm) algorithm = *sf.algorithm;
  if (sf.passes) passes_csv = *sf.passes;
  if (sf.beta) cm.beta = *sf.beta;
  if (sf.tau) cm.tau = *sf.tau;
  if (sf.cost_len) cm.len = *sf.cost_len;
  // The command line's values are checked here too (a spec file's were when
  // read): a negative or infinite cost would make every auto choice wrong.
  if (!(cm.beta >= 0) || !std::isfinite(cm.beta))
    user_error("--beta {} is invalid (valid: a finite number >= 0, the time per step)", cm.beta);
  if (!(cm.tau >= 0) || !std::isfinite(cm.tau))
    user_error("--tau {} is invalid (valid: a finite number >= 0, the time per element)", cm.tau);
  if (cm.len == 0) user_error("--cost-len 0 is invalid (valid: elements per vector, >= 1)");
}

Spec build_spec(const SpecFlags& sf, uint32_t max_ranks) {
  Spec s;
  s.op = parse_op(sf.op);
  s.K = sf.K;
  s.p = sf.p;
  s.lambda = sf.lambda;
  s.field = Field::parse(sf.field);
  const bool decentralized = is_code_op(s.op);  // takes an [N, K] code
  const bool repair = s.op == OpKind::Repair || s.op == OpKind::Decode;

  // Options the operation does not use are refused, never ignored.
  if (!repair)
    for (const SpecOption* o : {&kLost, &kHelpers}) refuse_unused_for_op(sf, *o, s.op, "repair, decode");
  if (s.op != OpKind::Decode) refuse_unused_for_op(sf, kTo, s.op, "decode");
  if (s.op != OpKind::Broadcast && s.op != OpKind::Reduce) refuse_unused_for_op(sf, kRoot, s.op, "broadcast, reduce");
  if (s.op != OpKind::Allgatherv && s.op != OpKind::Prefix)
    refuse_unused_for_op(sf, kCounts, s.op, "allgatherv (blocks per rank), prefix (items per rank)");
  if (s.op != OpKind::Prefix) refuse_unused_for_op(sf, kExclusive, s.op, "prefix");
  if (!decentralized)
    for (const SpecOption* o : {&kN, &kCode, &kGenerator, &kSystematic})
      refuse_unused_for_op(sf, *o, s.op, "decentralized-encode, repair, decode");
  if (s.op != OpKind::Encode) {
    const std::string users =
        decentralized ? fmt::format("encode ({} takes --code or --generator)", op_name(s.op)) : "encode";
    for (const SpecOption* o : {&kMatrix, &kMatrixFile, &kPoints, &kPerm, &kRadix, &kPhi})
      refuse_unused_for_op(sf, *o, s.op, users.c_str());
    if (!decentralized) {
      refuse_unused_for_op(sf, kMatrixObject, s.op, "encode, decentralized-encode, repair, decode");
      refuse_unused_for_op(sf, kSeed, s.op, "encode (random, permutation), the code ops (--code random)");
    }
  }
  if (decentralized) {
    if (is_set(sf, kGenerator) && is_set(sf, kCode))
      user_error("{} and {} both give the code's matrix; give one", name_of(sf, kCode), name_of(sf, kGenerator));
    const bool object = sf.matrix_object.has_value() && !is_set(sf, kGenerator);
    if ((is_set(sf, kGenerator) || object || sf.code != "random") && is_set(sf, kSeed))
      user_error("{} is not used: it seeds --code random, and the code's matrix here is {}", name_of(sf, kSeed),
                 is_set(sf, kGenerator) ? "read from --generator" : object ? "the spec file's matrix object (--code random on the command line replaces it)"
                                                                         : "--code " + sf.code);
  }

  const bool K_given = on_command_line(sf, "--K") || sf.from_file.count("K");
  if (sf.K == 0 && !K_given)
    user_error("--K is required ({})", decentralized ? "the code's dimension, 1 <= K < N"
                                                     : "the number of processors, K >= 2");
  // Where a value came from, for the range messages below.
  auto from = [&](const char* flag, const char* key) {
    return !on_command_line(sf, flag) && sf.from_file.count(key)
               ? fmt::format(" (key \"{}\" of spec file '{}')", key, sf.spec_file)
               : std::string();
  };
  if (sf.K == 0)
    user_error("--K 0{} is out of range (valid: {})", from("--K", "K"),
               decentralized ? fmt::format("1 <= K < N{} for {}", s.op == OpKind::DecentralizedEncode ? " sources" : "",
                                           op_name(s.op))
                             : "K >= 2 processors");
  s.root = sf.root;
  s.blocks = sf.blocks;
  s.exclusive = sf.exclusive;
  if (!sf.counts.empty())
    for (uint64_t c : parse_list(sf.counts, "counts")) {
      if (c > (1u << 24)) user_error("--counts entry {} is too large (at most 16777216)", c);
      s.counts.push_back(static_cast<uint32_t>(c));
    }
  if (decentralized) {
    const bool N_given = on_command_line(sf, "--N") || sf.from_file.count("N");
    if (sf.N == 0 && !N_given)
      user_error("--N is required for {} (the number of processors, N > K)", op_name(s.op));
    if (sf.N == 0) user_error("--N 0{} is out of range (valid: N > K = {} processors)", from("--N", "N"), sf.K);
    s.N = sf.N;
  }
  if (repair) {
    auto ranks = [&](const std::string& text, const char* what) {
      std::vector<uint32_t> v;
      for (uint64_t r : parse_list(text, what)) {
        if (r >= s.N) user_error("--{} {}: rank {} is not a processor (valid: 0..{})", what, text, r, s.N - 1);
        v.push_back(static_cast<uint32_t>(r));
      }
      return v;
    };
    auto sorted = [&](std::vector<uint32_t> v, const char* what, const std::string& text) {
      std::sort(v.begin(), v.end());
      for (size_t i = 1; i < v.size(); ++i)
        if (v[i] == v[i - 1]) user_error("--{} {}: rank {} is named twice", what, text, v[i]);
      return v;
    };
    if (s.op == OpKind::Repair && sf.lost.empty())
      user_error("--lost is required for repair (the ranks whose symbols are rebuilt, 1 to N - K = {} of them)",
                 s.N - s.K);
    if (!sf.lost.empty()) s.lost = sorted(ranks(sf.lost, "lost"), "lost", sf.lost);
    if (!sf.helpers.empty()) s.helpers = sorted(ranks(sf.helpers, "helpers"), "helpers", sf.helpers);
    if (s.op == OpKind::Decode) {
      if (sf.to.empty()) {
        for (uint32_t j = 0; j < s.K; ++j) s.to.push_back(j);
      } else {
        s.to = ranks(sf.to, "to");
        if (s.to.size() == 1) s.to.assign(s.K, s.to[0]);
        if (s.to.size() != s.K)
          user_error("--to {}: {} ranks given; decode needs K = {} (rank to[j] receives x_j) or one rank for all",
                     sf.to, s.to.size(), s.K);
      }
    }
  }
  validate_spec_basics(s, max_ranks);
  if (s.op == OpKind::Encode) s.matrix = build_matrix(sf, s.K, s.field);
  if (decentralized) {
    // A (K x (N-K)) for a systematic code, G (K x N) otherwise.
    if (!sf.generator_file.empty()) {
      s.matrix = matrix_from_file(sf.generator_file, s.K, sf.systematic ? s.N - s.K : s.N, s.field);
      // What it is, not where it was (the plan does not depend on the path).
      s.matrix.source = sf.systematic ? "systematic, A from a generator file" : "non-systematic, G from a generator file";
    } else if (sf.matrix_object) {
      const MatrixSpec& ms = *sf.matrix_object;
      const bool systematic = ms.cols != s.N;
      if (ms.rows != s.K || (ms.cols != s.N && ms.cols != s.N - s.K))
        user_error("{} is {} x {}; {} with N = {}, K = {} needs A, {} x {} (systematic), or G, {} x {}",
                   name_of(sf, kMatrixObject), ms.rows, ms.cols, op_name(s.op), s.N, s.K, s.K, s.N - s.K, s.K, s.N);
      if (is_set(sf, kSystematic) && sf.systematic != systematic)
        user_error("{} says systematic = {}, but {} is {} x {}, the shape of a {} code's {}", name_of(sf, kSystematic),
                   sf.systematic, name_of(sf, kMatrixObject), ms.rows, ms.cols,
                   systematic ? "systematic" : "non-systematic", systematic ? "A" : "G");
      s.matrix = ms;
      s.matrix.digest = matrix_digest(materialize(s.matrix, s.field), s.field);
    } else {
      s.matrix = code_matrix(sf.code, s.N, s.K, sf.systematic, sf.seed, s.field);
    }
  }
  if (repair && s.helpers.empty()) s.helpers = default_helpers(s);
  if (repair) (void)repair_map(s);  // given helpers: independent, and they span every target
  return s;
}

std::string resolve_auto_blocks(Spec& spec, passes::CostModel& cm) {
  const uint64_t m = cm.len;
  if (spec.op == OpKind::DecentralizedEncode) {
    spec.blocks = gen::decentralized_auto_blocks(spec, m, cm.beta, cm.tau);
    cm.len = (m + spec.blocks - 1) / spec.blocks;
    return gen::decentralized_auto_blocks_note(spec, m, cm.beta, cm.tau, spec.blocks);
  }
  if (spec.op == OpKind::Repair || spec.op == OpKind::Decode) {
    // n on a geometric ladder (ratio ~1.1) up to the checker's limit and m:
    // the least modeled time of any applicable generator's estimate for
    // blocks of ⌈m/n⌉ elements (the pipelined repair wants n ≫ helpers).
    const uint64_t outs = spec.op == OpKind::Repair ? spec.lost.size() : spec.K;
    const uint64_t survivors = spec.N - spec.lost.size();
    uint64_t top = 1;
    while (survivors * outs * (top + 1) * (top + 1) <= kMaxPostconditionEntries && top < m && top < 65536) ++top;
    uint32_t best = 1;
    double best_time = std::numeric_limits<double>::infinity();
    std::string best_gen;
    for (uint64_t n = 1; n <= top; n = std::max(n + 1, n * 11 / 10)) {
      Spec s = spec;
      s.blocks = static_cast<uint32_t>(n);
      const passes::CostModel per{cm.beta, cm.tau, (m + n - 1) / n};
      for (const gen::Candidate& c : gen::candidates(s, per))
        if (c.why_not.empty() && c.C1 != UINT32_MAX && c.time < best_time)
          best_time = c.time, best = static_cast<uint32_t>(n), best_gen = c.generator->name;
    }
    spec.blocks = best;
    cm.len = (m + best - 1) / best;
    return fmt::format(" n={} (blocks auto: {} modeled fastest over n <= {}; m={}, beta={}, tau={})", best, best_gen,
                       top, m, cm.beta, cm.tau);
  }
  if (spec.op == OpKind::Allreduce) {
    spec.blocks = gen::allreduce_auto_blocks(spec, m, cm.beta, cm.tau);
    cm.len = (m + spec.blocks - 1) / spec.blocks;
    return fmt::format(" n={} (blocks auto: {}; m={}, beta={}, tau={})", spec.blocks,
                       spec.blocks == 1 ? "the latency-optimal allreduce, whole vector per message, is modeled faster"
                                        : "one chunk per rank, reduce-scatter then allgather is modeled faster",
                       m, cm.beta, cm.tau);
  }
  if (spec.op == OpKind::Allgatherv) {
    // The counts are elements of length m already: n groups them into
    // blocks, the elements keep their length.
    spec.blocks = gen::circulant_allgatherv_auto_blocks(spec, m, cm.beta, cm.tau);
    return fmt::format(" n={} (blocks auto: argmin (n-1+q)beta + C2(n) m tau of circulant-allgatherv, q={}, p={}; "
                       "m={}, beta={}, tau={})",
                       spec.blocks, gen::Circulant(spec.K).q(), spec.p, m, cm.beta, cm.tau);
  }
  // A reduce is the broadcast reversed in time: the same steps and sizes.
  if (spec.op != OpKind::Broadcast && spec.op != OpKind::Reduce)
    user_error("--blocks auto is supported for broadcast, reduce, allreduce, allgatherv, decentralized-encode, repair "
               "and decode, not for '{}' (give --blocks N)",
               op_name(spec.op));
  spec.blocks = gen::circulant_auto_blocks(spec.K, m, cm.beta, cm.tau);
  cm.len = (m + spec.blocks - 1) / spec.blocks;
  return gen::circulant_auto_blocks_note(spec.K, m, cm.beta, cm.tau, spec.blocks);
}

}  // namespace collplan::pipeline
