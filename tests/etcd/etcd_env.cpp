#include "etcd/etcd_env.hpp"

#include <sstream>
#include <stdexcept>

#include "backends/etcd/etcd_backend.hpp"
#include "core/session_core.hpp"
#include "support/process.hpp"

namespace dlock::test {

etcd_server& shared_etcd() {
  static etcd_server server;
  return server;
}

void expire_etcd_session(const dlock::session& s, const etcd_server& server) {
  auto leases = detail::etcd_leases(s.core()->backend());
  if (!leases) throw std::runtime_error("not an etcd session");
  for (auto id : *leases) server.revoke(id);
}

double etcd_metric_sum(const std::string& metric, const std::string& label) {
  auto [rc, out] =
      run_command({"curl", "-sf", "--max-time", "5", shared_etcd().endpoint() + "/metrics"});
  if (rc != 0) throw std::runtime_error("curl /metrics failed: " + out);
  double sum = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(metric) || line.size() <= metric.size()) continue;
    if (line[metric.size()] != '{' && line[metric.size()] != ' ') continue;
    if (!label.empty() && line.find(label) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

}  // namespace dlock::test
