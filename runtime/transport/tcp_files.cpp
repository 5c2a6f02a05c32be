// The TCP transport's files: peer lists and job keys (tcp.h). Both are read
// with the one reader of support/safe_file.h: regular files of a bounded
// size only, so a device or FIFO given by mistake is refused at once instead
// of read forever.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "runtime/transport/tcp.h"
#include "runtime/transport/tcp_internal.h"
#include "support/error.h"
#include "support/safe_file.h"

namespace collplan::rt {

using namespace tcp_detail;

// ─── peer lists and keys ─────────────────────────────────────────────────────

std::vector<std::string> parse_peers(const std::string& file_or_list, size_t max_peers) {
  std::vector<std::string> peers;
  auto add = [&](const std::string& w) {
    if (peers.size() == max_peers)
      user_error("the peer list '{}' has more than {} entries, the most this job takes (one per plan rank)",
                 file_or_list, max_peers);
    peers.push_back(w);
  };
  struct stat st{};
  if (::stat(file_or_list.c_str(), &st) == 0) {
    const std::string text = files::read_regular_file(file_or_list, "peer file", kMaxPeerFileBytes);
    std::istringstream in(text);
    std::string line;
    for (size_t no = 1; std::getline(in, line); ++no) {
      if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      std::istringstream words(line);
      std::string w, extra;
      if (!(words >> w)) continue;
      if (words >> extra) user_error("peer file '{}', line {}: '{}' has more than one address", file_or_list, no, line);
      add(w);
    }
  } else {
    std::stringstream ss(file_or_list);
    for (std::string w; std::getline(ss, w, ',');) add(w);
  }
  if (peers.empty()) user_error("--peers '{}' is neither a readable file nor a list host:port,host:port,...", file_or_list);
  for (const std::string& p : peers) check_host_port(p);  // UserError naming a malformed entry
  return peers;
}

wire::Key read_key_file(const std::string& path) {
  return wire::parse_key(files::read_regular_file(path, "job key file", 4096), fmt::format("the job key file '{}'", path));
}

void write_key_file(const std::string& path, bool force) {
  const wire::Key key = wire::random_bytes32();
  const std::string text = wire::key_hex(key) + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 && errno == EEXIST) {
    if (!force) user_error("'{}' exists; keygen does not overwrite a key (--force replaces it)", path);
    // A fresh file, so the mode is 0600 whatever the old one's was.
    if (::unlink(path.c_str()) != 0) user_error("cannot replace '{}': {}", path, std::strerror(errno));
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  }
  if (fd < 0) {
    if (out_of_fds(errno)) resource_error(ResourceError::Kind::Descriptors, "out of file descriptors creating {}", path);
    user_error("cannot create the key file '{}': {}", path, std::strerror(errno));
  }
  bool ok = ::fchmod(fd, 0600) == 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t k = ::write(fd, text.data() + done, text.size() - done);
    if (k < 0 && errno == EINTR) continue;
    ok = k > 0;
    if (ok) done += static_cast<size_t>(k);
  }
  const int err = errno;
  ok = ok && ::fsync(fd) == 0;
  if (::close(fd) != 0) ok = false;
  if (!ok) {
    ::unlink(path.c_str());
    user_error("cannot write the key file '{}': {}", path, std::strerror(err));
  }
}

std::optional<wire::Key> job_key(const std::string& key_file) {
  if (!key_file.empty()) return read_key_file(key_file);
  const char* env = std::getenv("COLLPLAN_TCP_KEY_FILE");
  if (env && *env) return read_key_file(env);
  return std::nullopt;
}

}  // namespace collplan::rt
