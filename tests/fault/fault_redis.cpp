// The fault run's Redis backends: one redis-server (restartable with or without its data) and
// Redlock over three (a minority member killed and restarted empty). Expiry and the orphan
// count use raw commands on each server, never dlock.
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "fault/fault_backends.hpp"
#include "support/redis_server.hpp"

namespace dlock::fault {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> split_bars(const std::string& text) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (auto at = text.find('|'); at != std::string::npos; at = text.find('|', from)) {
    out.push_back(text.substr(from, at - from));
    from = at + 1;
  }
  out.push_back(text.substr(from));
  return out;
}

class redis_fault final : public fault_backend {
 public:
  explicit redis_fault(int servers) {
    for (int i = 0; i < servers; ++i) servers_.push_back(std::make_unique<test::redis_server>());
  }

  std::string url(const std::vector<std::uint16_t>& ports) override {
    std::string hosts;
    for (auto p : ports) hosts += (hosts.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(p));
    return (servers_.size() > 1 ? "redlock://" : "redis://") + hosts +
           "?ttl=" + std::to_string(ttl().count()) + "ms&prefix=" + prefix_;
  }
  std::vector<std::uint16_t> server_ports() const override {
    std::vector<std::uint16_t> p;
    for (auto& s : servers_) p.push_back(s->port());
    return p;
  }
  // The session is a key with a TTL: a reconnect within it keeps its holds (docs/redis.md).
  bool sessions_survive_reconnect() const override { return true; }

  // On every server: queue members without metadata or whose session key is gone, and
  // metadata of entries no queue holds; a lone holder whose session key is gone, or one
  // beside a queue; a queue without its gate key.
  std::size_t orphans(const std::string& lock) override {
    std::size_t n = 0;
    for (auto& s : servers_) {
      auto q = prefix_ + "q:" + lock, m = prefix_ + "m:" + lock;
      auto members = s->command({"ZRANGE", q, "0", "-1"});
      auto gate = s->command({"GET", prefix_ + "h:" + lock}).at(0);
      if (auto lone = s->lone_holder(prefix_, lock)) {
        auto fields = split_bars(*lone);
        if (fields.size() < 4 || !members.empty() ||
            s->integer({"EXISTS", prefix_ + "s:" + fields[3]}) == 0)
          ++n;
      } else if (!members.empty() && gate != "q") {
        ++n;
      }
      std::set<std::string> in_queue(members.begin(), members.end());
      for (auto& id : members) {
        auto meta = s->command({"HGET", m, id}).at(0);
        auto a = meta.find('|'), b = a == std::string::npos ? a : meta.find('|', a + 1);
        if (meta == "(nil)" || b == std::string::npos) {
          ++n;
          continue;
        }
        if (s->integer({"EXISTS", prefix_ + "s:" + meta.substr(a + 1, b - a - 1)}) == 0) ++n;
      }
      for (auto& id : s->command({"HKEYS", m})) n += in_queue.count(id) ? 0 : 1;
    }
    return n;
  }

  std::size_t minority_entries(const std::string& lock) override {
    std::map<std::string, std::size_t> where;
    for (auto& s : servers_) {
      if (!s->running()) continue;
      for (auto& id : s->entry_ids(prefix_, lock)) ++where[id];
    }
    std::size_t n = 0;
    for (auto& [id, count] : where) n += count <= servers_.size() / 2 ? 1 : 0;
    return n;
  }

  // As the conformance fixtures do: the session key goes on every server.
  void expire(const worker_session& ws) override {
    for (auto& s : servers_) {
      if (s->running()) s->command({"DEL", prefix_ + "s:" + ws.id});
    }
  }
  void stop_server(bool keep_data) override { servers_.at(0)->stop(keep_data); }
  void start_server() override { servers_.at(0)->start(); }

  // Redlock: one master (a minority) crashes and comes back empty (no persistence), after the
  // TTL as Redlock's delayed-restart rule asks.
  std::string kill_member(int k) override {
    killed_ = static_cast<std::size_t>(k) % servers_.size();
    servers_[killed_]->kill();
    return "master " + std::to_string(killed_ + 1);
  }
  void restart_member() override { servers_[killed_]->start(); }
  std::string freeze_member(int k) override {
    frozen_.freeze(servers_[static_cast<std::size_t>(k) % servers_.size()]->pid());
    return "master " + std::to_string(static_cast<std::size_t>(k) % servers_.size() + 1);
  }
  void thaw_member() override { frozen_.thaw(); }
  std::chrono::milliseconds member_down_time() const override { return ttl() + 500ms; }

 private:
  std::vector<std::unique_ptr<test::redis_server>> servers_;
  std::string prefix_ = "f" + test::random_suffix() + ":";
  std::size_t killed_{0};
  frozen_member frozen_;
};

}  // namespace

std::unique_ptr<fault_backend> make_redis_fault(const std::string&) {
  return std::make_unique<redis_fault>(1);
}
std::unique_ptr<fault_backend> make_redlock_fault(const std::string&) {
  return std::make_unique<redis_fault>(3);
}

}  // namespace dlock::fault
