// The binary plan format (`.cplan`), version 1.
//
// The full grammar, with the meaning of every field, is in docs/plan-format.md;
// this is its summary. All integers are little-endian and fixed-width; `elem`
// is a field element at the field's width (Field::elem_bytes(): 1 for gf256,
// 2 for gf65536, 4 for prime fields); `str` is u32 length + that many bytes
// (no control characters); a digest is 16 bytes (XXH3-128, canonical byte
// order, as `xxhsum -H2` prints it).
//
//   file     := preamble header index blob{K}
//   preamble := magic[8] = 89 'C' 'P' 'L' 'A' 'N' 0D 0A
//               version:u32 = 1   flags:u32 (bit 0: single-rank file, bit 1: compiled alone; see below)
//               content_hash:digest          (see "Integrity" below)
//               file_size:u64   header_size:u32   num_ranks:u32 (= K; N for decentralized-encode)
//   header   := spec num_steps:u32                  (header_size bytes)
//   spec     := op:u8 field_kind:u8 flags:u16 K:u32 p:u32 lambda:u32     (flags bit 0: exclusive prefix)
//               field_m:u32 field_poly:u32 field_q:u64
//               algorithm:str blocks:u32 root:u32 N:u32 counts:(n:u32 u32[n])
//               matrix
//   matrix   := family:str rows:u32 cols:u32 seed:u64 points:(n:u32 elem[n])
//               perm:(n:u32 u32[n]) entries:(n:u64 elem[n]) source:str
//               digest:digest
//   index    := (offset:u64 length:u64 hash:u64){K}  rank k's blob, XXH3-64
//   blob     := rank:u32 num_slots:u32 inputs:(n:u32 u32[n])
//               outputs:(n:u32 u32[n]) n_steps:u32 step[n_steps]
//   step     := t:u32 n_sends:u32 n_recvs:u32 n_ops:u32 send[] recv[] op[]
//   send     := port:u32 to:u32 n:u32 combo[n]
//   recv     := port:u32 from:u32 sent_at:u32 n:u32 slot:u32[n]
//   op       := flags:u8 dst:u32 [matrix_col:u32 if flags = 1] combo
//   combo    := 0:u8 n:u32 (slot:u32 coeff:elem)[n]        list of terms
//             | 1:u8 base:u32 n:u32 coeff:elem[n]           slots base..base+n-1
//             | 2:u8 n:u32 slot:u32[n]                      all coefficients 1
//             | 3:u8 slot:u32                               the one term 1·slot
//   (the writer picks the shortest applicable form, ties to the lower tag)
//
// Integrity. content_hash is XXH3-128 over the preamble's first 16 bytes and
// everything from byte 32 to the end of the index; the index holds each rank
// blob's XXH3-64, and the blobs tile the rest of the file exactly, in rank
// order. So every byte of the file is covered, and one rank's program can be
// loaded and fully checked (header + index + its blob) without reading the
// others. The content hash is the plan's identity (plan_digest): two files
// with the same content hash hold the same plan.
//
// Decoding refuses (UserError naming the byte offset and, inside a blob, the
// rank) anything that does not parse or is out of range: bad magic, unknown
// version, truncation, a hash mismatch, a count larger than the bytes left,
// a spec outside validate_spec_basics or with an unknown field, a slot >=
// num_slots, a rank >= K, a port >= p, a step outside 1..num_steps or not
// increasing, a coefficient >= q. It does not judge the schedule (matching
// sends and receives, timing, algebra): that is the checker's job, and the
// checker must be able to load a wrong plan to say what is wrong with it.
// The decoder never allocates more than a small multiple of the input size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/plan.h"

