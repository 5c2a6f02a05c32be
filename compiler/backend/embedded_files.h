// Files built into the collplan executable at build time (see
// cmake/embed_files.cmake): the templates of templates/ and the runtime
// header runtime/embedded/collplan_embedded.h, so `collplan emit-cpp` needs
// no file at run time. Use backend::embedded_file(name) (emit_cpp.h).
#pragma once

#include <cstddef>

namespace collplan::backend {

struct EmbeddedFile {
  const char* name;  // file name without directory
  const char* text;
};

extern const EmbeddedFile kEmbeddedFiles[];
extern const size_t kNumEmbeddedFiles;

}  // namespace collplan::backend
