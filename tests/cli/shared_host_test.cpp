// A host-wide lock database shared by several users: a directory owned by a group with mode
// 2770 (setgid), two real users in that group, each running `dlock run` with umask 022.
// The database, -wal and -shm files the first user creates must be writable by the second,
// or the second one fails with 77 instead of being excluded (75).
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

bool have(const std::string& tool) {
  return run_command({"sh", "-c", "command -v " + tool}, 10s).first == 0;
}

// Why this machine cannot create the test's users, or "" if it can.
std::string cannot_make_users() {
  if (::geteuid() != 0) return "needs root to create users (useradd, runuser)";
  for (auto tool : {"useradd", "groupadd", "userdel", "groupdel", "runuser"}) {
    if (!have(tool)) return std::string(tool) + " is not installed";
  }
  return "";
}

// A group and two users in it, removed again however the test ends.
class shared_users {
 public:
  shared_users() {
    auto tag = std::to_string(::getpid() % 100000) + random_suffix(3);
    group = "dlkg" + tag;
    a = "dlka" + tag;
    b = "dlkb" + tag;
    remove();
    ok_ = must({"groupadd", group}) &&
          must({"useradd", "-M", "-N", "-g", group, "-s", "/usr/sbin/nologin", a}) &&
          must({"useradd", "-M", "-N", "-g", group, "-s", "/usr/sbin/nologin", b});
  }
  shared_users(const shared_users&) = delete;
  ~shared_users() { remove(); }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }

  std::string group, a, b;

 private:
  bool must(const std::vector<std::string>& argv) {
    auto [status, out] = run_command(argv, 30s);
    if (status != 0) error_ = argv[0] + " " + argv.back() + ": " + out;
    return status == 0;
  }
  void remove() {
    run_command({"userdel", a}, 30s);
    run_command({"userdel", b}, 30s);
    run_command({"groupdel", group}, 30s);
  }
  bool ok_{false};
  std::string error_;
};

// `dlock ARGS` as `user`, with umask 022, through runuser.
std::vector<std::string> as_user(const std::string& user, const std::vector<std::string>& args) {
  std::vector<std::string> argv{
      "runuser", "-u", user, "--", "sh", "-c", "umask 022; exec \"$@\"", "sh", DLOCK_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

mode_t mode_of(const std::string& path, gid_t* gid = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  if (gid) *gid = st.st_gid;
  return st.st_mode & 07777;
}

TEST(CliSharedHost, UsersOfOneGroupExcludeEachOtherThroughASetgidDirectory) {
  if (auto why = cannot_make_users(); !why.empty()) GTEST_SKIP() << why;
  shared_users users;
  ASSERT_TRUE(users.ok()) << users.error();
  const group* g = ::getgrnam(users.group.c_str());
  ASSERT_NE(g, nullptr);
  const gid_t gid = g->gr_gid;

  // The host-wide directory, as an administrator sets it up.
  temp_dir top{"dlock-shared"};
  ASSERT_EQ(::chmod(top.path().c_str(), 0711), 0);
  const std::string dir = top.path() + "/dlock";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), 0, gid), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 02770), 0);
  auto reach = run_command({"runuser", "-u", users.a, "--", "test", "-w", dir}, 30s);
  if (reach.first != 0) {
    GTEST_SKIP() << "user " << users.a << " cannot reach " << dir
                 << " (a parent directory is closed to other users; set TMPDIR elsewhere)";
  }
  auto can_run = run_command(as_user(users.a, {"--version"}), 30s);
  if (can_run.first != 0) {
    GTEST_SKIP() << "user " << users.a << " cannot run " << DLOCK_CLI_PATH << ": "
                 << can_run.second;
  }

  const std::string url = "sqlite://" + dir + "/locks.db";
  const std::string done = dir + "/a-may-finish";

  // A holds the lock until the test lets it finish.
  child_process::options o;
  o.merge_stderr = true;
  child_process holder(
      as_user(users.a, {"run", "--url", url, "-n", "nightly", "--", "sh", "-c",
                        "echo holding; i=0; while [ ! -e '" + done +
                            "' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"}),
      o);
  auto line = holder.wait_for_line("holding", 30s);
  ASSERT_TRUE(line.has_value()) << "user A never held the lock";

  // What A created: group-writable (the directory's setgid bit asked for it), in the group.
  for (auto suffix : {"", "-wal", "-shm"}) {
    auto path = dir + "/locks.db" + suffix;
    gid_t file_gid = 0;
    auto m = mode_of(path, &file_gid);
    EXPECT_EQ(m & 0660, 0660) << path << " has mode " << std::oct << m;
    EXPECT_EQ(file_gid, gid) << path;
  }

  // B is excluded (75), not refused the file (77).
  auto busy =
      run_command(as_user(users.b, {"run", "--url", url, "-n", "nightly", "--", "true"}), 60s);
  EXPECT_EQ(busy.first, 75) << busy.second;

  { std::ofstream(done).put('\n'); }
  auto a_status = holder.wait(60s);
  ASSERT_TRUE(a_status.has_value()) << "user A's dlock run did not finish";
  EXPECT_EQ(*a_status, 0);

  // Once A is done, B gets the lock.
  auto free = run_command(
      as_user(users.b, {"run", "--url", url, "-n", "nightly", "--", "echo", "b-ran"}), 60s);
  EXPECT_EQ(free.first, 0) << free.second;
  EXPECT_NE(free.second.find("b-ran"), std::string::npos) << free.second;
}

