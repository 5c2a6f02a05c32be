// What the plan renderers (render_svg.h, render_dot.h, render_html.h) draw:
// a plan's messages, its critical path, its port use and a per-step summary,
// computed once from a verified plan and independent of any output format.
//
// ─── Messages ────────────────────────────────────────────────────────────────
//
// A message is one Send of the plan, keyed (from, to, port, sent): rank
// `from` sends it through `port` in step `sent`; it lands at `to` in step
// lands = sent + λ − 1 (the receive's step, ir/plan.h) and can be used from
// step lands + 1 on. The model allows one send per (rank, port, step), so the
// key is unique. messages() lists them in (from, sent, send order) order.
//
// ─── Critical path ───────────────────────────────────────────────────────────
//
// Steps are lock-step, so C1 is the plan's step count whatever the data do;
// what a designer wants to see is which chain of data dependencies forces it.
// Each value (a slot's content at some point) has a ready step and a chain:
//   an input is ready at step 0 with the empty chain;
//   a received value is ready at the landing step of its message, and its
//     chain is the message's;
//   a message's chain is the chain of the latest-ready term of its payload
//     (read at the end of step sent − 1), extended by the message itself;
//   an op's result takes the chain of its latest-ready term (ops are local:
//     they add no step).
// "Latest" compares (ready step, chain length); on a tie the earlier term of
// the combination wins, so the choice is deterministic. Chains are followed
// per plan element: a message element's chain runs through the terms of its
// own combination, not through the message's other elements. The critical path is the
// chain of the output that is ready last (same order; ties: lower rank, then
// lower output index): a sequence of messages m1 → … → mk where m(i+1) is
// sent by m(i)'s receiver from a value m(i)'s data flowed into, ending at the
// last output to be complete. Its end step (mk's landing step) is the step
// the plan cannot finish before given these dependencies; the gap between a
// message's sent step and the ready step of the value it carries is its
// slack (steps the data waited). A plan whose outputs need no message (e.g.
// K = 1 … never produced by collplan) has an empty path.
//
// ─── Port use ────────────────────────────────────────────────────────────────
//
// A send port of rank r is busy in step t when r sends through it in t; a
// receive port is busy in t when a message lands on it in t. Anything else is
// idle. busy_send/busy_recv give one bit per (rank, step, port).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/plan.h"

namespace collplan::backend {

struct Message {
  ir::Rank from = 0, to = 0;
  ir::Port port = 0;
  ir::StepNo sent = 0, lands = 0;
  uint32_t elems = 0;             // payload size in plan elements
  const ir::Send* send = nullptr; // the plan's Send (payload coefficients)
  bool critical = false;          // on the critical path
  uint32_t slack = 0;             // sent − 1 − ready step of what it carries
};

// An inclusive range lo..hi.
struct Range {
  uint32_t lo = 0, hi = 0;
  bool contains(uint32_t x) const { return x >= lo && x <= hi; }
  uint32_t size() const { return hi - lo + 1; }
};

// One step's line of the summary view.
struct StepSummary {
  ir::StepNo t = 0;
  uint64_t messages = 0, elements = 0;
  uint32_t largest = 0;            // largest message (its C2 share)
  ir::Port busiest_port = 0;       // port carrying the most elements (lowest on ties)
  uint64_t busiest_port_elements = 0;
  uint32_t active_ranks = 0;       // ranks that send or receive in t
  uint64_t busy_send_ports = 0;    // (rank, port) pairs that send in t, of K·p
  uint64_t critical = 0;           // critical-path messages sent in t
};

class PlanView {
 public:
  // The plan's structure must be verified (ir::verify_structure; `collplan
  // show` checks it before drawing): every receive has its send. The view
  // keeps pointers into the plan, so the plan must outlive it.
  explicit PlanView(const ir::Plan& plan);

  const ir::Plan& plan() const { return *plan_; }
  uint32_t K() const { return static_cast<uint32_t>(plan_->ranks.size()); }
  uint32_t steps() const { return plan_->num_steps; }
  uint32_t ports() const { return plan_->spec.p; }
  uint32_t lambda() const { return plan_->spec.lambda; }

  const std::vector<Message>& messages() const { return msgs_; }
  // Indices into messages(), first message first.
  const std::vector<size_t>& critical_path() const { return path_; }
  // The step the critical path ends in (0 when empty).
  uint32_t critical_end() const { return path_end_; }

  bool send_busy(ir::Rank r, ir::StepNo t, ir::Port p) const { return busy(send_busy_, r, t, p); }
  bool recv_busy(ir::Rank r, ir::StepNo t, ir::Port p) const { return busy(recv_busy_, r, t, p); }
  // Ops rank r runs in step t.
  uint32_t ops(ir::Rank r, ir::StepNo t) const { return ops_[static_cast<size_t>(r) * steps() + (t - 1)]; }

  std::vector<StepSummary> summary() const;
  // Elements rank r sends in step t, for every rank and step (rank-major).
  std::vector<uint64_t> traffic() const;

 private:
  bool busy(const std::vector<bool>& v, ir::Rank r, ir::StepNo t, ir::Port p) const {
    return v[(static_cast<size_t>(r) * steps() + (t - 1)) * ports() + p];
  }
  void find_critical_path();

  const ir::Plan* plan_;
  std::vector<Message> msgs_;
  std::vector<size_t> path_;
  uint32_t path_end_ = 0;
  std::vector<bool> send_busy_, recv_busy_;
  std::vector<uint32_t> ops_;
};

// "A-B" or "A" (one value) as an inclusive range; UserError naming `flag`,
// the text and the valid range lo..hi when it does not parse, is reversed or
// leaves lo..hi. `what` names the values ("ranks", "steps").
Range parse_range(const std::string& text, const char* flag, const char* what, uint32_t lo, uint32_t hi);

// The critical path as one line, the ranks it visits with each hop's port
// and step (sent..lands when λ > 1): "r0 →(port 0, step 1) r1 →(port 1,
// steps 4..6) r8"; "(empty)" when there is none.
std::string critical_path_text(const PlanView& v);

// A payload combination as the text dump writes it: "2*s1 + s4", "0".
std::string combo_text(const ir::Combo& c);

}  // namespace collplan::backend
