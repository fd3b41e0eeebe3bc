// Bad input: a one-line error naming what was wrong, a sysexits code, and nothing created.
#include "bad_input.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

TEST(CliBadInput, UsageErrorsExit64AndCreateNothing) {
  cli_sandbox box;
  std::string control_name = std::string("a") + '\x01' + "b";
  // U+009B, a C1 control: a terminal reads it as ESC [. U+202E, right-to-left override:
  // "jobgpj.exe" shows as "jobexe.jpg".
  const std::string c1_name = "c1\xc2\x9b[31m", bidi_name = "job\xe2\x80\xaegpj.exe";
  std::string long_name(300, 'n');
  std::vector<bad_case> cases = {
      {{"run", "x", "--url", "no-scheme-here", "--", "echo", "CMD-RAN"}, 64, "no-scheme-here"},
      {{"run", "x", "--url", "nosuch://host", "--", "echo", "CMD-RAN"}, 64, "nosuch"},
      // libdlock-prometheus sits beside the plug-ins but is no backend.
      {{"status", "x", "--url", "prometheus://host"}, 64, "prometheus"},
      {{"run", "x", "--url", "sqlite://host:99999/db", "--", "echo", "CMD-RAN"}, 64, "port"},
      {{"run", "", "--", "echo", "CMD-RAN"}, 64, "empty"},
      {{"run", control_name, "--", "echo", "CMD-RAN"}, 64, "control character"},
      {{"run", c1_name, "--", "echo", "CMD-RAN"}, 64, "control character U+009B"},
      {{"run", bidi_name, "--", "echo", "CMD-RAN"}, 64, "bidirectional control character U+202E"},
      {{"run", long_name, "--", "echo", "CMD-RAN"}, 64, "255"},
      {{"run", "x", "--ttl", "0", "--", "echo", "CMD-RAN"}, 64, "--ttl"},
      {{"run", "x", "--ttl=-5s", "--", "echo", "CMD-RAN"}, 64, "--ttl"},
      {{"run", "x", "--ttl", "5parsecs", "--", "echo", "CMD-RAN"}, 64, "5parsecs"},
      {{"run", "x", "-w", "soon", "--", "echo", "CMD-RAN"}, 64, "soon"},
      {{"run", "x", "-w", "1s ", "--", "echo", "CMD-RAN"},
       64,
       "--wait: duration '1s ': unexpected ' ' after '1s'"},
      // An empty value (an unset variable in a cron line) is no duration, never "no limit".
      {{"run", "x", "-w", "", "--", "echo", "CMD-RAN"}, 64, "--wait: duration '': empty"},
      {{"run", "x", "--ttl", "", "--", "echo", "CMD-RAN"}, 64, "--ttl: duration '': empty"},
      {{"run", "x", "--hold-at-most=", "--", "echo", "CMD-RAN"}, 64, "--hold-at-most is empty"},
      {{"run", "x", "--hold-at-least", "", "--", "echo", "CMD-RAN"},
       64,
       "--hold-at-least: duration '': empty"},
      {{"run", "x", "--grace", "", "--", "echo", "CMD-RAN"}, 64, "--grace: duration '': empty"},
      {{"elect", "x", "-w", "", "--", "echo", "CMD-RAN"}, 64, "--wait: duration '': empty"},
      {{"run", "x", "--"}, 64, "missing command"},
      {{"run", "x", "--", "", "CMD-RAN"}, 64, "the command is an empty word"},
      {{"elect", "x", "--", ""}, 64, "the command is an empty word"},
      {{"run", "x"}, 64, "missing command"},
      {{"run", "--", "true"}, 64, "NAME was 'true'"},
      {{"run", "--", "--", "echo", "CMD-RAN"}, 64, "lock name '--' is a doubled '--'"},
      {{"run", "x", "-n", "-w", "1s", "--", "echo", "CMD-RAN"}, 64, "nonblock"},
      {{"run", "x", "-E", "300", "--", "echo", "CMD-RAN"}, 64, "300"},
      {{"run", "x", "--permits", "-1", "--", "echo", "CMD-RAN"}, 64, "--permits: '-1' is negative"},
      {{"run", "x", "-E", "-1", "--", "echo", "CMD-RAN"},
       64,
       "--conflict-exit-code: '-1' is negative"},
      {{"run", "x", "-n", "-1", "--", "echo", "CMD-RAN"}, 64, "unknown option '-1'"},
      {{"status", ""}, 64, "empty"},
      {{"frobnicate"}, 64, "frobnicate"},
      {{}, 64, "subcommand"},
      {{"demo", "flash-sale", "--url", "memory://x"}, 64, "memory"},
      {{"demo", "flash-sale", "--shop", "/tmp/dlock-nowhere-dir/shop.db"},
       64,
       "directory '/tmp/dlock-nowhere-dir' does not exist"},
      {{"run", "x", "--url", "memory://x", "--", "echo", "CMD-RAN"}, 64, "memory"},
      {{"run", "x", "--ttl", "5ms", "--", "echo", "CMD-RAN"}, 64, "too short"},
      // The library's floor (10ms), which no command's lease survives: exit 70 every time.
      {{"run", "x", "--ttl", "10ms", "--", "echo", "CMD-RAN"}, 64, "at least 100ms"},
      {{"status", "x", "--url", "zk://127.0.0.1:1/a//b"}, 64, "empty segment"},
      // ZooKeeper's own subtree, and a control character in etcd's key prefix (both accepted,
      // a tester's).
      {{"status", "x", "--url", "zk://127.0.0.1:1/zookeeper"}, 64, "reserved /zookeeper"},
      {{"status", "x", "--url", "zk://127.0.0.1:1/zookeeper/locks"}, 64, "reserved /zookeeper"},
      {{"status", "x", "--url", "etcd://127.0.0.1:1/a%00b"}, 64, "control character"},
      // An explicit empty --url (an unset variable in a cron line) never falls back.
      {{"run", "x", "--url", "", "--", "echo", "CMD-RAN"}, 64, "--url is empty"},
      {{"run", "x", "--url=", "--", "echo", "CMD-RAN"}, 64, "--url is empty"},
      {{"run", "x", "-w", "1s", "--ttl=", "--", "echo", "CMD-RAN"}, 64, "--ttl is empty"},
      {{"status", "x", "--url", ""}, 64, "--url is empty"},
      {{"list", "--url", ""}, 64, "--url is empty"},
      {{"demo", "flash-sale", "--url", ""}, 64, "--url is empty"},
      {{"status", "x", "--url", "redis://127.0.0.1:1?ttl="}, 64, "'ttl' has no value"},
      {{"status", "x", "--url", "redis://u:secret@h:1:2"},
       64,
       "URL 'redis://u:***@h:1:2': bad port '1:2'"},
      {{"status", "x", "--url", "redis://:s3c@ret@127.0.0.1:1"},
       64,
       "URL 'redis://:***@127.0.0.1:1': the password holds '@': percent-encode it as %40"},
      // A mistyped option is named, with the likely meaning (a short one: a case slip only).
      {{"run", "--wiat", "5s", "x", "--", "true"},
       64,
       "unknown option '--wiat' for 'dlock run' (did you mean --wait?)"},
      {{"run", "x", "-x", "true"}, 64, "'-x' for 'dlock run'; if it belongs to the command"},
      {{"run", "-W", "5s", "x", "--", "true"}, 64, "'-W' for 'dlock run' (did you mean -w?)"},
      {{"status", "--urll", "X", "x"}, 64, "unknown option '--urll' for 'dlock status'"},
      {{"--url", "X", "run", "x", "--", "true"}, 64, "goes after the subcommand: dlock run --url"},
      {{"demo", "flashsale"}, 64, "unknown 'dlock demo' command 'flashsale' (want flash-sale"},
      {{"run", "x", "ls", "-la"}, 64, "put '--' before the command"},
      // Options of the command that dlock also has: never silently taken for dlock's.
      {{"run", "x", "sort", "-n", "nums"}, 64, "'sort': put '--' before the command"},
      {{"elect", "x", "env", "--url", "sqlite:///tmp/elsewhere.db"},
       64,
       "'env': put '--' before the command"},
      {{"elect", "x", "--value", "--", "true"}, 64, "--value needs a value before '--'"},
      // A malformed URL is refused by the commands that only look, too, never read as "free".
      {{"leader", "x", "--url", "sqlite://tmp/dlock-nowhere/locks.db"}, 64, "absolute path"},
      {{"status", "x", "--url", "sqlite://tmp/dlock-nowhere/locks.db"}, 64, "absolute path"},
      {{"observe", "x", "--url", "sqlite://tmp/dlock-nowhere/locks.db"}, 64, "absolute path"},
      {{"list", "--url", "sqlite://tmp/dlock-nowhere/locks.db"}, 64, "absolute path"},
      {{"run", "x", "--url", "sqlite:///tmp/dlock-nowhere-dir/locks.db", "--", "true"},
       64,
       "directory '/tmp/dlock-nowhere-dir' does not exist"},
      // ...and so do the viewers and an operator's break: never "free, nothing to do".
      {{"unlock", "x", "--force", "--yes", "--url", "sqlite:///tmp/dlock-nowhere-dir/locks.db"},
       64,
       "directory '/tmp/dlock-nowhere-dir' does not exist"},
      {{"status", "x", "--url", "sqlite:///tmp/dlock-nowhere-dir/locks.db"},
       64,
       "directory '/tmp/dlock-nowhere-dir' does not exist"},
      {{"list", "--url", "sqlite:///tmp/dlock-nowhere-dir/locks.db"},
       64,
       "directory '/tmp/dlock-nowhere-dir' does not exist"},
      {{"status", "x", "--url", "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:1"},
       64,
       "names one server twice"},
      {{"elect", "x"}, 64, "elect: missing command"},
      {{"elect", "", "--", "echo", "CMD-RAN"}, 64, "empty"},
      {{"elect", "x", "--ttl", "5ms", "--", "echo", "CMD-RAN"}, 64, "too short"},
      {{"elect", "x", "--permits", "2", "--", "echo", "CMD-RAN"},
       64,
       "unknown option '--permits' for 'dlock elect'"},
      {{"elect", "x", "ls", "-la"}, 64, "put '--' before the command"},
      {{"elect", "x", "--url", "memory://x", "--", "echo", "CMD-RAN"}, 64, "memory"},
      {{"leader", ""}, 64, "empty"},
      {{"leader", "x", "--url", ""}, 64, "--url is empty"},
      {{"observe", ""}, 64, "empty"},
      {{"observe", "x", "--url", "memory://x"}, 64, "memory"},
      {{"observe", "x", "--jsn"}, 64, "did you mean --json?"},
  };
  for (auto& c : cases) expect_rejected(box, c);
  // A parameter given twice is refused with both values, never "last one wins".
  expect_rejected(box,
                  {{"run", "x", "--url", box.url() + "?ttl=5s&ttl=30s", "--", "echo", "CMD-RAN"},
                   64,
                   "given twice ('5s' and '30s')"});
  expect_rejected(
      box, {{"run", "x", "--ttl", "20s", "--url", box.url() + "?ttl=5s", "--", "echo", "CMD-RAN"},
            64,
            "ttl given twice: 20"});
  // A password is hidden in a URL that does not parse, too.
  expect_rejected(
      box,
      {{"status", "x", "--url", "redis//u:secret@h"}, 64, "URL 'redis//u:***@h': missing '://'"});
  expect_rejected(box, {{"status", "x", "--url", "u:secret@h"}, 64, "URL 'u:***@h': missing"});
  // A sqlite:// URL has no use for a user or password: refused, never ignored (the file was
  // used), and masked by every command that shows the URL.
  const std::string with_user = "sqlite://u:secret@" + box.dir() + "/up.db";
  const std::string refused =
      "URL 'sqlite://u:***@" + box.dir() + "/up.db': a sqlite:// URL takes no user or password";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "x", "--url", with_user, "--", "echo", "CMD-RAN"},
           {"status", "x", "--url", with_user},
           {"list", "--json", "--url", with_user},
           {"leader", "x", "--url", with_user},
           {"unlock", "x", "--force", "--yes", "--url", with_user}}) {
    expect_rejected(box, {args, 64, refused});
  }
  EXPECT_FALSE(file_exists(box.dir() + "/up.db"));
  // --ttl given as the default's value is given too (it was taken for unset: the URL's won).
  expect_rejected(
      box, {{"run", "x", "--ttl", "15s", "--url", box.url() + "?ttl=5s", "--", "echo", "CMD-RAN"},
            64,
            "ttl given twice: 15.0s in the options (--ttl) and ttl=5s in the URL"});
  // The URL's own ttl= is checked as strictly as --ttl.
  expect_rejected(
      box, {{"run", "x", "--url", box.url() + "?ttl=0", "--", "echo", "CMD-RAN"}, 64, "ttl"});
  EXPECT_FALSE(file_exists(box.dir() + "/state")) << "nothing may be created on bad input";
  EXPECT_FALSE(file_exists(box.dir() + "/locks.db"));
}

