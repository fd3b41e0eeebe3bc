// Issues 3, 4 and 5: the flash-sale demo and `dlock run`/`status`/`list` work as real
// processes against real ZooKeeper, Redis, PostgreSQL and MariaDB servers.
#include <gtest/gtest.h>

#include <csignal>
#include <dlock/session.hpp>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "backends_fixture.hpp"
#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::vector<std::string> file_lines(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST_F(CliBackends, FlashSaleSellsExactlyTheStock) {
  cli_sandbox box;
  for (const auto& url : srv_->urls()) {
    SCOPED_TRACE(url);
    auto r =
        box.run({"demo", "flash-sale", "--workers", "4", "--stock", "60", "--json", "--url", url});
    ASSERT_EQ(r.status, 0) << r.output;
    auto j = json::parse(r.output);
    EXPECT_EQ(j["sold"], 60);
    EXPECT_EQ(j["stock_left"], 0);
    EXPECT_EQ(j["oversold"], 0);
    EXPECT_EQ(j["lock"], true);
    // The report shows the URL, never its password (the SQL fixtures use "secret").
    EXPECT_EQ(r.output.find("secret"), std::string::npos) << r.output;
  }
}

// Status shows each entry's fencing token as the one it holds with: a holder's is the one its
// CMD got, and a waiter shows either the token it will be granted or none (Redlock gives a
// waiter its token only at the grant; its place in the masters' queues, which entries of one
// epoch share, once showed as "token 5" for two waiters, and for the second of them as
// holder, which held with 6).
TEST_F(CliBackends, TwoRunsNeverOverlapAndStatusShowsTheHolder) {
  cli_sandbox box;
  std::string script = box.dir() + "/critical.sh";
  // Appends are made under flock(1) so the file itself is never the source of interleaving;
  // run $2 stays in its critical section until the test creates "<log>.go$2".
  std::ofstream(script) << "flock \"$1.lk\" sh -c 'echo \"start $DLOCK_FENCING_TOKEN $1\" >> "
                           "\"$0\"' \"$1\" \"$2\"\n"
                           "i=0\n"
                           "while [ ! -e \"$1.go$2\" ] && [ $i -lt 600 ]; do sleep 0.05; "
                           "i=$((i+1)); done\n"
                           "flock \"$1.lk\" sh -c 'echo \"end $DLOCK_FENCING_TOKEN\" >> \"$0\"' "
                           "\"$1\"\n";
  auto urls = srv_->urls();
  for (const auto& u : srv_->newer_urls()) urls.push_back(u);
  int n = 0;
  for (const auto& url : urls) {
    SCOPED_TRACE(url);
    std::string log = box.dir() + "/log" + std::to_string(++n);
    std::string name = "cron/nightly";
    auto first = box.start({"run", name, "--url", url, "--", "sh", script, log, "1"});
    ASSERT_TRUE(poll([&] { return file_lines(log).size() == 1; })) << read_file(log);
    auto second = box.start({"run", name, "--url", url, "--", "sh", script, log, "2"});
    auto third = box.start({"run", name, "--url", url, "--", "sh", script, log, "3"});

    // status: the first run holds, the other two wait behind it.
    json st;
    ASSERT_TRUE(poll([&] {
      auto r = box.run({"status", name, "--url", url, "--json"});
      if (r.status != 0) return false;
      st = json::parse(r.output);
      return st["waiters"].size() == 2;
    })) << st.dump();
    ASSERT_EQ(st["holders"].size(), 1u) << st.dump();
    EXPECT_EQ(st["holders"][0]["pid"], first.pid()) << st.dump();
    EXPECT_EQ(st["held"], true);
    EXPECT_EQ(file_lines(log).size(), 1u) << "a waiter started while the first held:\n"
                                          << read_file(log);

    auto human = box.run({"status", name, "--url", url});
    EXPECT_EQ(human.status, 0) << human.output;
    EXPECT_NE(human.output.find("pid " + std::to_string(first.pid())), std::string::npos)
        << human.output;

    auto list = box.run({"list", "cron/", "--url", url, "--json"});
    ASSERT_EQ(list.status, 0) << list.output;
    auto l = json::parse(list.output)["locks"];
    ASSERT_EQ(l.size(), 1u) << l.dump();
    EXPECT_EQ(l[0]["name"], name);
    ASSERT_EQ(l[0]["holders"].size(), 1u) << l.dump();
    EXPECT_EQ(l[0]["holders"][0]["pid"], first.pid());

    // Let each run in turn: a waiter that starts holds the token status showed for it, and
    // status shows it as holder with that token.
    std::map<long, json> shown_holding{{first.pid(), st["holders"][0]["token"]}};
    std::ofstream(log + ".go1") << "go\n";
    EXPECT_EQ(first.wait(60s), 0);
    // The two waiters joined at about the same time, in either order.
    for (const std::size_t starts : {3u, 5u}) {  // the lines of the runs before, and a start
      ASSERT_TRUE(poll([&] { return file_lines(log).size() == starts; })) << read_file(log);
      auto r = box.run({"status", name, "--url", url, "--json"});
      ASSERT_EQ(r.status, 0) << r.output;
      auto h = json::parse(r.output)["holders"];
      ASSERT_EQ(h.size(), 1u) << r.output;
      auto* next = h[0]["pid"] == second.pid() ? &second : &third;
      ASSERT_EQ(h[0]["pid"], next->pid()) << r.output;
      shown_holding[next->pid()] = h[0]["token"];
      std::ofstream(log + ".go" + (next == &second ? "2" : "3")) << "go\n";
      EXPECT_EQ(next->wait(60s), 0);
    }
    auto lines = file_lines(log);
    ASSERT_EQ(lines.size(), 6u) << read_file(log);
    std::map<long, std::uint64_t> ran_with;  // the run's pid -> its token
    const std::map<int, long> pid_of{{1, first.pid()}, {2, second.pid()}, {3, third.pid()}};
    std::uint64_t last = 0;
    for (std::size_t i = 0; i < lines.size(); i += 2) {
      std::istringstream in(lines[i]);
      std::string word;
      std::uint64_t token = 0;
      int run = 0;
      in >> word >> token >> run;
      ASSERT_EQ(word, "start") << read_file(log);
      EXPECT_EQ(lines[i + 1], "end " + std::to_string(token)) << "interleaved:\n" << read_file(log);
      EXPECT_LT(last, token) << "fencing tokens must increase\n" << read_file(log);
      last = token;
      ran_with[pid_of.at(run)] = token;
    }
    for (const auto& [pid, token] : shown_holding) {
      EXPECT_EQ(token, ran_with[pid]) << "status showed a holder with another token\n"
                                      << read_file(log);
    }
    for (const auto& w : st["waiters"]) {
      if (w["token"].is_null()) continue;
      EXPECT_EQ(w["token"], ran_with[w["pid"].get<long>()])
          << "a waiter's token is not the one it held with\n"
          << st.dump() << "\n"
          << read_file(log);
    }

    auto after = box.run({"status", name, "--url", url, "--json"});
    ASSERT_EQ(after.status, 1) << "free is exit 1\n" << after.output;
    EXPECT_EQ(json::parse(after.output)["held"], false) << after.output;
  }
}

