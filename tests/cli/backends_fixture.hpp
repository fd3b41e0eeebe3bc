#pragma once
// The real ZooKeeper, Redis, PostgreSQL, MariaDB and etcd servers the CLI's backend tests share:
// started once per test executable (TEST_F(CliBackends, ...) in any of its files).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/etcd_server.hpp"
#include "support/mariadb_server.hpp"
#include "support/postgres_server.hpp"
#include "support/redis_server.hpp"
#include "support/zk_server.hpp"

namespace dlock::test {

// Polls `pred` every 20 ms, at most `limit`; true once it holds.
template <class Pred>
bool poll(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds{20}) {
  using namespace std::chrono_literals;
  for (int i = 0; i < limit / 20ms; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

struct servers {
  std::unique_ptr<zk_server> zk;
  std::unique_ptr<redis_server> redis;
  std::unique_ptr<postgres_server> pg;
  std::unique_ptr<mariadb_server> maria;
  std::unique_ptr<etcd_server> etcd;
  std::unique_ptr<redis_server> redis2, redis3;  // with `redis`, Redlock's three masters

  // One URL per backend, for SCOPED_TRACE and --url.
  std::vector<std::string> urls() const {
    return {"zk://" + zk->hosts() + "/cli", "redis://" + redis->address(), pg->url(), maria->url()};
  }
  // etcd's and Redlock's, which the tests written before them do not take.
  std::vector<std::string> newer_urls() const {
    return {"etcd://" + etcd->address(),
            // Its own prefix: the redis:// URL above uses the first master's default one, and
            // a prefix holds one scheme's locks.
            "redlock://" + redis->address() + "," + redis2->address() + "," + redis3->address() +
                "?prefix=rl:"};
  }
};

class CliBackends : public ::testing::Test {
 protected:
  // The servers start once, one after the other: a fixture picks a free port and binds it
  // seconds later (initdb, mariadb-install-db), and another fixture starting meanwhile can
  // take that port for an outgoing connection. A second try covers the rarer clash with the
  // rest of the machine.
  static void SetUpTestSuite() {
    auto s = std::make_unique<servers>();
    s->redis = start<redis_server>();
    s->zk = start<zk_server>();
    s->pg = start<postgres_server>();
    s->maria = start<mariadb_server>();
    s->etcd = start<etcd_server>();
    s->redis2 = start<redis_server>();
    s->redis3 = start<redis_server>();
    srv_ = s.release();
  }
  template <class Server>
  static std::unique_ptr<Server> start() {
    try {
      return std::make_unique<Server>();
    } catch (const std::exception& e) {
      std::cerr << "server did not start, trying once more: " << e.what() << "\n";
      return std::make_unique<Server>();
    }
  }
  static void TearDownTestSuite() {
    delete srv_;
    srv_ = nullptr;
  }
  // Every server's URL, and the advisory modes of the SQL servers.
  static std::vector<std::string> every_mode() {
    auto urls = srv_->urls();
    urls.push_back(srv_->pg->url("mode=advisory"));
    urls.push_back(srv_->maria->url("mode=advisory"));
    return urls;
  }
  inline static servers* srv_ = nullptr;
};

}  // namespace dlock::test
