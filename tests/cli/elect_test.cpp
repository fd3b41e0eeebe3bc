// dlock elect, dlock leader and dlock observe: elections from the shell, on the embedded default.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A candidate that says "leading TOKEN" once elected and leads until its stdin is closed.
std::vector<std::string> leading(const std::string& name, const std::vector<std::string>& options) {
  std::vector<std::string> args{"elect", name};
  args.insert(args.end(), options.begin(), options.end());
  for (const char* w : {"--", "sh", "-c", "echo leading $DLOCK_FENCING_TOKEN; read x; exit 0"}) {
    args.emplace_back(w);
  }
  return args;
}

unsigned long long token_in(const std::string& leading_line) {
  return std::stoull(leading_line.substr(leading_line.find(' ') + 1));
}

json leader_json(const cli_sandbox& box, const std::string& name, int status) {
  auto r = box.run({"leader", name, "--json"});
  EXPECT_EQ(r.status, status) << r.output;
  return json::parse(r.output);
}

// Polls `dlock status` until `n` candidates wait behind the leader.
bool candidates_waiting(const cli_sandbox& box, const std::string& name, std::size_t n) {
  for (int i = 0; i < 300; ++i) {
    auto r = box.run({"status", name, "--json"});
    if (r.status == 0 && json::parse(r.output)["waiters"].size() == n) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::string host_name() {
  char h[256] = {};
  ::gethostname(h, sizeof h - 1);
  return h;
}

TEST(CliElect, RunsTheCommandWithNameTokenAndUrl) {
  cli_sandbox box;
  auto show = std::vector<std::string>{
      "elect", "db/primary", "--url", box.url(),
      "--",    "sh",         "-c",    "echo \"$DLOCK_NAME|$DLOCK_FENCING_TOKEN|$DLOCK_URL\""};
  auto first = box.run(show);
  ASSERT_EQ(first.status, 0) << first.output;
  auto second = box.run(show);
  ASSERT_EQ(second.status, 0) << second.output;
  auto parse = [&](const std::string& out) {
    auto a = out.find('|');
    auto b = out.find('|', a + 1);
    EXPECT_EQ(out.substr(0, a), "db/primary");
    EXPECT_EQ(out.substr(b + 1, out.size() - b - 2), box.url());
    return std::stoull(out.substr(a + 1, b - a - 1));
  };
  auto t1 = parse(first.output);
  auto t2 = parse(second.output);
  EXPECT_GT(t1, 0u);
  EXPECT_GT(t2, t1) << "every term has a greater token";
  EXPECT_EQ(box.run({"elect", "db/primary", "--", "sh", "-c", "exit 7"}).status, 7);
  EXPECT_EQ(box.run({"elect", "db/primary", "--", "/nonexistent/command"}).status, 127);
}

// Failover: the second candidate waits while the first leads, and leads once it is gone, with a
// greater token; first when the leader's command ends, then when its dlock is killed.
TEST(CliElect, ASecondCandidateLeadsOnceTheFirstIsGone) {
  cli_sandbox box;
  for (bool kill_leader : {false, true}) {
    SCOPED_TRACE(kill_leader ? "leader killed" : "leader's command ended");
    auto first = box.start(leading("db/primary", {"--value", "first"}));
    auto l1 = first.wait_for_line("leading ", 30s);
    ASSERT_TRUE(l1);
    auto second = box.start(leading("db/primary", {"--value", "second"}));
    ASSERT_TRUE(candidates_waiting(box, "db/primary", 1));
    EXPECT_EQ(leader_json(box, "db/primary", 0)["leader"]["value"], "first");
    EXPECT_TRUE(second.running());
    if (kill_leader) {
      // On SQLite a dead process's entry is freed at once (the pid check); its guard kills
      // the command.
      first.signal(SIGKILL);
      EXPECT_EQ(first.wait(30s), 128 + SIGKILL);
    } else {
      first.close_stdin();
      EXPECT_EQ(first.wait(30s), 0);
    }
    auto l2 = second.wait_for_line("leading ", 30s);
    ASSERT_TRUE(l2) << "the second candidate was never elected";
    EXPECT_GT(token_in(*l2), token_in(*l1));
    auto j = leader_json(box, "db/primary", 0);
    EXPECT_EQ(j["leader"]["value"], "second") << j.dump();
    EXPECT_EQ(j["leader"]["token"], token_in(*l2)) << j.dump();
    second.close_stdin();
    EXPECT_EQ(second.wait(30s), 0);
  }
  EXPECT_EQ(box.run({"leader", "db/primary"}).status, 1);
}

TEST(CliElect, NotElectedExits75OrTheChosenCode) {
  cli_sandbox box;
  auto leader = box.start(leading("svc", {"--value", "10.0.0.7:8080"}));
  ASSERT_TRUE(leader.wait_for_line("leading ", 30s));
  auto n = box.run({"elect", "-n", "svc", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(n.status, 75);
  ASSERT_EQ(n.lines().size(), 1u) << n.output;
  EXPECT_NE(n.output.find("election 'svc' has a leader (one try): leader \"10.0.0.7:8080\""),
            std::string::npos)
      << n.output;
  auto w = box.run({"elect", "-w", "300ms", "svc", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(w.status, 75);
  EXPECT_NE(w.output.find("not elected within 300ms"), std::string::npos) << w.output;
  EXPECT_EQ(w.output.find("CMD-RAN"), std::string::npos);
  auto q = box.run({"elect", "-n", "-q", "-E", "9", "svc", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(q.status, 9);
  EXPECT_EQ(q.output, "");
  auto st = box.run({"status", "svc", "--json"});
  EXPECT_TRUE(json::parse(st.output)["waiters"].empty()) << "a failed candidate was left behind\n"
                                                         << st.output;
  leader.close_stdin();
  EXPECT_EQ(leader.wait(30s), 0);
}

TEST(CliElect, SignalWhileWaitingLeavesNoCandidate) {
  cli_sandbox box;
  auto leader = box.start(leading("svc", {}));
  ASSERT_TRUE(leader.wait_for_line("leading ", 30s));
  auto waiter = box.start({"elect", "svc", "--", "echo", "never"});
  ASSERT_TRUE(candidates_waiting(box, "svc", 1));
  waiter.signal(SIGTERM);
  EXPECT_EQ(waiter.wait(30s), 128 + SIGTERM);
  EXPECT_EQ(box.run({"status", "svc"}).output.find("waiter"), std::string::npos);
  leader.signal(SIGTERM);
  EXPECT_EQ(leader.wait(30s), 128 + SIGTERM);
  EXPECT_EQ(box.run({"leader", "svc"}).status, 1);
}

// A leader paused past its 1 s lease is replaced; when it resumes, its command is stopped
// and dlock exits 70.
TEST(CliElect, LostLeadershipStopsTheCommandAndExits70) {
  cli_sandbox box;
  std::string url = box.url() + "?ttl=1s";
  auto leader = box.start({"elect", "--url", url, "svc", "--", "sh", "-c",
                           "trap 'echo got-term; exit 0' TERM; echo started; "
                           "while :; do sleep 0.05; done"});
  ASSERT_TRUE(leader.wait_for_line("started", 30s));
  leader.signal(SIGSTOP);
  auto next = box.run({"elect", "--url", url, "-w", "30s", "svc", "--", "echo", "next-leads"});
  EXPECT_EQ(next.status, 0) << next.output;
  EXPECT_NE(next.output.find("next-leads"), std::string::npos);
  leader.signal(SIGCONT);
  EXPECT_EQ(leader.wait(60s), 70);
  bool got_term = false, said = false;
  while (auto line = leader.read_line(5s)) {
    got_term = got_term || *line == "got-term";
    said = said || line->find("leadership of election 'svc' lost") != std::string::npos;
  }
  EXPECT_TRUE(got_term);
  EXPECT_TRUE(said);
}

// dlock elect stopped past its lease while CMD ends (within the lease): found at the
// resignation, and told as leadership, not as a lock's (a tester's report).
TEST(CliElect, LeadershipLapsedWhileDlockIsStoppedAfterCmdEndedSaysLeadership) {
  cli_sandbox box;
  std::string url = box.url() + "?ttl=1s";
  auto leader =
      box.start({"elect", "--url", url, "svc", "--", "sh", "-c", "echo started; sleep 0.3"});
  ASSERT_TRUE(leader.wait_for_line("started", 30s));
  leader.signal(SIGSTOP);
  auto next = box.run({"elect", "--url", url, "-w", "30s", "svc", "--", "echo", "next-leads"});
  EXPECT_EQ(next.status, 0) << next.output;
  leader.signal(SIGCONT);
  auto status = leader.wait(30s);
  ASSERT_TRUE(status.has_value()) << "dlock elect did not exit";
  std::string out;
  while (auto line = leader.read_line(1s)) out += *line + "\n";
  EXPECT_EQ(*status, 0) << out;
  EXPECT_NE(out.find("leadership of election 'svc' outlived 'sh', but its lease ran out"),
            std::string::npos)
      << out;
}

// One name is a lock or an election: using it as the other is refused (64), naming both.
TEST(CliElect, ANameUsedAsALockIsRefused) {
  cli_sandbox box;
  auto holder = box.start({"run", "x", "--", "sh", "-c", "echo held; read x; exit 0"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  auto e = box.run({"elect", "-n", "x", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(e.status, 64) << e.output;
  EXPECT_NE(e.output.find("a lock"), std::string::npos) << e.output;
  EXPECT_EQ(e.output.find("CMD-RAN"), std::string::npos);
  auto l = box.run({"leader", "x"});
  EXPECT_EQ(l.status, 64) << l.output;
  EXPECT_NE(l.output.find("not as an election"), std::string::npos) << l.output;
  holder.close_stdin();
  EXPECT_EQ(holder.wait(30s), 0);
}

TEST(CliLeader, ShowsTheLeadersValueAndTokenWhileAnElectRuns) {
  cli_sandbox box;
  auto none = box.run({"leader", "db/primary"});
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.output.find("no leader"), std::string::npos) << none.output;
  EXPECT_TRUE(leader_json(box, "db/primary", 1)["leader"].is_null());

  auto e = box.start(leading("db/primary", {"--value", "10.0.0.7:8080"}));
  auto line = e.wait_for_line("leading ", 30s);
  ASSERT_TRUE(line);
  auto token = token_in(*line);
  auto human = box.run({"leader", "db/primary"});
  EXPECT_EQ(human.status, 0) << human.output;
  EXPECT_NE(human.output.find("has a leader"), std::string::npos) << human.output;
  EXPECT_NE(human.output.find("\"10.0.0.7:8080\"  token " + std::to_string(token)),
            std::string::npos)
      << human.output;
  EXPECT_NE(human.output.find("pid " + std::to_string(e.pid())), std::string::npos) << human.output;

  // status names it an election and its holder the leader.
  auto st = box.run({"status", "db/primary"});
  EXPECT_EQ(st.status, 0) << st.output;
  EXPECT_NE(st.output.find("election 'db/primary' on "), std::string::npos) << st.output;
  EXPECT_NE(st.output.find("has a leader"), std::string::npos) << st.output;
  EXPECT_NE(st.output.find("  leader    token " + std::to_string(token)), std::string::npos)
      << st.output;
  EXPECT_NE(st.output.find("  candidate"), std::string::npos) << st.output;

  auto j = leader_json(box, "db/primary", 0);
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["name"], "db/primary");
  EXPECT_FALSE(j["url"].get<std::string>().empty());
  const auto& l = j["leader"];
  EXPECT_EQ(l["value"], "10.0.0.7:8080");
  EXPECT_EQ(l["token"], token);
  EXPECT_EQ(l["value_version"], 1);
  EXPECT_EQ(l["pid"], e.pid());
  EXPECT_EQ(l["pid_running_here"], true);
  EXPECT_EQ(l["host"], host_name());
  EXPECT_EQ(l["description"], "dlock elect sh");
  EXPECT_FALSE(l["since"].is_null());
  EXPECT_GT(l["since_ms"].get<long long>(), 0);

  // Without --value, the value says which process leads.
  auto d = box.start(leading("other", {}));
  ASSERT_TRUE(d.wait_for_line("leading ", 30s));
  EXPECT_EQ(leader_json(box, "other", 0)["leader"]["value"],
            host_name() + " pid=" + std::to_string(d.pid()));

  e.close_stdin();
  d.close_stdin();
  EXPECT_EQ(e.wait(30s), 0);
  EXPECT_EQ(d.wait(30s), 0);
  auto after = box.run({"leader", "db/primary"});
  EXPECT_EQ(after.status, 1) << after.output;
  EXPECT_NE(after.output.find("no leader"), std::string::npos) << after.output;
}

// Viewing never writes: no state directory, no database.
TEST(CliLeader, ViewingCreatesNothing) {
  cli_sandbox box;
  EXPECT_EQ(box.run({"leader", "x"}).status, 1);
  std::string db = box.dir() + "/elsewhere.db";
  EXPECT_EQ(box.run({"leader", "x", "--url", "sqlite://" + db, "--json"}).status, 1);
  auto o = box.start({"observe", "x"});
  EXPECT_NE(o.wait_for_line_with("no leader", 30s).value_or(""), "");
  o.signal(SIGTERM);
  EXPECT_EQ(o.wait(30s), 0);
  EXPECT_FALSE(file_exists(box.dir() + "/state")) << "viewing created the state directory";
  EXPECT_FALSE(file_exists(db)) << "viewing created the database";
}

TEST(CliObserve, PrintsTheCurrentStateThenEveryNewLeader) {
  cli_sandbox box;
  auto o = box.start({"observe", "db/primary"});
  EXPECT_NE(o.wait_for_line_with("no leader", 30s).value_or(""), "");

  auto e1 = box.start(leading("db/primary", {"--value", "first"}));
  auto t1 = e1.wait_for_line("leading ", 30s);
  ASSERT_TRUE(t1);
  auto seen = o.read_line(30s).value_or("");
  EXPECT_NE(seen.find("leader \"first\"  token " + std::to_string(token_in(*t1))),
            std::string::npos)
      << seen;

  // A candidate queued behind the leader changes nothing observers see; its election does:
  // one line per change, nothing in between.
  auto e2 = box.start(leading("db/primary", {"--value", "second"}));
  ASSERT_TRUE(candidates_waiting(box, "db/primary", 1));
  e1.close_stdin();
  EXPECT_EQ(e1.wait(30s), 0);
  auto t2 = e2.wait_for_line("leading ", 30s);
  ASSERT_TRUE(t2);
  seen = o.read_line(30s).value_or("");
  EXPECT_NE(seen.find("leader \"second\"  token " + std::to_string(token_in(*t2))),
            std::string::npos)
      << seen;
  e2.close_stdin();
  EXPECT_EQ(e2.wait(30s), 0);
  seen = o.read_line(30s).value_or("");
  EXPECT_NE(seen.find("no leader"), std::string::npos) << seen;

  o.signal(SIGTERM);
  EXPECT_EQ(o.wait(30s), 0);
}

TEST(CliObserve, JsonLinesParseAndSigintEndsIt) {
  cli_sandbox box;
  auto e = box.start(leading("db/primary", {"--value", "a \"quoted\"\tvalue"}));
  auto t = e.wait_for_line("leading ", 30s);
  ASSERT_TRUE(t);
  auto o = box.start({"observe", "db/primary", "--json"});
  auto first = o.read_line(30s);
  ASSERT_TRUE(first);
  auto j = json::parse(*first);
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["name"], "db/primary");
  EXPECT_FALSE(j["seen_at"].is_null());
  EXPECT_EQ(j["leader"]["value"], "a \"quoted\"\tvalue");
  EXPECT_EQ(j["leader"]["token"], token_in(*t));
  EXPECT_EQ(j["leader"]["pid"], e.pid());

  e.close_stdin();
  EXPECT_EQ(e.wait(30s), 0);
  auto next = o.read_line(30s);
  ASSERT_TRUE(next);
  EXPECT_TRUE(json::parse(*next)["leader"].is_null()) << *next;
  o.signal(SIGINT);
  EXPECT_EQ(o.wait(30s), 0);
}

// `dlock observe x | head -1`: the reader is gone; observe notices without a change to print.
TEST(CliObserve, EndsWhenItsReaderIsGone) {
  cli_sandbox box;
  auto r = run_command(
      {"bash", "-c",
       "XDG_STATE_HOME='" + box.dir() + "/state' HOME='" + box.dir() + "/home' DLOCK_URL= '" +
           DLOCK_CLI_PATH + "' observe x | head -1; exit ${PIPESTATUS[0]}"},
      30s);
  EXPECT_EQ(r.first, 0) << r.second;
  EXPECT_NE(r.second.find("no leader"), std::string::npos) << r.second;
}

}  // namespace
}  // namespace dlock::test
