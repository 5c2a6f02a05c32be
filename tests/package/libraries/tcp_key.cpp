// collplan::tcp from the installed package: it links libcrypto (the job
// key's HMAC-SHA-256), which the package finds for its consumers. Makes a
// key, prints it and reads it back.
#include <cstdio>

#include "runtime/transport/tcp.h"

int main() {
  using namespace collplan::rt;
  const wire::Key k = wire::random_bytes32();
  const std::string hex = wire::key_hex(k);
  if (wire::parse_key(hex, "key") != k) return 1;
  std::printf("job key %s\n", hex.c_str());
  return 0;
}
