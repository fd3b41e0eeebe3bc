#pragma once
// zk:// URLs: hosts, chroot, session and connect timeouts, digest credentials.

#include <string>

#include "backends/zookeeper/zk_connection.hpp"
#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail::zk {

struct zk_url {
  config client;
  std::string chroot;  // "" or "/a/b", without a trailing slash
  bool secure{false};  // credentials given: lock nodes get the creator-only-delete ACL
  // ?mutex_names=writer: a mutex's entry named as a writer's ("__WRIT__", as dlock did
  // before Curator's names), so that an older dlock sees it in a rolling upgrade
  // (docs/zookeeper.md).
  bool mutex_as_writer{false};
};

// Fails with errc::invalid_argument naming the bad part of the URL (password redacted).
result<zk_url> parse_url(const url& u, const session_info& info);

// Why the C client refused host list `hosts`, which it does not say: the first host that does
// not resolve ("h:p" or "[v6]:p", comma-separated), in the resolver's words; else empty.
std::string unresolved(const std::string& hosts);

}  // namespace dlock::detail::zk
