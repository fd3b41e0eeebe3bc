// dlock demo flash-sale: N worker processes sell from one shop under one lock; the report
// shows whether anything was oversold. `flash-sale-worker` is the hidden worker entry point.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/demo.hpp"

extern char** environ;

namespace dlock::cli {
namespace {

using steady = std::chrono::steady_clock;

struct demo_options {
  std::string url;
  int workers{8};
  long long stock{200};
  bool no_lock{false};
  std::string shop;
  std::string time_limit{"45s"};
  bool json{false};
};

// A temporary directory for the shop, removed with its files at the end.
class temp_shop {
 public:
  temp_shop() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/dlock-flash-sale-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      throw cli_error(exit_denied, "cannot create a temporary directory in '" +
                                       tmpl.substr(0, tmpl.rfind('/')) +
                                       "': " + std::strerror(errno));
    }
    dir_ = tmpl;
  }
  ~temp_shop() {
    for (const char* f : {"/shop.db", "/shop.db-wal", "/shop.db-shm"}) ::unlink((dir_ + f).c_str());
    ::rmdir(dir_.c_str());
  }
  std::string path() const { return dir_ + "/shop.db"; }

 private:
  std::string dir_;
};

struct pipe_pair {
  int r{-1}, w{-1};
  pipe_pair() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw cli_error(exit_unavailable, "pipe failed");
    r = fds[0];
    w = fds[1];
  }
  ~pipe_pair() {
    close_r();
    close_w();
  }
  void close_r() {
    if (r >= 0) ::close(r);
    r = -1;
  }
  void close_w() {
    if (w >= 0) ::close(w);
    w = -1;
  }
};

std::string self_exe() {
  char buf[PATH_MAX];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw cli_error(exit_unavailable, "cannot find my own executable (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

pid_t spawn_worker(const std::string& exe, const std::vector<std::string>& args, int in, int out) {
  std::vector<std::string> argv = args;
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in, 0);
  posix_spawn_file_actions_adddup2(&fa, out, 1);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw cli_error(exit_unavailable, "cannot start a worker: " + std::string(std::strerror(rc)));
  return pid;
}

bool any_exited(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) {
    siginfo_t info{};
    // WNOWAIT: look without reaping; reap_workers collects the status later.
    if (::waitid(P_PID, static_cast<id_t>(p), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == p) {
      return true;
    }
  }
  return false;
}

// Reads "ready" lines until every worker has reported, one has died (the sale starts with
// those that are ready; the report counts the failure), or the deadline passes.
void await_ready(int fd, const std::vector<pid_t>& pids, steady::time_point deadline) {
  std::size_t ready = 0;
  std::string buf;
  while (ready < pids.size() && steady::now() < deadline && !any_exited(pids)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char chunk[256];
    auto n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) break;  // every worker exited
    buf.append(chunk, static_cast<std::size_t>(n));
    for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
      if (buf.compare(0, nl, "ready") == 0) ++ready;
      buf.erase(0, nl + 1);
    }
  }
}

// Waits for every worker; SIGKILLs the ones still running at `deadline`.
void reap_workers(std::vector<pid_t> pids, steady::time_point deadline, sale_report& r) {
  bool killed = false;
  while (!pids.empty()) {
    for (auto it = pids.begin(); it != pids.end();) {
      int st = 0;
      if (::waitpid(*it, &st, WNOHANG) != *it) {
        ++it;
        continue;
      }
      int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (code == exit_conflict) r.timed_out = true;
      if (code != exit_ok && code != exit_conflict) ++r.failed_workers;
      it = pids.erase(it);
    }
    if (!killed && steady::now() >= deadline) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      killed = true;
    }
    if (!pids.empty()) ::usleep(5000);
  }
}