// A URL's ttl= below a command's floor is refused as --ttl's is (the URL is read at open, so
// the database exists by then).
TEST(CliBadInput, AUrlTtlTooShortForACommandExits64) {
  cli_sandbox box;
  const std::string url = "sqlite://" + box.dir() + "/locks.db?ttl=10ms";
  expect_rejected(box, {{"run", "x", "--url", url, "--", "echo", "CMD-RAN"}, 64, "at least 100ms"});
  expect_rejected(box,
                  {{"elect", "x", "--url", url, "--", "echo", "CMD-RAN"}, 64, "at least 100ms"});
}

// A URL where the lock's name goes (`dlock status sqlite:///tmp/x.db`) was taken for a name,
// and status said that lock was free in the default database (exit 1).
TEST(CliBadInput, AUrlGivenAsTheLockNameExits64) {
  cli_sandbox box;
  const std::string url = "sqlite://" + box.dir() + "/locks.db";
  const std::string said = "lock name '" + url + "' is a URL: the URL goes in --url";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"status", url}, {"run", url, "--", "echo", "CMD-RAN"}, {"unlock", url, "--force"}}) {
    expect_rejected(box, {args, 64, said});
  }
  // Not a scheme dlock serves: an ordinary (if odd) name.
  auto r = box.run({"status", "job://nightly", "--url", url});
  EXPECT_EQ(r.status, 1) << r.output;
}

