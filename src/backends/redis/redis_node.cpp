#include "backends/redis/redis_node.hpp"

#include <hiredis/hiredis.h>

#include <array>
#include <cstdio>
#include <map>
#include <thread>

#include "backends/redis/redis_sentinel.hpp"
#include "core/caller_deadline.hpp"
#include "core/open_budget.hpp"
#include "core/url.hpp"

namespace dlock::detail::redis {
namespace {

using steady = std::chrono::steady_clock;
constexpr std::size_t max_idle = 16;

// SHA1s of the scripts, learnt from the first SCRIPT LOAD; the same on every server.
std::mutex sha_mu;
// Never destroyed: background threads may send scripts while the host exits.
std::map<std::string_view, std::string, std::less<>>& sha_cache() {
  static auto* m = new std::map<std::string_view, std::string, std::less<>>;
  return *m;
}

bool is_error(const reply_ptr& r) { return r && r->type == REDIS_REPLY_ERROR; }

}  // namespace

result<std::unique_ptr<connection>> node::take(until_t until, std::stop_token stop) {
  {
    std::lock_guard lk(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    // A server that just refused us is not dialled again at once by every caller.
    if (steady::now() < down_until_) return fail(down_failure_);
  }
  std::optional<std::chrono::milliseconds> cap;
  if (until) {
    cap = std::chrono::ceil<std::chrono::milliseconds>(*until - steady::now());
    if (cap->count() <= 0)
      return fail(errc::backend_unavailable, target_.where + ": no time left to connect");
  }
  auto c = sentinels_.empty() ? connection::open(target_, cap, stop) : open_master(cap, stop);
  if (!c && is_transient(c.error())) {
    std::lock_guard lk(mu_);
    down_until_ = steady::now() + std::min(target_.timeout, std::chrono::milliseconds{100});
    down_failure_ = c.error();
  }
  return c;
}

void node::use_sentinels(std::vector<target> sentinels, std::string name) {
  std::lock_guard lk(mu_);
  sentinels_ = std::move(sentinels);
  master_name_ = std::move(name);
}

std::uint64_t node::epoch() const {
  std::lock_guard lk(mu_);
  return epoch_;
}

std::string node::master_address() const {
  std::lock_guard lk(mu_);
  return sentinels_.empty() ? host_port_text(target_.host, target_.port) : address_;
}

void node::forget_connections() {
  std::lock_guard lk(mu_);
  idle_.clear();
  idle_waiting_.clear();
}

result<std::unique_ptr<connection>> node::open_master(std::optional<std::chrono::milliseconds> cap,
                                                      std::stop_token stop) {
  std::size_t first;
  {
    std::lock_guard lk(mu_);
    first = first_sentinel_;
  }
  auto found = find_master(sentinels_, first, master_name_, target_, cap, stop);
  if (!found) return fail(found.error());
  std::lock_guard lk(mu_);
  first_sentinel_ = first;
  if (found->replid != replid_) {
    // Another master (or this one restarted empty): pooled connections to the old one go.
    if (!replid_.empty()) ++epoch_;
    replid_ = found->replid;
    idle_.clear();
    idle_waiting_.clear();
  }
  address_ = found->address;
  return std::move(found->conn);
}

result<void> node::await_replicas(connection& c, const request& req, until_t until) {
  // Within an open, no longer than what is left of its budget (a tester's open_timeout of
  // 1.5 s took 2.2 s with ?replicas=1 and no replica).
  const auto wait = connect_bound(req.replica_timeout);
  std::vector<std::string> argv{"WAIT", std::to_string(req.replicas), std::to_string(wait.count())};
  auto r = c.call(argv, until);
  if (!r) return fail(r.error());
  if ((*r)->type == REDIS_REPLY_ERROR)
    return fail(error_reply_failure(c.where(), reply_text(r->get())));
  if ((*r)->type != REDIS_REPLY_INTEGER)
    return fail(errc::protocol_error, c.where().where + ": malformed WAIT reply");
  if ((*r)->integer < req.replicas) {
    return fail(errc::backend_unavailable,
                c.where().where + ": only " + std::to_string((*r)->integer) + " of " +
                    std::to_string(req.replicas) + " replicas acknowledged within " +
                    std::to_string(wait.count()) + " ms (?replicas=" +
                    std::to_string(req.replicas) + "): the write does not count");
  }
  return {};
}

void node::give(std::unique_ptr<connection> c) {
  if (!c || c->broken()) return;
  std::lock_guard lk(mu_);
  if (idle_.size() < max_idle) idle_.push_back(std::move(c));
}

result<void> node::send(connection& c, const request& req, until_t until) {
  if (!req.script) return c.send(req.argv);
  std::string_view sha;  // entries of sha_cache are never replaced, so the view stays valid
  {
    std::lock_guard lk(sha_mu);
    if (auto it = sha_cache().find(req.script->name); it != sha_cache().end()) sha = it->second;
  }
  if (sha.empty()) {
    std::vector<std::string> load{"SCRIPT", "LOAD", std::string(req.script->text)};
    auto r = c.call(load, until);
    if (!r) return fail(r.error());
    if (is_error(*r) || (*r)->type != REDIS_REPLY_STRING) {
      return fail(error_reply_failure(target_, reply_text(r->get())));
    }
    std::lock_guard lk(sha_mu);
    sha = sha_cache().try_emplace(req.script->name, reply_text(r->get())).first->second;
  }
  return c.send({"EVALSHA", sha}, req.argv);
}

result<reply_ptr> node::finish(connection& c, const request& req, reply_ptr r, until_t until) {
  if (req.script && is_error(r) && reply_text(r.get()).starts_with("NOSCRIPT")) {
    // SCRIPT FLUSH or a restart emptied the cache: EVAL sends the text and re-caches it.
    auto sent = c.send({"EVAL", req.script->text}, req.argv);
    auto again = sent ? c.receive(until) : result<reply_ptr>(fail(sent.error()));
    if (!again) return again;
    r = std::move(*again);
  }
  if (is_error(r)) {
    if (reply_text(r.get()).starts_with("READONLY")) {
      // A master demoted by a failover: its connections are of no more use; a new one asks
      // the sentinels again (node::take).
      c.interrupt();
      forget_connections();
    }
    return fail(error_reply_failure(c.where(), reply_text(r.get())));
  }
  if (req.replicas > 0) {
    if (auto w = await_replicas(c, req, until); !w) return fail(w.error());
  }
  return r;
}

result<reply_ptr> node::run(const request& req, std::stop_token stop, until_t until) {
  until = within_caller_deadline(until);
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    {
      std::lock_guard lk(mu_);
      reused = !idle_.empty();
    }
    auto c = take(until, stop);
    if (!c) return fail(c.error());
    result<reply_ptr> r = fail(errc::cancelled);
    {
      connection* raw = c->get();
      std::stop_callback cb(stop, [raw] { raw->interrupt(); });
      auto sent = send(**c, req, until);
      r = sent ? (*c)->receive(until) : result<reply_ptr>(fail(sent.error()));
    }
    if (stop.stop_requested()) return fail(errc::cancelled, target_.where + ": cancelled");
    if (r) {
      auto out = finish(**c, req, std::move(*r), until);
      give(std::move(*c));
      return out;
    }
    // A pooled connection the server closed meanwhile (restart, idle timeout) fails on first
    // use; every request here is idempotent, so one retry on a fresh connection is safe.
    if (!reused || attempt > 0 || (*c)->timed_out() || !is_transient(r.error())) return r;
    std::lock_guard lk(mu_);
    idle_.clear();
    idle_waiting_.clear();
  }
}

result<std::optional<std::string>> node::pop_wake(const std::string& key, steady::time_point until,
                                                  std::stop_token stop, bool keep,
                                                  const std::string& alive_key) {
  using popped = std::optional<std::string>;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - steady::now());
  if (left < std::chrono::milliseconds{1} || stop.stop_requested()) return popped{};
  result<std::unique_ptr<connection>> c = fail(errc::backend_unavailable);
  {
    std::lock_guard lk(mu_);
    if (!idle_waiting_.empty()) {
      c = std::move(idle_waiting_.back());
      idle_waiting_.pop_back();
    }
  }
  if (!c) c = take({}, stop);
  if (!c && stop.stop_requested()) return popped{};
  if (!c) return fail(c.error());
  // The socket timeout only has to outlast BLPOP's own; it is changed only when it falls
  // short or is far too long (a dead server would then be noticed late).
  auto needed = left + target_.timeout;
  if ((*c)->timeout() < needed || (*c)->timeout() > 2 * needed) {
    if (auto t = (*c)->set_timeout(needed + needed / 4); !t) return fail(t.error());
  }
  // Redis times blocked commands out in its cron, every 1/hz (100 ms by default), so a BLPOP
  // ends up to that long past its timeout. A long wait asks the server for that much less (the
  // caller waits again for the rest); a short one is cut off here at `until`, its connection
  // closed as for a cancel (the caller re-reads the queue, so a token popped meanwhile is not
  // needed).
  constexpr std::chrono::milliseconds cron{100};
  const auto server_left = left > 2 * cron ? left - cron : left;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f", static_cast<double>(server_left.count()) / 1000.0);
  auto argv = keep ? std::vector<std::string>{"BLMOVE", key, key, "LEFT", "LEFT", secs}
                   : std::vector<std::string>{"BLPOP", key, secs};
  std::atomic<bool> stopped{false};
  bool alive_gone = false;
  result<reply_ptr> r = fail(errc::backend_unavailable);
  {
    connection* raw = c->get();
    std::stop_callback cb(stop, [&stopped, raw] {
      stopped = true;
      raw->interrupt();
    });
    if (alive_key.empty()) {
      r = (*c)->call(argv, until);
    } else {
      // Pipelined: the server runs the PTTL as soon as the pop returns, so the fact costs no
      // round trip of its own.
      const std::array<std::string, 2> pttl{"PTTL", alive_key};
      if (auto s = (*c)->send(argv); !s) {
        r = fail(s.error());
      } else if (auto s2 = (*c)->send(pttl); !s2) {
        r = fail(s2.error());
      } else {
        r = (*c)->receive(until);
        if (r) {
          auto ttl = (*c)->receive(steady::now() + target_.timeout);
          if (!ttl) {
            r = fail(ttl.error());
          } else if ((*ttl)->type == REDIS_REPLY_INTEGER && (*ttl)->integer == -2) {
            alive_gone = true;
          }
        }
      }
    }
  }
  if (stopped) return popped{};
  if (!r && (*c)->timed_out() && steady::now() >= until) return popped{};
  if (!r) {
    // The server likely closed every pooled connection (a restart): do not wait on them.
    std::lock_guard lk(mu_);
    idle_waiting_.clear();
    return fail(r.error());
  }
  if (is_error(*r)) return fail(error_reply_failure(target_, reply_text(r->get())));
  popped value;
  if ((*r)->type == REDIS_REPLY_ARRAY && (*r)->elements == 2) {
    value = std::string(reply_text((*r)->element[1]));
  } else if ((*r)->type == REDIS_REPLY_STRING) {
    value = std::string(reply_text(r->get()));  // BLMOVE's reply: the element itself
  }
  if (!(*c)->broken()) {
    std::lock_guard lk(mu_);
    if (idle_waiting_.size() < max_idle) idle_waiting_.push_back(std::move(*c));
  }
  if (value && alive_gone) value = std::string();
  return value;
}

