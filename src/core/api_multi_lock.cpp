// dlock::multi_lock: the canonical order, and all-or-nothing acquires over basic_lock.
#include <algorithm>
#include <dlock/errors.hpp>
#include <dlock/multi_lock.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/hold_core.hpp"
#include "core/session_core.hpp"
#include "core/url.hpp"

namespace dlock {
namespace {

[[noreturn]] void refuse_multi(const std::string& why) {
  throw system_error(make_error_code(errc::invalid_argument), "dlock::multi_lock: " + why);
}

// Where a session's locks live: its URL without what shapes only the session (the user and
// password, the lease parameters every backend takes), the hosts in one order. Two
// sessions that differ only there reach the same locks: one name on both is one lock, and a
// tester's multi-lock over `?ttl=5s` and `?ttl=6s` waited for itself.
std::string lock_space(const std::string& url_text) {
  auto u = detail::parse_url(url_text);
  if (!u) return url_text;
  std::vector<std::string> hosts;
  for (const auto& h : u->hosts) hosts.push_back(detail::host_port_text(h.host, h.port));
  std::ranges::sort(hosts);
  std::string out = u->scheme + "://";
  for (std::size_t i = 0; i < hosts.size(); ++i) out += (i ? "," : "") + hosts[i];
  out += u->path;
  char sep = '?';
  for (const auto& [k, v] : u->query) {  // a std::map: in one order already
    if (k == "ttl" || k == "keepalive") continue;
    out += sep + k + "=" + v;
    sep = '&';
  }
  return out;
}

// Whether `held`'s entry is in the queue of `l`: then `l` is the lock `held` holds, reached
// through a session whose URL spells the same place otherwise (a path with "./", another name
// for the host), and waiting for it would wait for ourselves. Entry ids are unique, so a
// listing tells for certain where the URL text cannot.
bool queued_in(detail::basic_lock& l, const hold& held) {
  if (!held.core()) return false;
  const auto s = l.session();
  auto v = s.core()->backend().list(l.name());
  return v && std::ranges::any_of(v->entries, [&](const detail::entry& e) {
           return e.id == held.core()->entry_id();
         });
}

}  // namespace

multi_lock::multi_lock(std::initializer_list<lock_ref> locks)
    : multi_lock(std::vector<lock_ref>(locks)) {}

multi_lock::multi_lock(std::vector<lock_ref> locks) : locks_(std::move(locks)) {
  if (locks_.empty()) refuse_multi("no locks given");
  struct key {
    std::string name, space, url;
    auto operator<=>(const key&) const = default;
  };
  std::vector<std::pair<key, lock_ref>> keyed;
  for (const auto& l : locks_) {
    const auto s = l.get().session();
    if (!s) refuse_multi("a lock object was moved from");
    const auto url = s.url();
    keyed.push_back({key{l.get().name(), lock_space(url), url}, l});
  }
  // Processes that list the same locks in different orders must still take them in one.
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < keyed.size(); ++i) {
    const auto &a = keyed[i - 1].first, &b = keyed[i].first;
    if (a.name == b.name && a.space == b.space) {
      refuse_multi("lock '" + b.name + "' on " + a.url +
                   (a.url == b.url ? "" : " (and on " + b.url + ", the same locks)") +
                   " is given twice (its second acquire would wait for the first forever)");
    }
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
      auto& l = locks_[taken].get();
      // Sorted by name: a lock that may be one taken already under another spelling follows it.
      if (taken > 0 && locks_[taken - 1].get().name() == l.name()) {
        if (l.try_lock()) continue;
        for (std::size_t j = 0; j < taken; ++j) {
          if (locks_[j].get().name() == l.name() && queued_in(l, locks_[j].get().current_hold())) {
            refuse_multi("lock '" + l.name() + "' on " + l.session().url() + " is the one on " +
                         locks_[j].get().session().url() +
                         ", given twice (its second acquire would wait for the first forever)");
          }
        }
      }
      if (!take(l)) {
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
