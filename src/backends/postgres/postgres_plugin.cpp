// libdlock-postgres: postgres:// and postgresql://.
#include "backends/postgres/postgres_backend.hpp"
#include "core/plugin.hpp"

namespace {

constexpr std::string_view params =
    "schema mode sslmode sslrootcert sslcert sslkey target_session_attrs";

constexpr dlock::detail::plugin_scheme schemes[] = {
    {"postgres", &dlock::detail::open_postgres, params},
    {"postgresql", &dlock::detail::open_postgres, params},
};

constexpr dlock::detail::backend_plugin plugin{
    {dlock::detail::plugin_magic, dlock::detail::plugin_abi, dlock::detail::plugin_version,
     "postgres"},
    schemes};

}  // namespace

DLOCK_BACKEND_PLUGIN(postgres, plugin)
