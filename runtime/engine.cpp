// The public Engine: construction (check, then compile the program) and
// what it reports. The parts of Engine::Impl live in runtime/engine_*.cpp
// (engine_internal.h lists them).
#include "runtime/engine.h"

#include "ir/slot_layout.h"
#include "runtime/engine_internal.h"

namespace collplan::rt {

namespace {

const ir::Program& program_of(const ir::Plan& plan, ir::Rank rank) {
  if (rank >= plan.ranks.size()) user_error("rank {} is not in a plan of {} ranks", rank, plan.ranks.size());
  if (plan.ranks[rank].rank != rank)
    user_error("plan.ranks[{}] holds the program of rank {}", rank, plan.ranks[rank].rank);
  if (plan.ranks.size() != num_ranks(plan.spec))
    user_error("the plan has {} programs, its spec needs {}", plan.ranks.size(), num_ranks(plan.spec));
  return plan.ranks[rank];
}

}  // namespace

Engine::Engine(const ir::Plan& plan, ir::Rank rank, EngineOptions opt)
    : Engine(plan.spec, plan.num_steps, program_of(plan, rank), opt) {}

Engine::Engine(const Spec& spec, uint32_t num_steps, const ir::Program& prog, EngineOptions opt)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.field = spec.field;
  m.eb = spec.field.elem_bytes();
  m.rank = prog.rank;
  m.K = num_ranks(spec);
  m.p = spec.p;
  m.lambda = spec.lambda;
  m.num_steps = num_steps;
  m.opt = opt;
  if (m.p < 1) user_error("p = {} is invalid: p >= 1 ports", m.p);
  if (m.lambda < 1) user_error("lambda = {} is invalid: lambda >= 1", m.lambda);
  if (m.rank >= m.K) user_error("rank {} is not in a plan of {} ranks", m.rank, m.K);
  m.validate(prog);
  if (opt.zero_copy)
    m.compile(ir::relabel(prog, ir::slot_layout(prog)));
  else
    m.compile(prog);
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

ir::Rank Engine::rank() const { return impl_->rank; }
const Field& Engine::field() const { return impl_->field; }
size_t Engine::num_inputs() const { return impl_->inputs.size(); }
size_t Engine::num_outputs() const { return impl_->outputs.size(); }
size_t Engine::elem_bytes() const { return impl_->eb; }
const Engine::Stats& Engine::stats() const { return impl_->stats; }

}  // namespace collplan::rt
