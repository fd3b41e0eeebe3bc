#include "cli/bench/bench_fleet.hpp"

namespace dlock::cli {

bool process_local(const std::string& url) { return url.starts_with("memory:"); }

worker_fleet::~worker_fleet() {
  for (auto& j : threads_) {
    if (j->t.joinable()) j->t.join();
  }
}

bool worker_fleet::start(worker_job job, std::string& error) {
  if (in_process_) {
    auto j = std::make_unique<thread_job>();
    auto* raw = j.get();
    j->t = std::thread([raw, job] { raw->recs = run_worker_job(job, raw->error); });
    threads_.push_back(std::move(j));
    return true;
  }
  if (dir_.path().empty()) {
    error = "cannot create a temporary directory for worker results";
    return false;
  }
  job.out = dir_.file("worker-" + std::to_string(files_.size()));
  files_.push_back(job.out);
  return procs_.spawn(worker_args(job), error);
}

bool worker_fleet::finish(std::chrono::steady_clock::time_point deadline,
                          std::vector<cycle_record>& recs, std::string& error) {
  bool ok = true;
  auto note = [&](const std::string& e) {
    if (ok) error = e;
    ok = false;
  };
  if (in_process_) {
    for (auto& j : threads_) {
      j->t.join();
      recs.insert(recs.end(), j->recs.begin(), j->recs.end());
      if (!j->error.empty()) note(j->error);
    }
    threads_.clear();
    return ok;
  }
  int exited_ok = procs_.wait_all(deadline);
  for (const auto& f : files_) {
    std::string e;
    if (!read_records(f, recs, e)) note(e);
  }
  if (ok && exited_ok != static_cast<int>(procs_.size())) {
    note("a worker process failed or was killed at the time limit");
  }
  return ok;
}

}  // namespace dlock::cli
