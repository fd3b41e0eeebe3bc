#include "backends/zookeeper/zk_value.hpp"

namespace dlock::detail::zk {

std::string encode_value(std::string_view owner, std::string_view value) {
  std::string out(owner.substr(0, owner.find('\0')));
  out += '\0';
  out += value;
  return out;
}

entry_data decode_data(std::string data, std::int32_t version) {
  if (version == 0) return {std::move(data), {}};
  auto nul = data.find('\0');
  if (nul == std::string::npos) return {{}, std::move(data)};
  return {data.substr(0, nul), data.substr(nul + 1)};
}

}  // namespace dlock::detail::zk