std::unique_ptr<connection> node::take_idle() {
  std::lock_guard lk(mu_);
  if (idle_.empty()) return nullptr;
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

namespace {

// A connection to each of `nodes`: pooled ones first, then the others dialled at once, each
// on a thread of its own when more than one must be. Dialled one after another, each frozen
// master's login waited its full bound in turn (a tester's open with two of three frozen).
std::vector<result<std::unique_ptr<connection>>> take_all(std::span<node* const> nodes,
                                                          until_t until, std::stop_token stop) {
  std::vector<result<std::unique_ptr<connection>>> out;
  std::vector<std::size_t> dial;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    out.emplace_back(nodes[i]->take_idle());
    if (!*out.back()) dial.push_back(i);
  }
  if (dial.size() == 1) out[dial[0]] = nodes[dial[0]]->take(until, stop);
  if (dial.size() <= 1) return out;
  // The open's budget is the opening thread's (open_budget.hpp): the dialling threads carry it.
  const auto bound = open_attempt_bound;
  std::vector<std::jthread> threads;
  for (auto i : dial) {
    threads.emplace_back([&, i] {
      open_attempt_bound = bound;
      out[i] = nodes[i]->take(until, stop);
    });
  }
  threads.clear();  // joins
  return out;
}

}  // namespace

