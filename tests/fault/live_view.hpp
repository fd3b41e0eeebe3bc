#pragma once
// The fault driver's live picture of a run: tails every worker's log while it is written, so
// the driver can find the current holder (to kill or stop it at a useful moment) and see the
// next grant after a fault. The checker never uses this view; it reads the complete logs.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fault/history.hpp"

namespace dlock::fault {

class live_view {
 public:
  void add_worker(const std::string& id, const std::string& log_path);
  // Reads whatever the workers appended since the last call.
  void poll();
  // `worker` is gone (killed or exited): it holds and waits for nothing any more.
  void ended(const std::string& worker);

  // The worker holding the lock and pausing inside its critical section (it has read the
  // register and not yet written), if any; with its token.
  struct holder {
    std::string worker;
    std::uint64_t token{0};
  };
  std::optional<holder> holder_in_pause() const;
  // The first grant to a worker other than `except` stamped after `ns`.
  std::optional<std::int64_t> first_grant_after(std::int64_t ns, const std::string& except) const;
  // Whether a write with a token above `token` was accepted after `ns`.
  bool newer_write_accepted(std::uint64_t token, std::int64_t ns) const;
  // Whether `worker` still has a critical section open.
  bool holding(const std::string& worker) const;
  // Whether `worker` is waiting for the lock (acquire_start logged, no grant yet).
  bool waiting(const std::string& worker) const;
  std::vector<std::string> waiters() const;

 private:
  struct tail {
    std::string id;
    std::string path;
    std::uint64_t offset{0};
    std::string partial;
    bool gone{false};
    bool waiting{false};
    bool holding{false};
    bool in_pause{false};
    std::uint64_t token{0};
  };
  void apply(tail& t, const event& e);

  std::vector<tail> tails_;
  std::vector<event> grants_;
  std::vector<event> accepted_writes_;
};

}  // namespace dlock::fault
