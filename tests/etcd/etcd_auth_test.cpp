// etcd://user:password@: a real member with auth enabled (etcdctl user add root, auth enable):
// the right password locks, a wrong or missing one is permission_denied (CLI exit 77), the
// password shows nowhere, and a token the server drops is replaced by logging in again.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <stdexcept>
#include <thread>

#include "../cli/cli_harness.hpp"
#include "support/etcd_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

const std::string password = "pw-Sekr1t";

etcd_server& auth_server() {
  static etcd_server s;
  static const bool enabled = [] {
    for (auto args : std::vector<std::vector<std::string>>{{"role", "add", "root"},
                                                           {"user", "add", "root:" + password},
                                                           {"user", "grant-role", "root", "root"},
                                                           {"auth", "enable"}}) {
      auto [rc, out] = s.etcdctl(args);
      if (rc != 0) throw std::runtime_error("etcdctl " + args[0] + ": " + out);
    }
    s.add_etcdctl_flag("--user=root:" + password);
    return true;
  }();
  (void)enabled;
  return s;
}

std::string auth_url(const std::string& userinfo) {
  return "etcd://" + userinfo + "127.0.0.1:" + std::to_string(auth_server().port()) +
         "/auth?ttl=3s";
}

std::error_code open_error(const std::string& url, std::string* what) {
  try {
    auto s = session::open(url);
    (void)inspect(s, "job");
  } catch (const std::system_error& e) {
    *what = e.what();
    return e.code();
  }
  return {};
}

TEST(EtcdAuth, TheRightPasswordLocksAndShowsNowhere) {
  const auto url = auth_url("root:" + password + "@");
  {
    auto s = session::open(url);
    dlock::mutex m(s, "job");
    ASSERT_TRUE(m.try_lock_for(5s));
    EXPECT_EQ(auth_server().keys("auth/job/").size(), 1u);
    EXPECT_EQ(s.url().find(password), std::string::npos) << s.url();
    cli_sandbox box;
    auto r = box.run({"status", "--url", url, "job"}, 20s);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.find(password), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("root:***@"), std::string::npos) << r.output;
    r = box.run({"status", "--json", "--url", url, "job"}, 20s);
    EXPECT_EQ(r.output.find(password), std::string::npos) << r.output;
    m.unlock();
  }
  EXPECT_TRUE(auth_server().keys("auth/job/").empty());
}

TEST(EtcdAuth, AWrongOrMissingPasswordIsPermissionDeniedAndExit77) {
  const auto wrong = auth_url("root:wrong-" + password + "@");
  std::string what;
  EXPECT_EQ(open_error(wrong, &what), make_error_code(errc::permission_denied)) << what;
  EXPECT_NE(what.find("cannot log in"), std::string::npos) << what;
  EXPECT_EQ(what.find(password), std::string::npos) << what;
  cli_sandbox box;
  auto r = box.run({"run", "--url", wrong, "job", "--", "echo", "CMD-RAN"}, 20s);
  EXPECT_EQ(r.status, 77) << r.output;
  EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(password), std::string::npos) << r.output;
  r = box.run({"status", "--url", wrong, "job"}, 20s);
  EXPECT_EQ(r.status, 77) << r.output;
  // No user at all on a cluster with auth on.
  EXPECT_EQ(open_error(auth_url(""), &what), make_error_code(errc::permission_denied)) << what;
  EXPECT_NE(what.find("requires a user"), std::string::npos) << what;
  r = box.run({"status", "--url", auth_url(""), "job"}, 20s);
  EXPECT_EQ(r.status, 77) << r.output;
}

// Disabling and enabling auth drops every token the server gave: the session's next calls are
// refused with "invalid auth token", log in again and go on.
TEST(EtcdAuth, ADroppedTokenIsReplacedByLoggingInAgain) {
  auto s = session::open(auth_url("root:" + password + "@"));
  dlock::mutex m(s, "again");
  ASSERT_TRUE(m.try_lock_for(5s));
  m.unlock();
  for (const char* step : {"disable", "enable"}) {
    auto [rc, out] = auth_server().etcdctl({"auth", step});
    ASSERT_EQ(rc, 0) << out;
  }
  ASSERT_TRUE(m.try_lock_for(5s));
  EXPECT_EQ(auth_server().keys("auth/again/").size(), 1u);
  m.unlock();
  std::this_thread::sleep_for(1500ms);  // keep-alives across the new token too
  EXPECT_EQ(s.state(), session_state::live);
}

}  // namespace
}  // namespace dlock::test
