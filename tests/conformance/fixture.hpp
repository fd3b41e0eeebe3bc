#pragma once
// What each backend provides to the conformance suite: URLs for its sessions, a way to end a
// session's lease from the server side, and a raw look at the stored entries.
// Every backend instantiates the suite once (see memory_test.cpp) with its fixture.

#include <chrono>
#include <dlock/dlock.hpp>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace dlock::test {

class backend_fixture {
 public:
  virtual ~backend_fixture() = default;
  // A URL for one test; every session of the test opens it (same store / server / db).
  // The URL carries a short ttl (see ttl()).
  virtual std::string url() = 0;
  // Whether separate processes can share locks through url() (false only for memory).
  virtual bool multi_process() const { return true; }
  // Entries of `lock` stored in the backend, read raw (not through dlock), including ones
  // whose lease has lapsed but that were not yet removed.
  virtual std::size_t raw_entries(const std::string& lock) = 0;
  // Ends the lease of session `s` from the server side, as a crash or partition would.
  virtual void expire(const dlock::session& s) = 0;
  // The TTL the fixture's URLs ask for.
  virtual std::chrono::milliseconds ttl() const { return std::chrono::seconds{2}; }
  // True when a SIGKILLed holder on this host is freed at once (sqlite's pid check).
  virtual bool frees_dead_process_at_once() const { return false; }
  // Whether waiters are served in arrival order (FIFO; a reader never overtakes a queued
  // writer, nor a later writer a queued reader). False only for a mode without a server-side
  // queue (postgres ?mode=advisory), which then skips the three tests of arrival order and
  // says why in its fixture.
  virtual bool fifo() const { return true; }
  // Whether shared (reader) locks exist. False only for a mode whose server lock is exclusive
  // only (mysql ?mode=advisory, GET_LOCK), which refuses shared_mutex with errc::unsupported;
  // the shared tests then check that refusal and skip, saying why in its fixture.
  virtual bool shared_locks() const { return true; }
  // Whether list_locks can name the locks held. False for the ?mode=advisory modes, whose
  // server keeps only a hash of each name: list_locks refuses with errc::unsupported.
  virtual bool lists_names() const { return true; }
};

using fixture_factory = std::function<std::unique_ptr<backend_fixture>()>;

struct fixture_param {
  std::string name;
  fixture_factory make;
  friend void PrintTo(const fixture_param& p, std::ostream* os) { *os << p.name; }
};

}  // namespace dlock::test
