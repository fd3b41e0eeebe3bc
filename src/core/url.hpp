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
  std::vector<host_port> hosts;  // empty for sqlite:///path
  std::string path;              // with the leading '/', percent-decoded
  std::map<std::string, std::string, std::less<>> query;

  // The URL as given, with the password replaced by "***".
  std::string redacted;

  // The value of query parameter `key`, or `fallback`.
  std::string param(std::string_view key, std::string_view fallback = {}) const;
};

// Errors: invalid_argument naming the part that is wrong.
result<url> parse_url(std::string_view text);

// Percent-decoding of one URL component.
result<std::string> percent_decode(std::string_view s);

// A file path as a URL's path: percent-encodes what parse_url would take as syntax (%, ?, #),
// so a URL built from it (a suggestion in a message) can be pasted as given.
std::string encode_path(std::string_view path);

}  // namespace dlock::detail
