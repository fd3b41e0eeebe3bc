#include "fault/checker.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace dlock::fault {
namespace {

enum class ending { open, released, lost, killed };

struct section {
  std::string worker;
  std::uint64_t token{0};
  std::int64_t start{0};
  std::int64_t end{std::numeric_limits<std::int64_t>::max()};
  ending how{ending::open};
  bool lost_seen{false};
  std::vector<const event*> writes;
  std::vector<std::int64_t> checks;  // when a loss-signal check that said "held" started
  // When its first accepted read had returned: the resource knew its token from then on.
  std::int64_t fenced_at{std::numeric_limits<std::int64_t>::max()};
};

std::string at(const event& e) {
  return e.worker + " (pid " + std::to_string(e.pid) + ") at " + std::to_string(e.ns) + " ns";
}

class checker {
 public:
  checker(const history& h, std::uint32_t limit) : h_(h), limit_(limit) {}

  check_result run() {
    auto events = sorted_events();
    std::map<std::string, std::vector<const event*>> by_worker;
    for (auto* e : events) by_worker[e->worker].push_back(e);
    for (auto& [w, evs] : by_worker) build_sections(evs);
    std::sort(sections_.begin(), sections_.end(),
              [](const section& a, const section& b) { return a.start < b.start; });
    check_tokens();
    if (limit_ > 1) {
      check_limit();
      for (auto& s : sections_) out_.lost_seen += s.lost_seen ? 1 : 0;
    } else {
      check_overlaps();
      check_register();
    }
    out_.sections = sections_.size();
    return std::move(out_);
  }

 private:
  void add(std::string rule, std::string detail) {
    out_.violations.push_back({std::move(rule), std::move(detail)});
  }