// In ?mode=advisory the server keeps the lock, not a queue table, and
// `dlock status` said "free" while `dlock run -n` on the same name exited 75. Status must
// show what the server knows (the holder's connection, the waiting dlock sessions), and
// `dlock list`, which cannot map the server's hashes back to names, must say so rather than
// "no locks".
TEST_F(CliBackends, AdvisoryHolderIsShownByStatusAndNeverListedAsFree) {
  cli_sandbox box;
  for (const auto& url : {srv_->pg->url("mode=advisory"), srv_->maria->url("mode=advisory")}) {
    SCOPED_TRACE(url);
    std::string name = "adv/job-" + random_suffix();
    auto holder = box.start({"run", name, "--url", url, "--", "sh", "-c", "echo held; sleep 60"});
    ASSERT_TRUE(holder.wait_for_line("held", 30s));
    auto busy = box.run({"run", "-n", name, "--url", url, "--", "true"});
    ASSERT_EQ(busy.status, 75) << busy.output;

    auto waiter = box.start({"run", name, "--url", url, "--", "true"});
    json st;
    ASSERT_TRUE(poll([&] {
      auto r = box.run({"status", name, "--url", url, "--json"});
      if (r.status != 0) return false;
      st = json::parse(r.output);
      return st["waiters"].size() == 1;
    })) << st.dump();
    EXPECT_EQ(st["held"], true) << st.dump();
    ASSERT_EQ(st["holders"].size(), 1u) << st.dump();
    // Another connection's token is not known to the server: null, never a made-up 0.
    EXPECT_TRUE(st["holders"][0]["token"].is_null()) << st.dump();
    EXPECT_NE(st["holders"][0]["owner"].get<std::string>().find("advisory"), std::string::npos)
        << st.dump();

    auto human = box.run({"status", name, "--url", url});
    ASSERT_EQ(human.status, 0) << human.output;
    EXPECT_NE(human.output.find(": held"), std::string::npos) << human.output;
    EXPECT_EQ(human.output.find(": free"), std::string::npos) << human.output;
    EXPECT_NE(human.output.find("token unknown"), std::string::npos) << human.output;
    EXPECT_NE(human.output.find("waiter 1"), std::string::npos) << human.output;

    // Either the lock is listed or list says it cannot enumerate; never "no locks".
    for (bool as_json : {false, true}) {
      std::vector<std::string> args = {"list", "adv/", "--url", url};
      if (as_json) args.push_back("--json");
      auto list = box.run(args);
      EXPECT_EQ(list.output.find("no locks"), std::string::npos) << list.output;
      if (list.status == 0) {
        EXPECT_NE(list.output.find(name), std::string::npos) << list.output;
      } else {
        EXPECT_EQ(list.status, 64) << list.output;
        EXPECT_NE(list.output.find("cannot list"), std::string::npos) << list.output;
      }
    }

    holder.signal(SIGTERM);
    EXPECT_TRUE(holder.wait(30s).has_value());
    EXPECT_EQ(waiter.wait(30s), 0);
    auto after = box.run({"status", name, "--url", url, "--json"});
    ASSERT_EQ(after.status, 1) << "free is exit 1\n" << after.output;
    EXPECT_EQ(json::parse(after.output)["held"], false) << after.output;
  }
}

