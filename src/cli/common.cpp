#include "cli/common.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlock/mutex.hpp>
#include <iostream>

#include "core/duration.hpp"

namespace dlock::cli {
namespace {

std::string home_dir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
  throw cli_error(exit_usage, "no --url, no DLOCK_URL and no home directory for the default");
}

// mkdir -p; every directory it creates gets mode 0700 (the lock file says who runs what).
void make_private_dirs(const std::string& path) {
  std::string prefix;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      throw cli_error(exit_denied,
                      "cannot create state directory '" + prefix + "': " + std::strerror(errno));
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw cli_error(exit_denied, "state directory '" + path + "' is not a directory");
  }
}

// Percent-encodes what the URL parser would otherwise take as syntax.
std::string encode_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%')
      out += "%25";
    else if (c == '?')
      out += "%3F";
    else if (c == '#')
      out += "%23";
    else
      out += c;
  }
  return out;
}

// std::system_error::what() is "context: message: <code text>"; the code text repeats what
// the message already says, and the "dlock: " prefix is print_error's job.
std::string tidy(const std::system_error& e) {
  std::string_view w = e.what();
  std::string suffix = ": " + e.code().message();
  if (w.size() > suffix.size() && w.ends_with(suffix)) w.remove_suffix(suffix.size());
  return std::string(w);
}

}  // namespace

int exit_code_for(std::error_code ec) {
  if (ec.category() != dlock::category()) return exit_unavailable;
  switch (static_cast<dlock::errc>(ec.value())) {
    case dlock::errc::invalid_argument:
    case dlock::errc::unsupported:
      return exit_usage;
    case dlock::errc::permission_denied:
      return exit_denied;
    case dlock::errc::timed_out:
    case dlock::errc::would_block:
      return exit_conflict;
    default:
      return exit_unavailable;
  }
}

void rethrow_as_cli_error() {
  try {
    throw;
  } catch (const cli_error&) {
    throw;
  } catch (const std::system_error& e) {
    throw cli_error(exit_code_for(e.code()), tidy(e));
  } catch (const std::exception& e) {
    throw cli_error(exit_unavailable, e.what());
  }
}

std::string resolve_url(const std::string& url_option) {
  if (!url_option.empty()) return url_option;
  if (const char* env = std::getenv("DLOCK_URL"); env && *env) return env;
  std::string dir;
  // The XDG spec says a relative XDG_STATE_HOME is invalid and must be ignored.
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && x[0] == '/') {
    dir = std::string(x) + "/dlock";
  } else {
    dir = home_dir() + "/.local/state/dlock";
  }
  make_private_dirs(dir);
  return "sqlite://" + encode_path(dir + "/locks.db");
}

std::chrono::milliseconds parse_duration_option(std::string_view option, const std::string& text) {
  auto d = dlock::detail::parse_duration(text);
  if (!d) throw cli_error(exit_usage, std::string(option) + ": " + d.error().message);
  return *d;
}

void check_lock_name(const std::string& name) {
  // An in-process memory session applies exactly the rules every backend uses.
  std::error_code ec;
  auto probe = dlock::session::open("memory://dlock-cli-name-check", {}, ec);
  if (!probe) return;  // cannot happen; the real backend will check again
  try {
    dlock::mutex check(probe, name);
  } catch (const std::system_error& e) {
    probe.close();
    throw cli_error(exit_usage, tidy(e));
  }
  probe.close();
}

dlock::session open_session(const std::string& url, const dlock::session_options& options) {
  try {
    return dlock::session::open(url, options);
  } catch (...) {
    rethrow_as_cli_error();
  }
}

void print_error(std::string_view message) {
  while (message.starts_with("dlock: ")) message.remove_prefix(7);
  std::string line(message);
  for (auto& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "dlock: " << line << '\n';
}

}  // namespace dlock::cli