  std::vector<const event*> sorted_events() const {
    std::vector<const event*> v;
    for (auto& e : h_.events) v.push_back(&e);
    // Stable: a worker's lines keep their file order when timestamps tie.
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->ns < b->ns; });
    return v;
  }

  void close(section& s, const event& e, ending how) {
    if (s.end == std::numeric_limits<std::int64_t>::max()) s.end = e.ns;
    if (s.how == ending::open || how == ending::killed) s.how = how;
  }

  // Walks one worker's events in order, cutting them into critical sections (appended to
  // sections_; `cur` indexes the open one).
  void build_sections(const std::vector<const event*>& evs) {
    bool pending = false;
    std::size_t cur = none;
    for (auto* e : evs) {
      switch (e->what) {
        case step::acquire_start:
          if (cur != none) add("bad_sequence", "acquire_start while holding, " + at(*e));
          pending = true;
          break;
        case step::acquire_failed:
          pending = false;
          break;
        case step::granted:
          if (!pending) add("fake_grant", "granted without acquire_start, " + at(*e));
          if (e->token == 0) add("fake_grant", "granted with token 0, " + at(*e));
          if (cur != none) add("bad_sequence", "granted while already holding, " + at(*e));
          cur = sections_.size();
          sections_.emplace_back();
          sections_[cur].worker = e->worker;
          sections_[cur].token = e->token;
          sections_[cur].start = e->ns;
          pending = false;
          break;
        case step::read:
          if (cur == none) add("bad_sequence", "read outside a critical section, " + at(*e));
          if (!e->accepted) ++out_.refused_reads;
          if (cur != none && e->accepted) {
            auto& f = sections_[cur].fenced_at;
            f = std::min(f, e->ns);
          }
          break;
        case step::write:
          on_write(cur == none ? nullptr : &sections_[cur], *e);
          break;
        case step::checked:
          if (cur == none)
            add("bad_sequence", "check outside a critical section, " + at(*e));
          else
            sections_[cur].checks.push_back(e->ns);
          break;
        case step::lost:
          if (cur == none) break;  // a loss noticed after the section ended changes nothing
          sections_[cur].lost_seen = true;
          close(sections_[cur], *e, ending::lost);
          break;
        case step::released:
          if (cur == none) {
            add("bad_sequence", "released outside a critical section, " + at(*e));
            break;
          }
          close(sections_[cur], *e, ending::released);
          cur = none;
          break;
        case step::killed:
        case step::exited:
          pending = false;
          if (cur != none) close(sections_[cur], *e, ending::killed);
          cur = none;
          break;
        case step::stopped:
        case step::continued:
          break;
      }
    }
    if (cur != none) {
      add("unterminated", "section of token " + std::to_string(sections_[cur].token) + " of " +
                              sections_[cur].worker +
                              " never ended (no release, loss or kill logged)");
    }
  }

  void on_write(section* cur, const event& e) {
    if (!cur) {
      add("write_outside_section", "write of token " + std::to_string(e.token) + ", " + at(e));
      return;
    }
    if (e.token != cur->token) {
      add("wrong_token", "write with token " + std::to_string(e.token) + " in section of token " +
                             std::to_string(cur->token) + ", " + at(e));
    }
    if (cur->lost_seen) {
      add("write_after_lost",
          "write of token " + std::to_string(e.token) + " after its loss signal, " + at(e));
    }
    cur->writes.push_back(&e);
  }

  void check_tokens() {
    std::map<std::uint64_t, const section*> seen;
    const section* prev = nullptr;
    for (auto& s : sections_) {
      if (auto [it, fresh] = seen.emplace(s.token, &s); !fresh) {
        add("fake_grant", "token " + std::to_string(s.token) + " granted to both " +
                              it->second->worker + " and " + s.worker);
      }
      // With N permits, N waiters are granted by one release each at their own moment: their
      // logged grants may come in any order. Uniqueness (above) still holds.
      if (prev && s.token <= prev->token && limit_ == 1) {
        add("token_order", "grant of token " + std::to_string(s.token) + " to " + s.worker +
                               " at " + std::to_string(s.start) + " ns follows token " +
                               std::to_string(prev->token) + " of " + prev->worker);
      }
      prev = &s;
    }
  }

  void check_overlaps() {
    for (std::size_t i = 0; i < sections_.size(); ++i) {
      const auto& a = sections_[i];
      for (std::size_t j = i + 1; j < sections_.size() && sections_[j].start < a.end; ++j) {
        const auto& b = sections_[j];
        for (auto t : a.checks) {
          if (t > b.start) {
            add("held_after_regrant",
                a.worker + " (token " + std::to_string(a.token) + ") was told it held at " +
                    std::to_string(t) + " ns, after " + b.worker + " was granted token " +
                    std::to_string(b.token) + " at " + std::to_string(b.start) + " ns");
          }
        }
        if (a.how == ending::released) {
          add("overlap", a.worker + " (token " + std::to_string(a.token) + ") released at " +
                             std::to_string(a.end) + " ns but " + b.worker + " (token " +
                             std::to_string(b.token) + ") was granted at " +
                             std::to_string(b.start) + " ns");
          continue;
        }
        for (auto* w : a.writes) {
          // Stamped before the write and after the read: a write later than the read came
          // to a resource that had seen the newer token (checker.hpp).
          if (w->accepted && w->ns > b.fenced_at) {
            add("stale_write_accepted",
                a.worker + " wrote with token " + std::to_string(a.token) + " at " +
                    std::to_string(w->ns) + " ns, after " + b.worker + " (granted token " +
                    std::to_string(b.token) + " at " + std::to_string(b.start) +
                    " ns) had read through the fence at " + std::to_string(b.fenced_at) +
                    " ns, and the resource accepted it");
          }
        }
      }
    }
  }

  // Sections that ended normally and were open at `t` (granted before, ended after), other
  // than `skip`.
  std::size_t live_at(std::int64_t t, const section* skip) const {
    std::size_t n = 0;
    for (const auto& s : sections_) {
      if (&s != skip && s.how == ending::released && s.start <= t && s.end > t) ++n;
    }
    return n;
  }

  void check_limit() {
    for (const auto& b : sections_) {
      if (b.how == ending::released && live_at(b.start, &b) >= limit_) {
        add("overlap", b.worker + " (token " + std::to_string(b.token) + ") was granted at " +
                           std::to_string(b.start) + " ns while " + std::to_string(limit_) +
                           " other holders of " + std::to_string(limit_) +
                           " permits held theirs to a normal release");
      }
      if (b.how == ending::released) continue;
      for (auto t : b.checks) {
        if (live_at(t, &b) >= limit_) {
          add("held_after_regrant", b.worker + " (token " + std::to_string(b.token) +
                                        ") was told it held at " + std::to_string(t) +
                                        " ns, while " + std::to_string(limit_) +
                                        " live holders held all the permits");
          break;
        }
      }
    }
  }

  void check_register() {
    std::map<std::uint64_t, const section*> by_token;
    for (auto& s : sections_) {
      by_token.emplace(s.token, &s);
      if (s.lost_seen) ++out_.lost_seen;
    }
    std::int64_t expect = 0;
    // Logged writes, to be matched one-to-one with the register's records.
    std::multiset<std::tuple<std::uint64_t, std::int64_t, bool>> logged;
    for (auto& s : sections_) {
      for (auto* w : s.writes) logged.emplace(w->token, w->value, w->accepted);
    }
    for (auto& r : h_.writes) {
      if (r.accepted) {
        ++out_.accepted_writes;
        if (r.value != expect + 1) {
          add("lost_update", "accepted write #" + std::to_string(r.seq) + " (token " +
                                 std::to_string(r.token) + ") stored " + std::to_string(r.value) +
                                 " over " + std::to_string(expect));
        }
        expect = r.value;
        if (!by_token.contains(r.token)) {
          add("fake_grant",
              "register accepted token " + std::to_string(r.token) + " that no worker was granted");
        }
      } else {
        ++out_.refused_writes;
      }
      if (auto it = logged.find({r.token, r.value, r.accepted}); it != logged.end()) {
        logged.erase(it);
        continue;
      }
      auto s = by_token.find(r.token);
      bool died_unlogged = s != by_token.end() && s->second->how == ending::killed;
      if (!died_unlogged) {
        add("log_mismatch", "register write #" + std::to_string(r.seq) + " (token " +
                                std::to_string(r.token) + ", pid " + std::to_string(r.pid) +
                                ") appears in no worker log");
      }
    }
    for (auto& [token, value, accepted] : logged) {
      add("log_mismatch", "logged write of token " + std::to_string(token) + " value " +
                              std::to_string(value) + (accepted ? " accepted" : " refused") +
                              " is not in the register's record");
    }
    if (h_.final_value != static_cast<std::int64_t>(out_.accepted_writes)) {
      add("final_value", "register holds " + std::to_string(h_.final_value) + " after " +
                             std::to_string(out_.accepted_writes) + " accepted writes");
    }
  }

  static constexpr std::size_t none = static_cast<std::size_t>(-1);
  const history& h_;
  const std::uint32_t limit_;
  std::vector<section> sections_;
  check_result out_;
};

}  // namespace

check_result check(const history& h, std::uint32_t limit) { return checker(h, limit).run(); }

std::string describe(const std::vector<violation>& v, std::size_t max_lines) {
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < max_lines; ++i) {
    out += "  " + v[i].rule + ": " + v[i].detail + "\n";
  }
  if (v.size() > max_lines) out += "  ... and " + std::to_string(v.size() - max_lines) + " more\n";
  return out;
}

}  // namespace dlock::fault
