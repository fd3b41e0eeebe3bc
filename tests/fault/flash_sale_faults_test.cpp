// The flash-sale demo under random faults (issue 7): while `dlock demo flash-sale` runs, its
// worker processes (`dlock demo flash-sale-worker`) are SIGKILLed and SIGSTOPped (then
// SIGCONTed past the TTL) at random. Whatever the faults, sold + left = stock and nothing is
// oversold: a stopped holder's late sale is refused by the shop's fence. One run per backend,
// each on its own freshly started server; each run is small (stock 200, at most 30 s).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "support/etcd_server.hpp"
#include "support/mariadb_server.hpp"
#include "support/net.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/zk_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Running children of `parent` whose command line is `dlock demo flash-sale-worker ...`.
std::vector<pid_t> sale_workers(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (auto* e = ::readdir(d)) {
    pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid <= 0) continue;
    auto f = test::proc_stat_fields(pid);
    if (f.size() < 2 || std::stoll(f[1]) != parent || f[0] == "Z") continue;
    auto argv = test::read_proc_file(pid, "cmdline");
    if (argv.starts_with(std::string("dlock\0demo\0flash-sale-worker", 29))) out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

struct sale {
  nlohmann::json report;
  int kills{0}, stops{0};
};

// Runs the demo on `url` while killing and stopping random workers (bounded in count and
// time); returns its JSON report.
sale run_sale_under_faults(const std::string& url, std::chrono::milliseconds ttl) {
  child_process demo(std::vector<std::string>{DLOCK_CLI_PATH, "demo", "flash-sale", "--url", url,
                                              "--workers", "6", "--stock", "200", "--time-limit",
                                              "30s", "--json"});
  sale s;
  std::minstd_rand rng(std::random_device{}());
  std::vector<std::pair<pid_t, steady::time_point>> stopped;
  auto until = steady::now() + 45s;
  for (int tick = 0; tick < 2000 && demo.running() && steady::now() < until; ++tick) {
    std::this_thread::sleep_for(std::chrono::milliseconds{100 + rng() % 200});
    for (auto it = stopped.begin(); it != stopped.end();) {
      if (steady::now() < it->second) {
        ++it;
        continue;
      }
      ::kill(it->first, SIGCONT);
      it = stopped.erase(it);
    }
    auto pids = sale_workers(demo.pid());
    if (pids.size() < 3 || (s.kills >= 2 && s.stops >= 4)) continue;  // keep sellers alive
    pid_t victim = pids[rng() % pids.size()];
    if (s.kills < 2 && rng() % 3 == 0) {
      ::kill(victim, SIGKILL);
      ++s.kills;
    } else if (s.stops < 4 && stopped.empty()) {
      ::kill(victim, SIGSTOP);
      stopped.emplace_back(victim, steady::now() + ttl + 500ms);
      ++s.stops;
    }
  }
  for (auto& [pid, _] : stopped) ::kill(pid, SIGCONT);
  std::string out;
  while (auto line = demo.read_line(120s)) out += *line + "\n";
  demo.wait(10s);
  s.report = nlohmann::json::parse(out, nullptr, false);
  return s;
}

void check_sale(const sale& s) {
  ASSERT_FALSE(s.report.is_discarded()) << "no JSON report from the demo";
  auto& r = s.report;
  std::printf(
      "  %s: stock %lld, sold %lld, left %lld, oversold %lld, stale writes refused "
      "%lld; %d workers killed, %d stopped\n",
      r["url"].get<std::string>().c_str(), r["stock"].get<long long>(), r["sold"].get<long long>(),
      r["stock_left"].get<long long>(), r["oversold"].get<long long>(),
      r["stale_writes_refused"].get<long long>(), s.kills, s.stops);
  EXPECT_EQ(r["sold"].get<long long>() + r["stock_left"].get<long long>(),
            r["stock"].get<long long>());
  EXPECT_EQ(r["oversold"].get<long long>(), 0);
  EXPECT_GT(r["sold"].get<long long>(), 0);
  EXPECT_GT(s.kills + s.stops, 0) << "no fault was injected";
}

// A backend's server(s), started for one run and stopped when `keep` goes, and the demo's URL.
struct started {
  std::shared_ptr<void> keep;
  std::string url;
};

struct sale_case {
  std::string name;
  std::function<started()> start;  // every lease (TTL, session timeout) is 2 s
};

const std::vector<sale_case>& sale_cases() {
  static const std::vector<sale_case> cases{
      {"sqlite",
       [] {
         auto dir = std::make_shared<temp_dir>("dlock-flash-faults");
         return started{dir, "sqlite://" + dir->path() + "/locks.db?ttl=2s"};
       }},
      {"redis",
       [] {
         auto s = std::make_shared<redis_server>();
         return started{s, "redis://" + s->address() + "?ttl=2s"};
       }},
      {"zookeeper",
       [] {
         auto s = std::make_shared<zk_server>();
         return started{s, "zk://" + s->hosts() + "/flash?session_timeout=2000ms"};
       }},
      {"postgres",
       [] {
         auto s = std::make_shared<postgres_server>();
         return started{s, s->url("ttl=2s")};
       }},
      {"mysql",
       [] {
         auto s = std::make_shared<mariadb_server>();
         return started{s, s->url("ttl=2s")};
       }},
      {"etcd",
       [] {
         auto s = std::make_shared<etcd_server>();
         return started{s, "etcd://" + s->address() + "/flash?ttl=2s"};
       }},
  };
  return cases;
}

class flash_sale_faults : public ::testing::TestWithParam<sale_case> {};

TEST_P(flash_sale_faults, sold_plus_left_is_stock) {
  auto backend = GetParam().start();
  check_sale(run_sale_under_faults(backend.url, 2s));
}

INSTANTIATE_TEST_SUITE_P(backends, flash_sale_faults, ::testing::ValuesIn(sale_cases()),
                         [](const ::testing::TestParamInfo<sale_case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace dlock::test
