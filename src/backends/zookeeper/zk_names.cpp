#include "backends/zookeeper/zk_names.hpp"

#include <charconv>
#include <limits>

namespace dlock::detail::zk {
namespace {

// Curator's: InterProcessMutex's lock name, InterProcessReadWriteLock's writer and reader.
constexpr std::string_view lock_marker = "-lock-";
constexpr std::string_view write_marker = "-__WRIT__";
constexpr std::string_view read_marker = "-__READ__";
// kazoo's: Lock and WriteLock, ReadLock (kazoo/recipe/lock.py).
constexpr std::string_view kazoo_lock_marker = "__lock__";
constexpr std::string_view kazoo_read_marker = "__rlock__";
// ZooKeeper appends the sequence as %010d (a signed 32-bit counter: it wraps negative).
constexpr std::size_t seq_digits = 10;
constexpr char hex[] = "0123456789ABCDEF";

// Decodes the UTF-8 sequence at s[i]; 0 code point and length 1 for an invalid byte.
std::pair<char32_t, std::size_t> decode_utf8(std::string_view s, std::size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return {0, 1};
  char32_t cp = b & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    auto c = static_cast<unsigned char>(s[i + k]);
    if ((c >> 6) != 0x2) return {0, 1};
    cp = (cp << 6) | (c & 0x3F);
  }
  return {cp, n};
}

// Code points ZooKeeper's PathUtils.validatePath accepts (it checks UTF-16 code units, so
// anything outside the BMP arrives as rejected surrogates).
bool zk_accepts(char32_t cp) {
  return !((cp >= 0x80 && cp <= 0x9F) || (cp >= 0xD800 && cp <= 0xF8FF) || cp >= 0xFFF0);
}

void put_escaped(std::string& out, unsigned char b) {
  out += '%';
  out += hex[b >> 4];
  out += hex[b & 15];
}

// The whole of `s` as a sequence number.
std::optional<std::int64_t> parse_seq(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The last occurrence of `marker` in `name` followed by nothing but a sequence number.
struct marked {
  std::size_t pos;
  std::int64_t seq;
};
std::optional<marked> find_marker(std::string_view name, std::string_view marker) {
  auto pos = name.rfind(marker);
  if (pos == std::string_view::npos) return std::nullopt;
  auto seq = parse_seq(name.substr(pos + marker.size()));
  if (!seq) return std::nullopt;
  return marked{pos, *seq};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string escape_lock_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  if (name == "." || name == "..") {
    for (char c : name) put_escaped(out, static_cast<unsigned char>(c));
    return out;
  }
  for (std::size_t i = 0; i < name.size();) {
    auto b = static_cast<unsigned char>(name[i]);
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7F || b == '/' || b == '%')
        put_escaped(out, b);
      else
        out += static_cast<char>(b);
      ++i;
      continue;
    }
    auto [cp, n] = decode_utf8(name, i);
    bool keep = cp != 0 && zk_accepts(cp);
    for (std::size_t k = 0; k < n; ++k) {
      if (keep)
        out += name[i + k];
      else
        put_escaped(out, static_cast<unsigned char>(name[i + k]));
    }
    i += n;
  }
  return out;
}

std::optional<std::string> unescape_lock_name(std::string_view component) {
  std::string out;
  out.reserve(component.size());
  for (std::size_t i = 0; i < component.size(); ++i) {
    if (component[i] != '%') {
      out += component[i];
      continue;
    }
    if (i + 2 >= component.size()) return std::nullopt;
    int hi = hex_value(component[i + 1]), lo = hex_value(component[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  // Only canonical escapes: each lock has exactly one node name.
  if (escape_lock_name(out) != component) return std::nullopt;
  return out;
}

std::string entry_prefix(std::string_view entry_id) { return "_c_" + std::string(entry_id) + "-"; }

std::string child_prefix(std::string_view entry_id, entry_kind kind, bool mutex) {
  auto marker = kind == entry_kind::shared ? read_marker : mutex ? lock_marker : write_marker;
  return "_c_" + std::string(entry_id) + std::string(marker);
}

child_name parse_child(std::string_view name) {
  child_name c;
  if (name.starts_with("_c_")) {
    // The marker closest to the end wins: an id never holds one, but be exact about it.
    std::optional<marked> best;
    for (auto marker : {lock_marker, write_marker, read_marker}) {
      auto m = find_marker(name, marker);
      if (m && (!best || m->pos > best->pos)) {
        best = m;
        c.kind = marker == read_marker ? entry_kind::shared : entry_kind::exclusive;
      }
    }
    if (best && best->pos > 3) {
      c.entry_id = std::string(name.substr(3, best->pos - 3));
      c.seq = best->seq;
      return c;
    }
  }
  c.foreign = true;
  c.entry_id = std::string(name) + "/";
  c.kind = entry_kind::exclusive;
  if (auto m = find_marker(name, kazoo_read_marker)) {
    c.kind = entry_kind::shared;
    c.seq = m->seq;
  } else if (auto k = find_marker(name, kazoo_lock_marker)) {
    c.seq = k->seq;
  } else if (auto seq = name.size() >= seq_digits ? parse_seq(name.substr(name.size() - seq_digits))
                                                  : std::nullopt) {
    c.seq = *seq;
  } else {
    // No sequence to order it by: ahead of every entry, so it excludes until deleted.
    c.seq = std::numeric_limits<std::int64_t>::min();
  }
  return c;
}

std::string node_prefix(std::string_view entry_id) {
  if (entry_id.ends_with('/')) return std::string(entry_id.substr(0, entry_id.size() - 1));
  return entry_prefix(entry_id);
}

}  // namespace dlock::detail::zk
