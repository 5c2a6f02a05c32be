#include "backend/emit_cpp.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>

#include <fmt/format.h>

#include "backend/embedded_files.h"
#include "ir/binary.h"
#include "ir/fuse.h"
#include "ir/slot_layout.h"
#include "support/error.h"
#include "support/safe_file.h"

namespace collplan::backend {

namespace {

// Comments longer than this are cut (the tables hold the real data).
constexpr size_t kCommentWidth = 96;
// Numbers per line in the constant tables.
constexpr size_t kTableRow = 24;
// The widest union of sources a fused run of combinations takes (as the
// engine's dot calls: ir/fuse.h), unless one of its combinations is wider.
constexpr size_t kFuseMaxSources = 32;

std::string spec_summary(const Spec& s) {
  std::string out = fmt::format("{} K={} p={} lambda={} field={}", op_name(s.op), s.K, s.p, s.lambda, s.field.name());
  if (s.matrix.rows > 0) {
    out += fmt::format(" matrix={} {}x{}", s.matrix.family, s.matrix.rows, s.matrix.cols);
    if (s.matrix.family == "random") out += fmt::format(" seed {}", s.matrix.seed);
  }
  if (s.blocks != 1) out += fmt::format(" blocks={}", s.blocks);
  if (s.op == OpKind::Broadcast || s.op == OpKind::Reduce) out += fmt::format(" root={}", s.root);
  if (is_code_op(s.op)) out += fmt::format(" N={}", s.N);
  if (!s.lost.empty()) out += fmt::format(" lost={}", fmt::join(s.lost, ","));
  if (!s.helpers.empty()) out += fmt::format(" helpers={}", fmt::join(s.helpers, ","));
  if (!s.to.empty()) out += fmt::format(" to={}", fmt::join(s.to, ","));
  if (!s.counts.empty()) out += fmt::format(" counts={}", fmt::join(s.counts, ","));
  if (s.exclusive) out += " exclusive";
  out += fmt::format(" algorithm={}", s.algorithm.empty() ? "(unnamed)" : s.algorithm);
  // It goes into a string literal and comments: no quote, no backslash (a
  // trailing one would splice the next line into a comment).
  for (char& c : out)
    if (c == '"' || c == '\\') c = '?';
  return out;
}

std::string field_type(const Field& f) {
  if (f.kind() == FieldKind::GF2m) return fmt::format("collplan_embedded::Gf2m<{}, {:#x}>", f.m(), f.poly());
  return fmt::format("collplan_embedded::Prime<{}>", f.size());
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string term_text(const ir::Term& t) {
  return t.coeff == 1 ? fmt::format("s{}", t.slot) : fmt::format("{}*s{}", t.coeff, t.slot);
}

std::string combo_text(std::span<const ir::Term> terms) {
  if (terms.empty()) return "0";
  std::string s;
  for (size_t i = 0; i < terms.size(); ++i) s += (i ? " + " : "") + term_text(terms[i]);
  return s;
}

std::string slots_text(std::span<const ir::SlotId> slots) {
  std::string s;
  for (size_t i = 0; i < slots.size(); ++i) s += fmt::format("{}s{}", i ? " " : "", slots[i]);
  return s;
}

std::vector<ir::Term> nonzero(std::span<const ir::Term> terms) {
  std::vector<ir::Term> out;
  for (const auto& t : terms)
    if (t.coeff != 0) out.push_back(t);
  return out;
}

bool reads(std::span<const ir::Term> terms, ir::SlotId s, size_t from = 0) {
  return std::any_of(terms.begin() + static_cast<std::ptrdiff_t>(std::min(from, terms.size())), terms.end(),
                     [&](const ir::Term& t) { return t.slot == s; });
}

// The slots of a payload whose every combination is exactly 1·slot.
std::optional<std::vector<ir::SlotId>> plain_slots(std::span<const ir::Combo> payload) {
  std::vector<ir::SlotId> v;
  for (const auto& c : payload) {
    if (c.terms.size() != 1 || c.terms[0].coeff != 1) return std::nullopt;
    v.push_back(c.terms[0].slot);
  }
  return v;
}

// One rank's generated regions.
//
// Inputs and outputs in the caller's buffers, where the engine puts them
// (ir::caller_homes): an input slot nothing writes is read in the caller's
// input, an output slot built in the caller's output. Such a slot is
// emitted as id kNumSlots + b, which Rank::row maps through a table of b
// pointers on run()'s stack, so nothing is copied in before step 1 or out
// after the last step. A bound slot is never part of a block of adjacent
// rows (messages to or from it go row by row). When the caller's outputs
// overlap its inputs or each other, run() builds the bound outputs in their
// slots' workspace rows and copies them out at the end, as unbound outputs
// always are.
class RankEmitter {
 public:
  RankEmitter(const PlanPrograms& plan, const ir::Program& prog, bool comments)
      : plan_(plan), prog_(prog), comments_(comments), id_(prog.num_slots) {
    for (ir::SlotId s = 0; s < prog.num_slots; ++s) id_[s] = s;
    const std::vector<uint32_t> home = ir::caller_homes(prog);
    const uint32_t n_in = static_cast<uint32_t>(prog.inputs.size());
    const auto bind = [&](ir::SlotId x) {
      id_[x] = prog.num_slots + static_cast<uint32_t>(bound_.size());
      bound_.push_back(x);
    };
    for (uint32_t i = 0; i < n_in; ++i)
      if (home[prog.inputs[i]] == i) {
        bound_in_.push_back({static_cast<uint32_t>(bound_.size()), i});
        bind(prog.inputs[i]);
      }
    for (uint32_t j = 0; j < prog.outputs.size(); ++j)
      if (home[prog.outputs[j]] == n_in + j) {
        bound_out_.push_back({static_cast<uint32_t>(bound_.size()), j});
        bind(prog.outputs[j]);
      }
  }

  std::vector<std::pair<std::string, std::string>> fills(const std::string& name, const std::string& header) {
    std::string steps, body;
    if (!bound_.empty()) {
      body += fmt::format("  void* bound[{}];\n  r.bind(bound);\n", bound_.size());
      for (const auto& [b, i] : bound_in_) body += fmt::format("  r.bind_input({}, inputs[{}]);\n", b, i);
      if (!bound_out_.empty())
        body += fmt::format("  const bool overlap = r.overlapping(inputs, {}, outputs, {});\n", prog_.inputs.size(),
                            prog_.outputs.size());
      for (const auto& [b, j] : bound_out_)
        body += fmt::format("  r.bind_output({}, outputs[{}], {}, overlap);\n", b, j, prog_.outputs[j]);
    }
    // The inputs not read in place: copied into their slot (a workspace row,
    // or a bound output's buffer when the slot is also an output).
    for (uint32_t i = 0; i < prog_.inputs.size(); ++i)
      if (std::none_of(bound_in_.begin(), bound_in_.end(), [&](const auto& bi) { return bi.second == i; }))
        body += fmt::format("  r.load_input({}, inputs[{}]);\n", id_[prog_.inputs[i]], i);
    for (const auto& st : prog_.steps) {
      steps += step_function(st);
      body += fmt::format("  if (!step_{}(r, &res)) return res;\n", st.t);
    }
    if (!steps.empty()) steps.pop_back();  // the template has the blank line after the last one
    for (uint32_t j = 0; j < prog_.outputs.size(); ++j) {
      const auto it = std::find_if(bound_out_.begin(), bound_out_.end(), [&](const auto& bo) { return bo.second == j; });
      if (it != bound_out_.end()) body += fmt::format("  r.unbind_output({}, outputs[{}]);\n", it->first, j);
      else body += fmt::format("  r.store_output({}, outputs[{}]);\n", id_[prog_.outputs[j]], j);
    }

    const Spec& s = plan_.spec;
    const uint32_t R = prog_.rank;
    std::string banner = fmt::format(
        "// DO NOT EDIT — generated by collplan from {}\n"
        "// Plan digest {}. Rank {} of {}: {} slots ({} in the caller's buffers) + {} staging rows, {} of {} steps,\n"
        "// {} coefficients in tables. Regenerate with `collplan emit-cpp`; the dispatch header is {}.\n",
        spec_summary(s), plan_.digest.hex(), R, plan_.ranks.size(), prog_.num_slots, bound_.size(), stage_rows_,
        prog_.steps.size(), plan_.num_steps, coefs_.size(), header);

    const size_t ids = prog_.num_slots + bound_.size();
    const char* slot_t = ids <= 256 ? "uint8_t" : ids <= 65536 ? "uint16_t" : "uint32_t";
    std::string constants = fmt::format("constexpr uint32_t kRank = {};\nconstexpr uint32_t kNumSlots = {};\n", R,
                                        prog_.num_slots);
    if (!slots_.empty()) {
      constants += fmt::format("// {} coefficients: a combination of n sources reads rows kSlot[a..a+n) with\n"
                               "// coefficients kCoef[b..b+n); m combinations over the same n sources (set_rows)\n"
                               "// read their coefficients as an m x n matrix, row by row, from kCoef[b].\n"
                               "// Each call is one fused pass over its destinations.\n",
                               coefs_.size());
      constants += table(fmt::format("constexpr {} kSlot[]", slot_t), slots_);
      constants += table("constexpr E kCoef[]", coefs_);
      constants += "// The coefficients prepared at compile time for the kernel this file is built with.\n"
                   "constexpr collplan_embedded::Prepared<Field, sizeof(kCoef) / sizeof(kCoef[0])> kPrep(kCoef);\n";
    }
    const std::string entry = fmt::format(
        "Result rank_{}(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs, size_t len,\n"
        "{:>{}}void* workspace) {{\n"
        "  return run(ch, inputs, outputs, len, workspace);\n"
        "}}\n",
        R, "", 12 + std::to_string(R).size() + 1);
    return {{"banner", banner},
            {"include", fmt::format("#include \"{}\"\n", header)},
            {"namespace_open", fmt::format("namespace {} {{\n", name)},
            {"constants", constants},
            {"steps", steps},
            {"body", body},
            {"entry", entry},
            {"namespace_close", fmt::format("}}  // namespace {}\n", name)}};
  }

  uint32_t stage_rows() const { return stage_rows_; }

 private:
  template <typename T>
  static std::string table(const std::string& decl, const std::vector<T>& xs) {
    std::string out = decl + " = {";
    for (size_t i = 0; i < xs.size(); ++i) {
      if (i % kTableRow == 0) out += "\n   ";
      out += fmt::format(" {},", xs[i]);
    }
    return out + "\n};\n";
  }

  void comment(std::string& out, const std::string& text) {
    if (!comments_) return;
    if (text.size() <= kCommentWidth) out += "  // " + text + "\n";
    else out += "  // " + text.substr(0, kCommentWidth - 3) + "...\n";
  }

  // Appends the terms to the tables; returns "kSlot + a, kPrep.c + b, n".
  std::string terms_ref(std::span<const ir::Term> terms) {
    const size_t a = slots_.size(), b = coefs_.size();
    for (const auto& t : terms) {
      slots_.push_back(id_[t.slot]);
      coefs_.push_back(t.coeff);
    }
    return fmt::format("kSlot + {}, kPrep.c + {}, {}", a, b, terms.size());
  }

  // A fused run of ops (ir/fuse.h) as one set_rows call, or one set when the
  // run is a single op; empties the run.
  std::string fused(std::vector<const ir::Op*>& run) {
    if (run.empty()) return {};
    std::string code;
    if (run.size() == 1) {
      code = set(row(run[0]->dst), nonzero(run[0]->terms));
    } else {
      const ir::FusedRun f = ir::fuse(run, plan_.spec.field);
      const size_t a = slots_.size(), b = coefs_.size();
      for (ir::SlotId x : f.sources) slots_.push_back(id_[x]);
      coefs_.insert(coefs_.end(), f.coeffs.begin(), f.coeffs.end());
      std::vector<ir::SlotId> dsts;
      for (const ir::Op* op : run) dsts.push_back(op->dst);
      const std::string rows = rows_list(dsts);
      code = fmt::format("  {{\n    E* const d[] = {{{}}};\n    r.set_rows(d, {}, kSlot + {}, kPrep.c + {}, {});\n  }}\n", rows,
                         run.size(), a, b, f.sources.size());
    }
    run.clear();
    return code;
  }

  // dst := terms (nonzero, dst not among them).
  std::string set(const std::string& dst, std::span<const ir::Term> terms) {
    if (terms.empty()) return fmt::format("  r.zero({});\n", dst);
    return fmt::format("  r.set({}, {});\n", dst, terms_ref(terms));
  }

  void need_stage(size_t rows) { stage_rows_ = std::max<uint32_t>(stage_rows_, static_cast<uint32_t>(rows)); }

  std::string step_function(const ir::Step& st) {
    std::string code;
    bool uses_res = !st.sends.empty() || !st.recvs.empty(), uses_r = uses_res, uses_b = false;
    bool ref_sends = false;
    for (const auto& snd : st.sends) {
      std::string payload;
      for (size_t i = 0; i < snd.payload.size(); ++i) payload += (i ? ", " : "") + combo_text(snd.payload[i].terms);
      comment(code, fmt::format("send port {} -> {} [{}]", snd.port, snd.to, payload));
      const auto m = snd.payload.size();
      // By reference when the rows stay unchanged until sends_done: λ = 1
      // (the message is taken in this step) and no receive of the step
      // writes them.
      const auto by_ref = [&](std::span<const ir::SlotId> rows) {
        bool ok = plan_.spec.lambda == 1;
        for (const auto& rcv : st.recvs)
          for (ir::SlotId x : rcv.into) ok = ok && std::find(rows.begin(), rows.end(), x) == rows.end();
        return ok;
      };
      const auto rows = plain_slots(snd.payload);
      if (const auto base = rows ? consecutive(*rows) : std::nullopt) {
        const bool ref = by_ref(*rows);
        ref_sends |= ref;
        code += fmt::format("  if (!r.{}({}, {}, {}, {}, {}, res)) return false;\n", ref ? "send_ref" : "send", st.t,
                            snd.port, snd.to, row(*base), m);
        continue;
      }
      if (rows && by_ref(*rows)) {
        // Rows that are not adjacent: gathered where they are by a channel
        // that offers it, else copied into staging rows.
        need_stage(m);
        ref_sends = true;
        code += fmt::format("  {{\n    const E* const g[] = {{{}}};\n    if (!r.send_rows_ref({}, {}, {}, g, {}, res)) return false;\n  }}\n",
                            rows_list(*rows), st.t, snd.port, snd.to, m);
        continue;
      }
      // Computed straight into the channel's buffer when it offers one.
      need_stage(m);
      uses_b = true;
      code += fmt::format("  b = r.send_begin({}, {}, {});\n", snd.port, snd.to, m);
      for (size_t i = 0; i < m; ++i) code += set(fmt::format("r.at(b, {})", i), nonzero(snd.payload[i].terms));
      code += fmt::format("  if (!r.send_end({}, {}, {}, b, {}, res)) return false;\n", st.t, snd.port, snd.to, m);
    }
    for (const auto& rcv : st.recvs) {
      comment(code, fmt::format("recv port {} <- {} (sent {}) -> {}", rcv.port, rcv.from, rcv.sent_at, slots_text(rcv.into)));
      const auto m = rcv.into.size();
      if (const auto base = consecutive(rcv.into)) {
        code += fmt::format("  if (!r.recv({}, {}, {}, {}, {}, res)) return false;\n", st.t, rcv.port, rcv.from, row(*base), m);
        continue;
      }
      // Rows to scattered slots: scattered by a channel that offers it, else
      // copied out of its view of the message or of staging rows.
      need_stage(m);
      code += fmt::format("  {{\n    E* const d[] = {{{}}};\n    if (!r.recv_rows({}, {}, {}, d, {}, res)) return false;\n  }}\n",
                          rows_list(rcv.into), st.t, rcv.port, rcv.from, m);
    }
    // Slots sent by reference may be written again only once the receivers
    // have them.
    if (ref_sends) code += fmt::format("  if (!r.sends_done({}, res)) return false;\n", st.t);
    // Consecutive independent combinations run fused, as in the engine.
    std::vector<const ir::Op*> run;
    for (const auto& op : st.ops) {
      const auto terms = nonzero(op.terms);
      if (ir::dot_worthy(terms) && !reads(op.terms, op.dst)) {
        if (!ir::joins_fused_run(run, op, kFuseMaxSources)) code += fused(run);
        comment(code, fmt::format("s{} := {}", op.dst, combo_text(op.terms)));
        uses_r = true;
        run.push_back(&op);
        continue;
      }
      code += fused(run);
      comment(code, fmt::format("s{} := {}", op.dst, combo_text(op.terms)));
      const std::string dst = row(op.dst);
      if (!terms.empty() && terms[0].slot == op.dst && terms[0].coeff == 1 && !reads(terms, op.dst, 1)) {
        if (terms.size() == 1) continue;  // dst := dst
        uses_r = true;
        code += fmt::format("  r.acc({}, {});\n", dst, terms_ref({terms.begin() + 1, terms.end()}));
      } else if (reads(terms, op.dst)) {
        // In place when the kernel allows, else through staging row 0.
        uses_r = true;
        need_stage(1);
        code += fmt::format("  r.update({}, {});\n", dst, terms_ref(terms));
      } else {
        uses_r = true;
        code += set(dst, terms);
      }
    }
    code += fused(run);
    std::string decl;
    if (uses_b) decl += "  E* b;\n";
    return fmt::format("bool step_{}(R&{}, Result*{}) {{\n{}{}  return true;\n}}\n\n", st.t, uses_r ? " r" : "",
                       uses_res ? " res" : "", decl, code);
  }

  // The row of slot x in emitted code.
  std::string row(ir::SlotId x) const { return fmt::format("r.row({})", id_[x]); }
  std::string rows_list(std::span<const ir::SlotId> xs) const {
    std::string s;
    for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + row(xs[i]);
    return s;
  }
  // The first of xs when they are one row, or adjacent workspace rows (none
  // bound).
  std::optional<ir::SlotId> consecutive(std::span<const ir::SlotId> xs) const {
    if (xs.empty()) return std::nullopt;
    if (xs.size() == 1) return xs[0];
    for (size_t i = 0; i < xs.size(); ++i)
      if (xs[i] != xs[0] + i || id_[xs[i]] != xs[i]) return std::nullopt;
    return xs[0];
  }

  const PlanPrograms& plan_;
  const ir::Program& prog_;
  bool comments_;
  std::vector<uint32_t> id_;                               // slot -> emitted id
  std::vector<ir::SlotId> bound_;                          // id kNumSlots + b -> slot bound_[b]
  std::vector<std::pair<uint32_t, uint32_t>> bound_in_;   // (b, input index)
  std::vector<std::pair<uint32_t, uint32_t>> bound_out_;  // (b, output index)
  std::vector<ir::SlotId> slots_;
  std::vector<Elem> coefs_;
  uint32_t stage_rows_ = 0;
};

std::string list(const std::vector<uint32_t>& xs) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", xs[i]);
  return s;
}

}  // namespace

PlanPrograms view_of(const ir::Plan& plan) {
  PlanPrograms v;
  v.spec = plan.spec;
  v.num_steps = plan.num_steps;
  v.digest = ir::plan_digest(plan);
  for (const auto& prog : plan.ranks) v.ranks.push_back(&prog);
  return v;
}

std::string fill_template(const std::string& tmpl, const std::vector<std::pair<std::string, std::string>>& fills) {
  static const std::string kBegin = "@collplan:begin ", kEnd = "@collplan:end ";
  std::map<std::string, std::string> todo(fills.begin(), fills.end());
  std::string out, region;
  size_t pos = 0;
  while (pos < tmpl.size()) {
    size_t eol = tmpl.find('\n', pos);
    eol = eol == std::string::npos ? tmpl.size() : eol + 1;
    const std::string line = tmpl.substr(pos, eol - pos);
    pos = eol;
    // A marker is a whole line: optional indentation, "// ", the marker.
    const auto word = [&](const std::string& marker) {
      const size_t at = line.find_first_not_of(" \t");
      if (at == std::string::npos || line.compare(at, 3 + marker.size(), "// " + marker) != 0) return std::string();
      size_t b = at + 3 + marker.size(), e = b;
      while (e < line.size() && (std::isalnum(static_cast<unsigned char>(line[e])) || line[e] == '_')) ++e;
      return line.substr(b, e - b);
    };
    if (const auto b = word(kBegin); !b.empty()) {
      COLLPLAN_ASSERT(region.empty(), "template region '" + b + "' opens inside region '" + region + "'");
      const auto it = todo.find(b);
      COLLPLAN_ASSERT(it != todo.end(), "template region '" + b + "' has no fill (or appears twice)");
      out += it->second;
      todo.erase(it);
      region = b;
    } else if (const auto e = word(kEnd); !e.empty()) {
      COLLPLAN_ASSERT(e == region, "template region end '" + e + "' does not close '" + region + "'");
      region.clear();
    } else if (region.empty()) {
      out += line;
    }
  }
  COLLPLAN_ASSERT(region.empty(), "template region '" + region + "' is not closed");
  COLLPLAN_ASSERT(todo.empty(), "fill '" + (todo.empty() ? std::string() : todo.begin()->first) + "' names no template region");
  return out;
}

const std::string& embedded_file(const std::string& name) {
  static const std::map<std::string, std::string> files = [] {
    std::map<std::string, std::string> m;
    for (size_t i = 0; i < kNumEmbeddedFiles; ++i) m[kEmbeddedFiles[i].name] = kEmbeddedFiles[i].text;
    return m;
  }();
  const auto it = files.find(name);
  COLLPLAN_ASSERT(it != files.end(), "no embedded file '" + name + "'");
  return it->second;
}

const std::vector<std::string>& runtime_headers() {
  static const std::vector<std::string> names = {"collplan_embedded.h", "collplan_kernels.h",  "collplan_gf.h",
                                                 "collplan_gf_base.h",  "collplan_gf_avx2.h",  "collplan_gf_gfni.h",
                                                 "collplan_gf_neon.h"};
  return names;
}

std::vector<EmittedFile> emit_cpp(const PlanPrograms& plan, const EmitCppOptions& opt) {
  if (!is_identifier(opt.name))
    user_error("--name '{}' is not a C++ identifier (letters, digits and '_', not starting with a digit)", opt.name);
  const uint32_t K = static_cast<uint32_t>(plan.ranks.size());
  COLLPLAN_ASSERT(K == num_ranks(plan.spec), "plan view with a rank count other than its spec's");
  std::vector<uint32_t> emitted;
  if (!opt.ranks.empty()) {
    std::vector<uint8_t> seen(K, 0);
    for (ir::Rank r : opt.ranks) {
      if (r >= K) user_error("--rank {} does not exist (valid: 0..{})", r, K - 1);
      if (seen[r]) user_error("--ranks names rank {} twice", r);
      seen[r] = 1;
      if (!plan.ranks[r])
        user_error("--rank {}: the plan file does not hold that rank's program (it is a single-rank file of another rank)", r);
      emitted.push_back(r);
    }
    std::sort(emitted.begin(), emitted.end());
  } else {
    for (uint32_t r = 0; r < K; ++r)
      if (plan.ranks[r]) emitted.push_back(r);
    if (emitted.empty()) user_error("the plan holds no rank's program: nothing to emit");
  }

  const std::string header = opt.name + ".h";
  std::vector<EmittedFile> out(1);
  std::vector<uint32_t> inputs, outputs, rows;
  std::string decls, cases;
  for (uint32_t r : emitted) {
    // The engine's slot layout: messages land in (and leave from) adjacent
    // rows, so they are received in place instead of copied to their slots.
    const ir::Program prog = ir::relabel(*plan.ranks[r], ir::slot_layout(*plan.ranks[r]));
    inputs.push_back(static_cast<uint32_t>(prog.inputs.size()));
    outputs.push_back(static_cast<uint32_t>(prog.outputs.size()));
    RankEmitter em(plan, prog, opt.comments);
    auto fills = em.fills(opt.name, header);
    rows.push_back(prog.num_slots + em.stage_rows());
    out.push_back({fmt::format("{}_rank{}.cpp", opt.name, r), fill_template(embedded_file("rank.template.cpp"), fills)});
    const std::string pad(std::to_string(r).size() + 32, ' ');
    decls += fmt::format(
        "collplan_embedded::Result rank_{}(collplan_embedded::Channel& ch, const void* const* inputs, void* const* outputs,\n"
        "{}size_t len, void* workspace);\n",
        r, pad);
    cases += fmt::format("    case {}: return rank_{}(ch, inputs, outputs, len, workspace);\n", r, r);
  }

  // The dispatch header.
  const Spec& s = plan.spec;
  std::string plan_text = fmt::format(
      "// The plan: its spec, its identity (the .cplan content hash) and its shape.\n"
      "inline constexpr char kSpec[] = \"{}\";\n"
      "inline constexpr char kDigest[] = \"{}\";\n"
      "using Field = {};\n"
      "inline constexpr uint32_t kNumRanks = {};\n"
      "inline constexpr uint32_t kNumSteps = {};\n"
      "inline constexpr uint32_t kPorts = {};\n"
      "inline constexpr uint32_t kLambda = {};\n"
      "// The ranks whose source was emitted, ascending, and for each (same index)\n"
      "// its inputs and outputs (vectors of len elements each) and workspace rows.\n"
      "inline constexpr uint32_t kNumEmitted = {};\n"
      "inline constexpr uint32_t kEmittedRanks[kNumEmitted] = {{{}}};\n"
      "inline constexpr uint32_t kEmittedInputs[kNumEmitted] = {{{}}};\n"
      "inline constexpr uint32_t kEmittedOutputs[kNumEmitted] = {{{}}};\n"
      "inline constexpr uint32_t kEmittedWorkspaceRows[kNumEmitted] = {{{}}};\n\n"
      "// The entry point of every emitted rank (one source file each).\n{}",
      spec_summary(s), plan.digest.hex(), field_type(s.field), K, plan.num_steps, s.p, s.lambda, emitted.size(),
      list(emitted), list(inputs), list(outputs), list(rows), decls);
  const std::string banner = fmt::format(
      "// DO NOT EDIT — generated by collplan from {}\n"
      "// Plan digest {}. Dispatch header: {} ranks, {} emitted.\n",
      spec_summary(s), plan.digest.hex(), K, emitted.size());
  out[0] = {header, fill_template(embedded_file("dispatch.template.h"),
                                  {{"banner", banner},
                                   {"namespace_open", fmt::format("namespace {} {{\n", opt.name)},
                                   {"plan", plan_text},
                                   {"dispatch", cases},
                                   {"namespace_close", fmt::format("}}  // namespace {}\n", opt.name)}})};
  return out;
}

void write_files(const std::vector<EmittedFile>& files, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) user_error("cannot create directory '{}': {}", dir, ec.message());
  for (const auto& f : files) {
    const auto path = (std::filesystem::path(dir) / f.name).string();
    files::write_file(path, "emitted C++ file", f.text);
  }
}

}  // namespace collplan::backend
