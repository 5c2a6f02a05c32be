// Links the libraries of ranks 0 and 2 of the plan fw and prints the digest
// both were compiled against, then the ranks fw.h describes.
#include <cstdio>

#include "fw.h"

namespace {
using Entry = collplan_embedded::Result (*)(collplan_embedded::Channel&, const void* const*, void* const*, size_t,
                                            void*);
}  // namespace

int main() {
  // Both entry points come from their own library.
  Entry volatile entries[] = {&fw::rank_0, &fw::rank_2};
  std::printf("%s\n", fw::kDigest);
  for (uint32_t i = 0; i < fw::kNumEmitted; ++i) std::printf("%s%u", i ? " " : "", fw::kEmittedRanks[i]);
  std::printf("\n");
  return entries[0] != nullptr && entries[1] != nullptr && fw::kNumRanks == 4 ? 0 : 1;
}
