#pragma once
// A session's mark: a read lock on one byte of a file beside the database, taken as an
// open-file-description (OFD) lock. Unlike a pid, the mark lives as long as any process that
// shares the session's open file: a fork that does not exec keeps it (`dlock run`'s guard, which
// outlives a SIGKILLed dlock until it has killed CMD's process group), and it goes with the last
// of them, whatever kills them. A holder is alive while its process or its mark is, so a killed
// holder's lock is not free while a fork of it may still act as the holder (issue 12, item 1).
// Descriptors are close-on-exec: an exec'd command never keeps a session alive.
//
// The byte is a 62-bit hash of the session id: a collision only makes a dead holder look alive
// until its lease ends, never the other way round. The file (`<db>-sessions`) stays, empty,
// like SQLite's own -wal and -shm files. Best effort throughout: where it cannot be opened,
// the pid check alone decides, as it did before.

#include <string>
#include <string_view>

namespace dlock::detail::sqlite {

class session_mark {
 public:
  // Opens the mark file of database `db_path`, creating it (with the database's mode) if
  // `create`; viewers pass false and then only read marks.
  session_mark(const std::string& db_path, bool create);
  ~session_mark();
  session_mark(const session_mark&) = delete;
  session_mark& operator=(const session_mark&) = delete;

  // Marks `session` as this open file's; best effort.
  void set(std::string_view session) const noexcept;
  // Drops the mark for every process sharing this open file (a fork included).
  void clear(std::string_view session) const noexcept;
  // Whether an open file other than this one marks `session`.
  bool held_elsewhere(std::string_view session) const noexcept;

 private:
  int fd_{-1};
};

}  // namespace dlock::detail::sqlite