int flash_sale(const demo_options& o) {
  if (!o.shop.empty()) {
    // As `dlock run` says of a lock database: a directory that does not exist is a mistyped
    // path (64), not a permission problem.
    auto dir = std::filesystem::path(o.shop).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::exists(dir, ec) && !ec)
      throw cli_error(exit_usage, "--shop '" + o.shop + "': directory '" + dir.string() +
                                      "' does not exist (the demo creates the file, not its "
                                      "directory)");
  }
  auto limit = parse_duration_option("--time-limit", o.time_limit);
  if (limit.count() <= 0) throw cli_error(exit_usage, "--time-limit: must be greater than zero");
  sale_report report;
  std::string url;
  report.workers = o.workers;
  report.no_lock = o.no_lock;
  if (!o.no_lock) {
    url = resolve_url(o.url);
    // A bad URL or an unreachable backend fails here, before any worker starts.
    auto check = open_session(url, {.description = "flash-sale check"});
    report.url = check.url();  // shown in the report: the password replaced by ***
    check.close();
    // Workers read the URL from the environment, so a password never shows in `ps`.
    if (::setenv("DLOCK_URL", url.c_str(), 1) != 0) {
      throw cli_error(exit_unavailable, "cannot set DLOCK_URL for the workers");
    }
  }
  std::unique_ptr<temp_shop> tmp;
  std::string shop_path = o.shop;
  if (shop_path.empty()) {
    tmp = std::make_unique<temp_shop>();
    shop_path = tmp->path();
  }
  try {
    shop(shop_path).reset(o.stock);
  } catch (const std::exception& e) {
    throw cli_error(exit_denied, e.what());
  }

  auto deadline_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         (std::chrono::system_clock::now() + limit).time_since_epoch())
                         .count();
  auto deadline = steady::now() + limit;
  pipe_pair go, ready;
  std::string exe = self_exe();
  std::vector<pid_t> pids;
  for (int i = 0; i < o.workers; ++i) {
    std::vector<std::string> args{"dlock",
                                  "demo",
                                  "flash-sale-worker",
                                  "--shop",
                                  shop_path,
                                  "--id",
                                  std::to_string(i + 1),
                                  "--deadline-ms",
                                  std::to_string(deadline_ms)};
    if (o.no_lock) args.push_back("--no-lock");
    pids.push_back(spawn_worker(exe, args, go.r, ready.w));
  }
  go.close_r();
  ready.close_w();
  await_ready(ready.r, pids, deadline);
  auto started = steady::now();
  go.close_w();  // the start gun: every worker sees EOF on stdin at once
  reap_workers(pids, deadline + std::chrono::seconds{10}, report);
  report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - started);
  try {
    report.totals = shop(shop_path).totals();
  } catch (const std::exception& e) {
    throw cli_error(exit_unavailable, e.what());
  }
  report.json = o.json;
  return print_sale_report(report);
}

}  // namespace

void add_demo_command(CLI::App& app, int& status) {
  auto* demo = app.add_subcommand("demo", "Demonstrations");
  demo->require_subcommand(1);

  auto o = std::make_shared<demo_options>();
  auto* fs = demo->add_subcommand(
      "flash-sale", "N worker processes sell STOCK units under one lock; nothing may be oversold");
  add_url_option(fs, o->url);
  fs->add_option("--workers", o->workers, "Worker processes (default 8)")
      ->check(CLI::Range(1, 256));
  // At least one: a sale of nothing has no handoff to show, nor a rate to print.
  fs->add_option("--stock", o->stock, "Units on sale (default 200)")
      ->check(CLI::Range(1LL, 1'000'000LL));
  fs->add_flag("--no-lock", o->no_lock,
               "Sell without the lock, to show the overselling it prevents");
  fs->add_option("--shop", o->shop, "Shop database file (default: a temporary file)");
  fs->add_option("--time-limit", o->time_limit, "Stop the sale after this long (default 45s)");
  fs->add_flag("--json", o->json, "Print the report as JSON");
  fs->callback([o, &status] { status = flash_sale(*o); });

  auto w = std::make_shared<worker_options>();
  auto* worker = demo->add_subcommand("flash-sale-worker", "");  // empty: hidden from --help
  worker->group("");
  worker->add_option("--url", w->url);
  worker->add_option("--shop", w->shop)->required();
  worker->add_option("--id", w->id)->required();
  worker->add_flag("--no-lock", w->no_lock);
  worker->add_option("--deadline-ms", w->deadline_ms)->required();
  worker->callback([w, &status] {
    try {
      status = run_flash_sale_worker(*w);
    } catch (const cli_error&) {
      throw;
    } catch (const std::exception& e) {
      throw cli_error(exit_unavailable, "worker " + std::to_string(w->id) + ": " + e.what());
    }
  });
}

}  // namespace dlock::cli