namespace collplan::ir {

inline constexpr uint32_t kBinaryVersion = 1;

// Encodes a plan. The plan must have spec.K programs with ranks[k].rank == k
// and coefficients that fit the field's element width (InternalError
// otherwise); a name (algorithm, matrix family or source) with a control
// character is a UserError. Nothing else is judged, so a wrong plan can be
// written for the checker to reject.
std::vector<uint8_t> encode_binary(const Plan& plan);

// Decodes a whole file image: checks the magic, version, content hash, every
// rank hash and every range listed above. UserError on any damage, and for a
// single-rank file (which holds one program, not a plan: use read_rank).
Plan decode_binary(const uint8_t* data, size_t size);

// Writes the encoded plan to `path` (through a temporary file renamed into
// place, so a reader never sees half a file) and returns its content hash
// (plan_digest, without encoding the plan again). UserError if it cannot
// write.
Digest write_binary(const Plan& plan, const std::string& path);

// Reads and decodes a whole file; UserError (naming the path) when it cannot
// be read or is damaged.
Plan read_binary(const std::string& path);

// The header of a plan file: its spec and step count, its identity, and
// where each rank's blob is.
struct RankIndexEntry {
  uint64_t offset = 0;  // from the start of the file
  uint64_t length = 0;
  uint64_t hash = 0;    // XXH3-64 of the blob
};

struct PlanHeader {
  Spec spec;
  uint32_t num_steps = 0;
  Digest content_hash;
  uint32_t version = 0;
  uint64_t file_size = 0;
  std::vector<RankIndexEntry> index;  // one per rank
  // Set for a single-rank file (`collplan extract` or `compile --rank`): the
  // one rank it holds.
  std::optional<Rank> only_rank;
  // A rank-local file (`collplan compile --rank`, see below): no whole plan
  // exists; `index` has its one entry and content_hash is the file's own.
  bool compiled_alone = false;
};

// Reads the preamble, header and index only (verifying the content hash).
PlanHeader read_header(const std::string& path);
// The same from a file image in memory (the whole file, or at least its
// preamble, header and index plus, for a single-rank file, its blob).
PlanHeader decode_header(const uint8_t* data, size_t size);

// Reads the header, the index and rank r's blob only (by seeking), verifies
// the content hash and that rank's hash, and returns its program. UserError
// when r >= K or anything is damaged. Works on a single-rank file too, for
// its one rank.
Program read_rank(const std::string& path, Rank r, PlanHeader* header_out = nullptr);
// The same from a whole file image in memory (`size` is the file's size).
Program decode_rank(const uint8_t* data, size_t size, Rank r, PlanHeader* header_out = nullptr);

// ─── Single-rank files ───────────────────────────────────────────────────────
//
// A device needs only its own program. A single-rank file is a plan file cut
// down to one rank: the same preamble, header and index, byte for byte,
// except preamble flags bit 0 (= 1), followed by that rank's blob alone.
// The content hash is defined with that flag read as 0, so the file carries
// the whole plan's content hash (plan_digest) and it checks; file_size and the
// index still describe the whole plan; the blob follows the index directly
// and its rank is its first field. read_header sets only_rank, read_rank
// reads it, decode_binary/read_binary refuse it (it is not a whole plan).

// Rank-local files. `collplan compile --rank R` builds rank R's program
// alone (ir::RankPlan), for K up to kMaxRankLocalRanks, where no whole plan
// (and no K-entry index) can exist. Its file is a single-rank file with
// preamble flags = 3 (bit 0 single rank, bit 1 compiled alone) and
//   rank_local := preamble header entry blob_R
// where `entry` is the one index entry (offset = where blob_R starts,
// length, XXH3-64) and file_size is this file's size. Its content hash is
// computed as for any plan file, over the preamble (bit 0 of the flags read
// as 0, bit 1 as written), the header and the one entry: the identity of
// this rank's program under this spec and step count, not a plan digest (no
// whole-plan file has bit 1 set, so none shares it). read_header sets
// only_rank and compiled_alone, read_rank reads it, decode_binary refuses it,
// extract_rank of its own rank copies it. K above kMaxPlanRanks is accepted
// in such a file only.
std::vector<uint8_t> encode_rank_local(const RankPlan& rp);
// The same written to `path` (through a temporary file).
void write_rank_local(const RankPlan& rp, const std::string& path);

// The single-rank image of rank r of a plan file image (a whole plan, or a
// single-rank file of rank r). Checks the header, the index and that rank's
// blob; UserError when damaged or r is not in the file.
std::vector<uint8_t> extract_rank_image(const uint8_t* data, size_t size, Rank r);
// The same from file `in` to file `out` (written through a temporary file).
void extract_rank(const std::string& in, Rank r, const std::string& out);

// ─── Reading a whole plan without holding it ────────────────────────────────
//
// `collplan check --streaming` checks a plan file rank by rank and step by
// step: a MappedPlan maps the file (the page cache holds it, not the heap),
// checks its head (content hash) and decodes one rank's program on demand
// (rank(): its blob's hash checked), or one step record at a time through a
// StepCursor per rank. Every read is bounds-checked as in decode_binary.
struct StepCursor {
  Rank rank = 0;
  uint32_t num_slots = 0;
  uint64_t pos = 0;         // the next step record's offset within the blob
  uint32_t steps_left = 0;  // step records not yet read
  StepNo prev = 0;          // step of the record read last (0: none)
  StepNo next_t = 0;        // step of the next record (0: none left)
};

class MappedPlan {
 public:
  // A whole plan file (a single-rank file is refused, naming what it is).
  explicit MappedPlan(const std::string& path);
  ~MappedPlan();
  MappedPlan(const MappedPlan&) = delete;
  MappedPlan& operator=(const MappedPlan&) = delete;

  const PlanHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  // Rank r's whole program; its blob's hash is checked.
  Program rank(Rank r) const;
  // A cursor at rank r's first step record; `inputs` and `outputs` (when
  // given) get the rank's input and output slots.
  StepCursor open(Rank r, std::vector<SlotId>* inputs = nullptr, std::vector<SlotId>* outputs = nullptr) const;
  // Decodes the record at the cursor into `st`; with `advance`, moves past it.
  void read_step(StepCursor& c, Step& st, bool advance) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  PlanHeader header_;
};

// The same over a whole file image in memory (MappedPlan's engine).
StepCursor open_steps(const uint8_t* file, const PlanHeader& h, Rank r, std::vector<SlotId>* inputs,
                      std::vector<SlotId>* outputs);
void read_step_at(const uint8_t* file, const PlanHeader& h, StepCursor& c, Step& st, bool advance);

// The content hash a file of this plan carries (computed without building the
// whole file image): the plan's identity, e.g. for a transport handshake.
Digest plan_digest(const Plan& plan);

// True when `data` starts with the .cplan magic (for format sniffing; says
// nothing about the rest).
bool looks_like_binary_plan(const uint8_t* data, size_t size);

// Recomputes every rank hash and the content hash of an edited file image in
// place, leaving everything else as it is. For tests and tools that craft
// hostile or hand-edited files. Hashes whose ranges the layout fields (sizes,
// index) put outside the file are left as they are.
void reseal_binary(std::vector<uint8_t>& file);

}  // namespace collplan::ir
