#include "core/url.hpp"

#include <charconv>
#include <cstdio>
#include <utility>

namespace dlock::detail {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 3.1: schemes are case-insensitive; the canonical form is lower case.
std::string lower_scheme(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool valid_scheme(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

result<host_port> parse_host(std::string_view text, std::string_view whole) {
  host_port hp;
  std::string_view host = text;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {  // [::1]:port
    auto close = text.find(']');
    if (close == std::string_view::npos) {
      return fail(errc::invalid_argument, "URL '" + std::string(whole) + "': unclosed '[' in host");
    }
    host = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return fail(errc::invalid_argument,
                    "URL '" + std::string(whole) + "': bad host '" + std::string(text) + "'");
      }
      port = rest.substr(1);
    }
  } else if (auto colon = text.find(':'); colon != std::string_view::npos) {
    // The first ':': with the last, h:1:2 was host "h:1" (a name no resolver knows, exit 69),
    // not the bad port it is.
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (!port.empty() || text.ends_with(':')) {
    unsigned value = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) {
      return fail(errc::invalid_argument,
                  "URL '" + std::string(whole) + "': bad port '" + std::string(port) +
                      "' (want 1-65535" +
                      (port.find(':') != std::string_view::npos
                           ? std::string("; an IPv6 address goes in brackets: [::1]:6379)")
                           : std::string(")")));
    }
    hp.port = static_cast<std::uint16_t>(value);
  }
  if (host.empty()) {
    return fail(errc::invalid_argument, "URL '" + std::string(whole) + "': empty host");
  }
  hp.host = std::string(host);
  return hp;
}

// Where a password may be in `text`, as [begin, end) (empty if none): after the first ':'
// following "scheme://" and before any '/', '?' or '#', up to the last '@'. A ':' followed by
// digits and then the end, '/',
// '?', '#' or ',' is a port (host:6379?owner=a@b has no password). Messages mask this much.
//
// `before_query`: up to the last '@' before the first '?' or '#' that follows the password's
// first '@' instead, so that a query's own '@' (u:pw@h/?description=a@b) is not read as the
// password's; a '?' or '#' in the password still falls in the span (u:p?ss@h). What the parse
// checks; never used to mask, as it may end too early in a password that also holds an '@'.
std::pair<std::size_t, std::size_t> password_span(std::string_view text,
                                                  bool before_query = false) {
  auto at = text.rfind('@');
  auto sep = text.find("://");
  if (sep == std::string_view::npos || !valid_scheme(lower_scheme(text.substr(0, sep)))) {
    // No scheme the parser can read (redis//u:p@h, u:p@h, u:p@redis://h): no syntax tells a
    // password from a path, so all from the first ':' to the last '@' may be one.
    auto colon = text.find(':');
    if (at == std::string_view::npos || colon == std::string_view::npos || colon > at) {
      return {0, 0};
    }
    return {colon + 1, at};
  }
  auto start = sep + 3;
  if (at == std::string_view::npos || at < start) return {0, 0};
  // The user name ends the authority's first part: a ':' after a '/', '?' or '#' is a path's
  // or a query's (sqlite:///a:b/c@d.db; ?description=a:b@c).
  auto colon = text.find(':', start);
  if (colon == std::string_view::npos || colon > at || text.find_first_of("/?#", start) < colon) {
    return {0, 0};
  }
  auto digits_end = colon + 1;
  while (digits_end < text.size() && text[digits_end] >= '0' && text[digits_end] <= '9') {
    ++digits_end;
  }
  const bool port = digits_end > colon + 1 &&
                    (digits_end == text.size() ||
                     std::string_view("/?#,").find(text[digits_end]) != std::string_view::npos);
  if (port) return {0, 0};
  if (before_query) {
    auto first_at = text.find('@', colon);
    auto query = text.find_first_of("?#", first_at);
    if (query != std::string_view::npos) at = text.rfind('@', query);
  }
  return {colon + 1, at};
}

}  // namespace

std::string redact_url_text(std::string_view text) {
  auto [begin, end] = password_span(text);
  if (begin == end) return std::string(text);
  return std::string(text.substr(0, begin)) + "***" + std::string(text.substr(end));
}

std::string host_port_text(std::string_view host, unsigned port) {
  // A host name has no ':'; an IPv6 address always has one, and its last group would read as
  // the port.
  const bool ipv6 = host.find(':') != std::string_view::npos;
  return (ipv6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

std::string url::param(std::string_view key, std::string_view fallback) const {
  auto it = query.find(key);
  return it == query.end() ? std::string(fallback) : it->second;
}

std::string encode_path(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '%')
      out += "%25";
    else if (c == '?')
      out += "%3F";
    else if (c == '#')
      out += "%23";
    else
      out += c;
  }
  return out;
}

