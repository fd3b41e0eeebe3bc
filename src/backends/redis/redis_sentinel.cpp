#include "backends/redis/redis_sentinel.hpp"

#include <hiredis/hiredis.h>

#include <vector>

#include "backends/redis/redis_doctor.hpp"
#include "core/url.hpp"

namespace dlock::detail::redis {
namespace {

// The master's address as one sentinel names it.
result<target> ask(const target& sentinel, const std::string& name, const target& master,
                   std::optional<std::chrono::milliseconds> cap, std::stop_token stop) {
  auto c = connection::open(sentinel, cap, stop);
  if (!c) return fail(c.error());
  std::vector<std::string> argv{"SENTINEL", "get-master-addr-by-name", name};
  auto r = (*c)->call(argv);
  if (!r) return fail(r.error());
  const redisReply* x = r->get();
  if (x->type == REDIS_REPLY_ERROR) return fail(error_reply_failure(sentinel, reply_text(x)));
  if (x->type != REDIS_REPLY_ARRAY || x->elements != 2) {
    return fail(errc::backend_unavailable,
                sentinel.where + ": knows no master named '" + name + "'");
  }
  target t = master;
  t.host = std::string(reply_text(x->element[0]));
  auto port = std::string(reply_text(x->element[1]));
  unsigned value = 0;
  for (char ch : port) value = ch >= '0' && ch <= '9' ? value * 10 + (ch - '0') : 1u << 20;
  if (t.host.empty() || value == 0 || value > 65535)
    return fail(errc::protocol_error, sentinel.where + ": malformed master address");
  t.port = static_cast<std::uint16_t>(value);
  t.where = "redis " + host_port_text(t.host, t.port) + " (master '" + name + "')";
  return t;
}

// ROLE says master; INFO replication gives the replication id.
result<std::string> check_master(connection& c) {
  std::vector<std::string> role{"ROLE"};
  auto r = c.call(role);
  if (!r) return fail(r.error());
  const redisReply* x = r->get();
  if (x->type == REDIS_REPLY_ERROR) return fail(error_reply_failure(c.where(), reply_text(x)));
  auto said = x->type == REDIS_REPLY_ARRAY && x->elements > 0 ? reply_text(x->element[0])
                                                              : std::string_view{};
  if (said != "master") {
    return fail(errc::backend_unavailable, c.where().where +
                                               " is not a master (ROLE: " + std::string(said) +
                                               "): the sentinel has not seen the failover yet");
  }
  std::vector<std::string> info{"INFO", "replication"};
  auto i = c.call(info);
  if (!i) return fail(i.error());
  return info_field(info_text(i), "master_replid");
}

}  // namespace

result<found_master> find_master(std::span<const target> sentinels, std::size_t& first,
                                 const std::string& name, const target& master,
                                 std::optional<std::chrono::milliseconds> cap,
                                 std::stop_token stop) {
  std::string why;
  failure last{make_error_code(errc::backend_unavailable), ""};
  for (std::size_t k = 0; k < sentinels.size(); ++k) {
    const auto i = (first + k) % sentinels.size();
    auto t = ask(sentinels[i], name, master, cap, stop);
    if (t) {
      auto c = connection::open(*t, cap, stop);
      if (c) {
        auto replid = check_master(**c);
        if (replid) {
          first = i;
          return found_master{std::move(*c), host_port_text(t->host, t->port), std::move(*replid)};
        }
        t = fail(replid.error());
      } else {
        t = fail(c.error());
      }
    }
    if (t.error().code == make_error_code(errc::cancelled)) return fail(t.error());
    if (!is_transient(t.error())) last = t.error();
    why += (why.empty() ? "" : "; ") + t.error().message;
  }
  // A final answer (a refused password, say) is reported as such; else it is worth retrying.
  return fail(failure{last.code, "no master '" + name + "' found through " +
                                     std::to_string(sentinels.size()) + " sentinel(s): " + why});
}

}  // namespace dlock::detail::redis
