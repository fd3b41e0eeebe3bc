#include "backends/etcd/etcd_keys.hpp"

#include <algorithm>
#include <cstdio>

namespace dlock::detail::etcd {
namespace {

// The record's first line: a key whose value does not start with it is another client's.
constexpr std::string_view magic = "dlock1\n";

char kind_char(entry_kind k) {
  switch (k) {
    case entry_kind::shared:
      return 's';
    default:
      return 'e';  // permits and candidates are exclusive, what they are is in the id
  }
}

}  // namespace

std::string lock_prefix(std::string_view base, std::string_view lock) {
  std::string p(base);
  p += lock;
  p += '/';
  return p;
}

std::string lease_key(std::string_view lock_prefix, std::int64_t lease) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%llx",
                static_cast<unsigned long long>(static_cast<std::uint64_t>(lease)));
  return std::string(lock_prefix) + hex;
}

std::string prefix_range_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& c = end.back();
    if (static_cast<unsigned char>(c) < 0xff) {
      c = static_cast<char>(static_cast<unsigned char>(c) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string meta_prefix(std::string_view base, std::string_view lock) {
  std::string p(base);
  p += lock;
  p += '\0';
  p += "dlock/";
  return p;
}

// "dlock1\n<kind>\n<entry id>\n<owner>": the id is hex and '~' markers; the owner is last, so
// it may hold anything.
std::string entry_record(entry_kind kind, std::string_view entry_id, std::string_view owner) {
  std::string v(magic);
  v += kind_char(kind);
  v += '\n';
  v += entry_id;
  v += '\n';
  v += owner;
  return v;
}

bool holds_record(std::string_view value) { return value.starts_with(magic); }

std::optional<entry> read_entry(const listed_key& k) {
  if (k.suffix.empty() || k.suffix.find('/') != std::string_view::npos) return std::nullopt;
  entry e;
  e.token = static_cast<std::uint64_t>(k.create_revision);
  // A candidate's record is its companion's (its value is the leader's); any other dlock
  // entry's is its key's value.
  const std::string_view record = k.record ? std::string_view(*k.record) : k.value;
  if (record.starts_with(magic)) {
    auto rest = record.substr(magic.size());
    auto nl1 = rest.find('\n');
    auto nl2 = nl1 == std::string_view::npos ? nl1 : rest.find('\n', nl1 + 1);
    if (nl1 == 1 && nl2 != std::string_view::npos && nl2 > nl1 + 1) {
      e.kind = rest[0] == 's' ? entry_kind::shared : entry_kind::exclusive;
      e.id = std::string(rest.substr(nl1 + 1, nl2 - nl1 - 1));
      e.owner = std::string(rest.substr(nl2 + 1));
      // dlock creates the key empty (version 1); each set_value puts it once more.
      if (k.record && e.id.ends_with("~e")) {
        e.value = std::string(k.value);
        e.version = static_cast<std::uint64_t>(std::max<std::int64_t>(k.version - 1, 0));
      }
      return e;
    }
  }
  // Another client's key: a Go Mutex's (empty) is exclusive; a Go Election's candidate (its
  // value is the leader's value, set when it was created) is a candidate with a value.
  e.kind = entry_kind::exclusive;
  e.id = "etcd:" + std::string(k.suffix);
  e.owner = "etcd lease " + std::string(k.suffix);
  if (!k.value.empty()) {
    e.id += "~e";
    e.value = std::string(k.value);
    e.version = static_cast<std::uint64_t>(k.version);
  }
  return e;
}

std::optional<std::string> lock_of_key(std::string_view base, std::string_view key) {
  if (!key.starts_with(base)) return std::nullopt;
  key.remove_prefix(base.size());
  if (key.find('\0') != std::string_view::npos) return std::nullopt;  // a companion key
  auto slash = key.rfind('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == key.size()) {
    return std::nullopt;
  }
  return std::string(key.substr(0, slash));
}

}  // namespace dlock::detail::etcd
