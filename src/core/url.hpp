#pragma once
// Parsing of backend URLs: scheme://[user[:password]@]host[:port][,host[:port]...][/path][?k=v&...]

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace dlock::detail {

struct host_port {
  std::string host;
  std::uint16_t port{0};  // 0 when absent
};

struct url {
  std::string scheme;
  std::string user;
  std::string password;
  bool has_password{false};
  bool has_user_info{false};     // "user[:password]@" before the hosts, even an empty one
  std::vector<host_port> hosts;  // empty for sqlite:///path
  std::string path;              // with the leading '/', percent-decoded
  std::map<std::string, std::string, std::less<>> query;

  // The URL as given, with the password replaced by "***".
  std::string redacted;

  // The value of query parameter `key`, or `fallback`.
  std::string param(std::string_view key, std::string_view fallback = {}) const;
};

// Errors: invalid_argument naming the part that is wrong, quoting the URL as
// redact_url_text shows it. A password that holds '/', '?' or '#' unencoded is refused: the
// URL's syntax would cut it, and parts of it would be quoted as a host, path or query.
result<url> parse_url(std::string_view text);

// A URL inside a sentence ("acquire 'x' on URL: ..."): in angle brackets when it ends in ':'
// (a Redis prefix such as `?prefix=app:`), which the sentence's colon ran into (a tester's
// "...prefix=app:: 'p5' is used as a lock").
std::string url_in_text(std::string_view url);

// `text`, a URL as typed, valid or not, with what may be a password replaced by "***": from
// the first ':' after "scheme://" (unless a port follows it) to the last '@'; with no valid
// "scheme://" (redis//u:p@h, u:p@h), from the first ':' to the last '@'. Errs toward hiding
// more: for every message that quotes a URL the parser could not read.
std::string redact_url_text(std::string_view text);

// "host:port" for messages, an IPv6 address in brackets as a URL writes it ([::1]:6379).
std::string host_port_text(std::string_view host, unsigned port);

// Percent-decoding of one URL component.
result<std::string> percent_decode(std::string_view s);

// A file path as a URL's path: percent-encodes what parse_url would take as syntax (%, ?, #),
// so a URL built from it (a suggestion in a message) can be pasted as given.
std::string encode_path(std::string_view path);

}  // namespace dlock::detail
