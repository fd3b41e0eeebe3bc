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

namespace dlock::cli {

class warning_log final : public dlock::observer {
 public:
  void arm() noexcept { armed_ = true; }
  void on_log(dlock::log_level level, std::string_view message) override;
  void on_hold_state(std::string_view lock, dlock::fencing_token token,
                     dlock::hold_state state) override;

 private:
  std::atomic<bool> armed_{false};
  std::mutex mu_;
  std::string last_;
};

}  // namespace dlock::cli
