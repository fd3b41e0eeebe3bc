#pragma once
// The library's warnings while `run` or `elect` holds (a renewal failing, a release not
// confirmed), on stderr: the loss message alone does not say why the lease ran out (a full
// disk, a server refusing). Quiet until armed, after the open: what a set-up weakens is
// doctor's to say, not every run's. A warning each retry repeats is printed once, until the
// hold is healthy again.

#include <atomic>
#include <dlock/observer.hpp>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::cli {

class warning_log final : public dlock::observer {
 public:
  void arm() noexcept { armed_ = true; }
  void on_log(dlock::log_level level, std::string_view message) override;
  void on_hold_state(std::string_view lock, dlock::fencing_token token,
                     dlock::hold_state state) override;
  // Whether a warning starting with `prefix` was printed: the final report of a release the
  // library already warned about is not printed twice.
  bool said(std::string_view prefix);

 private:
  std::atomic<bool> armed_{false};
  std::mutex mu_;
  std::string last_;
  std::vector<std::string> said_;  // every warning printed (few: each is printed once)
};

}  // namespace dlock::cli
