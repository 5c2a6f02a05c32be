// JSON export and import of plans (schema: docs/plan-format.md §2), for other tools and for
// independent checking. The schema is documented in docs/plan-format.md; in
// short:
//
//   { "format": "collplan-plan", "version": 1, "num_steps": N,
//     "spec": { "op", "K", "p", "lambda",
//               "field": {"kind": "gf2m", "m", "poly"} | {"kind": "prime", "q"},
//               "matrix": { "family", "rows", "cols", "seed", "points", "perm",
//                           "source", "digest", "entries": [[...], ...] },
//               "algorithm", "blocks", "root", "N", "counts" },
//     "cost": { ... as given by the caller ... },
//     "ranks": [ { "rank", "slots", "inputs", "outputs",
//                  "steps": [ { "t",
//                    "sends": [ {"port", "to", "payload": [[[slot, coeff], ...], ...]} ],
//                    "recvs": [ {"port", "from", "sent_at", "into": [slot, ...]} ],
//                    "ops":   [ {"dst", "terms": [[slot, coeff], ...], "matrix_col"} ] } ] } ] }
//
// Optional members are written only when they carry information (root for
// broadcast/reduce or when non-zero, N for decentralized-encode or when
// non-zero, counts for allgatherv or when non-empty, matrix parameters of its
// family, matrix_col when set), so export → import is lossless:
// from_json(to_json(p)) has the same spec and programs as p, and the same
// plan_digest.
//
// Import checks everything the binary decoder checks (ranges of ranks,
// ports, slots, steps, coefficients; the spec's ranges and field) and, when a
// matrix is present, rebuilds it from its family and parameters: a stored
// digest must match the rebuilt matrix's digest, and stored entries of a
// non-explicit family must equal the rebuilt entries. Unknown members are
// refused (a misspelt key would otherwise silently drop data), except inside
// "cost", which is free-form. Every error is a UserError that names the JSON
// path of the bad value, e.g. "ranks[3].steps[1].sends[0].to".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ir/plan.h"

namespace collplan::ir {

// The whole plan as a JSON document. `with_matrix` adds the matrix entries
// (row-major, "entries": [[row 0], [row 1], ...]); they are always present
// for family "explicit", since the plan cannot be checked without them.
// `cost` is stored verbatim under "cost".
nlohmann::json to_json(const Plan& plan, bool with_matrix, const nlohmann::json& cost = nlohmann::json::object());

// Rebuilds a plan from its JSON form; UserError naming the JSON path of the
// first problem (missing key, wrong type, value out of range, digest
// mismatch, unknown key).
Plan from_json(const nlohmann::json& j);

// The spec's pieces alone (the "field" and "matrix" members of a plan's
// "spec"), for spec files (`collplan compile --spec`) that hold a plan's own
// spec object: the same checks as from_json (a matrix is rebuilt from its
// family and parameters and must match a given digest and entries), errors
// naming `path`.
Field field_from_json(const nlohmann::json& v, const std::string& path);
MatrixSpec matrix_from_json(const nlohmann::json& v, const std::string& path, const Field& f);

// Parses a JSON document; UserError naming `name` on invalid JSON (the
// parser's line and column) and on an object that holds one key twice (the
// JSON standard leaves its meaning open: collplan refuses it rather than
// keep one of the values). For JSON plans and spec files.
nlohmann::json parse_json_strict(const char* data, size_t size, const std::string& name);

// Reads and imports a JSON plan file (a regular file of at most
// kMaxPlanFileBytes, support/limits.h); UserError naming the file on an
// unreadable file, invalid JSON (with the parser's line and column) or any
// from_json problem.
Plan read_json_file(const std::string& path);
// The same for a document held in memory; `name` stands for the file name in
// the messages.
Plan read_json(const char* data, size_t size, const std::string& name);

// Writes the JSON form to `path`, one rank per line (the document equals
// to_json(plan, with_matrix, cost)); it is streamed rank by rank, so large
// plans are never held as one JSON tree. UserError if it cannot write.
void write_json_file(const Plan& plan, const std::string& path, bool with_matrix,
                     const nlohmann::json& cost = nlohmann::json::object());

}  // namespace collplan::ir
