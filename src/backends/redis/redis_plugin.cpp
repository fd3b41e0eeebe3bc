// libdlock-redis: redis:// (one server), redis-sentinel:// (the master Redis Sentinel names)
// and redlock:// (several masters).
#include "backends/redis/redis_backend.hpp"
#include "core/plugin.hpp"

namespace {

constexpr dlock::detail::plugin_scheme schemes[] = {
    {"redis", &dlock::detail::open_redis, "prefix replicas replica_timeout"},
    {"redis-sentinel", &dlock::detail::open_redis, "prefix replicas replica_timeout"},
    {"redlock", &dlock::detail::open_redis, "prefix"},
};

constexpr dlock::detail::backend_plugin plugin{
    {dlock::detail::plugin_magic, dlock::detail::plugin_abi, dlock::detail::plugin_version,
     "redis"},
    schemes};

}  // namespace

DLOCK_BACKEND_PLUGIN(redis, plugin)
