// Did-you-mean: an edit distance that ignores case, and the check of argv's
// subcommand and options against what the app defines.
#include "driver/names.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/error.h"

namespace collplan::cli {

namespace {

// Levenshtein distance, case-insensitive (`--k` is one edit from `--K`
// and counts as none).
size_t edit_distance(const std::string& a, const std::string& b) {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The closest of `names` to `word` when it is close enough to be a typo
// (at most a third of the word's length, at least 1 edit, or a prefix).
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& n : names) {
    size_t d = edit_distance(word, n);
    if (word.size() >= 3 && n.rfind(word, 0) == 0) d = std::min<size_t>(d, 1);  // a prefix: "comp" -> "compile"
    if (d < best_d) best_d = d, best = n;
  }
  return best_d <= std::max<size_t>(1, word.size() / 3) ? best : std::string();
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::string c = closest(word, names);
  return c.empty() ? std::string() : fmt::format("; did you mean '{}'?", c);
}

}  // namespace

void check_names(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(c->get_name());
  int at = 1;
  while (at < argc && argv[at][0] == '-') ++at;  // --help, --version before the command
  if (at >= argc) return;
  const std::string cmd = argv[at];
  const CLI::App* sub = nullptr;
  for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; }))
    if (c->get_name() == cmd) sub = c;
  if (!sub) {
    std::string valid;
    for (const auto& c : commands) valid += (valid.empty() ? "" : ", ") + c;
    const std::string dym = did_you_mean(cmd, commands);
    user_error("unknown command '{}'{}{}", cmd, dym,
               dym.empty() ? fmt::format(" (commands: {}; see collplan --help)", valid) : std::string());
  }
  std::vector<std::string> options;
  for (const CLI::Option* o : sub->get_options()) {
    for (const auto& l : o->get_lnames()) options.push_back("--" + l);
    for (const auto& sn : o->get_snames()) options.push_back("-" + sn);
  }
  for (int i = at + 1; i < argc; ++i) {
    const std::string tok = argv[i];
    if (tok == "--") break;
    if (tok.size() < 3 || tok.rfind("--", 0) != 0) continue;
    const std::string name = tok.substr(0, tok.find('='));
    if (sub->get_option_no_throw(name) != nullptr) continue;
    user_error("unknown option '{}' for 'collplan {}'{}", name, cmd,
               did_you_mean(name, options).empty() ? fmt::format(" (see collplan {} --help)", cmd)
                                                    : did_you_mean(name, options));
  }
}

}  // namespace collplan::cli
