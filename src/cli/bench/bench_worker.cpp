#include "cli/bench/bench_worker.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <dlock/election.hpp>
#include <dlock/mutex.hpp>
#include <dlock/semaphore.hpp>
#include <dlock/session.hpp>
#include <fstream>
#include <mutex>
#include <thread>

#include "cli/bench/bench.hpp"
#include "cli/bench/bench_report.hpp"

namespace dlock::cli {
namespace {

using namespace std::chrono_literals;

std::chrono::steady_clock::time_point at(std::int64_t ns) {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

void contended_loop(const worker_job& job, dlock::session& s, std::vector<cycle_record>& recs) {
  dlock::mutex m(s, job.lock);
  std::this_thread::sleep_until(at(job.start_ns));
  for (std::int64_t i = 0; i < job.max_cycles; ++i) {
    cycle_record r{now_ns(), 0, 0, job.first_client};
    if (r.asked >= job.end_ns) break;
    // Bounded wait: a stuck lock ends the run instead of hanging it.
    if (!m.try_lock_until(at(job.end_ns) + 5s)) break;
    r.granted = now_ns();
    r.released = now_ns();
    m.unlock();
    recs.push_back(r);
  }
}

// `threads` handles on one session, each waiting once for the lock and passing it straight on.
void waiters_loop(const worker_job& job, dlock::session& s, std::vector<cycle_record>& recs,
                  std::string& error) {
  std::mutex mu;
  std::vector<std::thread> ts;
  ts.reserve(static_cast<std::size_t>(job.threads));
  for (int t = 0; t < job.threads; ++t) {
    ts.emplace_back([&, t] {
      cycle_record r{now_ns(), 0, 0, job.first_client + t};
      try {
        if (job.elect) {
          dlock::election e(s, job.lock);
          if (auto l = e.try_campaign_until("dlock bench", at(job.end_ns))) {
            r.granted = now_ns();
            r.released = now_ns();
            l.resign();
          }
        } else if (job.permits > 0) {
          dlock::semaphore sem(s, job.lock, static_cast<std::uint32_t>(job.permits));
          if (auto p = sem.try_acquire_until(at(job.end_ns))) {
            r.granted = now_ns();
            r.released = now_ns();
            p.release();
          }
        } else {
          dlock::mutex m(s, job.lock);
          if (m.try_lock_until(at(job.end_ns))) {
            r.granted = now_ns();
            r.released = now_ns();
            m.unlock();
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard lk(mu);
        error = e.what();
      }
      std::lock_guard lk(mu);
      recs.push_back(r);
    });
  }
  for (auto& t : ts) t.join();
}

}  // namespace

grant_sequence sequence_grants(std::vector<cycle_record> recs, std::int64_t end_ns) {
  grant_sequence g;
  std::erase_if(recs, [&](const cycle_record& r) { return r.granted == 0 || r.granted >= end_ns; });
  std::sort(recs.begin(), recs.end(),
            [](const cycle_record& a, const cycle_record& b) { return a.granted < b.granted; });
  for (std::size_t i = 1; i < recs.size(); ++i) {
    if (recs[i].granted < recs[i - 1].released) ++g.overlaps;
    if (recs[i].client == recs[i - 1].client) continue;
    ++g.handoffs;
    g.handoff_ns.push_back(recs[i].granted - recs[i - 1].released);
  }
  g.recs = std::move(recs);
  return g;
}

std::vector<cycle_record> run_worker_job(const worker_job& job, std::string& error) {
  std::vector<cycle_record> recs;
  try {
    auto s = dlock::session::open(job.url, {.description = "dlock bench " + job.role});
    if (job.role == "contended") {
      recs.reserve(static_cast<std::size_t>(std::min<std::int64_t>(job.max_cycles, 1 << 20)));
      contended_loop(job, s, recs);
    } else {
      waiters_loop(job, s, recs, error);
    }
    s.close();
  } catch (const std::exception& e) {
    error = e.what();
  }
  return recs;
}

std::vector<std::string> worker_args(const worker_job& j) {
  return {bench_worker_command,
          j.role,
          j.url,
          j.lock,
          std::to_string(j.first_client),
          std::to_string(j.threads),
          std::to_string(j.start_ns),
          std::to_string(j.end_ns),
          std::to_string(j.max_cycles),
          j.out,
          std::to_string(j.permits),
          j.elect ? "elect" : "lock"};
}

bool parse_worker_args(const std::vector<std::string>& a, worker_job& j) {
  if (a.size() != 11) return false;
  try {
    j.role = a[0];
    j.url = a[1];
    j.lock = a[2];
    j.first_client = std::stoi(a[3]);
    j.threads = std::stoi(a[4]);
    j.start_ns = std::stoll(a[5]);
    j.end_ns = std::stoll(a[6]);
    j.max_cycles = std::stoll(a[7]);
    j.out = a[8];
    j.permits = std::stoi(a[9]);
    j.elect = a[10] == "elect";
  } catch (const std::exception&) {
    return false;
  }
  return (j.role == "contended" || j.role == "waiters") && j.threads >= 1 &&
         j.threads <= bench_max_waiters && j.permits >= 0 && j.permits <= 1000;
}

void write_records(const std::string& path, const std::vector<cycle_record>& recs,
                   const std::string& error) {
  std::ofstream f(path, std::ios::trunc);
  for (const auto& r : recs) {
    f << r.asked << ' ' << r.granted << ' ' << r.released << ' ' << r.client << '\n';
  }
  // The last line says how the worker ended, so a truncated file is recognised.
  f << (error.empty() ? "ok" : "error " + error) << '\n';
}

bool read_records(const std::string& path, std::vector<cycle_record>& out, std::string& error) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line == "ok") return true;
    if (line.starts_with("error ")) {
      error = line.substr(6);
      return false;
    }
    cycle_record r;
    if (std::sscanf(line.c_str(), "%ld %ld %ld %d", &r.asked, &r.granted, &r.released, &r.client) ==
        4) {
      out.push_back(r);
    }
  }
  if (error.empty()) error = "worker result file " + path + " is missing or incomplete";
  return false;
}

int run_bench_worker(const std::vector<std::string>& args) {
  worker_job job;
  if (!parse_worker_args(args, job)) return bench_exit_usage;
  std::string error;
  auto recs = run_worker_job(job, error);
  write_records(job.out, recs, error);
  return error.empty() ? 0 : bench_exit_unavailable;
}

}  // namespace dlock::cli
