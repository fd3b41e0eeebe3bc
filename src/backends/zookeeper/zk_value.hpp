#pragma once
// What an entry node's data holds, and how an election's value and version fit in it without
// changing what any other reader finds there.
//
//  - At creation the data is the owner ("host pid=N description"), as dlock always wrote it;
//    Curator's nodes hold what Curator writes (the client's address). Neither is ever set, so
//    their stat.version is 0.
//  - set_value() rewrites it as "<owner>\0<value>": the owner first, so a reader that takes
//    the whole data for the owner (a dlock without values, a status tool) still starts with
//    it, then one NUL -- which the owner written there never contains (it is cut at its first
//    NUL) -- then the value's bytes.
//  - The entry's version is the node's stat.version: ZooKeeper adds one per setData, so it is
//    0 for a node never set (every node of an older dlock or of another client) and 1 after
//    the first set -- entry::version exactly, with nothing stored for it. A node that was
//    never set has no value, whatever its data holds.

#include <cstdint>
#include <string>
#include <string_view>

namespace dlock::detail::zk {

struct entry_data {
  std::string owner;
  std::string value;
};

// The data set_value() writes.
std::string encode_value(std::string_view owner, std::string_view value);

// What a node's data holds, given its stat.version. A node set without the NUL (by hand,
// through zkCli) holds only a value.
entry_data decode_data(std::string data, std::int32_t version);

}  // namespace dlock::detail::zk