TEST(CliBadInput, BackendThatCannotServeExits69) {
  cli_sandbox box;
  std::string junk = box.dir() + "/not-a-database.db";
  std::ofstream(junk) << std::string(8192, 'j');
  expect_rejected(
      box,
      {{"run", "x", "--url", "sqlite://" + junk, "--", "echo", "CMD-RAN"}, 69, "not a database"});
  expect_rejected(box, {{"list", "--url", "sqlite://" + junk}, 69, "not a database"});
}

TEST(CliBadInput, JunkDlockUrlIsNamedAsComingFromTheEnvironment) {
  cli_sandbox box;
  child_process::options o;
  o.env = box.env();
  o.env["DLOCK_URL"] = "nosuch://host";
  o.merge_stderr = true;
  child_process p({DLOCK_CLI_PATH, "run", "x", "--", "echo", "CMD-RAN"}, o);
  std::string out;
  while (auto l = p.read_line(std::chrono::seconds{30})) out += *l + "\n";
  EXPECT_EQ(p.wait(std::chrono::seconds{30}), 64) << out;
  EXPECT_NE(out.find("$DLOCK_URL"), std::string::npos) << out;
  EXPECT_EQ(out.find("CMD-RAN"), std::string::npos);
}

// An IPv6 server is named as its URL names it, in brackets: "redis ::1:1" was ambiguous.
TEST(CliBadInput, AnIpv6ServerIsNamedInBrackets) {
  cli_sandbox box;
  auto r = box.run({"status", "x", "--url", "redis://[::1]:1"});
  EXPECT_EQ(r.status, 69) << r.output;
  EXPECT_NE(r.output.find("redis [::1]:1:"), std::string::npos) << r.output;
}

