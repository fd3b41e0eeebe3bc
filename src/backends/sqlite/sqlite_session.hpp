#pragma once
// The backend_session over one SQLite lock file (the design is at the top of
// sqlite_backend.cpp). Its member functions are split by job: the engine's calls are in
// sqlite_session.cpp; reading a queue, checking a holder and reaping dead sessions in
// sqlite_queue.cpp. mu_ guards the connection and the state, so one session serves many
// threads.

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/sqlite/local_process.hpp"
#include "backends/sqlite/local_wake.hpp"
#include "backends/sqlite/session_mark.hpp"
#include "backends/sqlite/sqlite_db.hpp"
#include "core/backend.hpp"

namespace dlock::detail::sqlite {

class session final : public backend_session {
 public:
  session(db d, session_info info);

  // Checks this boot's id and, unless observing, prepares the schema and writes the session
  // row (and its mark). Its waits for a busy file end by `open_until`.
  result<void> start(steady::time_point open_until);

  // A holder's process is checked by pid (and start time) on this host.
  capabilities caps() const noexcept override {
    return {.scope = reach::host,
            .durable_tokens = true,
            .frees_dead_process_at_once = true,
            .ends_other_sessions = true,
            .permits = true,
            .values = true};
  }

  result<std::vector<check_finding>> diagnose() override;
  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override;
  result<queue_view> list(std::string_view lock) override;
  result<void> remove(std::string_view lock, std::string_view id) override;
  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override;
  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override;
  // Woken by the removal's datagram, a waiter checks that one row and, when it is gone, tells
  // the engine so (`left`, or `left_head` with nothing stored ahead of it): the engine then
  // decides from its last listing, not a new one, which with a long queue read every entry
  // and each session's process again. Only while our own session row exists (else unknown).
  result<awaited_fate> wait_knowing(std::string_view lock, const entry& awaited,
                                    steady::time_point deadline, std::stop_token stop) override;
  result<std::uint64_t> set_value(std::string_view lock, std::string_view id,
                                  std::string_view value) override;
  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override;
  result<steady::time_point> keep_alive() override;
  void close() noexcept override;
  result<void> end_session(std::string_view session_id) override;
  result<std::vector<std::string>> lock_names(std::string_view prefix) override;

 private:
  // Lease time: CLOCK_BOOTTIME (see sqlite_backend.cpp).
  static std::int64_t now_ms() { return boot_clock_ms(); }

  // An observer may open a file that a first writer is still creating (or an empty file):
  // no tables yet is an empty queue to it, as a file that does not exist is.
  bool no_tables_yet(const failure& f) const {
    return info_.observe_only && f.message.find("no such table: dlock_") != std::string::npos;
  }

  template <class F>
  result<void> write_txn(F&& body) {
    if (closed_) return fail(errc::session_closed, "sqlite session closed");
    if (in_txn_) return body();  // nested: part of the enclosing transaction
    if (auto same = same_file(); !same) return same;
    // Prepared once, like every statement here: sqlite3_exec would parse them each time.
    if (auto r = run_cached("BEGIN IMMEDIATE"); !r) return r;
    in_txn_ = true;
    auto r = body();
    in_txn_ = false;
    if (r) r = run_cached("COMMIT");
    if (!r) (void)run_cached("ROLLBACK");
    return r;
  }

  result<void> run_cached(const char* sql) {
    auto s = db_.prepare(sql);
    if (!s) return fail(s.error());
    return s->run();
  }
  result<void> session_live();
  // An entry of ours deleted by another process (a DELETE by hand; `unlock --force` ends the
  // whole session instead) let the next waiter in while we still held: the session ends as
  // expired, so its holders are told at this renewal rather than at their release.
  result<void> own_entries_kept();
  // The file this session opened must still be the one at its path. Deleted or replaced
  // (rm, mv over it), it is not the file anyone who starts now will use: they take its locks
  // afresh, from token 1. So from then on this session fails as expired, and its holders get
  // their loss signal at the next renewal or request. Sticky: the file does not come back.
  // Likewise when the file gets a second name (a hard link): a process that opened that name
  // kept its own WAL and index (file_system.hpp) and may have been granted our locks, so our
  // holds are in doubt even once the link is gone again.
  result<void> same_file();
  // An observer's same_file(): reopens on the file now at the path.
  void follow_file();
  // Why this session's file is no longer safe to use; empty while it is.
  std::string file_trouble() const;
  void notify_all(const std::vector<std::string>& entry_ids);
  result<void> delete_session(const std::string& id, std::vector<std::string>& removed);

  // sqlite_queue.cpp: what is alive, and the reaping of what is not.
  bool holder_alive(const process_id& p, std::string_view session) const;
  // gone: no longer stored; dead: stored, but its lease ended or its process is gone (a
  // listing drops it and reaps it).
  enum class presence { gone, dead, alive };
  result<presence> entry_presence(std::string_view lock, const entry& e);
  result<bool> any_ahead(std::string_view lock, const entry& e);
  // The wait of wait_knowing and wait_any: `left` once an awaited entry is no longer stored,
  // `left_head` when nothing is stored ahead of it either.
  result<awaited_fate> wait_for(std::string_view lock, std::span<const entry> awaited,
                                steady::time_point deadline, std::stop_token stop);
  result<queue_view> read_queue(std::string_view lock);
  void reap(const std::vector<std::string>& sessions);

  std::mutex mu_;
  db db_;
  const std::string file_{db_.file_name()};  // absolute, symlinks resolved: the name SQLite uses
  session_info info_;
  const std::string boot_{boot_id()};
  local_wake wake_;
  session_mark marks_;
  bool closed_{false};
  bool in_txn_{false};
  std::string lost_;  // non-empty: file_trouble() found this, and the session is over
  // Our stored entries, id -> (lock, token), until we remove them: each renewal checks they
  // are still there (own_entries_kept).
  std::map<std::string, std::pair<std::string, std::int64_t>, std::less<>> own_;
};

}  // namespace dlock::detail::sqlite
