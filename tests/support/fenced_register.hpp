#pragma once
// A fenced resource shared by the processes of one host: an integer register in a small
// SQLite file that accepts a write (or a holder's read) only if its fencing token is at least
// the highest it has seen (strictly greater when the writer is a different holder), checked
// and applied in one transaction. Every write attempt is recorded, accepted or not, so a test can
// compare what the workers believe they did with what the resource saw.
//
// This is the resource side of Kleppmann's fencing argument: a holder paused past its lease
// cannot corrupt the register once a newer holder has written, whatever the lock service did.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace dlock::test {

class fenced_register {
 public:
  struct write_record {
    std::int64_t seq{0};
    std::uint64_t token{0};
    std::int64_t value{0};
    bool accepted{false};
    pid_t pid{0};
    pid_t tid{0};
    std::int64_t mono_ns{0};  // CLOCK_MONOTONIC inside the transaction
  };

  // Opens (creating if needed) the register at `path`. Throws std::runtime_error.
  static fenced_register open(const std::string& path);
  fenced_register(fenced_register&&) noexcept;
  fenced_register& operator=(fenced_register&&) noexcept;
  ~fenced_register();

  // The current value (0 before any accepted write), unfenced: for inspection.
  std::int64_t read();
  // A holder's read: returns the value if `token` may write, and raises the fence to `token`
  // so that no older token can write any more; nullopt (changing nothing) otherwise.
  // Without it, a holder paused in the middle of its write could land that write after a
  // newer holder read the old value -- a lost update no write-only fence can refuse.
  std::optional<std::int64_t> read(std::uint64_t token);
  // Stores `value` if `token` may write (see above); records the attempt either way.
  // The holder is this thread (pid, tid). Throws std::runtime_error on a database error.
  bool try_write(std::uint64_t token, std::int64_t value);
  // Every recorded attempt, in the order the register saw them.
  std::vector<write_record> writes();

 private:
  explicit fenced_register(sqlite3* db) : db_(db) {}
  sqlite3* db_{nullptr};
};

// CLOCK_MONOTONIC in nanoseconds: the time base every fault-test log shares on one host.
std::int64_t monotonic_ns();

}  // namespace dlock::test
