#include "cli/guard_deadline.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "cli/common.hpp"

namespace dlock::cli {

guard_deadline::guard_deadline(time_point valid_until) {
  void* p =
      ::mmap(nullptr, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw cli_error(exit_unavailable, std::string("mmap: ") + std::strerror(errno));
  }
  s_ = new (p) shared{};
  extend(valid_until);
  s_->enforcer.store(static_cast<int>(loss_enforcer::none));
}

guard_deadline::~guard_deadline() {
  s_->~shared();
  ::munmap(s_, sizeof(shared));
}

void guard_deadline::extend(time_point valid_until) noexcept {
  s_->valid_until.store(valid_until.time_since_epoch().count());
}

guard_deadline::time_point guard_deadline::valid_until() const noexcept {
  return time_point{time_point::duration{s_->valid_until.load()}};
}

bool guard_deadline::claim_loss(loss_enforcer who) noexcept {
  int none = static_cast<int>(loss_enforcer::none);
  return s_->enforcer.compare_exchange_strong(none, static_cast<int>(who));
}

loss_enforcer guard_deadline::enforcer() const noexcept {
  return static_cast<loss_enforcer>(s_->enforcer.load());
}

}  // namespace dlock::cli
