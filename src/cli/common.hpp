#pragma once
// What every dlock subcommand shares: exit codes, the one-line error, URL resolution and
// turning library errors into sysexits codes.

#include <CLI/CLI.hpp>
#include <chrono>
#include <dlock/session.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace dlock::cli {

// sysexits.h values, named here so the documented contract is in one place.
enum exit_code : int {
  exit_ok = 0,
  exit_demo_failed = 1,   // the demo's invariant (sold = stock, oversold 0) did not hold
  exit_free = 1,          // `dlock status`: the lock is free (as `systemctl is-active`)
  exit_no_leader = 1,     // `dlock leader`: the election has no leader (as a free lock)
  exit_doctor_unmet = 1,  // `dlock doctor`: a --require'd guarantee does not hold
  exit_usage = 64,        // EX_USAGE: bad option, URL, lock name, duration, missing command
  exit_unavailable = 69,  // EX_UNAVAILABLE: the backend cannot be reached or failed
  exit_lock_lost = 70,    // EX_SOFTWARE: `dlock run` lost the lock while CMD ran
  exit_io = 74,           // EX_IOERR: `dlock observe` could not write its output
  exit_conflict = 75,     // EX_TEMPFAIL: lock held by someone else / not granted in time
  exit_denied = 77,       // EX_NOPERM: the database path or credentials were refused
};

// Thrown by subcommands; main prints "dlock: <what>" on one line and exits with `code`.
class cli_error : public std::runtime_error {
 public:
  cli_error(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// CMD could not be started (errno `err`): the shell's conventions, 127 not found and 126 found
// but not executable; no process slot, memory or descriptor (EAGAIN, ENOMEM, EMFILE) is a
// passing shortage, 69 (a tester's cron wrapper read 126 as "not executable").
cli_error cmd_not_started(const std::string& cmd, int err);

// The exit code for a library error.
int exit_code_for(std::error_code ec);

// A library error's text without the error code's own words, which repeat the message.
std::string tidy(const std::system_error& e);

// Rethrows a dlock::system_error (or anything else) as a cli_error with the right code.
[[noreturn]] void rethrow_as_cli_error();

// The URL forms of every backend, for --help footers.
extern const char* const url_forms_help;

// Registers --url on `cmd`; an explicitly empty value is a usage error.
void add_url_option(CLI::App* cmd, std::string& url);

// --url, else $DLOCK_URL, else sqlite:// + the per-user state file (its directory is created
// with mode 0700 only in that last case, and only when `create` is true: viewing never writes).
std::string resolve_url(const std::string& url_option, bool create = true);

// True for a sqlite:// URL whose database file does not exist: nothing is locked there, and
// a viewer must not create it.
// True when `url` is a sqlite:// URL whose file does not exist (it holds no lock). Throws
// cli_error (64) when its directory does not exist either, unless it is the default's.
bool sqlite_file_missing(const std::string& url);
// The default database's directory: $XDG_STATE_HOME/dlock, else ~/.local/state/dlock.
std::string default_state_dir();

// Parses a duration option such as 500ms or 2m; usage error naming `option` otherwise.
std::chrono::milliseconds parse_duration_option(std::string_view option, const std::string& text);

// Usage error unless `name` is a valid lock name. Checked against the library's own rules
// before anything is opened, so a bad name creates nothing on the real backend.
void check_lock_name(const std::string& name);

// Opens a session; library errors become cli_errors.
dlock::session open_session(const std::string& url, const dlock::session_options& options);

// One line on stderr: "dlock: <message>" (newlines in the message become spaces).
void print_error(std::string_view message);

}  // namespace dlock::cli
