#pragma once
// A lock database shared by the users of one group: created group-writable in a setgid
// directory, whatever the creator's umask.

#include <string>

namespace dlock::detail::sqlite {

// If `path` does not exist and its directory has the setgid bit, creates it empty with group
// read/write added to the mode the umask gives (SQLite then gives its -wal and -shm files the
// same mode). Best effort: on any failure SQLite creates the file as usual.
void create_group_shared(const std::string& path);

}  // namespace dlock::detail::sqlite
