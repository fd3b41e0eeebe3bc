#include "cli/run_grant.hpp"

#include <dlock/inspect.hpp>

#include "cli/leader_format.hpp"
#include "cli/queue_format.hpp"
#include "core/caller_deadline.hpp"

namespace dlock::cli {
namespace {

constexpr std::chrono::milliseconds who_budget{500};

}  // namespace

run_grant::run_grant(const dlock::session& s, const std::string& name, const grant_spec& spec)
    : session_(s), name_(name) {
  if (spec.campaign) {
    election_.emplace(s, name);
    value_ = *spec.campaign;
  } else if (spec.permits == 0) {
    mutex_.emplace(s, name);
  } else {
    sem_.emplace(s, name, spec.permits);
  }
}

bool run_grant::try_until(std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                          std::error_code& ec) {
  if (mutex_) return mutex_->try_lock_until(deadline, std::move(stop), ec);
  if (election_) {
    lead_ = election_->campaign(value_, deadline, std::move(stop), ec);
    return static_cast<bool>(lead_);
  }
  permit_ = sem_->try_acquire_until(deadline, std::move(stop), ec);
  return static_cast<bool>(permit_);
}

bool run_grant::try_once(std::error_code& ec) {
  if (mutex_) return mutex_->try_lock(ec);
  return try_until(std::chrono::steady_clock::time_point::min(), {}, ec);
}

dlock::hold run_grant::hold() const {
  if (mutex_) return mutex_->current_hold();
  return election_ ? lead_.hold() : permit_.hold();
}

void run_grant::release(std::error_code& ec) {
  if (mutex_) {
    mutex_->unlock(ec);
  } else if (election_) {
    lead_.resign(ec);
  } else {
    permit_.release(ec);
  }
}

std::string run_grant::held() const {
  if (mutex_) return "lock '" + name_ + "'";
  if (election_) return "leadership of election '" + name_ + "'";
  return "a permit of semaphore '" + name_ + "'";
}

std::string run_grant::not_granted() const {
  if (mutex_) return "lock '" + name_ + "' is held";
  if (election_) return "election '" + name_ + "' has a leader";
  if (sem_->max() == 1) return "the one permit of semaphore '" + name_ + "' is held";
  return "all " + std::to_string(sem_->max()) + " permits of semaphore '" + name_ + "' are held";
}

std::string run_grant::granted() const {
  if (mutex_) return "lock '" + name_ + "' granted";
  if (election_) return "elected leader of election '" + name_ + "'";
  return "a permit of semaphore '" + name_ + "' (" + std::to_string(sem_->max()) + ") granted";
}

std::string run_grant::who() const {
  // Only to word a message: a server that stopped answering (the likely reason the wait timed
  // out) must not hold the exit for another request timeout. Backends that cannot cut a
  // request off still take up to theirs.
  dlock::detail::caller_deadline_scope bounded(std::chrono::steady_clock::now() + who_budget);
  try {
    // This run was not granted, so an entry of its own at the head is one not yet removed
    // (its abandoned acquire's removal still queued behind a busy or silent server): never
    // name the run itself as the holder it waited for.
    if (election_) {
      auto l = election_->leader();
      if (!l || this_process(parse_owner(l->owner))) return {};
      return "leader " + leader_line(*l);
    }
    auto q = split_queue(dlock::inspect(session_, name_));
    std::string out;
    for (const auto& h : q.holders) {
      if (this_process(parse_owner(h.owner))) continue;
      out += (out.empty() ? "" : "; ") + entry_line(h);
    }
    if (out.empty()) return out;
    return (sem_ ? "holders " : "holder ") + out;
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace dlock::cli
