#include "cli/warning_log.hpp"

#include "cli/common.hpp"

namespace dlock::cli {

namespace {

// "renewing the lease failed (retrying): <error>" -> "renewing the lease failed (retrying)";
// any other message is its own key.
std::string_view retry_headline(std::string_view message) {
  const auto at = message.find(" (retrying): ");
  return at == std::string_view::npos ? message : message.substr(0, at);
}

}  // namespace

void warning_log::on_log(dlock::log_level level, std::string_view message) {
  if (!armed_ || level < dlock::log_level::warning) return;
  std::lock_guard lk(mu_);
  // A retried step's warning carries the latest error, which changes as an outage goes on
  // (a reset, then a deadline): one spell of retries is one warning.
  const auto key = retry_headline(message);
  if (key == retry_headline(last_)) return;
  last_ = message;
  if (said_.size() < 100) said_.push_back(last_);
  print_error(level == dlock::log_level::warning ? "warning: " + last_ : last_);
}

bool warning_log::said(std::string_view prefix) {
  std::lock_guard lk(mu_);
  for (const auto& m : said_) {
    if (m.starts_with(prefix)) return true;
  }
  return false;
}

void warning_log::on_hold_state(std::string_view, dlock::fencing_token, dlock::hold_state state) {
  if (state != dlock::hold_state::held) return;
  std::lock_guard lk(mu_);
  last_.clear();
}

}  // namespace dlock::cli
