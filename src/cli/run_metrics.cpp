#include "cli/run_metrics.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "cli/common.hpp"

namespace dlock::cli {
namespace {

// A label value in the text format: backslash, double quote and line feed escaped.
std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// The shortest text that reads back as `v` (not %.17g's 0.0016871869999999999).
std::string number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

double unix_seconds(std::chrono::system_clock::time_point t) {
  return seconds(t.time_since_epoch());
}

const char* outcome_name(run_outcome o) {
  switch (o) {
    case run_outcome::ran:
      return "ran";
    case run_outcome::conflict:
      return "conflict";
    case run_outcome::lost:
      return "lost";
    case run_outcome::interrupted:
      return "interrupted";
    case run_outcome::error:
      return "error";
  }
  return "error";
}

}  // namespace

std::string format_run_metrics(const run_report& r) {
  const std::string labels =
      "command=\"" + label_value(r.verb) + "\",lock=\"" + label_value(r.name) + "\"";
  std::string out;
  auto gauge = [&](const char* name, const char* help, const std::string& value,
                   const std::string& extra = {}) {
    out += std::string("# HELP ") + name + " " + help + "\n";
    out += std::string("# TYPE ") + name + " gauge\n";
    out += std::string(name) + "{" + labels + extra + "} " + value + "\n";
  };
  gauge("dlock_run_last_start_timestamp_seconds",
        "When the last run started, in seconds since the epoch.", number(unix_seconds(r.started)));
  gauge("dlock_run_last_end_timestamp_seconds",
        "When the last run ended, in seconds since the epoch.", number(unix_seconds(r.ended)));
  out +=
      "# HELP dlock_run_last_outcome How the last run ended: 1 for its outcome, 0 for the "
      "others.\n# TYPE dlock_run_last_outcome gauge\n";
  for (auto o : {run_outcome::ran, run_outcome::conflict, run_outcome::lost,
                 run_outcome::interrupted, run_outcome::error}) {
    out += "dlock_run_last_outcome{" + labels + ",outcome=\"" + outcome_name(o) + "\"} " +
           (o == r.outcome ? "1" : "0") + "\n";
  }
  gauge("dlock_run_last_exit_code", "The exit status of the last run of dlock.",
        std::to_string(r.exit_code));
  if (r.waited) {
    gauge("dlock_run_last_wait_seconds",
          "How long the last run waited (connecting included) for its grant or gave up.",
          number(seconds(*r.waited)));
  }
  if (r.held) {
    gauge("dlock_run_last_hold_seconds",
          "How long the last run held its grant (a lost one: until its lease ended at the "
          "latest).",
          number(seconds(*r.held)));
  }
  if (r.token) {
    gauge("dlock_run_last_fencing_token", "The fencing token of the last run's grant.",
          std::to_string(*r.token));
  }
  if (r.window_kept) {
    gauge("dlock_run_last_hold_at_least_kept",
          "1 if the last run held its grant for all of --hold-at-least, 0 if its lease ended "
          "sooner (another node may have run the job within the window).",
          *r.window_kept ? "1" : "0");
  }
  return out;
}

void check_metrics_path(const std::string& path) {
  auto slash = path.rfind('/');
  std::string dir =
      slash == std::string::npos ? "." : path.substr(0, std::max<std::size_t>(slash, 1));
  auto bad = [&](const std::string& why) {
    throw cli_error(exit_usage, "--metrics-file '" + path + "': " + why);
  };
  if (path.empty() || path.back() == '/') bad("want a file name");  // '' too: never silently off
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) bad("is a directory");
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) bad("no directory " + dir);
  if (::access(dir.c_str(), W_OK) != 0) bad("directory " + dir + " is not writable");
}

void write_run_metrics(const std::string& path, const run_report& r) {
  auto text = format_run_metrics(r);
  // Beside the target, so the rename stays on one file system; a dot name, which the textfile
  // collector skips (it reads *.prom only).
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = dir + (slash == std::string::npos ? "/" : "") + "." + base + ".tmp." +
                    std::to_string(::getpid());
  auto failed = [&](const std::string& what) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw cli_error(exit_io,
                    "--metrics-file '" + path + "': cannot " + what + ": " + std::strerror(e));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) failed("create " + tmp);
  std::size_t done = 0;
  while (done < text.size()) {
    auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      failed("write " + tmp);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    failed("flush " + tmp);
  }
  if (::close(fd) != 0) failed("close " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) failed("rename " + tmp + " to it");
}

}  // namespace dlock::cli