TEST(CliBadInput, UpperCaseSchemeIsAccepted) {
  cli_sandbox box;
  auto r = box.run(
      {"run", "x", "--url", "SQLite://" + box.dir() + "/locks.db", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("CMD-RAN"), std::string::npos) << r.output;
}

TEST(CliBadInput, UnusableStateDirectoryExits77) {
  cli_sandbox box;
  std::string file = box.dir() + "/plain-file";
  std::ofstream(file) << "x";
  child_process::options o;
  o.env = box.env();
  o.env["XDG_STATE_HOME"] = file;
  o.merge_stderr = true;
  child_process p({DLOCK_CLI_PATH, "run", "x", "--", "echo", "CMD-RAN"}, o);
  std::string out;
  while (auto l = p.read_line(std::chrono::seconds{30})) out += *l + "\n";
  EXPECT_EQ(p.wait(std::chrono::seconds{30}), 77) << out;
  EXPECT_NE(out.find("state directory"), std::string::npos) << out;
  EXPECT_EQ(out.find("CMD-RAN"), std::string::npos);
}

// An unset variable (--require "$NEEDED") must not make a check that requires nothing.
TEST(CliBadInput, AnEmptyRequireIsRefused) {
  cli_sandbox box;
  auto r = box.run({"doctor", "sqlite://" + box.dir() + "/locks.db", "--require", ""});
  EXPECT_EQ(r.status, 64) << r.output;
  EXPECT_NE(r.output.find("--require"), std::string::npos) << r.output;
}

// HOME=/nonexistent is how Debian marks a system user without a home: the default lock file
// must not create one (a user's report: /nonexistent/.local/state/dlock/locks.db).
TEST(CliBadInput, AMissingHomeIsNotCreatedForTheDefault) {
  cli_sandbox box;
  std::string home = box.dir() + "/no-such-home";
  child_process::options o;
  o.env = box.env();
  o.env["XDG_STATE_HOME"] = "";
  o.env["HOME"] = home;
  o.merge_stderr = true;
  // Every command that takes the default, the viewers too: status said "free" (exit 1).
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"run", "x", "--", "echo", "CMD-RAN"},
                                             {"elect", "x", "--", "echo", "CMD-RAN"},
                                             {"status", "x"},
                                             {"list"},
                                             {"leader", "x"},
                                             {"observe", "x"},
                                             {"unlock", "x", "--force", "--yes"},
                                             {"doctor"}}) {
    std::vector<std::string> argv{DLOCK_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    child_process p(argv, o);
    std::string out;
    while (auto l = p.read_line(std::chrono::seconds{30})) out += *l + "\n";
    EXPECT_EQ(p.wait(std::chrono::seconds{30}), 64) << args.front() << ": " << out;
    EXPECT_NE(out.find("home directory '" + home + "' does not exist"), std::string::npos)
        << args.front() << ": " << out;
    EXPECT_EQ(out.find("CMD-RAN"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(home)) << "dlock created the missing home directory";
}

}  // namespace
}  // namespace dlock::test
