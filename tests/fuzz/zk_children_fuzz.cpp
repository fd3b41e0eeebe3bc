// libFuzzer target: what ZooKeeper sends back for a lock node, namely its children's names
// (any bytes but '/', which separates them here) and each node's czxid and ctime from its
// Stat. The entries they stand for (every child is one), their order and their tokens are
// derived from these; nothing may crash, and every entry comes from a child whose meta was known.
// Each name also stands for a node's data (zk_value.hpp): a node never set has no value, and what
// set_value() writes reads back as it was written.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "backends/zookeeper/zk_queue.hpp"
#include "backends/zookeeper/zk_value.hpp"

namespace zk = dlock::detail::zk;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Header: czxid base (8 bytes), ctime base (8), which children are already known (1).
  if (size < 17) return 0;
  std::int64_t czxid = 0, ctime = 0;
  std::memcpy(&czxid, data, 8);
  std::memcpy(&ctime, data + 8, 8);
  std::uint8_t known = data[16];
  std::string_view rest(reinterpret_cast<const char*>(data + 17), size - 17);
  std::vector<std::string> names;
  for (std::size_t start = 0; start <= rest.size() && names.size() < 64;) {
    auto end = rest.find('/', start);
    if (end == std::string_view::npos) end = rest.size();
    names.emplace_back(rest.substr(start, end - start));
    (void)zk::unescape_lock_name(names.back());  // lock nodes are listed the same way
    start = end + 1;
  }
  for (std::size_t n = 0; n < names.size(); ++n) {
    const auto version = static_cast<std::int32_t>((known >> (n % 8)) & 1);
    auto d = zk::decode_data(names[n], version);
    if (version == 0 && !d.value.empty()) std::abort();  // never set: no value
    auto owner = names[n].substr(0, names[n].find('\0'));
    const auto& value = names[(n + 1) % names.size()];
    auto back = zk::decode_data(zk::encode_value(names[n], value), 1);
    if (back.owner != owner || back.value != value) std::abort();
  }
  std::size_t i = 0, with_meta = 0;
  auto items =
      zk::dlock_children(names, [&](const std::string& n) -> std::optional<zk::child_meta> {
        if (((known >> (i++ % 8)) & 1) == 0) return std::nullopt;
        auto k = static_cast<std::uint64_t>(i);
        return zk::child_meta{static_cast<std::int64_t>(static_cast<std::uint64_t>(czxid) + k),
                              static_cast<std::int64_t>(static_cast<std::uint64_t>(ctime) ^ k), n};
      });
  // Every child is a contender (zk_names.hpp): none is skipped, and each one's id leads back
  // to its node (a waiter watches the node its id names).
  if (items.size() != names.size()) std::abort();
  for (auto& c : items) {
    if (c.c.entry_id.empty()) std::abort();  // an entry needs an id
    if (!c.name.starts_with(zk::node_prefix(c.c.entry_id))) std::abort();
    if (!c.meta && (c.name.size() % 2) == 0) c.meta = zk::child_meta{czxid, ctime, c.name};
    if (c.meta) ++with_meta;
  }
  auto q = zk::children_to_queue(std::move(items));
  if (q.entries.size() != with_meta) std::abort();
  return 0;
}
