#include "cli/usage_errors.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <regex>
#include <string>
#include <vector>

namespace dlock::cli {
namespace {

// CLI11's own wording, in dlock's: lower case, the option named once, numbers in words a
// reader of the other messages expects.
std::string tidy(std::string msg) {
  // "--url: --url is empty ...": a validator that names its option, prefixed with it again.
  if (auto colon = msg.find(": "); colon != std::string::npos && colon > 0) {
    const auto opt = msg.substr(0, colon);
    if (msg.compare(colon + 2, opt.size(), opt) == 0) msg.erase(0, colon + 2);
  }
  static const std::regex at_most("At Most ([0-9]+) required but received ([0-9]+)");
  msg = std::regex_replace(msg, at_most, "given $2 times (at most $1)");
  static const std::regex range("Value (.*) not in range (.*) to (.*)");
  msg = std::regex_replace(msg, range, "'$1' is not in the range $2 to $3");
  static const std::regex unexpected("The following arguments? (was|were) not expected: (.*)");
  msg = std::regex_replace(msg, unexpected, "unexpected argument: $2");
  if (msg.starts_with("A subcommand is required")) msg[0] = 'a';
  return msg;
}

// Levenshtein distance, for "did you mean".
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Every spelling of every option of `cmd` ("--wait", "-w", ...).
std::vector<std::string> option_spellings(const CLI::App& cmd) {
  std::vector<std::string> out;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  // `-W` for `-w`: one short option is one edit from every other, so only case is a clue.
  if (word.size() == 2 && word[0] == '-') {
    for (const auto& c : candidates) {
      if (c.size() == 2 && std::tolower(static_cast<unsigned char>(c[1])) ==
                               std::tolower(static_cast<unsigned char>(word[1])))
        return c;
    }
    return {};
  }
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    auto d = distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Only a near miss is a suggestion; anything further is noise.
  return best_d <= std::max<std::size_t>(2, word.size() / 3) ? best : std::string{};
}

const CLI::App* find_subcommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (s->get_name() == name) return s;
  }
  return nullptr;
}

std::string subcommand_names(const CLI::App& app) {
  std::string out;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (s->get_group().empty()) continue;  // hidden
    if (!out.empty()) out += ", ";
    out += s->get_name();
  }
  return out;
}

bool known_option(const std::vector<std::string>& spellings, std::string_view word) {
  auto name = word.substr(0, word.find('='));
  if (std::find(spellings.begin(), spellings.end(), name) != spellings.end()) return true;
  // Bundled or attached short options (-nE3, -w5s): judge by the first letter.
  if (name.size() > 2 && name[0] == '-' && name[1] != '-') {
    return std::find(spellings.begin(), spellings.end(), std::string(name.substr(0, 2))) !=
           spellings.end();
  }
  return false;
}

}  // namespace

std::string explain_usage_error(const CLI::App& app, const std::vector<std::string>& args,
                                const std::string& parser_says) {
  std::vector<std::string> words = args;
  // `dlock --url X run ...`: options belong after the subcommand.
  std::size_t first_sub = words.size();
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (find_subcommand(app, words[i])) {
      first_sub = i;
      break;
    }
  }
  const auto top = option_spellings(app);
  for (std::size_t i = 0; i < first_sub && i < words.size(); ++i) {
    if (words[i].starts_with("-") && !known_option(top, words[i])) {
      if (first_sub < words.size()) {
        return "option '" + words[i] + "' goes after the subcommand: dlock " + words[first_sub] +
               " " + words[i] + " ... (see dlock " + words[first_sub] + " --help)";
      }
      return "unknown option '" + words[i] + "' (see dlock --help)";
    }
  }
  if (first_sub == words.size()) return tidy(parser_says) + " (see dlock --help)";

  // Descend through nested subcommands (dlock demo flash-sale).
  const CLI::App* cmd = find_subcommand(app, words[first_sub]);
  std::string path = "dlock " + words[first_sub];
  std::size_t i = first_sub + 1;
  while (i < words.size() && !words[i].starts_with("-")) {
    const CLI::App* sub = find_subcommand(*cmd, words[i]);
    if (!sub) break;
    cmd = sub;
    path += " " + words[i];
    ++i;
  }
  if (cmd->get_require_subcommand_min() > 0) {
    std::string which = i < words.size() ? words[i] : std::string{};
    std::string names = subcommand_names(*cmd);
    if (which.empty())
      return "'" + path + "' needs one of: " + names + " (see " + path + " --help)";
    return "unknown '" + path + "' command '" + which + "' (want " + names + "; see " + path +
           " --help)";
  }
  const auto spellings = option_spellings(*cmd);
  bool after_dashes = false;
  bool positional_seen = false;
  for (; i < words.size(); ++i) {
    const auto& w = words[i];
    if (w == "--") {
      after_dashes = true;
      break;
    }
    if (w.starts_with("-") && w.size() > 1 && !known_option(spellings, w)) {
      // `--permits -1`: CLI11 took the negative number for an option of its own.
      const CLI::Option* before =
          i > 0 && words[i - 1].starts_with("-") ? cmd->get_option_no_throw(words[i - 1]) : nullptr;
      if (before && before->get_expected_min() > 0 &&
          w.find_first_not_of("0123456789", 1) == std::string::npos) {
        // Named as its validator names it (`-E 256`: --conflict-exit-code).
        return before->get_name() + ": '" + w + "' is negative (see " + path + " --help)";
      }
      std::string hint = closest(w.substr(0, w.find('=')), spellings);
      std::string msg = "unknown option '" + w + "' for '" + path + "'";
      if (!hint.empty()) msg += " (did you mean " + hint + "?)";
      if (positional_seen && (cmd->get_name() == "run" || cmd->get_name() == "elect")) {
        msg += "; if it belongs to the command, put '--' before the command";
      }
      return msg + "; see " + path + " --help";
    }
    if (!w.starts_with("-")) positional_seen = true;
  }
  (void)after_dashes;
  return tidy(parser_says) + " (see " + path + " --help)";
}

}  // namespace dlock::cli
