// The cost model flags (driver/cost_flags.h).
#include "driver/cost_flags.h"

#include "driver/cli.h"

namespace collplan::cli {

void add_cost_model_options(CLI::App* c, passes::CostModel& m) {
  c->add_option("--beta", m.beta, "cost model: start-up time per step (modeled time C1*beta + C2*len*tau; auto choices use it)")
      ->capture_default_str();
  c->add_option("--tau", m.tau, "cost model: time per element")->capture_default_str();
  add_uint_option(c, "--cost-len", m.len, "cost model: elements per vector (len)", "len >= 1 elements");
}

}  // namespace collplan::cli
