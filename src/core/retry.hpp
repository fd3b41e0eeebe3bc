#pragma once
// Capped exponential backoff with full jitter (Curator's ExponentialBackoffRetry; AWS
// Architecture Blog, "Exponential Backoff And Jitter", 2015) around one backend call.

#include <chrono>
#include <dlock/session.hpp>
#include <stop_token>

#include "core/result.hpp"

namespace dlock::detail {

// Sleeps a random time in [0, min(max_delay, base_delay * 2^attempt)], or less if `stop`
// is requested or `deadline` comes first. Returns false if it was cut short by either.
bool backoff_sleep(const retry_policy& policy, int attempt,
                   std::chrono::steady_clock::time_point deadline, std::stop_token stop);

// Calls f() until it succeeds, fails with a non-transient error, the attempts run out, the
// deadline passes or stop is requested; returns the last result.
template <class F>
auto with_retry(const retry_policy& policy, std::chrono::steady_clock::time_point deadline,
                std::stop_token stop, F&& f) -> decltype(f()) {
  for (int attempt = 0;; ++attempt) {
    auto r = f();
    if (r || !is_transient(r.error()) || attempt >= policy.max_attempts) return r;
    if (!backoff_sleep(policy, attempt, deadline, stop)) return r;
  }
}

// As with_retry up to the policy's attempts; past them, a transient failure is retried on
// until `patience` (not `deadline`) passes: a waiter rides out an outage as its session's
// renewals do. `deadline` lets the policy's attempts run past `patience` (a request begun
// at a waiter's deadline still finishes); stop ends the retries at once -- a waiter's stop
// includes its session's end (expired or closed), so an outage longer than the lease still
// ends the wait within the lease.
template <class F>
auto with_patient_retry(const retry_policy& policy, std::chrono::steady_clock::time_point deadline,
                        std::chrono::steady_clock::time_point patience, std::stop_token stop, F&& f)
    -> decltype(f()) {
  for (int attempt = 0;; attempt = attempt < 64 ? attempt + 1 : attempt) {
    auto r = f();
    if (r || !is_transient(r.error())) return r;
    if (!backoff_sleep(policy, attempt, attempt < policy.max_attempts ? deadline : patience, stop))
      return r;
  }
}

}  // namespace dlock::detail
