// The C++ backend (`collplan emit-cpp`): one fully unrolled C++17 source file
// per rank plus a dispatch header, filled into the real, compilable
// templates of templates/ (dispatch.template.h, rank.template.cpp).
//
// ─── What is emitted ─────────────────────────────────────────────────────────
//
//   <name>.h             the dispatch header: namespace <name> with the spec
//                        (kSpec), the plan digest (kDigest, the .cplan content
//                        hash), the field type, the emitted ranks with their
//                        input/output counts and workspace rows, the
//                        declaration of each emitted rank's entry point
//                        rank_<r>(), workspace_bytes() and run_rank() (a
//                        switch over the emitted ranks). Its size grows with
//                        the number of emitted ranks, not with K.
//   <name>_rank<r>.cpp   rank r's program as straight-line code: one static
//                        function per step in which the rank acts, holding
//                        that step's sends, then receives, then ops, in plan
//                        order (the postal semantics of ir/plan.h: a send
//                        reads the slots as they were at the end of step
//                        t−1, a receive of a message sent in step t−λ+1
//                        completes before step t's ops). Each statement is one
//                        line with the plan's text form as a comment.
//
// The emitted code includes only collplan_embedded.h (runtime/embedded/):
// portable GF kernels, the Channel interface the application implements, and
// the Rank<F> context. No heap, no exceptions, no MPI.
//
// Combinations are not written as expressions: every combination the code
// evaluates is a call `r.set(dst, kSlot + o, kPrep.c + o, n)` (or `r.acc`)
// naming a run of two constant tables (slot indices, uint8/16/32 as the
// rank's slot count needs, and coefficients prepared at compile time for
// the kernel path: collplan_embedded::Prepared), so a statement's size does
// not grow with its term count and large plans stay compilable; each is one
// fused pass over its destination. Terms with coefficient 0 are dropped. A
// payload that is consecutive slots with coefficient 1 goes out from the
// slots; any other payload is computed between r.send_begin and r.send_end,
// straight into the channel's buffer when the Channel offers one (else in
// staging rows). A message landing in consecutive slots is received in
// place; any other is copied row by row out of r.recv_view (the channel's
// memory when it offers a view, else staging rows). An op whose destination
// is also one of its sources (other than `dst := dst + …`) is `r.update`:
// computed in place when the kernel reads every source of a block before
// storing it, else in a staging row and copied. Slots are first renamed by
// the engine's layout (ir/slot_layout.h), so multi-row messages land in
// adjacent rows and are received in place.
//
// Limits: the source is linear in the rank's term count (about 10 bytes per
// term in the tables, about 100 bytes per statement with its comment); a
// K = 256 prepare-and-shoot rank (p = 2) is about 10 KB, and a K = 64 rank
// compiles in 0.35 s at -O2 -march=native (bench/bench_emit,
// docs/emit-cpp.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/plan.h"

namespace collplan::backend {

struct EmitCppOptions {
  // C++ namespace of the plan and prefix of the file names; a C identifier.
  std::string name = "collplan_plan";
  // The ranks to emit, any order, no repeats; empty: every rank whose
  // program is available. The dispatch header describes only these ranks.
  std::vector<ir::Rank> ranks;
  // Each statement carries the plan's text form as a comment (truncated).
  bool comments = true;
};

struct EmittedFile {
  std::string name;  // file name, no directory
  std::string text;
};

// A plan as the backend needs it: the spec, step count and identity, and the
// programs available (ranks[r] == nullptr: not available, e.g. a single-rank
// file extracted from a plan). Programs are referenced, not copied.
struct PlanPrograms {
  Spec spec;
  uint32_t num_steps = 0;
  Digest digest;
  std::vector<const ir::Program*> ranks;  // num_ranks(spec) entries
};
PlanPrograms view_of(const ir::Plan& plan);  // every rank available; digest = plan_digest

// The dispatch header first, then one source per emitted rank, in rank order.
// UserError when opt.name is not an identifier, a rank of opt.ranks does not
// exist, repeats or has no program available, or no program is available at
// all.
std::vector<EmittedFile> emit_cpp(const PlanPrograms& plan, const EmitCppOptions& opt = {});

// Writes the files into `dir` (created if missing); UserError on failure.
void write_files(const std::vector<EmittedFile>& files, const std::string& dir);

// The text of an embedded file: "rank.template.cpp", "dispatch.template.h" or
// one of runtime_headers() (built into the executable from templates/ and
// runtime/embedded/). InternalError for another name.
const std::string& embedded_file(const std::string& name);

// The headers emitted code includes, all of them flat in one directory:
// collplan_embedded.h, collplan_kernels.h and the GF kernel library
// (collplan_gf.h, collplan_gf_base.h, collplan_gf_avx2.h, collplan_gf_gfni.h,
// collplan_gf_neon.h).
const std::vector<std::string>& runtime_headers();

// Fills a template: every region from a line `// @collplan:begin NAME` to
// the line `// @collplan:end NAME` (each alone on its line, indentation
// allowed) is replaced by
// fills[NAME]. InternalError when a region is unclosed, nested, unknown to
// `fills`, or a fill names no region.
std::string fill_template(const std::string& tmpl, const std::vector<std::pair<std::string, std::string>>& fills);

}  // namespace collplan::backend
