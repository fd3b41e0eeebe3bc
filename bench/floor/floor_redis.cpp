// redis: SET NX PX + DEL (a lock's two round trips). Contended: BLPOP/RPUSH of one token,
// redis's own server-side wait, one write per handoff.
#include <hiredis/hiredis.h>

#include <stdexcept>

#include "floor_common.hpp"

namespace dlock::floor {
namespace {

class redis_client final : public client {
 public:
  explicit redis_client(const target& t) {
    timeval tv{5, 0};
    c_ = redisConnectWithTimeout(t.host.c_str(), t.port ? t.port : 6379, tv);
    if (!c_ || c_->err) throw std::runtime_error("redis: cannot connect");
    if (!t.password.empty()) {
      expect(t.user.empty() ? redisCommand(c_, "AUTH %s", t.password.c_str())
                            : redisCommand(c_, "AUTH %s %s", t.user.c_str(), t.password.c_str()));
    }
  }
  ~redis_client() override { redisFree(c_); }

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
  void acquire() override { expect(redisCommand(c_, "BLPOP dlock-floor-token 10")); }
  void release() override { expect(redisCommand(c_, "RPUSH dlock-floor-token t")); }
  std::string what() const override {
    return "hiredis: SET NX PX + DEL; contended: BLPOP/RPUSH one token";
  }

 private:
  void expect(void* reply) {
    auto* r = static_cast<redisReply*>(reply);
    if (!r || r->type == REDIS_REPLY_ERROR) {
      if (r) freeReplyObject(r);
      throw std::runtime_error("redis: command failed");
    }
    if (r->type == REDIS_REPLY_NIL) {
      freeReplyObject(r);
      throw std::runtime_error("redis: BLPOP timed out");
    }
    freeReplyObject(r);
  }
  redisContext* c_{nullptr};
};

}  // namespace

std::unique_ptr<client> make_redis(const target& t) { return std::make_unique<redis_client>(t); }

}  // namespace dlock::floor
