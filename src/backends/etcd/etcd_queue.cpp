#include "backends/etcd/etcd_queue.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "backends/etcd/etcd_keys.hpp"

namespace dlock::detail::etcd {
namespace {

// A shared entry reads back to the last writer, however far: a page of this many first, the
// whole queue if the writer is further.
constexpr std::size_t shared_page = 32;

// The entries of `keys` (oldest first), each with its companion's record when `record_of`
// finds one. A waiter watches a key from just after the revision it was read at: the key
// existed then, so its deletion comes later. (The watch itself starts at the present and
// checks the key once in place: watched_key.)
template <class RecordOf>
read_view build(const lock_ranges& r, std::span<const key_value* const> keys, std::int64_t read_at,
                RecordOf&& record_of) {
  read_view out;
  for (const auto* kv : keys) {
    listed_key k{std::string_view(kv->key).substr(r.prefix.size()), kv->value, kv->create_revision,
                 kv->version, record_of(*kv)};
    auto e = read_entry(k);
    if (!e) continue;  // a key of a nested name
    out.keys.push_back(
        {e->id, {kv->key, std::max(kv->create_revision, read_at + 1), kv->create_revision}, false});
    out.q.entries.push_back(std::move(*e));
  }
  return out;
}

// The keys of two pages of one range (oldest first, newest first), oldest first, once each.
std::vector<const key_value*> merged(const range_result& oldest, const range_result& newest) {
  std::vector<const key_value*> all;
  for (const auto& kv : oldest.kvs) all.push_back(&kv);
  for (const auto& kv : newest.kvs) all.push_back(&kv);
  std::ranges::sort(all, {}, &key_value::create_revision);
  auto dup = std::ranges::unique(all, {}, &key_value::create_revision);
  all.erase(dup.begin(), dup.end());
  return all;
}

// Whether two pages of one range (oldest first, newest first) may miss keys between them.
bool gap_between(const range_result& oldest, const range_result& newest) {
  return oldest.more && newest.more && !oldest.kvs.empty() && !newest.kvs.empty() &&
         oldest.kvs.back().create_revision < newest.kvs.back().create_revision;
}

}  // namespace

lock_ranges::lock_ranges(std::string_view base, std::string_view lock)
    : prefix(lock_prefix(base, lock)),
      end(prefix_range_end(prefix)),
      meta(meta_prefix(base, lock)),
      meta_end(prefix_range_end(meta)) {}

std::vector<txn_op> lock_ranges::reads() const {
  return {range_op(prefix, end, 0, false, 0), range_op(meta, meta_end, 0, false, 0)};
}

std::vector<txn_op> lock_ranges::window_reads(std::size_t head, std::size_t ahead,
                                              std::int64_t upto) const {
  const auto h = static_cast<std::int64_t>(head), a = static_cast<std::int64_t>(ahead) + 1;
  return {range_op(prefix, end, h, false, upto), range_op(prefix, end, a, true, upto)};
}

txn_op lock_ranges::head_read(verdict_reads need) const {
  return range_op(prefix, end, static_cast<std::int64_t>(need.head), false, 0);
}

std::vector<txn_op> lock_ranges::window_reads(verdict_reads need, std::int64_t upto) const {
  return window_reads(need.head, need.ahead == 0 ? shared_page : need.ahead, upto);
}

verdict_reads reads_for(entry_kind kind, std::string_view entry_id) {
  std::vector<entry> one(1);
  one[0].id = std::string(entry_id);
  one[0].kind = kind == entry_kind::shared ? kind : entry_kind::exclusive;
  read_recipes(one);
  return reads_of(one[0]);
}

read_view whole_view(const lock_ranges& r, const range_result& keys, const range_result& metas) {
  std::map<std::string_view, const std::string*> records;
  for (const auto& m : metas.kvs) {
    records[std::string_view(m.key).substr(r.meta.size())] = &m.value;
  }
  std::vector<const key_value*> all;
  for (const auto& kv : keys.kvs) all.push_back(&kv);
  auto view = build(r, all, keys.revision, [&](const key_value& kv) -> const std::string* {
    auto m = records.find(std::string_view(kv.key).substr(r.prefix.size()));
    return m == records.end() ? nullptr : m->second;
  });
  if (!view.keys.empty()) view.keys[0].head = true;
  return view;
}

// A dlock candidate's companion is created in the Txn that creates its key, so it has the
// key's create revision: a key's record is the companion read with the same suffix and
// revision. A key with no record in its value and no companion read is another client's if
// every companion of its revision's neighbourhood
// was read: the companions read are the oldest and the newest ones (up to the bound), so
// that is true up to the oldest page's newest and from the newest page's oldest.
std::optional<read_view> window_view(const lock_ranges& r, std::span<const range_result> pages) {
  if (pages.size() != 2 && pages.size() != 4) return std::nullopt;
  const bool companions = pages.size() == 4;
  const auto keys = merged(pages[0], pages[1]);
  const auto metas = companions ? merged(pages[2], pages[3]) : std::vector<const key_value*>{};
  const bool metas_gap = companions && gap_between(pages[2], pages[3]);
  std::map<std::int64_t, const key_value*> by_revision;
  for (const auto* m : metas) by_revision[m->create_revision] = m;
  bool unmatched = false;
  auto view = build(r, keys, pages[0].revision, [&](const key_value& kv) -> const std::string* {
    auto m = by_revision.find(kv.create_revision);
    if (m != by_revision.end() && std::string_view(m->second->key).substr(r.meta.size()) ==
                                      std::string_view(kv.key).substr(r.prefix.size())) {
      return &m->second->value;
    }
    if (metas_gap && !holds_record(kv.value) &&
        kv.create_revision > pages[2].kvs.back().create_revision &&
        kv.create_revision < pages[3].kvs.back().create_revision) {
      unmatched = true;
    }
    return nullptr;
  });
  if (unmatched) return std::nullopt;
  // The gap lies before the newest page's oldest key.
  if (gap_between(pages[0], pages[1])) {
    const auto first_of_run = pages[1].kvs.back().create_revision;
    std::size_t at = 0;
    while (at < view.q.entries.size() &&
           static_cast<std::int64_t>(view.q.entries[at].token) < first_of_run) {
      ++at;
    }
    view.gap_at = at;
  }
  // The first entry is the head unless the gap is in front of it.
  if (!view.keys.empty() && view.gap_at != std::size_t{0}) view.keys[0].head = true;
  return view;
}

result<std::vector<range_result>> with_companions(client& c, const lock_ranges& r,
                                                  std::vector<range_result> pages,
                                                  std::string_view own_key,
                                                  std::string_view own_meta_key,
                                                  std::string_view own_record) {
  range_result metas;
  metas.revision = pages[0].revision;
  std::vector<txn_op> reads;
  std::vector<std::string_view> asked;
  for (const auto& page : pages) {
    for (const auto& kv : page.kvs) {
      if (kv.key == own_key) {
        metas.kvs.push_back(
            {std::string(own_meta_key), std::string(own_record), kv.create_revision});
        continue;
      }
      if (holds_record(kv.value) || std::ranges::find(asked, kv.key) != asked.end()) continue;
      asked.push_back(kv.key);
      reads.push_back(range_op(r.meta + kv.key.substr(r.prefix.size())));
    }
  }
  if (!reads.empty()) {
    auto t = c.txn({}, reads, {});
    if (!t) return fail(t.error());
    for (auto& got : t->ranges) {
      for (auto& kv : got.kvs) metas.kvs.push_back(std::move(kv));
    }
  }
  std::ranges::sort(metas.kvs, {}, &key_value::create_revision);
  auto dup = std::ranges::unique(metas.kvs, {}, &key_value::create_revision);
  metas.kvs.erase(dup.begin(), dup.end());
  pages.push_back(metas);
  pages.push_back(std::move(metas));
  return pages;
}

std::vector<std::string> lock_names_of(std::string_view base, std::span<const key_value> kvs) {
  std::set<std::string> names;
  for (const auto& kv : kvs) {
    // Only keys in the lock layout: "<base><name>/<hex of the key's own lease>".
    auto name = lock_of_key(base, kv.key);
    if (!name || kv.lease == 0) continue;
    if (kv.key != lease_key(lock_prefix(base, *name), kv.lease)) continue;
    names.insert(std::move(*name));
  }
  return {names.begin(), names.end()};
}

void seen_keys::remember(std::string_view lock, const std::vector<listed_key_of>& keys) {
  std::lock_guard g(mu_);
  if (count_ > 16384) {
    keys_.clear();
    count_ = 0;
  }
  auto l = keys_.find(lock);
  if (l == keys_.end())
    l = keys_.emplace(std::string(lock), std::map<std::string, listed_key_of>{}).first;
  for (const auto& k : keys) {
    auto [it, added] = l->second.try_emplace(k.id, k);
    if (added) {
      ++count_;
    } else {
      it->second.key = k.key;
      it->second.head = it->second.head || k.head;
    }
  }
}

std::optional<listed_key_of> seen_keys::find(std::string_view lock, const std::string& id) {
  std::lock_guard g(mu_);
  auto l = keys_.find(lock);
  if (l == keys_.end()) return std::nullopt;
  auto k = l->second.find(id);
  if (k == l->second.end()) return std::nullopt;
  return k->second;
}

bool seen_keys::forget(std::string_view lock, const std::string& id) {
  std::lock_guard g(mu_);
  auto l = keys_.find(lock);
  if (l == keys_.end()) return false;
  auto k = l->second.find(id);
  if (k == l->second.end()) return false;
  const bool head = k->second.head;
  l->second.erase(k);
  --count_;
  if (l->second.empty()) keys_.erase(l);
  return head;
}

}  // namespace dlock::detail::etcd
