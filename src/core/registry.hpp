#pragma once
// URL scheme -> backend. memory:// and sqlite:// are built in; every other backend is a
// plug-in (core/plugin.hpp) that registers its schemes, found by the scheme's library name
// (plugin_loader.hpp). The core includes no backend header but those two.

#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/plugin.hpp"
#include "core/url.hpp"

namespace dlock::detail {

using backend_ptr = std::unique_ptr<backend_session>;

// The opener of the URL's scheme, its query parameters checked; loads the scheme's plug-in
// if it is not loaded yet. invalid_argument for an unknown scheme or parameter (the message
// lists the known ones); backend_unavailable for a backend that is not installed or whose
// plug-in is refused (built for another dlock version, not loadable). Not retried: nothing
// changes by trying again.
result<open_fn> find_backend(const url& u);

// find_backend, then open.
result<backend_ptr> open_backend(const url& u, const session_info& info);

// The schemes this build knows, installed or not, for messages and --help.
std::vector<std::string> known_schemes();

// For the loader: registers the plug-in a stamp heads, or records (and returns) why not.
// `expected_name` non-empty: the plug-in was loaded as libdlock-<expected_name>.
result<void> register_plugin(const dlock_plugin_stamp* stamp, std::string_view expected_name);

}  // namespace dlock::detail
