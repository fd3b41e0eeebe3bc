// A SQLite session's file must stay the one at its path (sqlite_session.hpp, same_file): a
// holder's session ends when it does not; an observer follows the path to the new file.
#include <filesystem>

#include "backends/sqlite/file_system.hpp"
#include "backends/sqlite/sqlite_session.hpp"

namespace dlock::detail::sqlite {

result<void> session::same_file() {
  if (info_.observe_only) {
    follow_file();
    return {};
  }
  if (lost_.empty()) lost_ = file_trouble();
  if (lost_.empty()) return {};
  return fail(errc::session_expired, lost_);
}

// An observer holds nothing, so it need not end with its file: it reads whatever file is now at
// the path. Opened as a snapshot (no writer had made the WAL index, which this user may not
// create), it reopens once one has. A tester's read-only `dlock observe` printed "no leader"
// for ever while `dlock leader` saw one; an observer whose file was deleted and made again
// stayed on the old one.
void session::follow_file() {
  std::error_code ec;
  if (!db_.moved() && !db_.wal_replaced() &&
      !(db_.snapshot() && std::filesystem::exists(db_.path() + "-wal", ec))) {
    return;
  }
  const auto busy_ms = static_cast<int>(info_.request_timeout.count());
  // Not there (yet): the old view stays until the next read tries again.
  if (auto d = db::open_read_only(db_.path(), busy_ms, steady::now() + info_.request_timeout)) {
    db_ = std::move(*d);
  }
}

std::string session::file_trouble() const {
  if (db_.moved()) {
    return "the lock file " + db_.path() +
           " was deleted, renamed or replaced while sqlite session " + info_.id +
           " used it: its holds are lost (a new file starts its fencing tokens again)";
  }
  if (db_.wal_replaced()) {
    return "the lock file's write-ahead log " + db_.file_name() +
           "-wal was deleted or replaced while sqlite session " + info_.id +
           " used it: its holds are lost (a process that opens the file now does not see them, "
           "and its fencing tokens may repeat)";
  }
  // Of the file SQLite has open: not moved, so the name it opened is still that file's.
  if (auto links = hard_links(file_); links > 1) {
    return "the lock file " + db_.path() + " " + hard_links_problem(db_.path(), links) +
           "; sqlite session " + info_.id +
           " used it meanwhile, so its holds are lost (a process that opened another name may "
           "have been granted its locks)";
  }
  return {};
}

}  // namespace dlock::detail::sqlite
