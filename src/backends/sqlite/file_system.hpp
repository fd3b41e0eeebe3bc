#pragma once
// Where a SQLite lock file may live. SQLite's locking relies on POSIX advisory locks and on a
// shared-memory file (WAL), which network file systems implement unreliably or not at all
// ("SQLite Over a Network, Caveats and Considerations", sqlite.org/useovernet.html): two hosts,
// or even two processes, could then both hold a lock. The same is true of FUSE file systems,
// whose locking is whatever the implementation does. So such a file is refused at open.

#include <string>

#include "core/result.hpp"

namespace dlock::detail::sqlite {

// The file system `path` (or, while it does not exist, its directory) is on, when it is one
// whose locking cannot be trusted: "nfs", "smb", "fuse", ...; empty for a local one (or when
// it cannot be told: the open then reports what is wrong with the path).
std::string untrusted_file_system(const std::string& path);

// unsupported, naming the path and the file system, for a file on such a file system.
result<void> check_local_file_system(const std::string& path);

}  // namespace dlock::detail::sqlite