result<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 1 < s.size() ? hex_value(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return fail(errc::invalid_argument, "bad percent escape in '" + std::string(s) + "'");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

namespace {

result<url> parse_url_text(std::string_view text) {
  url u;
  auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
  // Control characters shown as \xNN: echoed raw, a tab or newline hid where the fault was.
  std::string shown;
  for (char c : redact_url_text(text)) {
    if (!control(c)) {
      shown += c;
      continue;
    }
    char esc[8];
    std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(c));
    shown += esc;
  }
  auto bad = [&](const std::string& what) {
    return fail(errc::invalid_argument, "URL '" + shown + "': " + what);
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!control(text[i])) continue;
    std::string where;
    // Looked for after the last '@' only: before it may be a password, never to be quoted
    // (the URL fuzzer found a '?' in one taken for the query).
    const auto at = text.rfind('@');
    const auto query = text.find('?', at == std::string_view::npos ? 0 : at);
    if (query != std::string_view::npos && i > query) {
      const auto start = text.find_last_of("?&", i) + 1;
      where =
          " (in parameter " + std::string(text.substr(start, text.find('=', start) - start)) + ")";
      for (auto& c : where) {
        if (control(c)) c = '?';
      }
    }
    return bad("control character at byte " + std::to_string(i + 1) + where);
  }
  auto sep = text.find("://");
  if (sep == std::string_view::npos) return bad("missing '://' (want scheme://...)");
  u.scheme = lower_scheme(text.substr(0, sep));
  // Quoted as shown: what precedes "://" may hold a password (u:p@redis://h).
  if (!valid_scheme(u.scheme))
    return bad("bad scheme '" + shown.substr(0, shown.find("://")) + "'");
  std::string_view rest = text.substr(sep + 3);
  if (auto [begin, end] = password_span(text, /*before_query=*/true);
      text.substr(begin, end - begin).find_first_of("/?#") != std::string_view::npos) {
    return bad(
        "the password holds '/', '?' or '#': percent-encode them (%2F, %3F, %23; and '@' "
        "as %40)");
  }

  // A fragment names nothing in a dlock URL, and taken as part of a file's path it named
  // another store without a word (a tester's sqlite:///d/u.db#frag opened "u.db#frag", where
  // a redis:// URL was refused).
  if (rest.find('#') != std::string_view::npos) {
    return bad(
        "'#' begins a URL fragment, which dlock URLs do not have: percent-encode it as %23 "
        "where it is part of a path or a value");
  }
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view authority = rest;
  std::string_view path;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    path = rest.substr(slash);
  }
  std::string redacted_authority(authority);
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    u.has_user_info = true;
    std::string_view user = userinfo;
    if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
      user = userinfo.substr(0, colon);
      // The hosts begin after the last '@', so an unencoded one in the password (p@ss) cut it
      // as the user meant it only by luck; refused like '/', '?' and '#', never guessed.
      if (userinfo.find('@', colon) != std::string_view::npos) {
        return bad("the password holds '@': percent-encode it as %40");
      }
      auto pw = percent_decode(userinfo.substr(colon + 1));
      if (!pw) return bad("bad password encoding");
      u.password = *pw;
      u.has_password = true;
      redacted_authority = std::string(user) + ":***@" + std::string(authority);
    }
    if (user.find('@') != std::string_view::npos) {
      return bad("the user name holds '@': percent-encode it as %40");
    }
    auto dec = percent_decode(user);
    if (!dec) return bad("bad user name encoding");
    u.user = *dec;
  }
  if (!authority.empty()) {
    std::size_t start = 0;
    while (start <= authority.size()) {
      auto comma = authority.find(',', start);
      auto part = authority.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      auto hp = parse_host(part, shown);
      if (!hp) return fail(hp.error());
      u.hosts.push_back(std::move(*hp));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  auto dpath = percent_decode(path);
  if (!dpath) return bad("bad path encoding");
  u.path = *dpath;

  while (!query.empty()) {
    auto amp = query.find('&');
    auto kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (kv.empty()) continue;
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return bad("query parameter '" + std::string(kv) + "' is not key=value");
    }
    auto k = percent_decode(kv.substr(0, eq));
    auto v = percent_decode(kv.substr(eq + 1));
    if (!k || !v) return bad("bad query encoding");
    // A parameter given twice or left empty is a typo or a merge gone wrong: guessing
    // which value was meant (or falling back to a default) would run with a setting nobody
    // chose.
    if (v->empty()) return bad("query parameter '" + *k + "' has no value (" + *k + "=)");
    if (auto [it, fresh] = u.query.emplace(*k, *v); !fresh) {
      return bad("query parameter '" + *k + "' is given twice ('" + it->second + "' and '" + *v +
                 "')");
    }
  }
  u.redacted = std::string(text.substr(0, sep)) + "://" + redacted_authority;
  u.redacted += text.substr(sep + 3 + rest.size() - path.size());  // raw path and query
  return u;
}

}  // namespace

result<url> parse_url(std::string_view text) {
  auto u = parse_url_text(text);
  // The parse read the password up to the last '@' before the query; messages mask up to the
  // last '@' of all. Where those differ and the parse failed, what a message would quote
  // between them may be a password that holds '@' and '?' unencoded: quote none of it.
  if (!u && password_span(text) != password_span(text, /*before_query=*/true)) {
    return fail(errc::invalid_argument,
                "URL '" + redact_url_text(text) +
                    "': does not parse, and an '@' after its '?' may be the password's: "
                    "percent-encode '@', '/', '?' and '#' in a password (%40, %2F, %3F, %23)");
  }
  return u;
}

std::string url_in_text(std::string_view url) {
  return url.ends_with(':') ? "<" + std::string(url) + ">" : std::string(url);
}

}  // namespace dlock::detail
