// dlock::multi_lock: the canonical order, and all-or-nothing acquires over basic_lock.
#include <algorithm>
#include <dlock/errors.hpp>
#include <dlock/multi_lock.hpp>
#include <string>
#include <utility>

namespace dlock {
namespace {

[[noreturn]] void refuse_multi(const std::string& why) {
  throw system_error(make_error_code(errc::invalid_argument), "dlock::multi_lock: " + why);
}

}  // namespace

multi_lock::multi_lock(std::initializer_list<lock_ref> locks)
    : multi_lock(std::vector<lock_ref>(locks)) {}

multi_lock::multi_lock(std::vector<lock_ref> locks) : locks_(std::move(locks)) {
  if (locks_.empty()) refuse_multi("no locks given");
  struct key {
    std::string name, url;
    auto operator<=>(const key&) const = default;
  };
  std::vector<std::pair<key, lock_ref>> keyed;
  for (const auto& l : locks_) {
    const auto s = l.get().session();
    if (!s) refuse_multi("a lock object was moved from");
    keyed.push_back({key{l.get().name(), s.url()}, l});
  }
  // Processes that list the same locks in different orders must still take them in one.
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < keyed.size(); ++i) {
    if (keyed[i].first == keyed[i - 1].first)
      refuse_multi("lock '" + keyed[i].first.name + "' on " + keyed[i].first.url +
                   " is given twice (its second acquire would wait for the first forever)");
  }
  locks_.clear();
  for (auto& [k, l] : keyed) locks_.push_back(l);
}

bool multi_lock::acquire(const std::function<bool(detail::basic_lock&)>& take) {
  std::size_t taken = 0;
  auto release_taken = [&] {
    while (taken > 0) locks_[--taken].get().unlock();
  };
  try {
    for (; taken < locks_.size(); ++taken) {
      if (!take(locks_[taken].get())) {
        release_taken();
        return false;
      }
    }
  } catch (...) {
    release_taken();
    throw;
  }
  return true;
}

void multi_lock::lock() {
  (void)acquire([](detail::basic_lock& l) {
    l.lock();
    return true;
  });
}

bool multi_lock::try_lock() {
  return acquire([](detail::basic_lock& l) { return l.try_lock(); });
}

bool multi_lock::try_lock_until(std::chrono::steady_clock::time_point deadline) {
  // One deadline for all: a lock taken late leaves the later ones less time.
  return acquire([deadline](detail::basic_lock& l) { return l.try_lock_until(deadline); });
}

void multi_lock::unlock() noexcept {
  for (auto it = locks_.rbegin(); it != locks_.rend(); ++it) it->get().unlock();
}

void multi_lock::unlock(std::error_code& ec) noexcept {
  ec.clear();
  for (auto it = locks_.rbegin(); it != locks_.rend(); ++it) {
    std::error_code one;
    it->get().unlock(one);
    if (one && !ec) ec = one;
  }
}

bool multi_lock::is_held() const noexcept {
  return std::all_of(locks_.begin(), locks_.end(),
                     [](const lock_ref& l) { return l.get().is_held(); });
}

std::vector<dlock::hold> multi_lock::holds() const {
  std::vector<dlock::hold> out;
  out.reserve(locks_.size());
  for (const auto& l : locks_) out.push_back(l.get().current_hold());
  return out;
}

}  // namespace dlock
