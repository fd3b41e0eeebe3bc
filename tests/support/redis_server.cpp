#include "support/redis_server.hpp"

#include <hiredis/hiredis.h>
#include <signal.h>

#include <cstdio>
#include <stdexcept>
#include <thread>

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

struct ctx_free {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct reply_free {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};

void flatten(const redisReply* r, std::vector<std::string>& out) {
  switch (r->type) {
    case REDIS_REPLY_ARRAY:
      for (std::size_t i = 0; i < r->elements; ++i) flatten(r->element[i], out);
      break;
    case REDIS_REPLY_INTEGER:
      out.push_back(std::to_string(r->integer));
      break;
    case REDIS_REPLY_NIL:
      out.emplace_back("(nil)");
      break;
    default:
      out.emplace_back(r->str, r->len);
  }
}

}  // namespace

redis_server::redis_server(options o) : opt_(std::move(o)), port_(free_port()) { start(); }

redis_server::~redis_server() {
  if (proc_) kill();
}

void redis_server::start() {
  if (proc_) return;
  std::vector<std::string> argv{
      "redis-server", "--bind",       "127.0.0.1", "--port", std::to_string(port_),
      "--dir",        dir_.path(),    "--save",    "",       "--appendonly",
      "no",           "--dbfilename", "dump.rdb"};
  if (!opt_.password.empty()) argv.insert(argv.end(), {"--requirepass", opt_.password});
  argv.insert(argv.end(), opt_.extra_args.begin(), opt_.extra_args.end());
  child_process::options po;
  po.log_file = dir_.path() + "/redis.log";
  po.reaped_by = &reaper_;
  proc_ = std::make_unique<child_process>(argv, po);
  auto until = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    try {
      if (command({"PING"}) == std::vector<std::string>{"PONG"}) return;
    } catch (const std::exception&) {
    }
    if (!proc_->running()) {
      proc_.reset();
      throw std::runtime_error("redis-server on port " + std::to_string(port_) + " exited; see " +
                               dir_.path() + "/redis.log");
    }
    if (std::chrono::steady_clock::now() > until) {
      throw std::runtime_error("redis-server on port " + std::to_string(port_) +
                               " did not answer PING within 20 s");
    }
    std::this_thread::sleep_for(20ms);
  }
}

void redis_server::stop(bool keep_data) {
  if (!proc_) return;
  try {
    (void)command({"SHUTDOWN", keep_data ? "SAVE" : "NOSAVE"});
  } catch (const std::exception&) {
    // The connection closes as the server exits; that is the expected "error".
  }
  if (!proc_->wait(20s)) proc_->signal(SIGKILL);
  proc_.reset();
  if (!keep_data) std::remove((dir_.path() + "/dump.rdb").c_str());
}

void redis_server::kill() {
  if (!proc_) return;
  proc_->signal(SIGKILL);
  (void)proc_->wait(20s);
  proc_.reset();
  std::remove((dir_.path() + "/dump.rdb").c_str());
}

std::vector<std::string> redis_server::command(const std::vector<std::string>& argv) const {
  timeval tv{5, 0};
  std::unique_ptr<redisContext, ctx_free> c(redisConnectWithTimeout("127.0.0.1", port_, tv));
  if (!c || c->err) {
    throw std::runtime_error("redis 127.0.0.1:" + std::to_string(port_) + ": " +
                             (c ? c->errstr : "no memory"));
  }
  redisSetTimeout(c.get(), tv);
  auto run = [&](const std::vector<std::string>& args) {
    std::vector<const char*> p;
    std::vector<std::size_t> l;
    for (auto& a : args) {
      p.push_back(a.data());
      l.push_back(a.size());
    }
    std::unique_ptr<redisReply, reply_free> r(static_cast<redisReply*>(
        redisCommandArgv(c.get(), static_cast<int>(args.size()), p.data(), l.data())));
    if (!r) throw std::runtime_error(std::string("redis: ") + c->errstr);
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(std::string(r->str, r->len));
    std::vector<std::string> out;
    flatten(r.get(), out);
    return out;
  };
  if (!opt_.password.empty()) run({"AUTH", opt_.password});
  return run(argv);
}

long long redis_server::integer(const std::vector<std::string>& argv) const {
  auto r = command(argv);
  return r.empty() ? 0 : std::stoll(r.front());
}

std::vector<std::string> redis_server::keys(const std::string& pattern) const {
  return command({"KEYS", pattern});
}

std::optional<std::string> redis_server::lone_holder(const std::string& prefix,
                                                     const std::string& lock) const {
  auto gate = command({"GET", prefix + "h:" + lock});
  if (gate.empty() || gate[0] == "(nil)" || gate[0] == "q") return std::nullopt;
  return gate[0];
}

std::vector<std::string> redis_server::entry_ids(const std::string& prefix,
                                                 const std::string& lock) const {
  auto ids = command({"ZRANGE", prefix + "q:" + lock, "0", "-1"});
  if (auto lone = lone_holder(prefix, lock))
    ids.insert(ids.begin(), lone->substr(0, lone->find('|')));
  return ids;
}

}  // namespace dlock::test
