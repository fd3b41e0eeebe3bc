#include "backends/zookeeper/zk_names.hpp"

#include <charconv>

namespace dlock::detail::zk {
namespace {

constexpr std::string_view write_marker = "-__WRIT__";
constexpr std::string_view read_marker = "-__READ__";
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

std::string child_prefix(std::string_view entry_id, entry_kind kind) {
  return "_c_" + std::string(entry_id) +
         std::string(kind == entry_kind::shared ? read_marker : write_marker);
}

std::optional<child_name> parse_child(std::string_view name) {
  if (!name.starts_with("_c_")) return std::nullopt;
  child_name c;
  auto pos = name.rfind(write_marker);
  auto marker = write_marker;
  c.kind = entry_kind::exclusive;
  if (auto r = name.rfind(read_marker);
      r != std::string_view::npos && (pos == std::string_view::npos || r > pos)) {
    pos = r;
    marker = read_marker;
    c.kind = entry_kind::shared;
  }
  if (pos == std::string_view::npos || pos <= 3) return std::nullopt;
  auto seq = name.substr(pos + marker.size());
  // The sequence is a signed 32-bit counter printed as %010d; it wraps negative.
  auto [end, ec] = std::from_chars(seq.data(), seq.data() + seq.size(), c.seq);
  if (ec != std::errc{} || end != seq.data() + seq.size() || seq.empty()) return std::nullopt;
  c.entry_id = std::string(name.substr(3, pos - 3));
  return c;
}

}  // namespace dlock::detail::zk
