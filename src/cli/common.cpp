#include "cli/common.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlock/mutex.hpp>
#include <filesystem>
#include <iostream>

#include "core/duration.hpp"
#include "core/names.hpp"
#include "core/registry.hpp"
#include "core/url.hpp"

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

}  // namespace

// std::system_error::what() is "context: message: <code text>"; the code text repeats what
// the message already says, and the "dlock: " prefix is print_error's job.
std::string tidy(const std::system_error& e) {
  std::string_view w = e.what();
  std::string suffix = ": " + e.code().message();
  if (w.size() > suffix.size() && w.ends_with(suffix)) w.remove_suffix(suffix.size());
  return std::string(w);
}

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

namespace {
// Every dlock command is its own process, so a memory:// lock would exclude nothing: two
// `dlock run`s would both run.
std::string not_memory(std::string url) {
  std::string scheme = url.substr(0, url.find(':'));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "memory") {
    throw cli_error(exit_usage,
                    "URL '" + dlock::detail::redact_url_text(url) +
                        "': memory:// locks threads of one process; dlock's commands are "
                        "separate processes (use sqlite:// or a server)");
  }
  return url;
}
}  // namespace

const char* const url_forms_help =
    "URLs (--url, else $DLOCK_URL, else sqlite://$XDG_STATE_HOME/dlock/locks.db;\n"
    "dlock bench takes --url only):\n"
    "  sqlite:///var/lib/dlock/locks.db             one host (the embedded default)\n"
    "  zk://zk1:2181,zk2:2181,zk3:2181/chroot       ZooKeeper ensemble\n"
    "  etcd://10.0.0.1:2379,10.0.0.2:2379[/prefix]  etcd v3 cluster (its members' addresses)\n"
    "  etcds://[user:pass@]h:2379?cacert=CA.pem[&cert=C.pem&key=K.pem]  etcd over TLS\n"
    "  redis://[user:pass@]host:6379[/db]           one Redis (>= 7.0, noeviction)\n"
    "  redis-sentinel://s1:26379,s2:26379/mymaster  its master, found through Redis Sentinel\n"
    "    (both take ?replicas=N: acquires and renewals wait for N replicas)\n"
    "  redlock://h1:6379,h2:6379,h3:6379            Redlock over independent masters\n"
    "  postgres://user:pass@host:5432/db[?mode=advisory]\n"
    "  mysql://user:pass@host:3306/db[?mode=advisory]\n"
    "  Every URL takes ?ttl=15s&keepalive=5s; schemes are case-insensitive.";

namespace {
// The URL taken from $DLOCK_URL, so an error about it can say where it came from.
std::string url_from_environment;
}  // namespace

void add_url_option(CLI::App* cmd, std::string& url) {
  cmd->add_option("--url", url, "Backend URL (default: $DLOCK_URL, else the local SQLite file)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            // A cron line `--url "$LOCK_URL"` with the variable unset must not fall back to a
            // private lock file and run beside the other nodes.
            if (value.empty())
              return "--url is empty (an unset variable?); leave --url out to use $DLOCK_URL "
                     "or the local default";
            return {};
          },
          "URL"));
}

std::string resolve_url(const std::string& url_option, bool create) {
  if (!url_option.empty()) return not_memory(url_option);
  if (const char* env = std::getenv("DLOCK_URL"); env && *env) {
    url_from_environment = env;
    return not_memory(env);
  }
  const std::string dir = default_state_dir();
  // Below a home directory, never the home directory itself: HOME=/nonexistent (Debian's for
  // system users) must not be created for a lock file nobody would find again. Refused by the
  // viewers too, which create nothing: "free" there would describe a file no run can make.
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (std::string home = xdg && xdg[0] == '/' ? std::string() : home_dir(); !home.empty()) {
    struct stat st {};
    if (::stat(home.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw cli_error(exit_usage, "the home directory '" + home +
                                      "' does not exist, so the default lock file (" + dir +
                                      "/locks.db) has no place: give --url or DLOCK_URL, or "
                                      "set XDG_STATE_HOME");
    }
  }
  if (create) make_private_dirs(dir);
  return "sqlite://" + dlock::detail::encode_path(dir + "/locks.db");
}

std::string default_state_dir() {
  // The XDG spec says a relative XDG_STATE_HOME is invalid and must be ignored.
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && x[0] == '/')
    return std::string(x) + "/dlock";
  return home_dir() + "/.local/state/dlock";
}

