// Building blocks of the structured-matrix generators
// (docs/structured-matrices.md): plans for
// x·V(points) and x·V(points)^{-1} when the points have the draw-and-loose
// structure (matrix/structured.h), built by composing verified pieces:
//
//   draw   Z column groups {j + Z·w : w < M} run prepare-and-shoot of the
//          M×M Vandermonde matrix on the points α_i^Z (parallel composition),
//          then rank j + Z·i scales by α_i^j (local);
//   loose  H stages; stage s = 1..H combines along base-P digit H−s of the
//          in-row index j: every group of P ranks differing only in that digit
//          runs prepare-and-shoot of the P×P Vandermonde matrix on the points
//          γ_s(j) = β^{E_s(j)·P^{H−s}}, E_s(j) = Σ_{t<s} j_{H−1−t}·P^t;
//   permutation (only when the points are a column permutation of the
//          canonical order) one step in which each rank sends its value to
//          the rank that needs it.
// The inverse runs the pieces backwards with inverted matrices (encode paper
// Lemma 5, 6): permutation⁻¹, loose stages H..1 with V⁻¹, scaling by α_i^{−j},
// draw with the inverse M×M matrix.
//
// Costs (b = p+1, Ψ = prepare-and-shoot's C2, Ψ(1) = 0, ⌈log_b 1⌉ = 0):
//   C1 = ⌈log_b M⌉ + H·⌈log_b P⌉ (+1 with a permutation),
//   C2 = Ψ(M) + H·Ψ(P) (+1 with a permutation);
// for P = p+1: C1 = ⌈log_b M⌉ + H, C2 = Ψ(M) + H. The inverse costs the same.
// The sequence is plain concatenation (compose_sequence), so the costs add.
//
// Pieces carry a placeholder matrix (family "stage", never materialised):
// only the finished plan, whose spec holds the user's matrix, is verified —
// by the compile pipeline, and in tests also piece by piece for small K.
// Requires λ = 1 (the synchronous model of the encode papers).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gen/postal_encode.h"
#include "ir/plan.h"
#include "matrix/structured.h"

namespace collplan::gen {

struct StructuredCost {
  uint32_t C1 = 0;
  uint64_t C2 = 0;          // the schedule as generated
  uint64_t C2_dropped = 0;  // after the drop-zeros pass (prepare-and-shoot's zero shoot variables)
  StructuredCost& operator+=(const StructuredCost& o) {
    C1 += o.C1;
    C2 += o.C2;
    C2_dropped += o.C2_dropped;
    return *this;
  }
};

// Prepare-and-shoot on n ranks: C1 = ⌈log_b n⌉, C2 = Ψ(n); zero for n = 1.
StructuredCost ps_cost(uint32_t n, uint32_t p);
// Draw-and-loose (or its inverse) for structure s, formula above.
StructuredCost vandermonde_cost(const VandermondeStructure& s, uint32_t p);

// Among the radices for which `points` have the structure (canonical order,
// or up to a column permutation when allow_permutation; M = 1 only when
// need_dft), the one with the least modeled time (after drop-zeros). nullopt
// and a reason naming the failing condition otherwise.
std::optional<VandermondeStructure> best_structure(const Field& f, const std::vector<Elem>& points, uint32_t p,
                                                   const passes::CostModel& cm, bool allow_permutation, bool need_dft,
                                                   std::string* why);

// The radix collplan uses when it chooses points: p+1 when admissible, else
// the admissible P with the least C1 + C2. Admissible: K = P^H | q−1
// (need_dft), or P | gcd(K, q−1). UserError naming the condition when no
// P >= 2 is admissible.
uint32_t default_radix(const Field& f, uint32_t K, uint32_t p, bool need_dft);

// The plan for x·V(points) (inverse = false) or x·V(points)^{-1}, points in
// the user's order as described by s, on K = s.shape.K ranks with model's p,
// λ and field. Its spec is `model` with matrix = `result` (not checked here).
ir::Plan vandermonde_plan(const Spec& model, const VandermondeStructure& s, bool inverse, const MatrixSpec& result);

// The structured generators (gen/dft.cpp, draw_loose.cpp, inverse_dft.cpp,
// inverse_draw_loose.cpp, lagrange.cpp, cauchy.cpp) as the registry uses
// them: why_not is "" when the generator applies to the spec, else the
// reason, starting with the generator's name ("dft needs K | q-1: K = 12,
// q-1 = 256"); cost and build require that it applies (UserError with the
// reason otherwise).
struct StructuredGenerator {
  std::function<std::string(const Spec&, const passes::CostModel&)> why_not;
  std::function<StructuredCost(const Spec&, const passes::CostModel&)> cost;
  std::function<ir::Plan(const Spec&, const passes::CostModel&)> build;
};
const StructuredGenerator& dft_generator();
const StructuredGenerator& draw_loose_generator();
const StructuredGenerator& inverse_dft_generator();
const StructuredGenerator& inverse_draw_loose_generator();
const StructuredGenerator& lagrange_generator();
const StructuredGenerator& cauchy_generator();

// The four Vandermonde-type generators share one shape: the spec's matrix
// must be x·V(points) (families dft, draw-loose, and vandermonde with the
// structure up to a column permutation) or, for `inverse`, V(points)^{-1}
// (families inverse-dft, inverse-draw-loose); need_dft restricts to M = 1.
StructuredGenerator vandermonde_generator(std::string name, bool inverse, bool need_dft);
// The structure of `points` for a generator, or a UserError "<name> <why>".
VandermondeStructure structure_or_error(const std::string& name, const Field& f, const std::vector<Elem>& points,
                                        uint32_t p, const passes::CostModel& cm, bool allow_permutation, bool need_dft);
// The checks every structured generator shares (encode, λ = 1, one of the
// `families`): "" or the reason, starting with `name`.
std::string structured_spec_why_not(const std::string& name, const Spec& s, const std::vector<std::string>& families);

// x·diag(d1)·V(a)^{-1}·V(b)·diag(d2) (an empty d = no scaling) with spec s
// and its matrix: inverse draw-and-loose on a, then draw-and-loose on b —
// the Lagrange and Cauchy shape. Its cost is the sum of the two; the
// algorithm name records the structures under `name_a` and `name_b`.
ir::Plan interpolate_evaluate_plan(const Spec& s, const VandermondeStructure& a, const VandermondeStructure& b,
                                   const std::vector<Elem>& d1, const std::vector<Elem>& d2, const char* name_a,
                                   const char* name_b);
StructuredCost interpolate_evaluate_cost(const VandermondeStructure& a, const VandermondeStructure& b, uint32_t p);

// Runs `check`: "" when it returns, the UserError's message when it throws
// (how the generators turn their checks into why_not).
std::string reason_of(const std::function<void()>& check);

// A placeholder matrix for an intermediate piece (see above).
MatrixSpec stage_matrix(uint32_t K);

// "P=2" or "P=2 M=3 permuted": what the plan's algorithm name records.
std::string describe(const VandermondeStructure& s);

}  // namespace collplan::gen
