#pragma once
// Where a SQLite lock file may live. SQLite's locking relies on POSIX advisory locks and on a
// shared-memory file (WAL), which network file systems implement unreliably or not at all
// ("SQLite Over a Network, Caveats and Considerations", sqlite.org/useovernet.html): two hosts,
// or even two processes, could then both hold a lock. The same is true of FUSE file systems,
// whose locking is whatever the implementation does. So such a file is refused at open.

#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace dlock::detail::sqlite {

// The file system `path` (or, while it does not exist, its directory) is on, when it is one
// whose locking cannot be trusted: "nfs", "smb", "fuse", ...; empty for a local one (or when
// it cannot be told: the open then reports what is wrong with the path).
std::string untrusted_file_system(const std::string& path);

// unsupported, naming the path and the file system, for a file on such a file system.
result<void> check_local_file_system(const std::string& path);

// SQLite keeps a database's WAL and shared-memory index beside the name it was opened by
// (FILE-wal, FILE-shm), so processes that open one file by two names (hard links) each keep
// their own: neither sees the other's locks or commits, both can hold one lock, and the file
// is corrupted (sqlite.org/howtocorrupt.html, 2.4). A symlink is no second name: SQLite
// resolves it. So a file with more than one name is never used.

// How many names the file at `path` has (stat(2): a symlink counts as its target); 0 when
// it cannot be stat'ed, e.g. because it does not exist yet.
std::uint64_t hard_links(const std::string& path);

// "has N hard links: ..., why that breaks exclusion, and how to find the other names".
std::string hard_links_problem(const std::string& path, std::uint64_t links);

// unsupported, naming the file, when it has more than one name.
result<void> check_single_name(const std::string& path);

}  // namespace dlock::detail::sqlite
