#pragma once
// Finds and loads a backend plug-in by name: libdlock-<name>.so.<soversion>, looked for in
// each directory of $DLOCK_PLUGIN_PATH (':'-separated, in order), then in the directory
// libdlock itself was loaded from (the install's library directory; in a build tree, where
// the build puts libdlock and the plug-ins), then by the dynamic linker's own search (the
// system library path, LD_LIBRARY_PATH). The first file found is the one used: a plug-in
// that cannot be loaded or is refused is reported, not skipped for another.

#include <string>
#include <string_view>

namespace dlock::detail {

enum class load_outcome {
  loaded,     // registered (by its registrar or the entry point)
  not_found,  // no such library anywhere: message says where it was looked for
  failed,     // found, but not loadable or refused: message says why
};

struct load_result {
  load_outcome outcome;
  std::string message;
};

// Serialised: two sessions opening the same scheme load the library once. Never unloaded
// (sessions run its code until the process ends).
load_result load_plugin(std::string_view name);

// The environment variable that names extra plug-in directories.
inline constexpr const char* plugin_path_variable = "DLOCK_PLUGIN_PATH";

}  // namespace dlock::detail
