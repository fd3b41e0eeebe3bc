#include "floor_common.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cli/bench/bench_spawn.hpp"
#include "cli/bench/bench_worker.hpp"

namespace dlock::floor {

target parse_target(const std::string& url) {
  target t;
  auto sep = url.find("://");
  if (sep == std::string::npos) throw std::runtime_error("URL '" + url + "': no scheme");
  t.scheme = url.substr(0, sep);
  auto rest = url.substr(sep + 3);
  if (auto q = rest.find('?'); q != std::string::npos) rest.resize(q);
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  t.path = slash == std::string::npos ? "" : rest.substr(slash);
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    auto userinfo = authority.substr(0, at);
    authority.erase(0, at + 1);
    auto colon = userinfo.find(':');
    t.user = userinfo.substr(0, colon);
    if (colon != std::string::npos) t.password = userinfo.substr(colon + 1);
  }
  authority = authority.substr(0, authority.find(','));
  auto colon = authority.rfind(':');
  if (!authority.empty()) t.host = authority.substr(0, colon);
  if (colon != std::string::npos) t.port = std::stoi(authority.substr(colon + 1));
  if (t.scheme != "sqlite" && t.path.starts_with("/")) t.path.erase(0, 1);
  return t;
}

std::unique_ptr<client> make_client(const target& t) {
  if (t.scheme == "redis") return make_redis(t);
  if (t.scheme == "zk") return make_zk(t);
  if (t.scheme == "postgres" || t.scheme == "postgresql") return make_pg(t);
  if (t.scheme == "mysql" || t.scheme == "mariadb") return make_mysql(t);
  if (t.scheme == "sqlite") return make_sqlite(t);
#ifdef DLOCK_FLOOR_ETCD
  if (t.scheme == "etcd") return make_etcd(t);
#endif
  throw std::runtime_error("no floor for scheme '" + t.scheme + "'");
}

cli::bench_report run_uncontended(client& c, std::chrono::milliseconds duration,
                                  std::size_t count) {
  for (int i = 0; i < 50; ++i) c.cycle();
  std::vector<std::int64_t> lat;
  lat.reserve(std::min<std::size_t>(count, 1u << 20));
  const auto t0 = cli::now_ns();
  const auto end = t0 + std::chrono::nanoseconds(duration).count();
  auto last = t0;
  for (std::size_t i = 0; i < count; ++i) {
    auto a = cli::now_ns();
    c.cycle();
    last = cli::now_ns();
    lat.push_back(last - a);
    if (last >= end) break;
  }
  cli::bench_report r{"floor-uncontended", {}, {}, {c.what()}};
  double secs = static_cast<double>(last - t0) / 1e9;
  r.add("cycles", static_cast<double>(lat.size()));
  r.add("ops_per_s", secs > 0 ? static_cast<double>(lat.size()) / secs : 0, "ops/s");
  r.add("p50_us", cli::percentile_us(lat, 50), "us");
  r.add("p99_us", cli::percentile_us(lat, 99), "us");
  r.add("p999_us", cli::percentile_us(lat, 99.9), "us");
  return r;
}

cli::bench_report run_contended(const target& t, int clients, std::chrono::milliseconds duration) {
  cli::scratch_dir dir;
  make_client(t)->prepare();
  const auto start = cli::now_ns() + 1'000'000'000;
  const auto end = start + std::chrono::nanoseconds(duration).count();
  std::vector<pid_t> pids;
  std::string what;
  for (int i = 0; i < clients; ++i) {
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      std::vector<cli::cycle_record> recs;
      std::string error;
      try {
        auto c = make_client(t);
        if (!c->has_blocking()) throw std::runtime_error("no blocking primitive");
        std::this_thread::sleep_for(std::chrono::nanoseconds(start - cli::now_ns()));
        for (int k = 0; k < 1'000'000 && cli::now_ns() < end; ++k) {
          cli::cycle_record r{cli::now_ns(), 0, 0, i};
          c->acquire();
          r.granted = cli::now_ns();
          r.released = cli::now_ns();
          c->release();
          recs.push_back(r);
        }
      } catch (const std::exception& e) {
        error = e.what();
      }
      cli::write_records(dir.file(std::to_string(i)), recs, error);
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  for (auto pid : pids) ::waitpid(pid, nullptr, 0);
  std::vector<cli::cycle_record> all;
  for (int i = 0; i < clients; ++i) {
    std::string error;
    if (!cli::read_records(dir.file(std::to_string(i)), all, error)) {
      throw std::runtime_error("floor client " + std::to_string(i) + ": " + error);
    }
  }
  auto g = cli::sequence_grants(std::move(all), end);
  std::map<int, double> per;
  for (int i = 0; i < clients; ++i) per[i] = 0;
  for (auto& r : g.recs) ++per[r.client];
  double lo = 1e18, hi = 0;
  for (auto& [k, v] : per) lo = std::min(lo, v), hi = std::max(hi, v);
  const double secs = static_cast<double>(end - start) / 1e9;
  cli::bench_report r{"floor-contended", {}, {}, {make_client(t)->what()}};
  r.add("clients", clients);
  r.add("handoffs_per_s", static_cast<double>(g.handoffs) / secs, "handoffs/s");
  r.add("acquisitions_per_s", static_cast<double>(g.recs.size()) / secs, "acq/s");
  r.add("handoff_p50_us", cli::percentile_us(g.handoff_ns, 50), "us");
  r.add("handoff_p99_us", cli::percentile_us(g.handoff_ns, 99), "us");
  r.add("per_client_min", lo);
  r.add("per_client_max", hi);
  return r;
}

}  // namespace dlock::floor