// `dlock list` prints the names in byte order (what dlock::list_locks promises), text and JSON
// alike, on every backend: "m/100" before "m/24" (a tester read that as unsorted), capitals
// before lower case, UTF-8 after ASCII. Names started out of order, so that an unsorted
// listing is unlikely to come out sorted by chance.
TEST_F(CliBackends, ListPrintsNamesInByteOrder) {
  cli_sandbox box;
  auto urls = srv_->urls();
  for (const auto& url : srv_->newer_urls()) urls.push_back(url);
  urls.push_back(box.url());
  for (const auto& url : urls) {
    SCOPED_TRACE(url);
    const std::string prefix = "order-" + random_suffix() + "/";
    std::vector<child_process> holders;
    for (const char* n : {"26", "100", "\xc3\xa9", "3", "24", "a", "B"}) {
      holders.push_back(box.start(
          {"run", prefix + n, "--url", url, "--", "sh", "-c", "echo held; read x; exit 0"}));
      ASSERT_TRUE(holders.back().wait_for_line("held", 30s)) << n;
    }
    std::vector<std::string> sorted;
    for (const char* n : {"100", "24", "26", "3", "B", "a", "\xc3\xa9"})
      sorted.push_back(prefix + n);

    auto text = box.run({"list", prefix, "--url", url});
    ASSERT_EQ(text.status, 0) << text.output;
    std::vector<std::string> names;  // the lines that are not a name's details (indented)
    for (const auto& l : text.lines()) {
      if (!l.empty() && l[0] != ' ') names.push_back(l);
    }
    EXPECT_EQ(names, sorted) << text.output;

    auto j = box.run({"list", prefix, "--url", url, "--json"});
    ASSERT_EQ(j.status, 0) << j.output;
    names.clear();
    auto locks = json::parse(j.output)["locks"];
    for (const auto& l : locks) names.push_back(l["name"].get<std::string>());
    EXPECT_EQ(names, sorted) << j.output;

    for (auto& h : holders) h.close_stdin();
    for (auto& h : holders) EXPECT_EQ(h.wait(30s), 0);
  }
}

// `dlock unlock NAME --force --yes` ends a stuck holder's session where the backend can (its
// `dlock run` is told it lost the lock and exits 70) and refuses (69, nothing changed) where
// another client's session cannot be ended: ZooKeeper, and locks in mode=advisory.
TEST_F(CliBackends, ForceUnlockBreaksALeaseAndRefusesWhereItCannot) {
  cli_sandbox box;
  auto urls = every_mode();
  for (const auto& url : urls) {
    SCOPED_TRACE(url);
    const bool refuses = url.starts_with("zk://") || url.find("mode=advisory") != std::string::npos;
    std::string name = "stuck/job-" + random_suffix();
    // A free lock is "nothing to do" everywhere, also where a holder could not be ended.
    auto free = box.run({"unlock", name, "--url", url, "--force", "--yes"});
    EXPECT_EQ(free.status, 0) << free.output;
    EXPECT_NE(free.output.find("free, nothing to do"), std::string::npos) << free.output;
    auto holder = box.start(
        {"run", name, "--url", url, "--ttl", "3s", "--", "sh", "-c", "echo held; sleep 60"});
    ASSERT_TRUE(holder.wait_for_line("held", 30s));
    // No --yes and no terminal is the usage mistake, 64, on every backend alike (zk:// said
    // 69 "cannot end" first, a tester's).
    auto asked = box.run({"unlock", name, "--url", url, "--force"});
    EXPECT_EQ(asked.status, 64) << asked.output;
    auto r = box.run({"unlock", name, "--url", url, "--force", "--yes"});
    if (refuses) {
      EXPECT_EQ(r.status, 69) << r.output;
      EXPECT_NE(r.output.find("cannot end another client's session"), std::string::npos)
          << r.output;
      EXPECT_EQ(box.run({"status", name, "--url", url}).status, 0) << "a refusal changed things";
      holder.signal(SIGTERM);
      EXPECT_TRUE(holder.wait(30s).has_value());
      continue;
    }
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("ended the session of"), std::string::npos) << r.output;
    auto code = holder.wait(20s);
    ASSERT_TRUE(code.has_value()) << "dlock run never learnt that its lock was broken";
    EXPECT_EQ(*code, 70);
    EXPECT_EQ(box.run({"status", name, "--url", url}).status, 1);
  }
}

