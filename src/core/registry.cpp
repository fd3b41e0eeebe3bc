#include "core/registry.hpp"

#include <string_view>

#include "backends/memory/memory_backend.hpp"
#include "backends/mysql/mysql_backend.hpp"
#include "backends/postgres/postgres_backend.hpp"
#include "backends/redis/redis_backend.hpp"
#include "backends/sqlite/sqlite_backend.hpp"
#include "backends/zookeeper/zk_backend.hpp"

namespace dlock::detail {
namespace {

struct scheme_entry {
  std::string_view scheme;
  result<backend_ptr> (*open)(const url&, const session_info&);
};

// One line per backend.
constexpr scheme_entry schemes[] = {
    {"memory", &open_memory},       {"sqlite", &open_sqlite}, {"zk", &open_zookeeper},
    {"redis", &open_redis},         {"redlock", &open_redis}, {"postgres", &open_postgres},
    {"postgresql", &open_postgres}, {"mysql", &open_mysql},   {"mariadb", &open_mysql},
};

}  // namespace

result<backend_ptr> open_backend(const url& u, const session_info& info) {
  for (const auto& s : schemes) {
    if (s.scheme == u.scheme) return s.open(u, info);
  }
  std::string known;
  for (const auto& s : schemes) known += (known.empty() ? "" : ", ") + std::string(s.scheme);
  return fail(errc::invalid_argument,
              "URL '" + u.redacted + "': unknown scheme '" + u.scheme + "' (known: " + known + ")");
}

std::vector<std::string> known_schemes() {
  std::vector<std::string> out;
  for (const auto& s : schemes) out.emplace_back(s.scheme);
  return out;
}

}  // namespace dlock::detail
