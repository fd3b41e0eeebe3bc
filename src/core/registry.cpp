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
  std::string_view params;  // the query parameters it reads, space-separated
};

constexpr std::string_view pg_params =
    "schema mode sslmode sslrootcert sslcert sslkey target_session_attrs";

// One line per backend.
constexpr scheme_entry schemes[] = {
    {"memory", &open_memory, ""},
    {"sqlite", &open_sqlite, ""},
    {"zk", &open_zookeeper, "session_timeout connect_timeout mutex_names"},
    {"redis", &open_redis, "prefix"},
    {"redlock", &open_redis, "prefix"},
    {"postgres", &open_postgres, pg_params},
    {"postgresql", &open_postgres, pg_params},
    {"mysql", &open_mysql, "mode"},
    {"mariadb", &open_mysql, "mode"},
};

// Read by the core for every backend (session_core.cpp).
constexpr std::string_view common_params = "ttl keepalive";

bool listed(std::string_view words, std::string_view key) {
  while (!words.empty()) {
    auto end = words.find(' ');
    if (words.substr(0, end) == key) return true;
    if (end == std::string_view::npos) break;
    words.remove_prefix(end + 1);
  }
  return false;
}

// A misspelt parameter (`?tll=5s`) would otherwise be ignored and the default used silently.
result<void> check_params(const url& u, const scheme_entry& s) {
  for (const auto& [key, value] : u.query) {
    if (listed(common_params, key) || listed(s.params, key)) continue;
    std::string known(common_params);
    if (!s.params.empty()) known += " " + std::string(s.params);
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': unknown parameter '" + key +
                                            "' for " + u.scheme + " (known: " + known + ")");
  }
  return {};
}

}  // namespace

result<backend_ptr> open_backend(const url& u, const session_info& info) {
  for (const auto& s : schemes) {
    if (s.scheme != u.scheme) continue;
    if (auto r = check_params(u, s); !r) return fail(r.error());
    return s.open(u, info);
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
