// libdlock-zookeeper: zk:// (an ensemble).
#include "backends/zookeeper/zk_backend.hpp"
#include "core/plugin.hpp"

namespace {

constexpr dlock::detail::plugin_scheme schemes[] = {
    {"zk", &dlock::detail::open_zookeeper, "session_timeout connect_timeout mutex_names"},
};

constexpr dlock::detail::backend_plugin plugin{
    {dlock::detail::plugin_magic, dlock::detail::plugin_abi, dlock::detail::plugin_version,
     "zookeeper"},
    schemes};

}  // namespace

DLOCK_BACKEND_PLUGIN(zookeeper, plugin)