std::vector<result<reply_ptr>> run_all(std::span<node* const> nodes, std::span<const request> reqs,
                                       until_t until, std::stop_token stop) {
  until = within_caller_deadline(until);
  std::vector<result<reply_ptr>> out;
  out.reserve(nodes.size());
  if (nodes.size() == 1) {
    out.push_back(nodes[0]->run(reqs[0], stop, until));
    return out;
  }
  std::vector<std::unique_ptr<connection>> conns(nodes.size());
  // Interrupts only connections still in our hands (one given back may serve another call).
  std::mutex conns_mu;
  std::stop_callback cb(stop, [&] {
    std::lock_guard lk(conns_mu);
    for (auto& c : conns) {
      if (c) c->interrupt();
    }
  });
  auto taken = take_all(nodes, until, stop);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    out.emplace_back(fail(errc::backend_unavailable));
    auto& c = taken[i];
    if (!c) {
      out[i] = fail(c.error());
      continue;
    }
    if (auto s = nodes[i]->send(**c, reqs[i], until); !s) {
      out[i] = fail(s.error());
      continue;
    }
    std::lock_guard lk(conns_mu);
    conns[i] = std::move(*c);
  }
  // Every master had its request at about the same moment: once one's reply timed out, the
  // others' time is up too, and only replies already in hand count. Read one by one with each
  // its own socket timeout, two frozen masters of three cost an open 8 times the per-master
  // bound (a tester's `dlock run -n`, 16 s against 2 s).
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!conns[i]) continue;
    auto r = conns[i]->receive(until);
    if (!r && conns[i]->timed_out() && !until) until = steady::now();
    bool retry = !r && !conns[i]->timed_out() && is_transient(r.error());
    out[i] = r ? nodes[i]->finish(*conns[i], reqs[i], std::move(*r), until) : fail(r.error());
    std::unique_ptr<connection> done;
    {
      std::lock_guard lk(conns_mu);
      done = std::move(conns[i]);
    }
    nodes[i]->give(std::move(done));
    if (stop.stop_requested()) {
      out[i] = fail(errc::cancelled, nodes[i]->where().where + ": cancelled");
      continue;
    }
    if (retry) out[i] = nodes[i]->run(reqs[i], stop, until);  // see node::run: a stale connection
  }
  return out;
}

}  // namespace dlock::detail::redis
