// dlock status and dlock list, human-readable and --json.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// `dlock status` exits 0 for a held lock and 1 for a free one (as systemctl is-active).
json run_json(const cli_sandbox& box, const std::vector<std::string>& args, int status = 0) {
  auto r = box.run(args);
  EXPECT_EQ(r.status, status) << r.output;
  return json::parse(r.output);
}

TEST(CliStatus, FreeLock) {
  cli_sandbox box;
  auto r = box.run({"status", "nobody/holds"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("free"), std::string::npos) << r.output;
  auto j = run_json(box, {"status", "nobody/holds", "--json"}, 1);
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["held"], false);
  EXPECT_TRUE(j["holders"].empty());
  EXPECT_TRUE(j["waiters"].empty());
  auto l = run_json(box, {"list", "--json"});
  EXPECT_EQ(l["version"], 2);
  EXPECT_EQ(l["locks"], json::array());
  EXPECT_NE(box.run({"list"}).output.find("no locks"), std::string::npos);
}

// A URL that ends in ':' (a Redis `?prefix=app:`; here a file so named) is set apart from the
// sentence's own colon: a tester read "...?prefix=myapp:: free".
TEST(CliStatus, AUrlEndingInAColonIsSetApart) {
  cli_sandbox box;
  const auto url = "sqlite://" + box.dir() + "/locks:";
  auto r = box.run({"status", "--url", url, "job"});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("on <" + url + ">: free"), std::string::npos) << r.output;
  // So is the library's, in an acquire's error: "acquire 'job' on URL:: 'job' is used as a lock".
  auto holder = box.start({"run", "--url", url, "job", "--", "sh", "-c", "echo held; sleep 30"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  auto p = box.run({"run", "-n", "--permits", "2", "--url", url, "job", "--", "true"});
  EXPECT_NE(p.output.find("on <" + url + ">: "), std::string::npos) << p.output;
  holder.signal(SIGTERM);
  (void)holder.wait(30s);
}

// Viewing never writes: no state directory, no database is created, and a lock in a database
// that does not exist is simply free.
TEST(CliStatus, ViewingCreatesNothing) {
  cli_sandbox box;
  EXPECT_EQ(box.run({"status", "x"}).status, 1);
  EXPECT_EQ(box.run({"list"}).status, 0);
  EXPECT_FALSE(file_exists(box.dir() + "/state")) << "status created the state directory";
  std::string db = box.dir() + "/elsewhere.db";
  EXPECT_EQ(box.run({"status", "x", "--url", "sqlite://" + db}).status, 1);
  EXPECT_EQ(box.run({"list", "--url", "sqlite://" + db}).status, 0);
  EXPECT_FALSE(file_exists(db)) << "status created the database";
}

// A holder's command line is text from the server: a newline in it (here in the command's
// path) must not split or forge a line of the human output. JSON carries it as it is.
TEST(CliStatus, ControlCharactersInAnOwnersTextAreEscaped) {
  cli_sandbox box;
  // ... and a C1 control (U+009B, which a terminal reads as ESC [), as UTF-8.
  const std::string odd = box.dir() +
                          "/two\nlines\x1b[31m\xc2\x9b"
                          "2J";
  ASSERT_EQ(::symlink("/bin/sh", odd.c_str()), 0);
  auto holder = box.start({"run", "odd", "--", odd, "-c", "echo held; read x; exit 0"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  for (const auto& args : {std::vector<std::string>{"status", "odd"}, {"list"}}) {
    auto r = box.run(args);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("/two\\nlines\\x1b[31m\\u009b2J)"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("\xc2\x9b"), std::string::npos) << r.output;
    EXPECT_EQ(r.lines().size(), args[0] == "list" ? 3u : 2u) << r.output;
  }
  auto j = run_json(box, {"status", "odd", "--json"});
  EXPECT_EQ(j["holders"][0]["description"], "dlock run " + odd);
  holder.close_stdin();
  EXPECT_EQ(holder.wait(30s), 0);
}

TEST(CliStatus, HolderAndWaitersInOrder) {
  cli_sandbox box;
  auto holder = box.start({"run", "reports/daily", "--", "sh", "-c", "echo held; read x; exit 0"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  auto waiter1 = box.start({"run", "reports/daily", "--", "true"});
  // Wait until the first waiter is queued before starting the second: order is arrival order.
  json j;
  for (int i = 0; i < 200; ++i) {
    j = run_json(box, {"status", "reports/daily", "--json"});
    if (j["waiters"].size() == 1) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(j["waiters"].size(), 1u) << j.dump();
  auto waiter2 = box.start({"run", "reports/daily", "--", "true"});
  for (int i = 0; i < 200; ++i) {
    j = run_json(box, {"status", "reports/daily", "--json"});
    if (j["waiters"].size() == 2) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(j["waiters"].size(), 2u) << j.dump();

  EXPECT_EQ(j["name"], "reports/daily");
  EXPECT_EQ(j["held"], true);
  ASSERT_EQ(j["holders"].size(), 1u);
  const auto& h = j["holders"][0];
  EXPECT_EQ(h["pid"], holder.pid());
  EXPECT_FALSE(h["host"].get<std::string>().empty());
  EXPECT_GT(h["token"].get<unsigned long long>(), 0u);
  EXPECT_GT(h["lease_left_ms"].get<long long>(), 0);
  EXPECT_FALSE(h["since"].is_null());
  EXPECT_EQ(j["waiters"][0]["pid"], waiter1.pid());
  EXPECT_EQ(j["waiters"][1]["pid"], waiter2.pid());
  EXPECT_LT(h["token"], j["waiters"][0]["token"]);
  EXPECT_LT(j["waiters"][0]["token"], j["waiters"][1]["token"]);

  auto human = box.run({"status", "reports/daily"});
  EXPECT_EQ(human.status, 0);
  auto lines = human.lines();
  ASSERT_EQ(lines.size(), 4u) << human.output;
  EXPECT_NE(lines[0].find("held"), std::string::npos);
  EXPECT_NE(lines[1].find("holder"), std::string::npos);
  EXPECT_NE(lines[1].find("pid " + std::to_string(holder.pid())), std::string::npos);
  EXPECT_NE(lines[1].find("token " + std::to_string(h["token"].get<unsigned long long>())),
            std::string::npos);
  EXPECT_NE(lines[2].find("waiter 1"), std::string::npos);
  EXPECT_NE(lines[2].find("pid " + std::to_string(waiter1.pid())), std::string::npos);
  EXPECT_NE(lines[3].find("waiter 2"), std::string::npos);

  auto other = box.start({"run", "other/lock", "--", "sh", "-c", "echo held; read x; exit 0"});
  ASSERT_TRUE(other.wait_for_line("held", 30s));
  auto all = run_json(box, {"list", "--json"})["locks"];
  ASSERT_EQ(all.size(), 2u) << all.dump();
  EXPECT_EQ(all[0]["name"], "other/lock");
  EXPECT_EQ(all[1]["name"], "reports/daily");
  EXPECT_EQ(all[1]["waiters"].size(), 2u);
  EXPECT_EQ(all[1]["held"], true);
  EXPECT_EQ(all[1]["holders"][0]["pid"], holder.pid());
  auto some = run_json(box, {"list", "reports/", "--json"})["locks"];
  ASSERT_EQ(some.size(), 1u);
  EXPECT_EQ(some[0]["name"], "reports/daily");
  auto listed = box.run({"list"});
  EXPECT_NE(listed.output.find("other/lock"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("reports/daily"), std::string::npos);
  EXPECT_NE(listed.output.find("2 waiting"), std::string::npos);

  holder.close_stdin();
  other.close_stdin();
  EXPECT_EQ(holder.wait(30s), 0);
  EXPECT_EQ(waiter1.wait(30s), 0);
  EXPECT_EQ(waiter2.wait(30s), 0);
  EXPECT_EQ(other.wait(30s), 0);
  EXPECT_EQ(run_json(box, {"list", "--json"})["locks"], json::array());
}

// A name dlock would refuse (a control character), written into the file by something else:
// list passes it over and says so, and lists the rest. It refused to list anything.
TEST(CliStatus, ListPassesOverAStoredNameDlockWouldRefuse) {
  cli_sandbox box;
  auto holder = box.start({"run", "plain", "--", "sh", "-c", "echo held; read x; exit 0"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((box.state_dir() + "/locks.db").c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  char* err = nullptr;
  const int rc = sqlite3_exec(
      db,
      "INSERT INTO dlock_entries(name, id, kind, token, session, created_ms)"
      " SELECT 'bad' || char(27) || 'name', id || 'b', kind, token + 1000, session, created_ms"
      " FROM dlock_entries WHERE name = 'plain'",
      nullptr, nullptr, &err);
  const std::string why = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << why;
  auto r = box.run({"list"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("plain\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("passed over: 'bad\\x1bname'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  holder.close_stdin();
  EXPECT_EQ(holder.wait(30s), 0);
}

// Seen from a nested PID namespace, a holder outside it is invisible, not gone: a tester's
// `unshare --pid` view marked a live holder "(pid not running here)". Unknown, not false.
TEST(CliStatus, AHolderOutsideTheViewersPidNamespaceIsNotMarkedGone) {
  if (std::system("unshare --pid --fork --mount-proc true 2>/dev/null") != 0) {
    GTEST_SKIP() << "cannot make a PID namespace here (needs CAP_SYS_ADMIN)";
  }
  cli_sandbox box;
  auto holder = box.start({"run", "ns/held", "--", "sh", "-c", "echo held; exec sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  const std::vector<std::string> nested{"unshare", "--pid", "--fork", "--mount-proc", "--"};
  auto text = box.run_through(nested, {"status", "ns/held"});
  EXPECT_EQ(text.status, 0) << text.output;
  EXPECT_EQ(text.output.find("not running here"), std::string::npos) << text.output;
  auto j = box.run_through(nested, {"status", "ns/held", "--json"});
  ASSERT_EQ(j.status, 0) << j.output;
  EXPECT_TRUE(json::parse(j.output)["holders"][0]["pid_running_here"].is_null()) << j.output;
  // From the holder's own namespace it is seen running.
  EXPECT_EQ(run_json(box, {"status", "ns/held", "--json"})["holders"][0]["pid_running_here"], true);
  holder.signal(SIGTERM);
  EXPECT_TRUE(holder.wait(30s).has_value());

  // A holder in a nested namespace, seen from here: its pid is not one of ours (it is 1 or
  // so there, another process here). Its owner text names its namespace, which the
  // description does not show.
  auto inner =
      box.start_through(nested, {"run", "ns/inner", "--", "sh", "-c", "echo held; exec sleep 60"});
  ASSERT_TRUE(inner.wait_for_line("held", 30s));
  auto seen = run_json(box, {"status", "ns/inner", "--json"});
  EXPECT_TRUE(seen["holders"][0]["pid_running_here"].is_null()) << seen.dump();
  EXPECT_EQ(seen["holders"][0]["description"], "dlock run sh") << seen.dump();
  EXPECT_NE(seen["holders"][0]["owner"].get<std::string>().find(" pidns="), std::string::npos)
      << seen.dump();
  // unshare ignores SIGTERM while it waits: its child, dlock, is told.
  const auto id = std::to_string(inner.pid());
  const auto dlock_pid = read_file("/proc/" + id + "/task/" + id + "/children");
  ASSERT_FALSE(dlock_pid.empty());
  ::kill(std::stoi(dlock_pid), SIGTERM);
  EXPECT_TRUE(inner.wait(30s).has_value());
}

}  // namespace
}  // namespace dlock::test
