#pragma once
// URL scheme -> backend. Each backend folder provides one open_* function; this is the only
// place that knows them all.

#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

using backend_ptr = std::unique_ptr<backend_session>;

// Opens the backend the URL's scheme names. invalid_argument for an unknown scheme (the
// message lists the known ones).
result<backend_ptr> open_backend(const url& u, const session_info& info);

// The schemes this build knows, for messages and --help.
std::vector<std::string> known_schemes();

}  // namespace dlock::detail
