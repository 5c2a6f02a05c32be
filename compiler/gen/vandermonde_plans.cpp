#include "gen/vandermonde_plans.h"

#include <map>
#include <numeric>

#include <fmt/format.h>

#include "gen/prepare_shoot.h"
#include "passes/compose.h"
#include "support/error.h"

namespace collplan::gen {

using ir::Plan;
using ir::Rank;

StructuredCost ps_cost(uint32_t n, uint32_t p) {
  if (n <= 1) return {};
  const PrepareShootShape sh = prepare_shoot_shape(n, p);
  return {sh.C1(), sh.C2(), sh.C2_zero_dropped()};
}

StructuredCost vandermonde_cost(const VandermondeStructure& s, uint32_t p) {
  StructuredCost c = ps_cost(s.shape.M, p);
  const StructuredCost stage = ps_cost(s.shape.P, p);
  for (uint32_t h = 0; h < s.shape.H; ++h) c += stage;
  if (s.permuted()) c += StructuredCost{1, 1, 1};
  return c;
}

std::optional<VandermondeStructure> best_structure(const Field& f, const std::vector<Elem>& points, uint32_t p,
                                                   const passes::CostModel& cm, bool allow_permutation, bool need_dft,
                                                   std::string* why) {
  const uint32_t K = static_cast<uint32_t>(points.size());
  if (need_dft && (f.size() - 1) % K != 0) {
    if (why) *why = fmt::format("needs K | q-1: K = {}, q-1 = {}", K, f.size() - 1);
    return std::nullopt;
  }
  std::optional<VandermondeStructure> best;
  double best_time = 0;
  for (const VandermondeStructure& s : detect_all(f, points, allow_permutation)) {
    if (need_dft && s.shape.M != 1) continue;
    const StructuredCost c = vandermonde_cost(s, p);
    const double t = cm.time(c.C1, c.C2_dropped);
    if (!best || t < best_time) {
      best = s;
      best_time = t;
    }
  }
  if (!best && why) {
    const uint64_t g = std::gcd<uint64_t>(K, f.size() - 1);
    std::string detail;
    for (uint64_t P = 2; P <= g && detail.empty(); ++P)
      if (g % P == 0) {
        if (need_dft && draw_loose_shape(K, static_cast<uint32_t>(P), f).M != 1) continue;
        detect_structure(f, points, static_cast<uint32_t>(P), allow_permutation, &detail);
        detail = fmt::format("radix {}: {}", P, detail);
      }
    if (need_dft)
      *why = fmt::format("needs points beta^rev(k) with K = P^H | q-1 (K = {}){}", K,
                         detail.empty() ? " for some radix P, but K is not a power of any P dividing q-1"
                                        : " (" + detail + ")");
    else if (g < 2)
      *why = fmt::format("needs a radix P >= 2 dividing gcd(K, q-1) = gcd({}, {}) = 1", K, f.size() - 1);
    else
      *why = fmt::format("needs points alpha_i*beta^rev(j){} for a radix P | gcd(K, q-1) = {} ({})",
                         allow_permutation ? " up to a column permutation" : "", g, detail);
  }
  return best;
}

uint32_t default_radix(const Field& f, uint32_t K, uint32_t p, bool need_dft) {
  const uint64_t q1 = f.size() - 1;
  if (need_dft && q1 % K != 0) user_error("dft needs K | q-1: K = {}, q-1 = {}", K, q1);
  if (!need_dft && K > q1) user_error("draw-and-loose needs K <= q-1 distinct non-zero points: K = {}, q-1 = {}", K, q1);
  const uint64_t g = std::gcd<uint64_t>(K, q1);
  auto admissible = [&](uint64_t P) {
    if (g % P != 0) return false;
    return !need_dft || draw_loose_shape(K, static_cast<uint32_t>(P), f).M == 1;
  };
  if (p + 1 <= g && admissible(p + 1)) return p + 1;
  uint32_t best = 0;
  uint64_t best_cost = 0;
  for (uint64_t P = 2; P <= g; ++P) {
    if (!admissible(P)) continue;
    VandermondeStructure s;
    s.shape = draw_loose_shape(K, static_cast<uint32_t>(P), f);
    const StructuredCost c = vandermonde_cost(s, p);
    if (best == 0 || c.C1 + c.C2 < best_cost) {
      best = static_cast<uint32_t>(P);
      best_cost = c.C1 + c.C2;
    }
  }
  if (best == 0) {
    if (need_dft) user_error("dft needs K = P^H for a radix P >= 2: K = {} is not a perfect power of any P", K);
    user_error("draw-and-loose needs a radix P >= 2 dividing gcd(K, q-1): gcd({}, {}) = {}", K, q1, g);
  }
  return best;
}

MatrixSpec stage_matrix(uint32_t K) {
  MatrixSpec m;
  m.family = "stage";
  m.rows = m.cols = K;
  return m;
}

std::string describe(const VandermondeStructure& s) {
  std::string d = fmt::format("P={}", s.shape.P);
  if (s.shape.M > 1) d += fmt::format(" M={}", s.shape.M);
  if (s.permuted()) d += " permuted";
  return d;
}

namespace {

// A group of ranks running one small encode (its matrix given densely).
struct Group {
  std::vector<Rank> ranks;
  Matrix matrix;
};

Spec piece_spec(const Spec& model, uint32_t K) {
  return make_encode_spec(K, model.p, model.lambda, model.field, stage_matrix(K));
}

// One parallel stage: every group of >= 2 ranks runs prepare-and-shoot of
// its matrix; groups with equal matrices share one generated sub-plan.
Plan parallel_stage(const Spec& model, uint32_t K, const std::vector<Group>& groups) {
  std::map<std::vector<Elem>, Plan> cache;
  std::vector<Plan> parts;
  std::vector<std::vector<Rank>> maps;
  for (const Group& g : groups) {
    if (g.ranks.size() < 2) continue;  // a 1×1 matrix [1]: nothing to do
    auto it = cache.find(g.matrix.a);
    if (it == cache.end()) {
      const Spec s = make_encode_spec(static_cast<uint32_t>(g.ranks.size()), model.p, model.lambda, model.field,
                                      matrix_explicit(g.matrix, model.field));
      it = cache.emplace(g.matrix.a, prepare_shoot(s)).first;
    }
    parts.push_back(it->second);
    maps.push_back(g.ranks);
  }
  return passes::compose_parallel(piece_spec(model, K), parts, maps);
}

// The stages of the loose phase (DFT of size Z on every row), forward order.
std::vector<Plan> loose_stages(const Spec& model, const VandermondeStructure& s, bool inverse) {
  const Field& f = model.field;
  const DrawLooseShape& sh = s.shape;
  const uint32_t P = sh.P, H = sh.H, Z = sh.Z;
  std::vector<Plan> stages;
  uint32_t Ppos = Z;  // P^{pos+1}
  for (uint32_t st = 1; st <= H; ++st) {
    Ppos /= P;  // P^pos, pos = H − s: the digit this stage combines along
    uint64_t scale = 1;  // P^{H−s}
    for (uint32_t t = 0; t < H - st; ++t) scale *= P;
    std::vector<Group> groups;
    for (uint32_t i = 0; i < sh.M; ++i)
      for (uint32_t base = 0; base < Z; ++base) {
        if ((base / Ppos) % P != 0) continue;  // one group per base with digit pos = 0
        Group g;
        std::vector<Elem> pts;
        for (uint32_t d = 0; d < P; ++d) {
          const uint32_t j = base + d * Ppos;
          g.ranks.push_back(j + Z * i);
          // E_s(j) = Σ_{t<s} j_{H−1−t} P^t = rev(j) mod P^s.
          const uint64_t E = digit_reverse(j, P, H) % (Z / scale);
          pts.push_back(f.pow(s.beta, E * scale));
        }
        g.matrix = inverse ? vandermonde_inverse(f, pts) : vandermonde_matrix(f, pts);
        groups.push_back(std::move(g));
      }
    stages.push_back(parallel_stage(model, sh.K, groups));
  }
  return stages;
}

// The draw phase's column encodes (without the scaling).
Plan draw_stage(const Spec& model, const VandermondeStructure& s, bool inverse) {
  const Field& f = model.field;
  const DrawLooseShape& sh = s.shape;
  std::vector<Elem> az;
  for (Elem a : s.alpha) az.push_back(f.pow(a, sh.Z));
  const Matrix m = inverse ? vandermonde_inverse(f, az) : vandermonde_matrix(f, az);
  std::vector<Group> groups;
  for (uint32_t j = 0; j < sh.Z; ++j) {
    Group g;
    for (uint32_t w = 0; w < sh.M; ++w) g.ranks.push_back(j + sh.Z * w);
    g.matrix = m;
    groups.push_back(std::move(g));
  }
  return parallel_stage(model, sh.K, groups);
}

// One step: the value of rank c moves to rank dest[c] (a bijection).
Plan permutation_round(const Spec& model, const std::vector<uint32_t>& dest) {
  const uint32_t K = static_cast<uint32_t>(dest.size());
  Plan plan = ir::make_plan(piece_spec(model, K), 1);
  for (ir::Program& prog : plan.ranks) {
    const ir::SlotId in = prog.new_slot();
    prog.inputs = {in};
    prog.outputs = {in};
  }
  for (uint32_t c = 0; c < K; ++c) {
    if (dest[c] == c) continue;
    ir::Program& from = plan.ranks[c];
    from.at(1).sends.push_back(ir::make_send(plan, from, 0, dest[c], {ir::unit(from.inputs[0])}));
  }
  for (uint32_t c = 0; c < K; ++c) {
    if (dest[c] == c) continue;
    ir::Program& to = plan.ranks[dest[c]];
    const ir::SlotId got = to.new_slot();
    to.at(1).recvs.push_back(ir::make_recv(plan, to, 1, 0, c, {got}));
    to.outputs = {got};
  }
  return plan;
}

}  // namespace

Plan vandermonde_plan(const Spec& model, const VandermondeStructure& s, bool inverse, const MatrixSpec& result) {
  if (model.lambda != 1)
    user_error("structured Vandermonde plans need lambda = 1 (the synchronous model), got lambda = {}", model.lambda);
  const Field& f = model.field;
  const DrawLooseShape& sh = s.shape;
  const MatrixSpec placeholder = stage_matrix(sh.K);

  // The pieces in the order they run.
  std::vector<Plan> pieces;
  // Rank j + Z·i scales by α_i^j (forward) or α_i^{−j} (inverse).
  std::vector<Elem> factors(sh.K);
  bool trivial_scale = true;
  for (uint32_t i = 0; i < sh.M; ++i)
    for (uint32_t j = 0; j < sh.Z; ++j) {
      const Elem a = f.pow(s.alpha[i], j);
      factors[j + sh.Z * i] = inverse ? f.inv(a) : a;
      trivial_scale &= a == 1;
    }
  // dest[c]: the rank that needs canonical position c's value.
  std::vector<uint32_t> dest(sh.K), to_canonical(sh.K);
  for (uint32_t k = 0; k < sh.K; ++k) {
    dest[s.permuted() ? s.position[k] : k] = k;
    to_canonical[k] = s.permuted() ? s.position[k] : k;
  }

  if (!inverse) {
    if (sh.M > 1) pieces.push_back(draw_stage(model, s, false));
    std::vector<Plan> loose = loose_stages(model, s, false);
    if (!trivial_scale) {
      if (!pieces.empty()) passes::scale_outputs(pieces.back(), factors, &placeholder);
      else passes::scale_inputs(loose.front(), factors, &placeholder);
    }
    for (Plan& p : loose) pieces.push_back(std::move(p));
    if (s.permuted()) pieces.push_back(permutation_round(model, dest));
  } else {
    if (s.permuted()) pieces.push_back(permutation_round(model, to_canonical));
    std::vector<Plan> loose = loose_stages(model, s, true);
    for (size_t st = loose.size(); st-- > 0;) pieces.push_back(std::move(loose[st]));
    if (!trivial_scale) passes::scale_outputs(pieces.back(), factors, &placeholder);
    if (sh.M > 1) pieces.push_back(draw_stage(model, s, true));
  }

  COLLPLAN_ASSERT(!pieces.empty(), "vandermonde_plan: H >= 1 gives at least one stage");
  Plan plan = std::move(pieces.front());
  for (size_t i = 1; i < pieces.size(); ++i) plan = passes::compose_sequence(plan, pieces[i], &placeholder);
  plan.spec = model;
  plan.spec.matrix = result;
  return plan;
}

std::string structured_spec_why_not(const std::string& name, const Spec& s, const std::vector<std::string>& families) {
  if (s.op != OpKind::Encode) return fmt::format("{} computes encode, not {}", name, op_name(s.op));
  if (s.lambda != 1) return fmt::format("{} needs lambda = 1 (the synchronous model), got lambda = {}", name, s.lambda);
  std::string list;
  for (const std::string& fam : families) {
    if (s.matrix.family == fam) return {};
    list += (list.empty() ? "" : ", ") + fam;
  }
  return fmt::format("{} needs a matrix of family {}, got {}", name, list, s.matrix.family);
}

VandermondeStructure structure_or_error(const std::string& name, const Field& f, const std::vector<Elem>& points,
                                        uint32_t p, const passes::CostModel& cm, bool allow_permutation, bool need_dft) {
  std::string why;
  if (auto s = best_structure(f, points, p, cm, allow_permutation, need_dft, &why)) return *s;
  throw UserError(name + " " + why);
}

ir::Plan interpolate_evaluate_plan(const Spec& s, const VandermondeStructure& a, const VandermondeStructure& b,
                                   const std::vector<Elem>& d1, const std::vector<Elem>& d2, const char* name_a,
                                   const char* name_b) {
  const MatrixSpec stage = stage_matrix(s.K);
  Plan interpolate = vandermonde_plan(s, a, true, stage);
  if (!d1.empty()) passes::scale_inputs(interpolate, d1, &stage);
  Plan plan = passes::compose_sequence(interpolate, vandermonde_plan(s, b, false, stage), &s.matrix);
  if (!d2.empty()) passes::scale_outputs(plan, d2, &s.matrix);
  plan.spec = s;
  plan.spec.algorithm = fmt::format("{} {}:{} {}:{}", s.algorithm, name_a, describe(a), name_b, describe(b));
  return plan;
}

StructuredCost interpolate_evaluate_cost(const VandermondeStructure& a, const VandermondeStructure& b, uint32_t p) {
  StructuredCost c = vandermonde_cost(a, p);
  c += vandermonde_cost(b, p);
  return c;
}

std::string reason_of(const std::function<void()>& check) {
  try {
    check();
  } catch (const UserError& e) {
    return e.what();
  }
  return {};
}

StructuredGenerator vandermonde_generator(std::string name, bool inverse, bool need_dft) {
  const std::vector<std::string> families =
      inverse ? std::vector<std::string>{"inverse-dft", "inverse-draw-loose"}
              : std::vector<std::string>{"dft", "draw-loose", "vandermonde"};
  // Only user-given Vandermonde points may need a permutation round; the
  // dft / draw-loose families are in canonical order by construction.
  auto structure = [=](const Spec& s, const passes::CostModel& cm) {
    if (std::string why = structured_spec_why_not(name, s, families); !why.empty()) throw UserError(why);
    return structure_or_error(name, s.field, s.matrix.points, s.p, cm, s.matrix.family == "vandermonde", need_dft);
  };
  StructuredGenerator g;
  g.why_not = [=](const Spec& s, const passes::CostModel& cm) { return reason_of([&] { structure(s, cm); }); };
  g.cost = [=](const Spec& s, const passes::CostModel& cm) { return vandermonde_cost(structure(s, cm), s.p); };
  g.build = [=](const Spec& s, const passes::CostModel& cm) {
    const VandermondeStructure st = structure(s, cm);
    Plan plan = vandermonde_plan(s, st, inverse, s.matrix);
    plan.spec.algorithm = fmt::format("{} {}", s.algorithm.empty() ? name : s.algorithm, describe(st));
    return plan;
  };
  return g;
}

}  // namespace collplan::gen
