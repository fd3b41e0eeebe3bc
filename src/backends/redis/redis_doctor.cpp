#include "backends/redis/redis_doctor.hpp"

#include <hiredis/hiredis.h>

namespace dlock::detail::redis {
namespace {

// The value of a CONFIG GET reply for one parameter ([name, value] in RESP2, which hiredis
// speaks); nullopt when CONFIG GET failed (disabled, renamed, no permission) or named nothing.
std::optional<std::string> config_value(const result<reply_ptr>& r) {
  if (!r || !*r) return std::nullopt;
  const redisReply* x = r->get();
  if (x->type != REDIS_REPLY_ARRAY || x->elements < 2) {
    return std::nullopt;
  }
  const redisReply* v = x->element[1];
  if (v->type != REDIS_REPLY_STRING && v->type != REDIS_REPLY_STATUS) return std::nullopt;
  return std::string(v->str, v->len);
}

std::string failure_text(const result<reply_ptr>& r) {
  return r ? std::string("no such parameter") : r.error().message;
}

check_finding persistence(std::string_view info, const result<reply_ptr>& save,
                          const result<reply_ptr>& appendfsync) {
  check_finding f{.check = "persistence", .guarantee = "fencing"};
  auto aof = info_field(info, "aof_enabled") == "1";
  auto points = config_value(save);
  auto fsync = config_value(appendfsync);
  if (aof) {
    f.value = "appendonly yes, appendfsync " + fsync.value_or("?");
    if (fsync == "always") {
      f.reason = "every write is in the append-only file before it is answered";
    } else {
      f.status = check_status::weakened;
      f.reason = "appendfsync " + fsync.value_or("unknown") +
                 ": a crash can lose the last second of writes, so a token handed out just "
                 "before it can be handed out again (appendfsync always closes that)";
    }
    return f;
  }
  if (!points) {
    f.status = check_status::unknown;
    f.value = "appendonly no";
    f.reason = "appendonly is off and CONFIG GET save failed (" + failure_text(save) +
               "): whether snapshots keep the tokens is unknown";
    return f;
  }
  f.status = check_status::weakened;
  if (points->empty()) {
    f.value = "save \"\", appendonly no";
    f.reason =
        "persistence is off: after a restart the locks are gone and tokens start again "
        "from 1 (an efficiency lock only; turn on appendonly)";
  } else {
    f.value = "save \"" + *points + "\", appendonly no";
    f.reason =
        "snapshots only: a crash loses what changed since the last one, so tokens can be "
        "handed out again (turn on appendonly with appendfsync always)";
  }
  return f;
}

check_finding replication(std::string_view info, int wait_for) {
  check_finding f{.check = "replication", .guarantee = "failover"};
  auto role = info_field(info, "role");
  auto replicas = info_field(info, "connected_slaves");
  f.value = "role " + role + ", " + (replicas.empty() ? "?" : replicas) + " replicas";
  if (wait_for > 0) f.value += ", replicas=" + std::to_string(wait_for);
  int connected = 0;
  for (char ch : replicas) connected = ch >= '0' && ch <= '9' ? connected * 10 + (ch - '0') : 0;
  const auto n = std::to_string(wait_for);
  if (role == "slave") {
    f.status = check_status::unsafe;
    f.reason = "the server is a replica (refused at open)";
  } else if (wait_for > 0 && connected >= wait_for) {
    f.reason = "every acquire and renewal counts only once " + n + " of the " + replicas +
               " replica(s) acknowledged it (WAIT): a failover to the most up-to-date replica, "
               "as Sentinel promotes, keeps held locks and their tokens";
  } else if (wait_for > 0) {
    f.status = check_status::weakened;
    f.reason = "replicas=" + n + " but only " + (replicas.empty() ? "?" : replicas) +
               " replica(s) are connected: every acquire and renewal fails until " + n + " are";
  } else if (replicas.empty() || replicas == "0") {
    f.reason = "no replica is connected: nothing fails over to a copy that missed a write";
  } else {
    f.status = check_status::weakened;
    f.reason = replicas +
               " replica(s) are replicated asynchronously: a failover to one can lose a held "
               "lock and hand its token out again (?replicas=1 makes acquires and renewals "
               "wait for a replica)";
  }
  return f;
}

}  // namespace

std::string_view info_text(const result<reply_ptr>& r) {
  if (!r || !*r) return {};
  const redisReply* x = r->get();
  if (x->type != REDIS_REPLY_STRING) return {};
  return {x->str, x->len};
}

std::string info_field(std::string_view info, std::string_view name) {
  std::string key = "\n" + std::string(name) + ":";
  std::string_view text = info;
  std::size_t at;
  if (text.starts_with(key.substr(1))) {
    at = key.size() - 1;
  } else {
    at = text.find(key);
    if (at == std::string_view::npos) return {};
    at += key.size();
  }
  auto value = text.substr(at);
  return std::string(value.substr(0, value.find_first_of("\r\n")));
}

result<void> refuse_unsafe(std::string_view info, const std::string& where) {
  if (info.empty()) return {};
  // A server that evicts keys under memory pressure drops a lock key with no signal to its
  // holder: a lost lock nobody is told of. Every policy but noeviction may evict dlock's keys
  // (they carry a TTL, so the volatile-* policies too).
  auto policy = info_field(info, "maxmemory_policy");
  if (!policy.empty() && policy != "noeviction") {
    return fail(errc::unsupported,
                where + " evicts keys under memory pressure (maxmemory-policy " + policy +
                    "): an evicted lock key is a lock lost with no signal. Use a server with "
                    "maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, or a "
                    "Redis of its own for locks)");
  }
  // A replica refuses writes (or, with replica-read-only no, keeps writes its master never
  // sees): locks there are not the master's locks.
  if (info_field(info, "role") == "slave") {
    auto master = info_field(info, "master_host") + ":" + info_field(info, "master_port");
    return fail(errc::unsupported, where + " is a replica of " + master +
                                       ": locks must be taken on the master (point the URL at "
                                       "it)");
  }
  // Redis Cluster spreads a lock's keys over slots of different masters; the scripts need
  // them on one server.
  if (info_field(info, "cluster_enabled") == "1") {
    return fail(errc::unsupported,
                where +
                    " is a Redis Cluster node: dlock's scripts need every key of a lock on "
                    "one server (use a standalone master, or redlock:// over several)");
  }
  return {};
}

std::vector<check_finding> findings(std::string_view info, const result<reply_ptr>& save,
                                    const result<reply_ptr>& appendfsync, const std::string& where,
                                    int replicas) {
  std::vector<check_finding> out;
  if (info.empty()) {
    out.push_back({.check = "info",
                   .guarantee = "exclusion",
                   .status = check_status::unknown,
                   .reason = "INFO is refused: the eviction policy, persistence and replicas "
                             "cannot be read (check maxmemory-policy noeviction by hand)"});
    return out;
  }
  auto policy = info_field(info, "maxmemory_policy");
  check_finding ev{.check = "maxmemory-policy", .guarantee = "exclusion", .value = policy};
  if (policy == "noeviction") {
    ev.reason = "noeviction: a lock key is never evicted";
  } else {
    ev.status = check_status::unsafe;
    ev.reason = "maxmemory-policy " + policy + " evicts keys: a lock can vanish with no signal";
  }
  out.push_back(std::move(ev));
  out.push_back(persistence(info, save, appendfsync));
  if (out.back().status == check_status::weakened && info_field(info, "aof_enabled") != "1") {
    // A restart that loses the locks frees them at once: a tester's next client was granted
    // 0.22 s before the holder, at its next renewal, heard that its key was gone.
    out.push_back({.check = "restart-without-data",
                   .guarantee = "loss-signal",
                   .status = check_status::weakened,
                   .reason = "a restart without its data frees every lock at once; a holder "
                             "learns at its next renewal (within TTL/3), after another may "
                             "have been granted",
                   .value = out.back().value});
  }
  out.push_back(replication(info, replicas));
  if (replicas > 0 && out.back().status == check_status::weakened) {
    // Fewer replicas than ?replicas= asks for: no lock can be taken at all, which is this
    // client unable to use the set-up, not a guarantee weakened (a tester's deploy gate
    // `dlock doctor URL && ...` passed it, exit 0).
    out.push_back({.check = "replicas-connected",
                   .status = check_status::unsafe,
                   .reason = "no lock can be taken here until " + std::to_string(replicas) +
                             " replica(s) are connected",
                   .value = out.back().value});
  }
  if (!where.empty()) {
    for (auto& f : out) f.reason = where + ": " + f.reason;
  }
  return out;
}

}  // namespace dlock::detail::redis
