// redis: SET NX PX + DEL (a lock's two round trips). Contended: BLPOP/RPUSH of one token,
// redis's own server-side wait, one write per handoff. The scripts floor is issue 4's mandated
// design at its leanest: one Lua acquire (SET NX PX + INCR of a fencing counter) and one Lua
// compare-and-delete release, so the README can say how close that design can come to SET+DEL.
#include <hiredis/hiredis.h>

#include <stdexcept>
#include <string>

#include "floor_common.hpp"

namespace dlock::floor {
namespace {

struct reply_deleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

class redis_conn : public client {
 public:
  explicit redis_conn(const target& t) {
    timeval tv{5, 0};
    c_ = redisConnectWithTimeout(t.host.c_str(), t.port ? t.port : 6379, tv);
    if (!c_ || c_->err) throw std::runtime_error("redis: cannot connect");
    if (!t.password.empty()) {
      expect(t.user.empty() ? redisCommand(c_, "AUTH %s", t.password.c_str())
                            : redisCommand(c_, "AUTH %s %s", t.user.c_str(), t.password.c_str()));
    }
  }
  ~redis_conn() override { redisFree(c_); }

 protected:
  // Null, an error reply or nil throws; `what` names the command.
  reply_ptr call(void* reply, const char* what) {
    reply_ptr r{static_cast<redisReply*>(reply)};
    if (!r || r->type == REDIS_REPLY_ERROR) {
      throw std::runtime_error(std::string("redis: ") + what + " failed" +
                               (r ? ": " + std::string(r->str, r->len) : ""));
    }
    if (r->type == REDIS_REPLY_NIL)
      throw std::runtime_error(std::string("redis: ") + what + ": nil reply");
    return r;
  }
  void expect(void* reply) { call(reply, "command"); }
  redisContext* c_{nullptr};
};

class redis_client final : public redis_conn {
 public:
  using redis_conn::redis_conn;

  void cycle() override {
    auto* r = static_cast<redisReply*>(redisCommand(c_, "SET dlock-floor x NX PX 10000"));
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    if (!ok) throw std::runtime_error("redis: SET NX failed (key already held?)");
    expect(redisCommand(c_, "DEL dlock-floor"));
  }
  bool has_blocking() const override { return true; }
  // One token in the list: whoever pops it holds.
  void prepare() override {
    expect(redisCommand(c_, "DEL dlock-floor-token"));
    expect(redisCommand(c_, "RPUSH dlock-floor-token t"));
  }
  void acquire() override {
    call(redisCommand(c_, "BLPOP dlock-floor-token 10"), "BLPOP (timed out?)");
  }
  void release() override { expect(redisCommand(c_, "RPUSH dlock-floor-token t")); }
  std::string what() const override {
    return "hiredis: SET NX PX + DEL; contended: BLPOP/RPUSH one token";
  }
};

constexpr const char* acquire_lua =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
    "return redis.call('INCR', KEYS[2]) end return false";
constexpr const char* release_lua =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
    "return 0";

class redis_scripts_client final : public redis_conn {
 public:
  explicit redis_scripts_client(const target& t) : redis_conn(t) {
    expect(redisCommand(c_, "DEL dlock-floor-s dlock-floor-f"));
    acquire_sha_ = load(acquire_lua);
    release_sha_ = load(release_lua);
  }
  ~redis_scripts_client() override {
    if (auto* r = redisCommand(c_, "DEL dlock-floor-s dlock-floor-f")) {
      freeReplyObject(r);
    }
  }

  void cycle() override {
    auto a = call(redisCommand(c_, "EVALSHA %s 2 dlock-floor-s dlock-floor-f floor-owner 10000",
                               acquire_sha_.c_str()),
                  "acquire script (key already held?)");
    if (a->type != REDIS_REPLY_INTEGER) throw std::runtime_error("redis: acquire: no token");
    auto r = call(redisCommand(c_, "EVALSHA %s 1 dlock-floor-s floor-owner", release_sha_.c_str()),
                  "release script");
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 1) {
      throw std::runtime_error("redis: release: not the owner");
    }
  }
  std::string what() const override {
    return "hiredis: one-script acquire (SET NX PX + INCR) + compare-and-delete release, "
           "by EVALSHA";
  }

 private:
  std::string load(const char* lua) {
    auto r = call(redisCommand(c_, "SCRIPT LOAD %s", lua), "SCRIPT LOAD");
    if (r->type != REDIS_REPLY_STRING) throw std::runtime_error("redis: SCRIPT LOAD: no sha");
    return std::string(r->str, r->len);
  }
  std::string acquire_sha_, release_sha_;
};

}  // namespace

std::unique_ptr<client> make_redis(const target& t) { return std::make_unique<redis_client>(t); }
std::unique_ptr<client> make_redis_scripts(const target& t) {
  return std::make_unique<redis_scripts_client>(t);
}

}  // namespace dlock::floor