bool sqlite_file_missing(const std::string& url) {
  auto u = dlock::detail::parse_url(url);
  // Only a valid sqlite URL's file: any other (sqlite://relative/path) goes on to be refused
  // by session::open, never read as "nothing held".
  if (!u || u->scheme != "sqlite" || u->path.empty() || !u->hosts.empty() || u->has_user_info)
    return false;
  struct stat st {};
  if (::stat(u->path.c_str(), &st) == 0 || errno != ENOENT) return false;
  // No database in a directory that does not exist either: a mistyped path, which `dlock run`
  // refuses too; never "free" (an operator's `unlock --force` said "nothing to do"). The
  // default's directory is made at first use, so there it only means nothing was locked yet.
  auto dir = std::filesystem::path(u->path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::exists(dir, ec) && !ec &&
      dir.lexically_normal() != std::filesystem::path(default_state_dir()).lexically_normal()) {
    throw cli_error(exit_usage, "URL '" + u->redacted + "': directory '" + dir.string() +
                                    "' does not exist (no lock database can be there)");
  }
  return true;
}

std::chrono::milliseconds parse_duration_option(std::string_view option, const std::string& text) {
  auto d = dlock::detail::parse_duration(text);
  if (!d) throw cli_error(exit_usage, std::string(option) + ": " + d.error().message);
  return *d;
}

void check_lock_name(const std::string& name) {
  // `dlock run -- -- true`: a doubled separator, which took the lock named '--' (a tester's).
  if (name == "--") {
    throw cli_error(exit_usage,
                    "lock name '--' is a doubled '--' (dlock run NAME [options] -- CMD [ARGS...]; "
                    "a NAME that starts with '-' goes after a first '--': dlock run -- -x -- CMD)");
  }
  // `dlock status sqlite:///tmp/x.db` took the URL for the lock's name and said that lock was
  // free in the default database. A name that starts with a scheme dlock serves is that
  // mix-up, not a name anyone chose.
  if (auto at = name.find("://"); at != std::string::npos) {
    const auto schemes = dlock::detail::known_schemes();
    if (std::find(schemes.begin(), schemes.end(), name.substr(0, at)) != schemes.end()) {
      throw cli_error(exit_usage, "lock name '" + name +
                                      "' is a URL: the URL goes in --url (or $DLOCK_URL), "
                                      "the lock's name is the argument");
    }
  }
  // The rules every backend applies, checked without opening a session: a session starts
  // threads, and a command that handles signals must block them before any thread exists.
  auto valid = dlock::detail::validate_lock_name(name);
  if (valid) return;
  try {
    dlock::detail::raise(valid.error(), "dlock");
  } catch (const std::system_error& e) {
    throw cli_error(exit_usage, tidy(e));
  }
}

namespace {
// The library names its options as code spells them; here they were given as flags.
std::string in_flag_words(std::string message) {
  static constexpr std::string_view option = "(session_options::ttl)";
  if (auto at = message.find(option); at != std::string::npos) {
    message.replace(at, option.size(), "(--ttl)");
  }
  return message;
}
}  // namespace

dlock::session open_session(const std::string& url, const dlock::session_options& options) {
  try {
    return dlock::session::open(url, options);
  } catch (const std::system_error& e) {
    std::string message = in_flag_words(tidy(e));
    if (!url_from_environment.empty() && url == url_from_environment) {
      message += " (the URL came from $DLOCK_URL)";
    }
    throw cli_error(exit_code_for(e.code()), message);
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
  // One write(2) per line: stderr is unbuffered, so three inserts were three writes, and the
  // lines of a run's main process and its guard, or of jobs sharing one log, interleaved
  // mid-line ("dlock: dlock: lock ... lost").
  line = "dlock: " + line + "\n";
  std::cerr.flush();
  for (std::string_view rest = line; !rest.empty();) {
    auto n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // nowhere to say it; the exit status still does
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

cli_error cmd_not_started(const std::string& cmd, int err) {
  const bool short_of = err == EAGAIN || err == ENOMEM;
  const bool no_fds = err == EMFILE || err == ENFILE;
  return cli_error(short_of || no_fds ? exit_unavailable
                   : err == ENOENT    ? 127
                                      : 126,
                   "cannot run '" + cmd + "': " + std::strerror(err) +
                       (short_of ? " (the process or memory limit); it was not started"
                        : no_fds ? " (the descriptor limit, ulimit -n); it was not started"
                                 : ""));
}

}  // namespace dlock::cli
