// dlock and `etcdctl lock` (Go's concurrency.Mutex) on one etcd exclude each other: real
// etcdctl processes against a real member, dlock with no key prefix so that a dlock lock NAME
// and `etcdctl lock NAME` are the same keys "NAME/<lease hex>".
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backends/etcd/etcd_backend.hpp"
#include "core/session_core.hpp"
#include "etcd/etcd_env.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

std::string url() { return "etcd://" + shared_etcd().address() + "?ttl=3s"; }

// `etcdctl lock NAME CMD`: CMD prints "rev=<ETCD_LOCK_REV> key=<ETCD_LOCK_KEY>" once granted,
// then holds until the file `release` exists; etcdctl then unlocks and exits.
class etcdctl_holder {
 public:
  etcdctl_holder(const std::string& name, const std::string& release)
      : proc_(shared_etcd().etcdctl_argv(
                  {"lock", "--ttl=5", name, "--", "sh", "-c",
                   "echo rev=$ETCD_LOCK_REV key=$ETCD_LOCK_KEY; while [ ! -e '" + release +
                       "' ]; do sleep 0.02; done"}),
              opts()) {}
  // The create revision of etcdctl's key once it holds, or nullopt if not within `timeout`.
  std::optional<std::uint64_t> granted(std::chrono::milliseconds timeout) {
    auto line = proc_.wait_for_line("rev=", timeout);
    if (!line) return std::nullopt;
    key_ = line->substr(line->find(" key=") + 5);
    return std::stoull(line->substr(4));
  }
  const std::string& key() const { return key_; }
  child_process& proc() { return proc_; }

 private:
  static child_process::options opts() {
    child_process::options o;
    o.merge_stderr = true;
    return o;
  }
  child_process proc_;
  std::string key_;
};

class etcd_interop : public ::testing::Test {
 protected:
  std::string name_ = "interop-" + random_suffix();
  temp_dir dir_{"dlock-etcd-interop"};
  std::string release_ = dir_.path() + "/release";
  void release() { std::ofstream(release_).put('x'); }
};

TEST_F(etcd_interop, etcdctl_holding_keeps_dlock_out_until_it_exits) {
  etcdctl_holder ctl(name_, release_);
  auto rev = ctl.granted(15s);
  ASSERT_TRUE(rev) << "etcdctl lock was not granted";
  EXPECT_TRUE(ctl.key().starts_with(name_ + "/")) << ctl.key();

  auto s = session::open(url());
  dlock::mutex m(s, name_);
  EXPECT_FALSE(m.try_lock());
  // dlock sees etcdctl's key as the holder, with its create revision as the token.
  auto q = inspect(s, name_);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(q[0].holds);
  EXPECT_EQ(q[0].token, *rev);

  std::thread later([&] {
    std::this_thread::sleep_for(300ms);
    release();
  });
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(m.try_lock_for(15s));
  later.join();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
  EXPECT_GT(m.token().value, *rev);
  EXPECT_EQ(ctl.proc().wait(10s), 0);
  m.unlock();
}

TEST_F(etcd_interop, dlock_holding_makes_etcdctl_wait_until_it_releases) {
  auto s = session::open(url());
  dlock::mutex m(s, name_);
  m.lock();
  auto token = m.token().value;
  // dlock's key is in Go's layout: NAME/<lease id in hex>.
  auto keys = shared_etcd().keys(name_ + "/");
  ASSERT_EQ(keys.size(), 1u);
  auto leases = detail::etcd_leases(s.core()->backend());
  ASSERT_TRUE(leases && !leases->empty());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(leases->front()));
  EXPECT_EQ(keys[0], name_ + "/" + hex);

  etcdctl_holder ctl(name_, release_);
  EXPECT_FALSE(ctl.granted(1500ms)) << "etcdctl lock was granted while dlock held the lock";
  m.unlock();
  auto rev = ctl.granted(10s);
  ASSERT_TRUE(rev) << "etcdctl lock was not granted after dlock released";
  EXPECT_GT(*rev, token);
  release();
  EXPECT_EQ(ctl.proc().wait(10s), 0);
}

TEST_F(etcd_interop, a_dlock_reader_looks_exclusive_to_etcdctl) {
  auto s = session::open(url());
  dlock::shared_mutex m(s, name_);
  m.lock_shared();
  etcdctl_holder ctl(name_, release_);
  EXPECT_FALSE(ctl.granted(1500ms)) << "etcdctl lock was granted beside a dlock reader";
  // And a dlock reader arriving behind etcdctl waits for it too.
  auto s2 = session::open(url());
  dlock::shared_mutex r2(s2, name_);
  m.unlock_shared();
  ASSERT_TRUE(ctl.granted(10s));
  EXPECT_FALSE(r2.try_lock_shared());
  release();
  ASSERT_TRUE(r2.try_lock_shared_for(10s));
  r2.unlock_shared();
  EXPECT_EQ(ctl.proc().wait(10s), 0);
}

TEST_F(etcd_interop, alternating_dlock_and_etcdctl_contenders_are_served_in_create_order) {
  auto s1 = session::open(url());
  dlock::mutex first(s1, name_);
  first.lock();
  // Queue: dlock (holds), etcdctl, dlock.
  etcdctl_holder ctl(name_, release_);
  for (int i = 0; i < 100 && shared_etcd().keys(name_ + "/").size() < 2; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(shared_etcd().keys(name_ + "/").size(), 2u);
  auto s2 = session::open(url());
  dlock::mutex third(s2, name_);
  std::atomic<bool> third_holds{false};
  std::thread t([&] {
    third.lock();
    third_holds = true;
  });
  for (int i = 0; i < 100 && shared_etcd().keys(name_ + "/").size() < 3; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  first.unlock();
  auto rev = ctl.granted(10s);
  ASSERT_TRUE(rev);
  // ETCD_LOCK_REV is the store's revision when etcdctl found itself first (Go's
  // Mutex.Header()), not its key's create revision: with a contender queued behind it, that
  // is later than the contender's key. dlock's token is the create revision.
  auto q = inspect(s2, name_);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_TRUE(q[0].holds);
  EXPECT_LE(q[0].token, *rev);
  const auto ctl_create = q[0].token;
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(third_holds) << "the later dlock contender overtook etcdctl";
  release();
  t.join();
  EXPECT_TRUE(third_holds);
  EXPECT_GT(third.token().value, ctl_create);
  third.unlock();
  EXPECT_EQ(ctl.proc().wait(10s), 0);
}

}  // namespace
}  // namespace dlock::test
