#include "backends/redis/redis_merge.hpp"

#include <algorithm>
#include <map>
#include <span>

#include "core/verdict.hpp"

namespace dlock::detail::redis {
namespace {

struct per_view {
  std::size_t server;
  std::vector<entry> entries;  // token = that server's score
  std::vector<bool> holds;
  const node_view* raw;
};

struct seen {
  entry e;
  std::size_t present{0};
  std::size_t holds{0};
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
    per_view v{s, {}, {}, &*views[s]};
    for (const auto& ne : views[s]->entries) v.entries.push_back(ne.e);
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      v.holds.push_back(decide(v.entries, i).holds);
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
      auto [it, fresh] = all.try_emplace(v.entries[i].id, seen{v.entries[i], 0, 0, {}});
      it->second.e.token = std::max(it->second.e.token, v.entries[i].token);
      ++it->second.present;
      if (v.holds[i]) ++it->second.holds;
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

  std::vector<entry> holders;
  std::vector<entry> waiting;
  for (const auto& id : mine) {
    auto it = all.find(id);
    if (it == all.end()) continue;  // gone everywhere: the engine reports it
    const seen& s = it->second;
    if (s.present < quorum) out.resubmit.push_back(id);
    if (s.holds >= quorum) {
      grant_check g{id, 0, {}, 0};
      if (auto st = settled.find(id); st != settled.end()) {
        g.token = st->second;  // fixed when it was granted; counters moved on since
      } else {
        std::uint64_t top = 0;  // the highest counter of any master that answered
        for (const auto& v : pv) {
          top = std::max(top, v.raw->counter);
          for (std::size_t i = 0; i < v.entries.size(); ++i) {
            if (v.entries[i].id != id || !v.holds[i]) continue;
            g.token = std::max(g.token, v.raw->entries[i].grant.value_or(v.entries[i].token));
          }
        }
        // A master's counter above every grant of ours may be another holder's token (a
        // refusing master still holding it, while the master that granted it to that holder
        // lost its data): go above it.
        if (top > g.token) g.token = top + 1;
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
    // Of the entries that block us (one per server where we do not hold), wait on the one
    // closest to being removed: the one holding on most servers (the majority holder, when
    // there is one), then the one blocking us on most servers. Its removal pushes a token on
    // the server we pick; the tokens of the others stay for the next wait.
    std::optional<entry> blocker;
    std::map<std::string, std::pair<std::size_t, std::size_t>, std::less<>> candidates;
    for (const auto& v : pv) {
      auto pos = find_entry(v.entries, id);
      if (!pos || v.holds[*pos]) continue;
      auto d = decide(v.entries, *pos);
      if (d.wait_count == 0) continue;
      const auto& b = v.entries[d.wait_first];
      auto [c, fresh] = candidates.try_emplace(b.id, v.server, 0);
      ++c->second.second;
      auto rank = [&](const std::string& x, std::size_t blocks) {
        auto a = all.find(x);
        return std::pair{a == all.end() ? 0 : a->second.holds, blocks};
      };
      if (!blocker ||
          rank(b.id, c->second.second) > rank(blocker->id, candidates.at(blocker->id).second)) {
        blocker = b;
      }
    }
    if (blocker) {
      out.wait_node.emplace_back(blocker->id, candidates.at(blocker->id).first);
      waiting.push_back(std::move(*blocker));
    } else {
      // No entry to name: exclusive, so whatever its kind the waiter does not hold. Placed
      // in `waiting` here; behind all holders below.
      out.unlisted.push_back({waiting.size(), entry_kind::exclusive, {}});
    }
    waiting.push_back(s.e);
  }
  if (mine.empty() || (holders.empty() && waiting.empty())) {
    // Status tools and observers: the first answering server's queue, with each entry's
    // value as merged, and the entry that holds on a majority (an election's leader) first.
    // Its token is the largest of its queue positions (scores): fixed for the term and
    // larger for a later one, unlike its grants, which masters stamp one by one as its
    // holder lists (the holder's fencing token is computed from those: grant_check). If no
    // candidate holds on a majority (a split, resolving), an election has no leader for
    // sure: an unlisted holder heads its queue, and its observers look again shortly.
    out.unlisted.clear();
    const seen* majority = nullptr;
    for (const auto& [id, s] : all) {
      if (s.holds >= quorum && s.e.kind == entry_kind::exclusive) majority = &s;
    }
    if (majority) {
      out.entries.push_back(majority->e);
    } else if (!pv.front().entries.empty() && pv.front().entries.front().id.ends_with("~e")) {
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
