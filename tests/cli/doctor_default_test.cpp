// dlock doctor without a URL, on SQLite only (no servers, unlike doctor_test.cpp): it checks the
// backend every other command would use.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using nlohmann::json;

// The README says so; a doctor that judged some other backend would vouch for the wrong one.
TEST(CliDoctorDefault, WithoutAUrlItChecksDlockUrlElseTheDefaultFile) {
  cli_sandbox box;
  auto r = box.run({"doctor", "--json"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["url"], "sqlite://" + box.state_dir() + "/locks.db");
  // As the first use of the default would, it creates the file (and its directory).
  EXPECT_TRUE(file_exists(box.state_dir() + "/locks.db"));

  child_process::options o;
  o.env = box.env();
  o.env["DLOCK_URL"] = box.url();
  child_process p({DLOCK_CLI_PATH, "doctor", "--json"}, o);
  std::string out;
  while (auto l = p.read_line(std::chrono::seconds{30})) out += *l + "\n";
  ASSERT_EQ(p.wait(std::chrono::seconds{30}), 0) << out;
  EXPECT_EQ(json::parse(out)["url"], box.url());
}

// The new-user trial: a database in a directory this user may not write passed doctor (exit 0,
// every guarantee "holds"), then `dlock run` exited 77: SQLite must create FILE-wal and -shm
// beside it. Doctor opens an existing file only to look, so it must check the access itself.
TEST(CliDoctorDefault, AFileThisUserCannotLockInIsUnusable) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run doctor as nobody (setpriv)";
  cli_sandbox box;
  const std::string db = box.dir() + "/locks.db", url = "sqlite://" + db;
  ASSERT_EQ(box.run({"run", "x", "--url", url, "--", "true"}).status, 0);
  auto ok = box.run({"doctor", "--url", url});
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("file and directory writable"), std::string::npos) << ok.output;
  ASSERT_EQ(::chmod(box.dir().c_str(), 0755), 0);
  auto as_nobody = [&](const std::vector<std::string>& args) {
    return box.run_through({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"},
                           args);
  };
  struct access_case {
    mode_t mode;
    std::string says;
  };
  for (const auto& c : {access_case{0666, "cannot create files in " + box.dir()},
                        access_case{0644, "cannot write " + db}}) {
    ASSERT_EQ(::chmod(db.c_str(), c.mode), 0);
    auto r = as_nobody({"doctor", "--url", url});
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("write-access"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    auto j = json::parse(as_nobody({"doctor", "--url", url, "--json"}).output);
    EXPECT_EQ(j["ok"], false) << j.dump();
    // What doctor foresaw is what run does.
    auto run = as_nobody({"run", "x", "--url", url, "--", "true"});
    EXPECT_EQ(run.status, 77) << run.output;
  }
}

// A user's trial: `dlock run` through a hard link to the lock file ran its command while another
// `dlock run` held the lock through the file's first name, and doctor said all was well.
TEST(CliDoctorDefault, AFileWithASecondHardLinkIsRefusedAndItsHolderLosesTheLock) {
  cli_sandbox box;
  const std::string db = box.dir() + "/locks.db", hard = box.dir() + "/hard.db";
  auto holder = box.start({"run", "--url", "sqlite://" + db, "--ttl", "1s", "s", "--", "sh", "-c",
                           "echo held; exec sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", std::chrono::seconds{30}));
  ASSERT_EQ(::link(db.c_str(), hard.c_str()), 0);

  auto second = box.run({"run", "--url", "sqlite://" + hard, "s", "-n", "--", "echo", "GOT"});
  EXPECT_EQ(second.status, 64) << second.output;
  EXPECT_EQ(second.output.find("GOT"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("2 hard links"), std::string::npos) << second.output;

  auto doctor = box.run({"doctor", "--url", "sqlite://" + hard});
  EXPECT_EQ(doctor.status, 1) << doctor.output;
  EXPECT_NE(doctor.output.find("REFUSED at open"), std::string::npos) << doctor.output;
  EXPECT_NE(doctor.output.find("hard links"), std::string::npos) << doctor.output;

  // Its holds are in doubt from the link on: it says why, stops CMD and exits 70 (lost).
  EXPECT_TRUE(holder.wait_for_line("dlock: the lock file " + db + " has 2 hard links",
                                   std::chrono::seconds{20}));
  EXPECT_EQ(holder.wait(std::chrono::seconds{20}), 70);
}

}  // namespace
}  // namespace dlock::test
