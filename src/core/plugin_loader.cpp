#include "core/plugin_loader.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "core/registry.hpp"

#ifndef DLOCK_SOVERSION
#error "DLOCK_SOVERSION must be defined by the build (libdlock's SOVERSION)"
#endif

namespace dlock::detail {
namespace {

// The directory this library was loaded from: the install's library directory.
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_plugin), &info) == 0 || info.dli_fname == nullptr)
    return {};
  // Normal form: the message names ".../lib", not ".../bin/../lib".
  auto dir = std::filesystem::path(info.dli_fname).parent_path().lexically_normal().string();
  while (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
  return dir;
}

std::vector<std::string> search_directories() {
  std::vector<std::string> dirs;
  // secure_getenv: a set-user-ID program does not load code from a directory its caller names.
  if (const char* env = secure_getenv(plugin_path_variable)) {
    std::string_view rest = env;
    while (!rest.empty()) {
      auto colon = rest.find(':');
      auto dir = rest.substr(0, colon);
      if (!dir.empty()) dirs.emplace_back(dir);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  if (auto own = own_directory(); !own.empty()) dirs.push_back(own);
  return dirs;
}

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dynamic loader error";
}

// The library is loaded (its registrar has run); its entry point registers it (again: the
// registry takes a plug-in once) and says whether it is accepted.
load_result enter(void* handle, const std::string& file, std::string_view name) {
  std::string symbol = "dlock_backend_plugin_" + std::string(name);
  dlerror();
  void* entry = dlsym(handle, symbol.c_str());
  if (entry == nullptr)
    return {load_outcome::failed, "the " + std::string(name) + " backend (" + file +
                                      ") is not a dlock plug-in: it has no " + symbol + "()"};
  using entry_fn = const dlock_plugin_stamp* (*)();
  auto stamp = reinterpret_cast<entry_fn>(entry)();
  if (auto r = register_plugin(stamp, name); !r) return {load_outcome::failed, r.error().message};
  return {load_outcome::loaded, {}};
}

std::mutex loading;

}  // namespace

load_result load_plugin(std::string_view name) {
  std::lock_guard lock(loading);
  std::string file = "libdlock-" + std::string(name) + ".so." DLOCK_SOVERSION;
  std::string looked;
  for (const auto& dir : search_directories()) {
    std::string path = dir + "/" + file;
    looked += (looked.empty() ? "" : ", ") + dir;
    if (access(path.c_str(), F_OK) != 0) continue;
    // RTLD_NOW: a missing client library or symbol is an error here, not a crash later.
    // RTLD_LOCAL: its symbols do not serve later libraries.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr)
      return {load_outcome::failed, "the " + std::string(name) + " backend (" + path +
                                        ") cannot be loaded: " + dl_error()};
    return enter(handle, path, name);
  }
  // Last, the dynamic linker's own search: a plug-in installed apart from libdlock.
  if (void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) return enter(handle, file, name);
  std::string why = dl_error();
  if (!why.starts_with(file + ":") || why.find("No such file") == std::string::npos)
    return {load_outcome::failed,
            "the " + std::string(name) + " backend (" + file + ") cannot be loaded: " + why};
  const char* env = secure_getenv(plugin_path_variable);
  std::string more = env != nullptr && *env != '\0'
                         ? std::string("; ") + plugin_path_variable + " is '" + env + "'"
                         : std::string("; ") + plugin_path_variable + " names more directories";
  return {load_outcome::not_found,
          "the " + std::string(name) + " backend is not installed (libdlock-" + std::string(name) +
              "; looked for " + file + " in " + (looked.empty() ? "" : looked + " and ") +
              "the system library path" + more + ")"};
}

}  // namespace dlock::detail
