#pragma once
// The four scenarios. Each returns its figures or throws: dlock::system_error for a backend
// failure, bench_failure when the benchmark itself went wrong (a worker died).

#include <dlock/session.hpp>
#include <stdexcept>

#include "cli/bench/bench.hpp"
#include "cli/bench/bench_report.hpp"

namespace dlock::cli {

class bench_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bench_report bench_uncontended(const bench_options& o, dlock::session& s);
bench_report bench_many_locks(const bench_options& o, dlock::session& s);
bench_report bench_contended(const bench_options& o);
bench_report bench_waiters(const bench_options& o, dlock::session& s);

}  // namespace dlock::cli
