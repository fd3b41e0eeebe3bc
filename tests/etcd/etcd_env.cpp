#include "etcd/etcd_env.hpp"

#include <stdexcept>

#include "backends/etcd/etcd_backend.hpp"
#include "core/session_core.hpp"

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

}  // namespace dlock::test
