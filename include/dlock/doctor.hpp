#pragma once
/// @file doctor.hpp
/// What a session's backend guarantees in the configuration it actually found: its capabilities
/// (session::capabilities) plus live checks of the server or file (an eviction policy,
/// persistence, replicas, commit durability, a pooler, the server's clock, the file's mode).
/// `dlock doctor URL` prints it. A set-up unsafe for any lock is refused at session::open
/// already (errc::unsupported, with the reason); what only weakens a guarantee is reported
/// here, and at open through the observer's on_log (log_level::warning) when one is installed.

#include <dlock/session.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace dlock {

/// The outcome of one live check.
///  - ok: nothing this check looks at weakens a guarantee.
///  - weakened: a guarantee holds only in part (named in check_finding::guarantee).
///  - unsafe: the guarantee does not hold at all here.
///  - unknown: the check could not be made (a command disabled, a view not readable).
enum class check_status { ok, weakened, unsafe, unknown };

/// Returns "ok", "weakened", "unsafe" or "unknown".
const char* to_string(check_status s) noexcept;

/// One live check of the backend's configuration.
struct check_finding {
  std::string check{};  ///< what was checked: "maxmemory-policy", "synchronous_commit", ...
  /// The guarantee it bears on (guarantee_names()), or empty. An `unsafe` finding that bears
  /// on none means this client cannot use the set-up at all (SQLite: a file or directory it
  /// may not write): `dlock doctor` exits 1 for it, as for a set-up refused at open.
  std::string guarantee{};
  check_status status{check_status::ok};
  std::string reason{};  ///< why, in a sentence
  std::string value{};   ///< the value read from the server or file; empty when none was
};

/// Whether a guarantee holds in this configuration.
///  - holds: it does.
///  - weakened: only in part (why says when it breaks).
///  - no: this backend does not provide it (a capability it lacks), or a check found it broken.
///  - unknown: a check that decides it could not be made.
enum class guarantee_status { holds, weakened, no, unknown };

/// Returns "holds", "weakened", "no" or "unknown".
const char* to_string(guarantee_status s) noexcept;

struct guarantee_verdict {
  std::string name{};   ///< one of guarantee_names(): "exclusion", "fencing", ...
  std::string title{};  ///< "mutual exclusion under a client crash", ...
  guarantee_status status{guarantee_status::unknown};
  std::string why{};
};

struct diagnosis {
  std::vector<check_finding> checks{};
  std::vector<guarantee_verdict> guarantees{};  ///< one per guarantee_names(), in that order
};

/// The guarantees judged, in report order: exclusion (mutual exclusion under a client crash),
/// fencing (tokens survive a server restart), failover (locks and tokens survive a failover),
/// loss-signal (a holder is told lost before another is granted), fifo, shared, semaphores,
/// elections, interop (other lock libraries see the same locks).
const std::vector<std::string>& guarantee_names();

/// The title of guarantee `name` ("mutual exclusion under a client crash" for "exclusion"),
/// as guarantee_verdict::title gives it; empty for a name not in guarantee_names(). Thread-safe.
std::string guarantee_title(std::string_view name);

/// Runs the backend's live checks and judges every guarantee. A check that cannot be made is
/// reported as unknown, never as an error. Thread-safe.
/// Throws dlock::system_error: invalid_argument (empty session), backend errors (the server
/// stopped answering).
diagnosis diagnose(const session& s);

}  // namespace dlock