// An observer who may only read the database (another user, files 0644 in a 0755
// directory): `dlock status` and `dlock list` open it read-only and write nothing, so they
// answer (0 held, 1 free) instead of failing with 77, whether or not a holder keeps the -wal
// and -shm files open.
TEST(CliSharedHost, AUserWhoMayOnlyReadTheDatabaseCanLook) {
  if (auto why = cannot_make_users(); !why.empty()) GTEST_SKIP() << why;
  shared_users users;
  ASSERT_TRUE(users.ok()) << users.error();
  temp_dir top{"dlock-readonly"};
  ASSERT_EQ(::chmod(top.path().c_str(), 0755), 0);
  auto reach = run_command({"runuser", "-u", users.b, "--", "test", "-r", top.path()}, 30s);
  if (reach.first != 0) {
    GTEST_SKIP() << "user " << users.b << " cannot reach " << top.path()
                 << " (a parent directory is closed to other users; set TMPDIR elsewhere)";
  }
  const std::string db = top.path() + "/locks.db";
  const std::string url = "sqlite://" + db;
  const std::string done = top.path() + "/may-finish";
  auto look = [&](const std::vector<std::string>& args) {
    return run_command(as_user(users.b, args), 60s);
  };

  // The owner (root, umask 022) creates the database; nobody has it open afterwards.
  ASSERT_EQ(run_command({DLOCK_CLI_PATH, "run", "--url", url, "nightly", "--", "true"}, 60s).first,
            0);
  auto idle = look({"status", "--url", url, "nightly"});
  EXPECT_EQ(idle.first, 1) << idle.second;
  EXPECT_NE(idle.second.find("free"), std::string::npos) << idle.second;

  // While the owner holds the lock (and keeps -wal and -shm open).
  child_process::options o;
  o.merge_stderr = true;
  child_process holder({DLOCK_CLI_PATH, "run", "--url", url, "nightly", "--", "sh", "-c",
                        "echo holding; i=0; while [ ! -e '" + done +
                            "' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"},
                       o);
  ASSERT_TRUE(holder.wait_for_line("holding", 30s).has_value());
  auto held = look({"status", "--url", url, "nightly"});
  EXPECT_EQ(held.first, 0) << held.second;
  EXPECT_NE(held.second.find("holder"), std::string::npos) << held.second;
  auto listed = look({"list", "--url", url});
  EXPECT_EQ(listed.first, 0) << listed.second;
  EXPECT_NE(listed.second.find("nightly"), std::string::npos) << listed.second;
  // Looking is not taking: the reader's run is refused the file.
  auto take = look({"run", "--url", url, "-n", "other", "--", "true"});
  EXPECT_EQ(take.first, 77) << take.second;

  { std::ofstream(done).put('\n'); }
  auto status = holder.wait(60s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 0);
  for (const auto& e : std::filesystem::directory_iterator(top.path())) {
    struct stat st {};
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << e.path() << " was created by the reader";
  }
}

}  // namespace
}  // namespace dlock::test
