// libdlock-etcd: etcd:// (a cluster's members), etcds:// (the same over TLS: ?cacert=, and
// ?cert= with ?key= for a client certificate).
#include "backends/etcd/etcd_backend.hpp"
#include "core/plugin.hpp"

namespace {

constexpr dlock::detail::plugin_scheme schemes[] = {
    {"etcd", &dlock::detail::open_etcd, ""},
    {"etcds", &dlock::detail::open_etcd, "cacert cert key"},
};

constexpr dlock::detail::backend_plugin plugin{
    {dlock::detail::plugin_magic, dlock::detail::plugin_abi, dlock::detail::plugin_version, "etcd"},
    schemes};

}  // namespace

DLOCK_BACKEND_PLUGIN(etcd, plugin)
