// dlock --help: what it points a reader to exists.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <regex>
#include <sstream>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

// Someone who built with `make demo` has installed nothing: the footer's `man -l` path must
// be the man page's real place in the source tree, or its advice fails them.
TEST(CliHelp, FooterNamesTheManPageInTheSourceTree) {
  cli_sandbox box;
  auto r = box.run({"--help"});
  EXPECT_EQ(r.status, 0) << r.output;
  ASSERT_FALSE(r.lines().empty());
  const std::string footer = r.lines().back();
  EXPECT_NE(footer.find("man dlock"), std::string::npos) << footer;
  const std::string cue = "man -l ";
  auto at = footer.find(cue);
  ASSERT_NE(at, std::string::npos) << footer;
  at += cue.size();
  std::string page = footer.substr(at, footer.find_first_of(") ", at) - at);
  EXPECT_TRUE(file_exists(std::string(DLOCK_SOURCE_DIR) + "/" + page)) << page;
  EXPECT_LE(footer.size(), 80u) << "fits a terminal: " << footer;
}

// Each subcommand's --help options (without --help): the long name, and its short one if any.
std::map<std::string, std::string> options_of(const std::string& help) {
  std::map<std::string, std::string> out;
  std::istringstream in(help);
  const std::regex option("^  (-[a-zA-Z],)?(--[a-z][a-z-]*)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, option) || m.str(2) == "--help") continue;
    out[m.str(2)] = m[1].matched ? m.str(1).substr(0, 2) : "";
  }
  return out;
}

// `word` in `text` as a whole option: not part of a longer one (-v in --value, -n in
// --nonblock). In groff source each hyphen is "\-".
bool has_option(const std::string& text, const std::string& word, bool groff) {
  std::string w;
  for (char c : word) w += c == '-' && groff ? std::string("\\-") : std::string(1, c);
  for (auto at = text.find(w); at != std::string::npos; at = text.find(w, at + 1)) {
    const auto end = at + w.size();
    const bool tail_ok =
        end == text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) ||
                                text[end] == '-' || text[end] == '\\');
    const bool head_ok = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) ||
                                      text[at - 1] == '-' || text[at - 1] == '\\');
    if (tail_ok && head_ok) return true;
  }
  return false;
}

// The lines of `text` from the first that starts with `head` up to (without) the first after
// it that `ends` accepts.
template <class Ends>
std::string block(const std::string& text, const std::string& head, Ends ends) {
  std::istringstream in(text);
  std::string out;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (inside && ends(line)) break;
    if (!inside && line.starts_with(head)) inside = true;
    if (inside) out += line + "\n";
  }
  return out;
}

// An outside tester found `dlock elect --metrics-file` in --help but in neither the synopsis of
// docs/cli.md nor the man page's, and `--url etcd://` missing from the bash completion: every
// option a subcommand takes is in both synopses and the completion, and every URL scheme of
// --help is completed.
TEST(CliHelp, EveryOptionIsInTheSynopsesAndTheCompletion) {
  cli_sandbox box;
  const std::string src = DLOCK_SOURCE_DIR;
  const auto doc = read_file(src + "/docs/cli.md");
  const auto man = read_file(src + "/man/dlock.1");
  const auto completion = read_file(src + "/completion/dlock.bash");
  for (std::string cmd :
       {"run", "status", "list", "unlock", "elect", "leader", "observe", "doctor"}) {
    SCOPED_TRACE(cmd);
    auto help = box.run({cmd, "--help"});
    ASSERT_EQ(help.status, 0) << help.output;
    const auto options = options_of(help.output);
    EXPECT_FALSE(options.empty()) << help.output;
    const auto doc_synopsis = block(doc, "dlock " + cmd + " ", [](const std::string& l) {
      return !l.starts_with(" ");  // continuation lines are indented
    });
    ASSERT_FALSE(doc_synopsis.empty()) << "docs/cli.md has no synopsis of dlock " << cmd;
    const auto man_synopsis = block(man, ".B dlock " + cmd, [](const std::string& l) {
      return l == ".br" || l.starts_with(".SH");
    });
    ASSERT_FALSE(man_synopsis.empty()) << "man/dlock.1 has no synopsis of dlock " << cmd;
    for (const auto& [o, short_name] : options) {
      auto in = [&](const std::string& text, bool groff) {
        return has_option(text, o, groff) ||
               (!short_name.empty() && has_option(text, short_name, groff));
      };
      EXPECT_TRUE(in(doc_synopsis, false)) << o << " in docs/cli.md:\n" << doc_synopsis;
      EXPECT_TRUE(in(man_synopsis, true)) << o << " in man/dlock.1:\n" << man_synopsis;
      EXPECT_TRUE(has_option(completion, o, false)) << o << " in completion/dlock.bash";
    }
  }
  auto help = box.run({"--help"});
  std::istringstream in(help.output);
  int schemes = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, std::regex("^  ([a-z-]+)://"))) continue;
    ++schemes;
    EXPECT_TRUE(has_option(completion, m.str(1) + "://", false))
        << m.str(1) << ":// is not completed after --url";
  }
  EXPECT_GE(schemes, 8) << help.output;
}

// The parser's own messages in dlock's wording: a tester found "At Most 1 required but
// received 2", "A subcommand is required", "Value 0 not in range 1 to 256" and "--url: --url is
// empty" beside the lower-case, option-named-once messages of the rest.
TEST(CliHelp, TheParsersMessagesReadAsDlocksOwn) {
  cli_sandbox box;
  struct expect {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& [args, says] :
       std::vector<expect>{{{"run", "--url", "a", "--url", "b", "x", "--", "true"},
                            "--url: given 2 times (at most 1)"},
                           {{}, "a subcommand is required"},
                           {{"status", "a", "b"}, "unexpected argument: b"},
                           {{"demo", "flash-sale", "--workers", "0"}, "'0' is not in the range 1"},
                           {{"status", "x", "--url", ""}, "dlock: --url is empty"}}) {
    auto r = box.run(args);
    EXPECT_EQ(r.status, 64) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("--url: --url"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace dlock::test
