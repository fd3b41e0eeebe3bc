// libdlock-mysql: mysql:// and mariadb:// (MySQL and MariaDB).
#include "backends/mysql/mysql_backend.hpp"
#include "core/plugin.hpp"

namespace {

constexpr dlock::detail::plugin_scheme schemes[] = {
    {"mysql", &dlock::detail::open_mysql, "mode"},
    {"mariadb", &dlock::detail::open_mysql, "mode"},
};

constexpr dlock::detail::backend_plugin plugin{
    {dlock::detail::plugin_magic, dlock::detail::plugin_abi, dlock::detail::plugin_version,
     "mysql"},
    schemes};

}  // namespace

DLOCK_BACKEND_PLUGIN(mysql, plugin)