// A holder whose process is gone on this very host (its entry lives until the lease ends on
// Redis) is marked in `dlock status`, text and JSON; a live one is not.
TEST_F(CliBackends, AHolderWhoseProcessIsGoneHereIsMarked) {
  cli_sandbox box;
  std::string url = "redis://" + srv_->redis->address();
  std::string name = "gone/" + random_suffix();
  auto holder = box.start(
      {"run", "--ttl", "30s", "--url", url, name, "--", "sh", "-c", "echo held; exec sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  auto live = box.run({"status", name, "--url", url, "--json"});
  ASSERT_EQ(live.status, 0) << live.output;
  EXPECT_EQ(json::parse(live.output)["holders"][0]["pid_running_here"], true) << live.output;
  holder.signal(SIGKILL);  // dlock dies; its lease lives on in Redis for up to 30 s
  EXPECT_TRUE(holder.wait(30s).has_value());
  auto gone = box.run({"status", name, "--url", url});
  EXPECT_EQ(gone.status, 0) << gone.output;
  EXPECT_NE(gone.output.find("(pid not running here)"), std::string::npos) << gone.output;
  auto gj = box.run({"status", name, "--url", url, "--json"});
  EXPECT_EQ(json::parse(gj.output)["holders"][0]["pid_running_here"], false) << gj.output;
}

// Lease mode's rows and advisory mode's server locks never exclude each other: a tester's
// lease-mode `dlock run` and advisory-mode `dlock run -n` of one name on one database both
// held it, each `status` saying "free". A database (PostgreSQL: schema) holds the locks of
// the first mode opened there; the other mode is refused, naming both.
TEST_F(CliBackends, TheOtherModeIsRefusedWhereOneModeKeepsItsLocks) {
  cli_sandbox box;
  const std::string pg_lease = srv_->pg->url("schema=modes_" + random_suffix());
  const std::string maria = srv_->maria->url("");
  const std::string maria_adv = maria.substr(0, maria.rfind('/')) + "/modes_" + random_suffix();
  srv_->maria->query("CREATE DATABASE " + maria_adv.substr(maria_adv.rfind('/') + 1));
  srv_->maria->query("GRANT ALL ON " + maria_adv.substr(maria_adv.rfind('/') + 1) +
                     ".* TO 'dlock'@'%'");
  struct pair_of_urls {
    std::string first, other;
  };
  for (const auto& [first, other] : {pair_of_urls{pg_lease, pg_lease + "&mode=advisory"},
                                     pair_of_urls{maria + "?mode=lease", maria + "?mode=advisory"},
                                     pair_of_urls{maria_adv + "?mode=advisory", maria_adv}}) {
    SCOPED_TRACE(first + " then " + other);
    std::string name = "modes/" + random_suffix();
    auto holder = box.start({"run", name, "--url", first, "--", "sh", "-c", "echo held; sleep 60"});
    ASSERT_TRUE(holder.wait_for_line("held", 30s));
    auto refused = box.run({"run", "-n", name, "--url", other, "--", "echo", "BOTH HOLD"});
    EXPECT_EQ(refused.status, 64) << refused.output;
    EXPECT_EQ(refused.output.find("BOTH HOLD"), std::string::npos) << refused.output;
    EXPECT_NE(refused.output.find("would not exclude them"), std::string::npos) << refused.output;
    holder.signal(SIGTERM);
    (void)holder.wait(30s);
  }
  // Looking records nothing: status in one mode on a fresh schema leaves it to the other.
  const std::string fresh = srv_->pg->url("schema=look_" + random_suffix());
  EXPECT_EQ(box.run({"status", "x", "--url", fresh + "&mode=advisory"}).status, 1);
  auto first = box.run({"run", "-n", "x", "--url", fresh, "--", "true"});
  EXPECT_EQ(first.status, 0) << first.output;
}

}  // namespace
}  // namespace dlock::test
