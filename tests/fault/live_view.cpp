#include "fault/live_view.hpp"

#include <fstream>

namespace dlock::fault {

void live_view::add_worker(const std::string& id, const std::string& log_path) {
  tail t;
  t.id = id;
  t.path = log_path;
  tails_.push_back(std::move(t));
}

void live_view::poll() {
  for (auto& t : tails_) {
    std::ifstream f(t.path, std::ios::binary);
    if (!f) continue;
    f.seekg(static_cast<std::streamoff>(t.offset));
    std::string chunk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    t.offset += chunk.size();
    t.partial += chunk;
    std::size_t start = 0;
    for (auto nl = t.partial.find('\n'); nl != std::string::npos;
         nl = t.partial.find('\n', start)) {
      if (auto e = parse(std::string_view(t.partial).substr(start, nl - start))) apply(t, *e);
      start = nl + 1;
    }
    t.partial.erase(0, start);
  }
}

void live_view::ended(const std::string& worker) {
  for (auto& t : tails_) {
    if (t.id == worker) t.gone = true;
  }
}

void live_view::apply(tail& t, const event& e) {
  if (t.gone) return;
  switch (e.what) {
    case step::acquire_start:
      t.waiting = true;
      break;
    case step::acquire_failed:
      t.waiting = false;
      break;
    case step::granted:
      t.waiting = false;
      t.holding = true;
      t.in_pause = false;
      t.token = e.token;
      grants_.push_back(e);
      break;
    case step::read:
      t.in_pause = t.holding && e.accepted;
      break;
    case step::write:
      t.in_pause = false;
      if (e.accepted) accepted_writes_.push_back(e);
      break;
    case step::lost:
    case step::released:
      t.holding = t.in_pause = false;
      break;
    default:
      break;
  }
}

std::optional<live_view::holder> live_view::holder_in_pause() const {
  for (auto& t : tails_) {
    if (!t.gone && t.holding && t.in_pause) return holder{t.id, t.token};
  }
  return std::nullopt;
}

std::optional<std::int64_t> live_view::first_grant_after(std::int64_t ns,
                                                         const std::string& except) const {
  std::optional<std::int64_t> best;
  for (auto& g : grants_) {
    if (g.ns > ns && g.worker != except && (!best || g.ns < *best)) best = g.ns;
  }
  return best;
}

bool live_view::newer_write_accepted(std::uint64_t token, std::int64_t ns) const {
  for (auto& w : accepted_writes_) {
    if (w.token > token && w.ns > ns) return true;
  }
  return false;
}

bool live_view::holding(const std::string& worker) const {
  for (auto& t : tails_) {
    if (t.id == worker) return t.holding;
  }
  return false;
}

bool live_view::waiting(const std::string& worker) const {
  for (auto& t : tails_) {
    if (t.id == worker) return t.waiting;
  }
  return false;
}

std::vector<std::string> live_view::waiters() const {
  std::vector<std::string> out;
  for (auto& t : tails_) {
    if (!t.gone && t.waiting) out.push_back(t.id);
  }
  return out;
}

}  // namespace dlock::fault
