#include "backends/redis/redis_merge.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>

#include "core/verdict.hpp"

namespace dlock::detail::redis {
namespace {

struct per_view {
  std::size_t server;
  std::vector<entry> entries;  // token = that server's score
  std::vector<bool> holds;     // stamped there (and the recipe agrees)
  std::vector<bool> first;     // the recipe lets it hold there, stamped or not
  const node_view* raw;
};

struct seen {
  entry e;
  std::size_t present{0};
  std::size_t holds{0};
  std::size_t could_hold{0};  // masters where the recipe lets it hold, stamped or not
  std::vector<std::pair<std::size_t, const entry*>> copies;  // server, its copy
};

// The value with the highest version among the copies goes into s.e; a repair if fewer
// than `quorum` copies have it.
std::optional<value_repair> pick_value(seen& s, std::size_t quorum) {
  std::vector<const entry*> by_version;
  for (const auto& [server, e] : s.copies) by_version.push_back(e);
  std::ranges::sort(by_version, std::greater<>{}, &entry::version);
  if (by_version.empty() || by_version.front()->version == 0) return std::nullopt;
  s.e.value = by_version.front()->value;
  s.e.version = by_version.front()->version;
  value_repair r{s.e.id, s.e.value, s.e.version, {}, 0, {}, 0};
  for (const auto& [server, e] : s.copies) {
    if (e->version == r.version) {
      ++r.have;
    } else {
      r.servers.push_back(server);
    }
  }
  if (r.have >= quorum) return std::nullopt;
  if (by_version.size() >= quorum) {
    r.fallback_value = by_version[quorum - 1]->value;
    r.fallback_version = by_version[quorum - 1]->version;
  }
  return r;
}

// The entries ahead of queue[mine] that may stay there while it holds (stamp_request): the
// longest run just ahead of it with which the recipe says it holds. A whole-queue prefix
// goes at each step, so the result is always checked by decide() itself.
std::vector<std::string> may_stay_ahead(std::span<const entry> queue, std::size_t mine) {
  std::size_t start = 0;
  for (;;) {
    auto d = decide(queue.subspan(start, mine - start + 1), mine - start);
    if (d.holds) break;
    if (d.wait_count == 0) return {};  // refused (a mixed queue): only alone
    start += d.wait_first + d.wait_count;
  }
  std::vector<std::string> out;
  if (mine - start > max_stamp_ahead) return out;
  for (std::size_t i = start; i < mine; ++i) out.push_back(queue[i].id);
  return out;
}

}  // namespace

merge_result merge_views(const std::vector<std::optional<node_view>>& views,
                         const std::set<std::string, std::less<>>& mine, std::size_t quorum,
                         const std::map<std::string, std::uint64_t, std::less<>>& settled) {
  merge_result out;
  std::vector<per_view> pv;
  for (std::size_t s = 0; s < views.size(); ++s) {
    if (!views[s] || !views[s]->session_alive) continue;
    per_view v{s, {}, {}, {}, &*views[s]};
    for (const auto& ne : views[s]->entries) v.entries.push_back(ne.e);
    // An entry holds on a master only once that master stamped it: an unstamped entry may
    // still see an entry of its epoch placed ahead of it (redis_scripts.cpp, epoch()).
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      v.first.push_back(decide(v.entries, i).holds);
      v.holds.push_back(v.first.back() && views[s]->entries[i].grant.has_value());
    }
    pv.push_back(std::move(v));
  }
  if (pv.empty()) return out;
  out.stamps.resize(views.size());
  for (const auto& v : pv) {
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      if (v.raw->entries[i].grant || !mine.contains(v.entries[i].id)) continue;
      out.stamps[v.server].push_back({v.entries[i].id, may_stay_ahead(v.entries, i)});
    }
  }

  std::map<std::string, seen, std::less<>> all;
  for (const auto& v : pv) {
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      auto [it, fresh] = all.try_emplace(v.entries[i].id, seen{v.entries[i], 0, 0, 0, {}});
      it->second.e.token = std::max(it->second.e.token, v.entries[i].token);
      ++it->second.present;
      if (v.holds[i]) ++it->second.holds;
      if (v.first[i]) ++it->second.could_hold;
      it->second.copies.emplace_back(v.server, &v.entries[i]);
    }
  }
  for (auto& [id, s] : all) {
    if (auto r = pick_value(s, quorum)) out.repairs.push_back(std::move(*r));
  }
  const seen* winner = nullptr;
  bool someone_holds = false;
  for (const auto& [id, s] : all) {
    someone_holds = someone_holds || s.holds >= quorum;
    if (s.holds > 0 && (!winner || s.holds > winner->holds)) winner = &s;
  }
  const bool split = !someone_holds && winner != nullptr;
  const seen* majority_holder = nullptr;
  for (const auto& [id, s] : all) {
    if (s.holds >= quorum) majority_holder = &s;
  }
  // Per answering master (indexed like pv): each entry's position in its queue.
  std::vector<std::map<std::string_view, std::size_t>> at(pv.size());
  for (std::size_t k = 0; k < pv.size(); ++k) {
    for (std::size_t i = 0; i < pv[k].entries.size(); ++i) at[k].emplace(pv[k].entries[i].id, i);
  }

  std::vector<entry> holders;
  std::vector<entry> waiting;
  // Own waiters with what they wait on, emitted after the loop in reference order.
  struct own_wait {
    std::size_t ref_pos;
    std::optional<entry> blocker;
    entry self;
  };
  std::vector<own_wait> waits;
  for (const auto& id : mine) {
    auto it = all.find(id);
    if (it == all.end()) continue;  // gone everywhere: the engine reports it
    const seen& s = it->second;
    if (s.present < quorum) out.resubmit.push_back(id);
    // Stamps follow the recipe's decision on the listing before, so a waiter that became
    // first since (or was placed behind entries it had not seen) is stamped by the next.
    if (s.holds < quorum && s.could_hold >= quorum) out.restamp = true;
    if (s.holds >= quorum) {
      grant_check g{id, 0, {}, 0};
      if (auto st = settled.find(id); st != settled.end()) {
        g.token = st->second;  // fixed when it was granted; counters moved on since
      } else {
        g.fresh = true;
        // The highest counter of any master that answered, but a counter that is our own
        // grant there (the last token that master gave is ours).
        std::uint64_t top = 0;
        for (const auto& v : pv) {
          bool own_counter = false;
          for (std::size_t i = 0; i < v.entries.size(); ++i) {
            if (v.entries[i].id != id || !v.holds[i]) continue;
            const auto grant = v.raw->entries[i].grant.value_or(v.entries[i].token);
            g.token = std::max(g.token, grant);
            own_counter = grant == v.raw->counter;
          }
          if (!own_counter) top = std::max(top, v.raw->counter);
        }
        // Any other master's counter as high as our grants may be another holder's token (a
        // refusing master still holding it, while the master that granted it to that holder
        // lost its data, or the same number given by two masters): go above it. Enqueues do
        // not move counters (Redlock places entries by epoch), so equal is not ours.
        if (top >= g.token) g.token = top + 1;
        // Every answering master's counter is raised to the token, and a majority must
        // confirm, so the next holder (whose majority shares a master with it) gets a larger
        // one even if a master loses its data in between.
        std::size_t ok = 0;
        for (const auto& v : pv) {
          if (v.raw->counter >= g.token)
            ++ok;
          else
            g.raise_on.push_back(v.server);
        }
        g.needed = ok >= quorum ? 0 : quorum - ok;
      }
      entry e = s.e;
      e.token = g.token;
      holders.push_back(std::move(e));
      out.grants.push_back(std::move(g));
      continue;
    }
    if (split && s.holds > 0 && &s != winner) out.resubmit.push_back(id);
    // The entry to wait on must leave before we can hold, and waits must never close a
    // cycle. Masters order entries differently, so "the entry just ahead" differs between
    // them; waiting on whichever ranked best let waits close cycles nobody in them broke (a
    // on b, b on a; or a waiter that gained a majority elsewhere still waiting on an entry
    // now waiting on it), until the safety net, a quarter of the TTL, re-listed. So the
    // awaited entry is ahead of us on enough masters that we cannot hold a majority while it
    // stays (`need` of those that answered), and ahead of us on the reference master (the
    // first that answered): waits then all point forward in one order. Of those, the one
    // nearest us, as a single master's predecessor would be. Failing that, the majority
    // holder (it waits on no one). In a split no one named is sure to leave (each partial
    // holder waits to be re-queued, which its own session does when it lists again): a
    // partial holder names none, and the engine looks again shortly (wait_change). Any other
    // waiter still names a blocker, but never an entry its owner may re-queue (a split's
    // loser, or one on too few masters): a re-queue keeps the id and takes back the wake
    // token its removal left (session::requeue), so a waiter that blocks a moment late would
    // sleep through it. Its chain of waits ends at an entry that polls, or at one that
    // holds. With every waiter of a split looking again, 1000 waiters listed 1000 queues
    // every few milliseconds, and the masters served nothing else.
    auto may_requeue = [&](const entry& x) {
      auto it = all.find(x.id);
      return it == all.end() || it->second.present < quorum ||
             (split && it->second.holds > 0 && &it->second != winner);
    };
    std::optional<entry> blocker;
    std::size_t blocker_server = 0;
    if (!split || s.holds == 0) {
      const std::size_t need = pv.size() >= quorum ? pv.size() - quorum + 1 : 1;
      auto blocks_on = [&](const entry& x, std::size_t& where) {
        if (id == x.id) return std::size_t{0};
        if (s.e.kind == entry_kind::shared && x.kind == entry_kind::shared) return std::size_t{0};
        std::size_t n = 0;
        for (std::size_t k = 0; k < pv.size(); ++k) {
          auto a = at[k].find(x.id), b = at[k].find(id);
          if (a == at[k].end() || b == at[k].end() || a->second > b->second) continue;
          if (n++ == 0) where = pv[k].server;
        }
        return n;
      };
      if (auto mine_at = at[0].find(id); mine_at != at[0].end()) {
        for (std::size_t p = mine_at->second; p-- > 0 && !blocker;) {
          const entry& x = pv[0].entries[p];
          std::size_t where = 0;
          if (!may_requeue(x) && blocks_on(x, where) >= need) {
            blocker = x;
            blocker_server = where;
          }
        }
      }
      if (!blocker && majority_holder && majority_holder->e.id != id) {
        std::size_t where = 0;
        if (blocks_on(majority_holder->e, where) > 0) {
          blocker = majority_holder->e;
          blocker_server = where;
        }
      }
    }
    if (blocker) out.wait_node.emplace_back(blocker->id, blocker_server);
    auto mine_at = at[0].find(id);
    waits.push_back({mine_at == at[0].end() ? SIZE_MAX : mine_at->second, std::move(blocker), s.e});
  }
  // Each own waiter right behind the entry it waits on (the engine waits on the entry just
  // ahead), and an own entry first listed in its own place: the engine finds an entry by its
  // first occurrence, so an own waiter that another one waits on is emitted before it (the
  // blocker is ahead in reference order, or a holder), and shows again, second, as that one's
  // blocker.
  std::ranges::stable_sort(waits, {}, &own_wait::ref_pos);
  for (auto& w : waits) {
    if (w.blocker) {
      waiting.push_back(std::move(*w.blocker));
    } else {
      // No entry to name: exclusive, so whatever its kind the waiter does not hold. Placed
      // in `waiting` here; behind all holders below.
      out.unlisted.push_back({waiting.size(), entry_kind::exclusive, {}});
    }
    waiting.push_back(std::move(w.self));
  }
  if (mine.empty() || (holders.empty() && waiting.empty())) {
    // Status tools and observers: the first answering server's queue, with each entry's
    // value as merged, and the entry that holds on a majority (an election's leader) first.
    // A leader's token is its term's, from the term record it wrote once its fencing token
    // was settled (term_script): its grants are stamped one by one as its holder lists, and
    // its places are shared with the entries of its epoch. Until a record names it (or if no
    // candidate holds on a majority: a split, resolving), an election has no leader for
    // sure: an unlisted holder heads its queue, and its observers look again shortly.
    out.unlisted.clear();
    const seen* majority = nullptr;
    for (const auto& [id, s] : all) {
      if (s.holds >= quorum && s.e.kind == entry_kind::exclusive) majority = &s;
    }
    std::optional<std::uint64_t> term;
    if (majority) {
      if (auto st = settled.find(majority->e.id); st != settled.end()) term = st->second;
      for (const auto& v : pv) {
        if (v.raw->term && v.raw->term->first == majority->e.id)
          term = std::max(term.value_or(0), v.raw->term->second);
      }
    }
    const bool candidate = majority && majority->e.id.ends_with("~e");
    if (candidate && term) {
      // Only where the leader's entry is (a master without it refuses the record).
      term_repair fix{{majority->e.id, *term, {}, 0, false}, {}};
      for (const auto& v : pv) {
        const bool has_entry = std::ranges::any_of(
            majority->copies, [&](const auto& c) { return c.first == v.server; });
        if (has_entry && (!v.raw->term || v.raw->term->second < *term))
          fix.servers.push_back(v.server);
      }
      if (!fix.servers.empty()) out.term_fix = std::move(fix);
    }
    if (majority && (term || !candidate)) {
      out.entries.push_back(majority->e);
      // A candidate's term; this session's holder: the token it was granted (a status view
      // of its own hold); else (a lock's status) its highest grant as the masters stamped it,
      // not its place, which the entries of its epoch share (a holder whose grant was raised
      // above a master's higher counter holds a larger one, which no master records).
      std::uint64_t stamped = 0;
      for (const auto& v : pv) {
        for (std::size_t i = 0; i < v.entries.size(); ++i) {
          if (v.entries[i].id == majority->e.id && v.holds[i])
            stamped = std::max(stamped, v.raw->entries[i].grant.value_or(0));
        }
      }
      if (term) {
        out.entries.back().token = *term;
      } else if (stamped != 0) {
        out.entries.back().token = stamped;
      }
    } else if (candidate ||
               (!pv.front().entries.empty() && pv.front().entries.front().id.ends_with("~e"))) {
      majority = nullptr;
      out.unlisted.push_back({0, entry_kind::exclusive, {}});
    }
    for (const auto& e : pv.front().entries) {
      if (majority && e.id == majority->e.id) continue;
      auto it = all.find(e.id);
      out.entries.push_back(e);
      out.entries.back().value = it->second.e.value;
      out.entries.back().version = it->second.e.version;
    }
    return out;
  }
  for (auto& u : out.unlisted) u.before += holders.size();
  out.entries = std::move(holders);
  out.entries.insert(out.entries.end(), waiting.begin(), waiting.end());
  return out;
}

}  // namespace dlock::detail::redis
