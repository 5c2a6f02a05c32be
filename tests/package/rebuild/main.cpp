// Prints the digest of the plan collplan_add_plan compiled into this program.
#include <cstdio>

#include "demo.h"

int main() {
  std::printf("%s\n", demo::kDigest);
  return demo::kNumRanks == 4 ? 0 : 1;
}
