// Plug-ins built only for plugin_tests. FAKE_MISMATCH: a libdlock-redis stamped with another
// dlock version and ABI (what an upgrade that left an old plug-in behind looks like); it must
// be refused, its code never called. Otherwise libdlock-testmem: a third-party plug-in serving
// testmem:// with the core's memory backend, found only through DLOCK_PLUGIN_PATH.
#include "backends/memory/memory_backend.hpp"
#include "core/plugin.hpp"

namespace {

#ifdef FAKE_MISMATCH
dlock::detail::result<std::unique_ptr<dlock::detail::backend_session>> never(
    const dlock::detail::url&, const dlock::detail::session_info&) {
  __builtin_trap();  // a refused plug-in's code is never run
}
constexpr dlock::detail::plugin_scheme schemes[] = {{"redis", &never, "prefix"}};
constexpr dlock::detail::backend_plugin plugin{
    {dlock::detail::plugin_magic, dlock::detail::plugin_abi + 1, "0.0.0-other", "redis"}, schemes};
}  // namespace
DLOCK_BACKEND_PLUGIN(redis, plugin)
#else
constexpr dlock::detail::plugin_scheme schemes[] = {
    {"testmem", &dlock::detail::open_memory, "color"}};
constexpr dlock::detail::backend_plugin plugin{
    {dlock::detail::plugin_magic, dlock::detail::plugin_abi, dlock::detail::plugin_version,
     "testmem"},
    schemes};
}  // namespace
DLOCK_BACKEND_PLUGIN(testmem, plugin)
#endif
