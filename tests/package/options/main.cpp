// Prints the digest of the plan compiled from a matrix file into this program.
#include <cstdio>

#include "filed.h"

int main() {
  std::printf("%s\n", filed::kDigest);
  return filed::kNumRanks == 3 ? 0 : 1;
}
