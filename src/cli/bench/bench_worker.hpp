#pragma once
// The client side of the multi-client scenarios. The same loops run in a re-executed child
// process (`__bench-worker`, results written to a file) or, for memory:// whose locks live
// inside one process, in threads of the benchmark process itself.

#include <cstdint>
#include <string>
#include <vector>

namespace dlock::cli {

// One acquire+release cycle of one client, steady-clock nanoseconds (comparable across
// processes on Linux: CLOCK_MONOTONIC is system-wide). `released` is read just before
// unlock() is called, so the next client's grant must come after it: a later grant that reads
// an earlier time would be two holders at once. granted == 0: not granted in time.
struct cycle_record {
  std::int64_t asked{0};
  std::int64_t granted{0};
  std::int64_t released{0};
  int client{0};
};

struct worker_job {
  std::string role;  // "contended" or "waiters"
  std::string url;
  std::string lock;
  int first_client{0};
  int threads{1};              // waiters: handles (threads) on this process's one session
  std::int64_t start_ns{0};    // contended: cycles begin at this instant
  std::int64_t end_ns{0};      // no new cycle (contended) / wait (waiters) after this
  std::int64_t max_cycles{0};  // contended: per client
  std::string out;             // result file (process mode)
  int permits{0};              // waiters: a permit of a semaphore of N instead of the lock
  bool elect{false};           // waiters: a candidate of an election instead of the lock
};

// Runs the job in this process. Errors (a session that would not open, a failing backend)
// end the job early and are returned in `error`; the records so far are kept.
// Grants in time order; handoffs are consecutive grants to different clients.
struct grant_sequence {
  std::vector<cycle_record> recs;
  std::vector<std::int64_t> handoff_ns;  // release started -> next client's grant
  std::size_t handoffs{0};
  std::size_t overlaps{0};  // a grant read before the previous holder began to release
};
// Drops records not granted, or granted at or after `end_ns`.
grant_sequence sequence_grants(std::vector<cycle_record> recs, std::int64_t end_ns);

std::vector<cycle_record> run_worker_job(const worker_job& job, std::string& error);

std::vector<std::string> worker_args(const worker_job& job);
bool parse_worker_args(const std::vector<std::string>& args, worker_job& job);

void write_records(const std::string& path, const std::vector<cycle_record>& recs,
                   const std::string& error);
// Appends the file's records to `out`; false if the file is missing or says the worker failed.
bool read_records(const std::string& path, std::vector<cycle_record>& out, std::string& error);

}  // namespace dlock::cli
