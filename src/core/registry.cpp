#include "core/registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>

#include "backends/memory/memory_backend.hpp"
#include "backends/sqlite/sqlite_backend.hpp"
#include "core/plugin_loader.hpp"

namespace dlock::detail {
namespace {

// Built in: the embedded default and the in-process backend need no client library.
constexpr plugin_scheme builtin[] = {
    {"memory", &open_memory, ""},
    {"sqlite", &open_sqlite, ""},
};

// The schemes of dlock's own plug-ins and the library that serves each: known before the
// plug-in is installed, so a missing one is "not installed", not "unknown scheme".
struct well_known {
  std::string_view scheme;
  std::string_view plugin;
};
constexpr well_known plugin_schemes[] = {
    {"redis", "redis"},  {"redlock", "redis"},     {"redis-sentinel", "redis"},
    {"zk", "zookeeper"}, {"postgres", "postgres"}, {"postgresql", "postgres"},
    {"mysql", "mysql"},  {"mariadb", "mysql"},     {"etcd", "etcd"},
    {"etcds", "etcd"},
};

// Read by the core for every backend (session_core.cpp).
constexpr std::string_view common_params = "ttl keepalive";

struct plugin_table {
  std::mutex m;
  std::vector<const backend_plugin*> loaded;
  std::vector<std::pair<std::string, std::string>> refused;  // plug-in name -> why
};

plugin_table& table() {
  static plugin_table t;  // never destroyed before a plug-in's registrar can run
  return t;
}

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
result<void> check_params(const url& u, const plugin_scheme& s) {
  for (const auto& [key, value] : u.query) {
    if (listed(common_params, key) || listed(s.params, key)) continue;
    std::string known(common_params);
    if (!s.params.empty()) known += " " + std::string(s.params);
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': unknown parameter '" + key +
                                            "' for " + u.scheme + " (known: " + known + ")");
  }
  return {};
}

// The plug-in's file, for messages.
std::string where(const void* p) {
  Dl_info info{};
  if (dladdr(p, &info) != 0 && info.dli_fname != nullptr && *info.dli_fname != '\0')
    return info.dli_fname;
  return "linked into the program";
}

std::string_view plugin_for(std::string_view scheme) {
  for (const auto& w : plugin_schemes)
    if (w.scheme == scheme) return w.plugin;
  return {};
}

// A scheme that no table names may still be a third-party plug-in's: libdlock-<scheme>.
bool plain_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

std::optional<plugin_scheme> registered(std::string_view scheme, std::string* refusal,
                                        std::string_view plugin) {
  auto& t = table();
  std::lock_guard lock(t.m);
  for (const auto* p : t.loaded)
    for (const auto& s : p->schemes)
      if (s.scheme == scheme) return s;
  for (const auto& [name, why] : t.refused)
    if (name == plugin && refusal != nullptr) *refusal = why;
  return std::nullopt;
}

failure unknown_scheme(const url& u) {
  std::string known;
  for (const auto& s : known_schemes()) known += (known.empty() ? "" : ", ") + s;
  return {errc::invalid_argument,
          "URL '" + u.redacted + "': unknown scheme '" + u.scheme + "' (known: " + known + ")"};
}

}  // namespace

result<void> register_plugin(const dlock_plugin_stamp* stamp, std::string_view expected_name) {
  if (stamp == nullptr) return fail(errc::backend_unavailable, "the plug-in gave no entry");
  std::string file = where(stamp);
  std::string name = stamp->magic == plugin_magic && stamp->name != nullptr
                         ? std::string(stamp->name)
                         : std::string(expected_name);
  std::string why;
  if (stamp->magic != plugin_magic) {
    why = file + " is not a dlock backend plug-in";
  } else if (stamp->abi != plugin_abi || stamp->version == nullptr ||
             std::strcmp(stamp->version, plugin_version) != 0) {
    why = "the " + name + " backend (" + file + ") was built for dlock " +
          (stamp->version != nullptr ? stamp->version : "?") + " (plug-in ABI " +
          std::to_string(stamp->abi) + "), this is dlock " + plugin_version + " (ABI " +
          std::to_string(plugin_abi) + "): install the libdlock-" + name + " of dlock " +
          plugin_version;
  } else if (!expected_name.empty() && name != expected_name) {
    why = file + " calls itself the " + name + " backend, not " + std::string(expected_name);
  }
  auto& t = table();
  std::lock_guard lock(t.m);
  if (!why.empty()) {
    std::erase_if(t.refused, [&](const auto& r) { return r.first == name; });
    t.refused.emplace_back(name, why);
    return fail(errc::backend_unavailable, why);
  }
  const auto* plugin = reinterpret_cast<const backend_plugin*>(stamp);
  for (const auto* p : t.loaded)
    if (p == plugin || std::string_view(p->stamp.name) == name) return {};  // the first stays
  t.loaded.push_back(plugin);
  std::erase_if(t.refused, [&](const auto& r) { return r.first == name; });
  return {};
}

result<open_fn> find_backend(const url& u) {
  for (const auto& s : builtin) {
    if (s.scheme != u.scheme) continue;
    if (auto r = check_params(u, s); !r) return fail(r.error());
    return s.open;
  }
  std::string_view plugin = plugin_for(u.scheme);
  bool well_known = !plugin.empty();
  if (!well_known) {
    // libdlock-<name> libraries that are components, not backends: never loaded as one.
    constexpr std::string_view components[] = {"prometheus"};
    if (!plain_name(u.scheme) || std::ranges::find(components, u.scheme) != std::end(components))
      return fail(unknown_scheme(u));
    plugin = u.scheme;
  }
  std::string refusal;
  auto s = registered(u.scheme, &refusal, plugin);
  if (!s && refusal.empty()) {
    auto loaded = load_plugin(plugin);
    if (loaded.outcome == load_outcome::not_found && !well_known) return fail(unknown_scheme(u));
    if (loaded.outcome != load_outcome::loaded)
      return fail(errc::backend_unavailable, "URL '" + u.redacted + "': " + loaded.message);
    s = registered(u.scheme, &refusal, plugin);
  }
  if (!s) {
    if (!refusal.empty())
      return fail(errc::backend_unavailable, "URL '" + u.redacted + "': " + refusal);
    if (!well_known) return fail(unknown_scheme(u));
    return fail(errc::backend_unavailable, "URL '" + u.redacted + "': libdlock-" +
                                               std::string(plugin) + " does not serve " + u.scheme +
                                               "://");
  }
  if (auto r = check_params(u, *s); !r) return fail(r.error());
  return s->open;
}

result<backend_ptr> open_backend(const url& u, const session_info& info) {
  auto open = find_backend(u);
  if (!open) return fail(open.error());
  return (*open)(u, info);
}

std::vector<std::string> known_schemes() {
  std::vector<std::string> out;
  for (const auto& s : builtin) out.emplace_back(s.scheme);
  for (const auto& w : plugin_schemes) out.emplace_back(w.scheme);
  auto& t = table();
  std::lock_guard lock(t.m);
  for (const auto* p : t.loaded)
    for (const auto& s : p->schemes)
      if (std::find(out.begin(), out.end(), s.scheme) == out.end()) out.emplace_back(s.scheme);
  return out;
}

}  // namespace dlock::detail

extern "C" void dlock_register_backend_plugin(const dlock_plugin_stamp* stamp) {
  // A refusal is recorded: session::open reports it for the plug-in's schemes.
  (void)dlock::detail::register_plugin(stamp, {});
}
