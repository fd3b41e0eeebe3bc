#pragma once
// The contract between the core (libdlock) and a backend plug-in (libdlock-<name>.so).
//
// A plug-in is built against the core's internal C++ classes (backend_session, url,
// session_info), which change between releases without notice, so a plug-in only works with
// the exact dlock version it was built with. Its entry point therefore starts with a stamp
// whose layout never changes (plain C, read before anything else): the core reads the
// magic, ABI number, version and name and refuses a plug-in of another version with a
// message, instead of calling into code built for other class layouts.
//
// Two ways in, both ending in dlock_register_backend_plugin():
//  - the core dlopens libdlock-<name>.so.<soversion> at session::open and calls the entry
//    point dlock_backend_plugin_<name>();
//  - an application linked to the plug-in: the plug-in's static registrar registers it when
//    the plug-in is loaded (before main).

#include <cstdint>
#include <span>
#include <string_view>

#include "core/backend.hpp"
#include "core/url.hpp"

extern "C" {
// Never change this layout: it is how a plug-in of any version is recognised and refused.
struct dlock_plugin_stamp {
  std::uint32_t magic;  // dlock::detail::plugin_magic
  std::uint32_t abi;    // dlock::detail::plugin_abi of the build
  const char* version;  // the dlock version the plug-in was built with ("0.1.0")
  const char* name;     // "redis": the library is libdlock-redis
};

// In the core. Registers the plug-in the stamp heads (a dlock::detail::backend_plugin), or
// records why it is refused; the schemes it serves then open through it. Idempotent.
void dlock_register_backend_plugin(const dlock_plugin_stamp* stamp);
}

namespace dlock::detail {

inline constexpr std::uint32_t plugin_magic = 0x504b4c44;  // "DLKP" in memory order
// Bump when the plug-in structures below change shape; the version string guards the rest.
inline constexpr std::uint32_t plugin_abi = 1;

#ifndef DLOCK_VERSION_STRING
#error "DLOCK_VERSION_STRING must be defined by the build (the project version)"
#endif
inline constexpr const char* plugin_version = DLOCK_VERSION_STRING;

using open_fn = result<std::unique_ptr<backend_session>> (*)(const url&, const session_info&);

struct plugin_scheme {
  std::string_view scheme;  // "redis"
  open_fn open;
  std::string_view params;  // the query parameters it reads, space-separated
};

struct backend_plugin {
  dlock_plugin_stamp stamp;  // first: the core reads it through a dlock_plugin_stamp*
  std::span<const plugin_scheme> schemes;
};

}  // namespace dlock::detail

#define DLOCK_PLUGIN_CONCAT2(a, b) a##b
#define DLOCK_PLUGIN_CONCAT(a, b) DLOCK_PLUGIN_CONCAT2(a, b)

// In one source file of a plug-in, at namespace scope: defines its entry point
// dlock_backend_plugin_<name>() and the registrar that registers it when an application links
// the plug-in directly. `object` is a dlock::detail::backend_plugin whose stamp.name is
// "<name>". The registrar names the object itself, not the entry point, which another
// plug-in's or the application's symbol of the same name could interpose.
#define DLOCK_BACKEND_PLUGIN(name, object)                                                         \
  extern "C" __attribute__((visibility("default"))) const dlock_plugin_stamp* DLOCK_PLUGIN_CONCAT( \
      dlock_backend_plugin_, name)() {                                                             \
    return &(object).stamp;                                                                        \
  }                                                                                                \
  namespace {                                                                                      \
  [[maybe_unused]] const bool dlock_plugin_registered_ =                                           \
      (dlock_register_backend_plugin(&(object).stamp), true);                                      \
  }
